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
