"""Random bytes as chunk files: every outcome is a decoded chunk or a FormatError (never
another exception, a crash or a big allocation)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from viewer.format import FormatError
from viewer.format.n5 import codecs
from viewer.format.n5.attributes import parse_dataset
from viewer.format.n5.volume import N5Volume
from viewer.format.store import LocalStore

COMPRESSIONS = ["raw", "gzip", "bzip2", "xz", "lz4", "blosc", "zstd"]


def _volume(tmp: Path, comp: str) -> N5Volume:
    attrs = {"dimensions": [20, 10, 6], "blockSize": [8, 8, 4], "dataType": "uint16",
             "compression": {"type": comp}}
    return N5Volume(LocalStore(tmp), "", parse_dataset(attrs, str(tmp)))


@pytest.mark.parametrize("comp", COMPRESSIONS)
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=600), head=st.sampled_from(["valid", "random"]),
       prefix=st.binary(min_size=0, max_size=24))
def test_random_chunk_bytes(tmp_path: Path, comp: str, body: bytes, head: str,
                            prefix: bytes) -> None:
    if comp in ("blosc", "zstd") and not codecs.numcodecs_available():
        pytest.skip("numcodecs (the n5 extra) is not installed")
    v = _volume(tmp_path, comp)
    if head == "valid":
        data = struct.pack(">HH3I", 0, 3, 8, 8, 4) + body
        if comp == "lz4":
            data = data[:16] + b"LZ4Block" + body
        elif comp == "blosc" and len(body) >= 16:
            # a blosc header that claims the chunk's size, the rest random
            data = data[:16] + body[:4] + struct.pack("<I", 512) + body[8:]
    else:
        data = prefix + body
    try:
        out: Any = v.decode_chunk((0, 0, 0), data)
    except FormatError:
        return
    assert isinstance(out, np.ndarray) and out.shape == (1, 8, 8, 4)
