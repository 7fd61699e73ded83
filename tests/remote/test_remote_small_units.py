"""N5 and Zarr v2 over HTTP keep their units open: ``small_units`` is for local
chunk files only, so that the loader still asks for a batch's chunk files ahead of reading
them (``will_need``, ``drop_read_ahead``); ``read_units`` over HTTP gives what the local
dataset gives (arrays written by tensorstore)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from range_server import RangeServer

from viewer.format import open_volume

ts = pytest.importorskip("tensorstore")


def _write(root: Path, driver: str, data: np.ndarray) -> None:
    kv = {"driver": "file", "path": str(root)}
    spec: dict[str, Any]
    if driver == "n5":
        spec = {"driver": "n5", "kvstore": kv,
                "metadata": {"dimensions": list(data.shape), "blockSize": [16, 16, 16],
                             "dataType": "uint16", "compression": {"type": "gzip"}}}
    else:
        spec = {"driver": "zarr", "kvstore": kv,
                "metadata": {"shape": list(data.shape), "chunks": [16, 16, 16],
                             "dtype": "<u2", "fill_value": 0, "compressor": None}}
    ts.open({**spec, "create": True}).result().write(data).result()


@pytest.mark.parametrize("driver", ["n5", "zarr"])
def test_remote_chunk_files_are_not_small_units(tmp_path: Path, driver: str) -> None:
    rng = np.random.default_rng(4)
    data = rng.integers(1, 60000, (40, 33, 20)).astype(np.uint16)
    _write(tmp_path / "arr", driver, data)
    local = open_volume(tmp_path / "arr")
    units = sorted(set(local.iter_units()))
    gone = units[1]
    key = "/".join(map(str, gone)) if driver == "n5" else ".".join(map(str, gone[::-1]))
    target = tmp_path / "arr" / key
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    jobs = [(u, [0]) for u in units[:4]]
    want = local.read_units(jobs)
    assert local.small_units and want[1] is None
    with RangeServer(str(tmp_path)) as srv:
        remote = open_volume(f"{srv.url}/arr")
        assert not remote.small_units
        got = remote.read_units(jobs)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        if b is None:  # absent: None, or (a remote store) a unit whose chunk is absent
            assert a is None or a == [None]
            continue
        assert isinstance(a, list) and isinstance(b, list)
        np.testing.assert_array_equal(a[0], b[0])
