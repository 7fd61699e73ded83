"""Zarr v3 (sharded) and N5 over HTTP: the same readers through a remote Store, voxel for voxel
equal to the local reads (arrays written by tensorstore)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from range_server import RangeServer

from viewer.format import open_volume

ts = pytest.importorskip("tensorstore")


def write(root: Path, driver: str, data: np.ndarray) -> None:
    if driver == "zarr3":
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root)},
                "metadata": {"shape": list(data.shape), "data_type": "uint16",
                             "chunk_grid": {"name": "regular",
                                            "configuration": {"chunk_shape": [32, 32, 32]}},
                             "codecs": [{"name": "sharding_indexed", "configuration": {
                                 "chunk_shape": [16, 16, 16],
                                 "codecs": [{"name": "bytes",
                                             "configuration": {"endian": "little"}},
                                            {"name": "zstd", "configuration": {"level": 3}}],
                                 "index_codecs": [{"name": "bytes",
                                                   "configuration": {"endian": "little"}},
                                                  {"name": "crc32c"}]}}],
                             "dimension_names": ["z", "y", "x"]},
                "create": True}
    else:
        spec = {"driver": "n5", "kvstore": {"driver": "file", "path": str(root)},
                "metadata": {"dimensions": list(data.shape), "blockSize": [16, 16, 16],
                             "dataType": "uint16", "compression": {"type": "gzip"}},
                "create": True}
    arr = ts.open(spec).result()
    arr.write(data).result()


@pytest.mark.parametrize("driver", ["zarr3", "n5"])
def test_zarr_and_n5_over_http(tmp_path: Path, driver: str) -> None:
    rng = np.random.default_rng(2)
    data = rng.integers(0, 60000, (40, 48, 36)).astype(np.uint16)
    write(tmp_path / "arr", driver, data)
    local = open_volume(tmp_path / "arr")
    with RangeServer(str(tmp_path)) as srv:
        remote = open_volume(f"{srv.url}/arr")
        assert remote.format == local.format and remote.shape == local.shape
        np.testing.assert_array_equal(remote.read((0, 0, 0), remote.shape),
                                      local.read((0, 0, 0), local.shape))


def _until(cond: object, seconds: float = 30.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.005)
    return bool(cond())  # type: ignore[operator]


@pytest.mark.parametrize("driver", ["zarr3", "n5"])
def test_zarr_and_n5_read_ahead_over_http_and_its_stop(tmp_path: Path, driver: str) -> None:
    """A hint (``will_need``) fetches a unit's chunks ahead: read then, they cost no
    request.  After the cursor moved on (``drop_read_ahead``), the read-ahead of the units
    left, held on the wire, is stopped; the kept unit's is not."""
    from viewer.format.remote import configure, stats

    configure(merge_gap=0, timeout_s=30)
    rng = np.random.default_rng(3)
    data = rng.integers(0, 60000, (64, 64, 32)).astype(np.uint16)
    write(tmp_path / "arr", driver, data)
    local = open_volume(tmp_path / "arr")
    with RangeServer(str(tmp_path)) as srv:
        remote = open_volume(f"{srv.url}/arr")
        here = remote.open_unit((0, 0, 0))
        assert here is not None
        srv.reset_counts()
        here.will_need([0])
        assert _until(lambda: srv.requests >= 1 and stats().in_flight == 0)
        srv.reset_counts()
        [got] = here.read_chunks([0])
        [want] = local.open_unit((0, 0, 0)).read_chunks([0])  # type: ignore[union-attr]
        np.testing.assert_array_equal(got, want)
        assert srv.requests == 0
        there = remote.open_unit((0, 1, 0))
        assert there is not None
        srv.hang = True
        before = stats().cancelled
        there.will_need([0, 1])
        assert _until(lambda: srv.hanging >= 1)
        remote.drop_read_ahead([(0, 0, 0)])  # type: ignore[attr-defined]
        assert _until(lambda: stats().cancelled > before)
        srv.release()
