"""N5 written by tensorstore (edge chunks padded, every compression it has: raw, gzip, gzip
with useZlib, bzip2, xz, blosc, zstd) and by z5py (edge chunks truncated; its lz4 is a bare
LZ4 block), read voxel for voxel; the volume contract on both."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from n5_writers import chunk_files, source, write_tensorstore, write_z5py
from volume_contract import VolumeContract

from viewer.format import open_volume
from viewer.format.n5 import codecs

ts = pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")

TS_COMPRESSIONS = {
    "raw": {"type": "raw"},
    "gzip": {"type": "gzip", "level": 5},
    "zlib": {"type": "gzip", "useZlib": True},
    "bzip2": {"type": "bzip2", "blockSize": 9},
    "xz": {"type": "xz", "preset": 6},
    "blosc": {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
    "blosc-zstd": {"type": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2},
    "zstd": {"type": "zstd", "level": 3},
}
NEEDS_NUMCODECS = {"blosc", "blosc-zstd", "zstd"}
SHAPE = (41, 23, 19)
BLOCK = (16, 8, 8)


def _numcodecs_or_skip(name: str) -> None:
    if name in NEEDS_NUMCODECS and not codecs.numcodecs_available():
        print(f"SKIP {name}: numcodecs (the n5 extra) is not installed")
        pytest.skip("numcodecs (the n5 extra) is not installed")


@pytest.mark.parametrize("name", sorted(TS_COMPRESSIONS))
def test_tensorstore_compressions(tmp_path: Path, name: str) -> None:
    _numcodecs_or_skip(name)
    arr = source(SHAPE, "uint16", seed=5)
    write_tensorstore(tmp_path / name, arr, BLOCK, TS_COMPRESSIONS[name])
    v = open_volume(tmp_path / name)
    np.testing.assert_array_equal(v.read((0, 0, 0), SHAPE)[0], arr)
    # padded edge chunks, as tensorstore writes them
    facts = v.describe_chunk((2, 2, 2))
    assert facts["edge"] == "padded" and facts["stored_block_size"] == list(BLOCK)
    if name == "zlib":
        assert facts["stream"] == "zlib"
    elif name == "gzip":
        assert facts["stream"] == "gzip"


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int64", "uint64", "float32", "float64"])
def test_tensorstore_data_types(tmp_path: Path, dtype: str) -> None:
    arr = source((20, 9, 10), dtype, seed=8)
    write_tensorstore(tmp_path / "d", arr, (8, 8, 4), {"type": "gzip"})
    v = open_volume(tmp_path / "d")
    got = v.read((0, 0, 0), arr.shape)[0]
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, arr)


def test_tensorstore_reads_what_we_read(tmp_path: Path) -> None:
    """Both readers agree on a box, tensorstore reading its own dataset."""
    arr = source(SHAPE, "int16", seed=9)
    write_tensorstore(tmp_path / "d", arr, BLOCK, {"type": "xz"})
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(tmp_path / "d")}}
                ).result()
    ours = open_volume(tmp_path / "d").read((3, 4, 5), (30, 15, 12))[0]
    np.testing.assert_array_equal(ours, t[3:33, 4:19, 5:17].read().result())


z5py_missing = None
try:
    import z5py  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    z5py_missing = f"z5py is not installed: {exc}"


@pytest.mark.skipif(z5py_missing is not None, reason=str(z5py_missing))
@pytest.mark.parametrize("comp", ["raw", "gzip", "bzip2", "xz", "lz4", "blosc"])
def test_z5py_compressions(tmp_path: Path, comp: str) -> None:
    _numcodecs_or_skip("blosc" if comp == "blosc" else comp)
    arr = source(SHAPE, "uint16", seed=6)
    path = write_z5py(tmp_path / "c.n5", comp, arr, BLOCK, comp)
    v = open_volume(path)
    np.testing.assert_array_equal(v.read((0, 0, 0), SHAPE)[0], arr)
    facts = v.describe_chunk((2, 2, 2))
    assert facts["edge"] == "truncated" and facts["stored_block_size"] == [9, 7, 3]
    if comp == "lz4":
        assert facts["lz4_framing"] == "bare block"


# -- the volume contract -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def _written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("ts-contract")
    arr = source(SHAPE, "uint16", seed=11)
    write_tensorstore(root / "d", arr, BLOCK, {"type": "gzip"})
    # make chunks absent (tensorstore writes every chunk of non-fill data)
    shutil.rmtree(root / "d" / "0" / "0")
    arr[:16, :8, :] = 0
    return root / "d", arr


class TestTensorstoreContract(VolumeContract):
    @pytest.fixture
    def contract_volume(self, _written: tuple[Path, Any]) -> Any:
        return open_volume(_written[0])

    @pytest.fixture
    def contract_truth(self, _written: tuple[Path, Any]) -> Any:
        return _written[1][None]

    @pytest.fixture
    def contract_damaged(self, tmp_path: Path, _written: tuple[Path, Any]) -> Any:
        copy = tmp_path / "d"
        shutil.copytree(_written[0], copy)
        target = copy / "1" / "1" / "1"
        data = bytearray(target.read_bytes())
        data[20:40] = b"\xff" * 20
        target.write_bytes(bytes(data))
        return open_volume(copy), (1, 1, 1)


class TestJavaContract(VolumeContract):
    @pytest.fixture
    def contract_volume(self, java_n5: dict[str, Any]) -> Any:
        return open_volume(java_n5["lz4-1024"][0])

    @pytest.fixture
    def contract_truth(self, java_n5: dict[str, Any]) -> Any:
        return java_n5["lz4-1024"][1][None]

    @pytest.fixture
    def contract_damaged(self, tmp_path: Path, java_n5: dict[str, Any]) -> Any:
        copy = tmp_path / "d"
        shutil.copytree(java_n5["lz4-1024"][0], copy)
        unit = sorted(chunk_files(copy))[-1]
        target = copy.joinpath(*map(str, unit))
        data = target.read_bytes()
        target.write_bytes(data[: len(data) // 2])
        return open_volume(copy), unit


def test_axes_beyond_xyz(tmp_path: Path) -> None:
    """A 2-D dataset is one Z slice; a 4th axis named c (one block holding every channel)
    is the channel axis; a 4th axis of size 1 is dropped; a larger one is an error naming
    it."""
    from viewer.format import UnsupportedFormatError

    flat = source((30, 20, 1), "uint8", seed=41)[:, :, 0]
    write_tensorstore(tmp_path / "2d", flat, (16, 16), {"type": "gzip"})
    v = open_volume(tmp_path / "2d")
    assert v.shape == (30, 20, 1) and v.chunk_shape == (16, 16, 1)
    np.testing.assert_array_equal(v.read((0, 0, 0), (30, 20, 1))[0, :, :, 0], flat)
    assert sorted(v.iter_units()) == [(i, j, 0) for i in range(2) for j in range(2)]

    rgb = np.stack([source((12, 10, 5), "uint16", seed=s) for s in (1, 2, 3)], axis=-1)
    write_tensorstore(tmp_path / "c", rgb, (8, 8, 4, 3), {"type": "raw"},
                      extra={"axes": ["x", "y", "z", "c"]})
    v = open_volume(tmp_path / "c")
    assert v.num_channels == 3 and v.shape == (12, 10, 5)
    np.testing.assert_array_equal(v.read((0, 0, 0), v.shape), np.moveaxis(rgb, -1, 0))
    [chunk] = v.open_unit((1, 1, 1)).read_chunks([0])  # type: ignore[union-attr]
    assert chunk.shape == (3, 8, 8, 4)  # type: ignore[union-attr]

    t1 = source((12, 10, 5), "int32", seed=4)[..., None]
    write_tensorstore(tmp_path / "t", t1, (8, 8, 4, 1), {"type": "gzip"})
    v = open_volume(tmp_path / "t")
    np.testing.assert_array_equal(v.read((0, 0, 0), v.shape)[0], t1[..., 0])

    t2 = np.concatenate([t1, t1], axis=-1)
    write_tensorstore(tmp_path / "t2", t2, (8, 8, 4, 1), {"type": "gzip"},
                      extra={"axes": ["x", "y", "z", "t"]})
    with pytest.raises(UnsupportedFormatError, match="t \\(2\\)"):
        open_volume(tmp_path / "t2")
