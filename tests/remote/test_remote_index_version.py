"""Over HTTP and S3, a Zarr v3 shard's chunks come from the version of the shard its index
was read from: a shard replaced on the server between the two reads is told by its ETag,
its index fetched again and the chunks read through it (never cut out of the new shard at
the old index's offsets)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from range_server import RangeServer

from viewer.format import open_volume
from viewer.format.remote import configure

SHAPE = (32, 16, 16)
SHARD = "c/0/0/0"


def _data(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = np.arange(np.prod(SHAPE), dtype=np.uint16).reshape(SHAPE)
    return base + rng.integers(0, 16 << seed, SHAPE, dtype=np.uint16)


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same array shape written twice by tensorstore with other values (one shard of
    two inner chunks, zstd, crc32c index): the shards' chunks lie at other offsets."""
    ts = pytest.importorskip("tensorstore")
    root = tmp_path_factory.mktemp("shard-versions")
    out = []
    for v in (1, 2):
        ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root / str(v))},
                 "create": True,
                 "metadata": {"shape": list(SHAPE), "data_type": "uint16",
                              "chunk_grid": {"name": "regular",
                                             "configuration": {"chunk_shape": list(SHAPE)}},
                              "codecs": [{"name": "sharding_indexed", "configuration": {
                                  "chunk_shape": [16, 16, 16],
                                  "codecs": [{"name": "bytes",
                                              "configuration": {"endian": "little"}},
                                             {"name": "zstd", "configuration": {"level": 3}}],
                                  "index_codecs": [{"name": "bytes",
                                                    "configuration": {"endian": "little"}},
                                                   {"name": "crc32c"}]}}],
                              "dimension_names": ["x", "y", "z"]}}
                ).result().write(_data(v)).result()
        out.append(root / str(v))
    return out[0], out[1]


def test_shard_replaced_on_an_http_server_between_index_and_chunks(
        versions: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = versions
    shutil.copytree(a, tmp_path / "ds")
    configure(retries=0, timeout_s=5)
    with RangeServer(str(tmp_path)) as srv:
        vol = open_volume(f"{srv.url}/ds")
        try:
            assert vol.open_unit((0, 0, 0)) is not None  # version 1's index
            new = tmp_path / "new"
            shutil.copy(b / SHARD, new)
            new.replace(tmp_path / "ds" / SHARD)
            got = vol.read((0, 0, 0), SHAPE)[0]
        finally:
            vol.close()
    np.testing.assert_array_equal(got, _data(2))


def test_shard_replaced_in_s3_between_index_and_chunks(versions: tuple[Path, Path],
                                                       s3: dict[str, Any]) -> None:
    a, b = versions
    client = s3["client"]
    prefix = "versions/ds"
    for path in a.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), "bkt", f"{prefix}/{path.relative_to(a).as_posix()}")
    configure(retries=0, timeout_s=5)
    vol = open_volume(f"s3://bkt/{prefix}")
    try:
        assert vol.open_unit((0, 0, 0)) is not None
        client.upload_file(str(b / SHARD), "bkt", f"{prefix}/{SHARD}")
        got = vol.read((0, 0, 0), SHAPE)[0]
    finally:
        vol.close()
    np.testing.assert_array_equal(got, _data(2))
