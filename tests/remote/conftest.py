"""Fixtures of the remote tests: datasets written by the reference ``wkw`` library, a
range-capable HTTP server on 127.0.0.1 (``range_server.py``) serving them, an S3 server
(moto's, on 127.0.0.1: ``tests/moto_s3.py``) holding the same files, and a fresh on-disk range
cache per test (never the user's)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from range_server import RangeServer

from viewer import environment
from viewer.format.remote import config as remote_config

#: The test volume: 2 x 2 x 1 files of 4^3 blocks of 8^3 voxels, one file absent.
SHAPE = (64, 64, 32)
ABSENT_FILE = (1, 1, 0)


#: The shape of the ``foreign`` datasets.
FOREIGN_SHAPE = (40, 36, 20)


def truth_volume() -> np.ndarray:
    rng = np.random.default_rng(16)
    vol = rng.integers(0, 60000, SHAPE, dtype=np.uint16)
    vol[32:64, 32:64, 0:32] = 0  # the absent file
    return vol


def write_reference(path: Path, vol: np.ndarray, block_type: str = "lz4hc") -> None:
    """A WKW dataset written by the reference library (LZ4HC or raw), without ABSENT_FILE."""
    import wkw as reference

    bt = {"lz4hc": reference.Header.BLOCK_TYPE_LZ4HC, "raw": reference.Header.BLOCK_TYPE_RAW}
    header = reference.Header(vol.dtype.type, block_len=8, file_len=4, block_type=bt[block_type])
    with reference.Dataset.create(str(path), header) as ds:
        for fx in range(2):
            for fy in range(2):
                if (fx, fy, 0) == ABSENT_FILE:
                    continue
                ds.write((32 * fx, 32 * fy, 0),
                         np.ascontiguousarray(vol[32 * fx:32 * fx + 32, 32 * fy:32 * fy + 32]))


def write_properties(root: Path) -> None:
    """A webKnossos dataset around ``color/1`` (declared box smaller than the files)."""
    doc = {"id": {"name": "remote", "team": ""}, "scale": {"factor": [11.2, 11.2, 25.0],
                                                          "unit": "nanometer"},
           "dataLayers": [{"name": "color", "category": "color", "dataFormat": "wkw",
                           "elementClass": "uint16",
                           "boundingBox": {"topLeft": [3, 2, 1], "width": 60, "height": 61,
                                           "depth": 30},
                           "mags": [{"mag": [1, 1, 1], "path": "./color/1"}]}]}
    (root / "datasource-properties.json").write_text(json.dumps(doc))


@pytest.fixture(scope="session")
def truth() -> np.ndarray:
    return truth_volume()


@pytest.fixture(scope="session")
def data_root(tmp_path_factory: pytest.TempPathFactory, truth: np.ndarray) -> Path:
    """``ds/`` (webKnossos: ``color/1`` LZ4HC), ``raw/`` (a raw WKW dataset)."""
    root = tmp_path_factory.mktemp("remote-data")
    (root / "ds" / "color").mkdir(parents=True)
    write_reference(root / "ds" / "color" / "1", truth)
    write_properties(root / "ds")
    write_reference(root / "raw", truth, "raw")
    return root


@pytest.fixture(autouse=True)
def fresh_remote_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test its own range cache, short timeouts, and settings read afresh."""
    monkeypatch.setenv(environment.CACHE_DIR_ENV, str(tmp_path / "range-cache"))
    monkeypatch.setenv(environment.TIMEOUT_ENV, "5")
    monkeypatch.setenv(environment.ANON_ENV, "0")  # undone after the test, whatever it set
    remote_config.reset(environment.read_config(os.environ))
    yield
    remote_config.reset(environment.read_config(os.environ))


@pytest.fixture
def http(data_root: Path) -> Iterator[RangeServer]:
    with RangeServer(str(data_root)) as srv:
        yield srv


@pytest.fixture(scope="session")
def moto_server(data_root: Path) -> Iterator[dict[str, Any]]:
    """An S3 server on 127.0.0.1 with bucket ``bkt`` holding ``data_root`` under ``data/``."""
    pytest.importorskip("moto.server", reason="moto is not installed")
    pytest.importorskip("boto3", reason="boto3 is not installed")
    from moto_s3 import MotoS3

    with MotoS3() as srv:
        s3 = srv.fill_bucket(data_root, "data/", public=True)
        yield {"endpoint": srv.endpoint, "env": srv.environment, "client": s3}


@pytest.fixture
def s3(moto_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for k, v in moto_server["env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    remote_config.reset(environment.read_config(os.environ))
    return moto_server


def foreign_data() -> np.ndarray:
    """The array of the ``foreign`` datasets (x, y, z as the writers index it)."""
    return np.random.default_rng(27).integers(1, 60000, FOREIGN_SHAPE, dtype=np.uint16)


@pytest.fixture(scope="session")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same array written by other tools: ``n5/`` (tensorstore, gzip), ``zarr3/``
    (tensorstore, sharded, zstd, crc32c index), ``zarr2/`` (zarr-python), and ``wkw/`` (the
    reference ``wkw``, the test volume of ``truth_volume``)."""
    ts = pytest.importorskip("tensorstore")
    root = tmp_path_factory.mktemp("foreign")
    data = foreign_data()
    kv = {"driver": "file"}
    ts.open({"driver": "n5", "kvstore": {**kv, "path": str(root / "n5")}, "create": True,
             "metadata": {"dimensions": list(FOREIGN_SHAPE), "blockSize": [16, 16, 16],
                          "dataType": "uint16", "compression": {"type": "gzip"}}}
            ).result().write(data).result()
    ts.open({"driver": "zarr3", "kvstore": {**kv, "path": str(root / "zarr3")}, "create": True,
             "metadata": {"shape": list(FOREIGN_SHAPE), "data_type": "uint16",
                          "chunk_grid": {"name": "regular",
                                         "configuration": {"chunk_shape": [32, 32, 32]}},
                          "codecs": [{"name": "sharding_indexed", "configuration": {
                              "chunk_shape": [16, 16, 16],
                              "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                         {"name": "zstd", "configuration": {"level": 3}}],
                              "index_codecs": [{"name": "bytes",
                                                "configuration": {"endian": "little"}},
                                               {"name": "crc32c"}]}}]}}
            ).result().write(data).result()
    import zarr

    z2 = zarr.open_array(str(root / "zarr2"), mode="w", shape=FOREIGN_SHAPE, chunks=(16, 16, 16),
                         dtype="<u2", zarr_format=2)
    z2[...] = data
    write_reference(root / "wkw", truth_volume(), "lz4hc")
    return root
