"""Arrays written by zarr-python 3.1 (v3 sharded and not, v2 with every compressor) read voxel
for voxel through ``open_volume``, compared with what zarr-python reads back."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")
numcodecs = pytest.importorskip("numcodecs")

from zarr.codecs import (  # noqa: E402
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)
from zarr_test_fixtures import sample  # noqa: E402
from zarr_test_truth import to_cxyz  # noqa: E402

from viewer.format import ChunkTable, open_dataset, open_volume  # noqa: E402

INT_FLOAT = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64"]


def _write_partial(arr: Any, data: np.ndarray) -> None:
    """Write all but the far corner of the array (leaving chunks and shards absent)."""
    idx = tuple(slice(0, max(1, math.ceil(s * 0.6))) if k >= arr.ndim - 2 else slice(None)
                for k, s in enumerate(data.shape))
    arr[...] = data
    arr[idx] = arr.fill_value


def _check(path: Path, x: int | None, y: int | None, z: int | None,
           c: int | None = None) -> None:
    truth_nd = zarr.open_array(str(path), mode="r")[...]
    want = to_cxyz(truth_nd, x, y, z, c)
    with open_volume(path) as v:
        got = v.read((0, 0, 0), want.shape[1:])
        assert got.dtype == want.dtype.newbyteorder("=")  # native, whatever is stored
        np.testing.assert_array_equal(got, want)
        # an unaligned box crossing chunk and shard edges, and one past the end
        lo = [max(0, s // 3 - 1) for s in want.shape[1:]]
        size = [max(1, s - lo_ - 1) for s, lo_ in zip(want.shape[1:], lo, strict=True)]
        got = v.read(lo, [sz + 4 for sz in size])
        np.testing.assert_array_equal(
            got[:, :size[0], :size[1], :size[2]],
            want[:, lo[0]:lo[0] + size[0], lo[1]:lo[1] + size[1], lo[2]:lo[2] + size[2]])
        tail = got[:, want.shape[1] - lo[0]:, :, :]
        assert (tail == v.fill_value).all() or (np.isnan(v.fill_value) and np.isnan(tail).all())


V3_CASES: dict[str, dict[str, Any]] = {
    "zyx-sharded-zstd-end": dict(
        shape=(20, 30, 40), shards=(16, 16, 16), chunks=(8, 8, 8), names=["z", "y", "x"],
        codecs=[BytesCodec(), ZstdCodec(level=3)], index="end", axes=(2, 1, 0, None),
        dtype="uint8", fill=0),
    "cxyz-transpose-gzip-start": dict(
        shape=(2, 36, 20, 24), shards=(2, 16, 16, 16), chunks=(2, 8, 8, 8),
        names=["c", "x", "y", "z"],
        codecs=[TransposeCodec(order=(3, 2, 1, 0)), BytesCodec(), GzipCodec(level=4)],
        index="start", axes=(1, 2, 3, 0), dtype="int16", fill=-3),
    "unnamed-big-endian-blosc": dict(
        shape=(18, 22, 26), shards=None, chunks=(8, 8, 8), names=None,
        codecs=[BytesCodec(endian="big"), BloscCodec(cname="lz4", clevel=5,
                                                     shuffle="shuffle")],
        axes=(2, 1, 0, None), dtype="float32", fill=float("nan")),
    "tczyx-crc32c-sharded": dict(
        shape=(1, 1, 12, 20, 28), shards=(1, 1, 8, 16, 16), chunks=(1, 1, 4, 8, 8),
        names=["t", "c", "z", "y", "x"], codecs=[BytesCodec(), Crc32cCodec()], index="end",
        axes=(4, 3, 2, 1), dtype="uint64", fill=5),
    "yx-2d": dict(
        shape=(33, 45), shards=None, chunks=(16, 16), names=["y", "x"],
        codecs=[BytesCodec(), ZstdCodec()], axes=(1, 0, None, None), dtype="uint32", fill=0),
    "xyz-transpose-gzip-crc": dict(
        shape=(24, 17, 9), shards=(16, 16, 8), chunks=(8, 8, 4), names=["x", "y", "z"],
        codecs=[TransposeCodec(order=(1, 0, 2)), BytesCodec(endian="big"), GzipCodec(),
                Crc32cCodec()], index="start", axes=(0, 1, 2, None), dtype="int32", fill=0),
    "v2-chunk-keys-float64": dict(
        shape=(12, 14, 30), shards=(8, 8, 16), chunks=(4, 4, 8), names=["z", "y", "x"],
        codecs=[BytesCodec(), ZstdCodec()], index="end", axes=(2, 1, 0, None),
        dtype="float64", fill=float("-inf"), keys={"name": "v2", "separator": "."}),
}


def _create_v3(path: Path, case: dict[str, Any]) -> Any:
    if case["shards"] is not None:
        codecs = [ShardingCodec(chunk_shape=case["chunks"], codecs=case["codecs"],
                                index_location=case["index"])]
        grid = case["shards"]
    else:
        codecs = case["codecs"]
        grid = case["chunks"]
    extra = {"chunk_key_encoding": case["keys"]} if "keys" in case else {}
    return zarr.create(shape=case["shape"], chunks=grid, dtype=case["dtype"], zarr_format=3,
                       store=str(path), codecs=codecs, fill_value=case["fill"],
                       dimension_names=case["names"], **extra)


@pytest.mark.parametrize("name", list(V3_CASES))
def test_v3(tmp_path: Path, name: str) -> None:
    case = V3_CASES[name]
    arr = _create_v3(tmp_path / name, case)
    _write_partial(arr, sample(case["shape"], case["dtype"]))
    x, y, z, c = case["axes"]
    _check(tmp_path / name, x, y, z, c)
    with open_volume(tmp_path / name) as v:
        assert v.format == "zarr3"
        units = list(v.iter_units())
        assert units and all(v.open_unit(u) is not None for u in units)


@pytest.mark.parametrize("dtype", INT_FLOAT)
def test_v3_every_dtype_sharded(tmp_path: Path, dtype: str) -> None:
    shape = (10, 20, 36)
    arr = zarr.create_array(store=str(tmp_path / "a"), shape=shape, chunks=(4, 8, 8),
                            shards=(8, 16, 16), dtype=dtype, compressors=[ZstdCodec()],
                            dimension_names=["z", "y", "x"], fill_value=1)
    _write_partial(arr, sample(shape, dtype, seed=3))
    _check(tmp_path / "a", 2, 1, 0)


V2_COMPRESSORS = {
    "zstd": lambda: numcodecs.Zstd(level=3),
    "blosc": lambda: numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
    "gzip": lambda: numcodecs.GZip(level=5),
    "zlib": lambda: numcodecs.Zlib(level=5),
    "lz4": lambda: numcodecs.LZ4(),
    "none": lambda: None,
}


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("separator", [".", "/"])
@pytest.mark.parametrize("compressor", list(V2_COMPRESSORS))
def test_v2(tmp_path: Path, compressor: str, separator: str, order: str) -> None:
    shape = (19, 23, 30)
    dtype = {"zstd": "<u2", "blosc": "<f8", "gzip": ">i4", "zlib": "|i1", "lz4": ">u2",
             "none": "<f4"}[compressor]
    comp = V2_COMPRESSORS[compressor]()
    arr = zarr.create_array(store=str(tmp_path / "a"), shape=shape, chunks=(8, 8, 16),
                            dtype=dtype, zarr_format=2,
                            compressors=comp if comp is not None else None,
                            order=order, fill_value=2,
                            chunk_key_encoding={"name": "v2", "separator": separator})
    _write_partial(arr, sample(shape, dtype, seed=5))
    _check(tmp_path / "a", 2, 1, 0)
    with open_volume(tmp_path / "a") as v:
        assert v.format == "zarr"
        assert v.meta.codec.fortran == (order == "F")
        assert v.info().compression == ("raw" if compressor == "none" else compressor)
        units = sorted(v.iter_units())
        unit = v.open_unit(units[0])
        assert unit is not None and unit.describe_chunk(0)["stored_bytes"] == unit.size
        grid = [-(-s // c) for s, c in zip(shape, (8, 8, 16), strict=True)]
        assert units and len(units) < math.prod(grid)


@pytest.mark.parametrize("dtype", INT_FLOAT)
def test_v2_every_dtype(tmp_path: Path, dtype: str) -> None:
    shape = (9, 17, 21)
    arr = zarr.create_array(store=str(tmp_path / "a"), shape=shape, chunks=(4, 8, 8),
                            dtype=dtype, zarr_format=2, compressors=numcodecs.Zstd(),
                            fill_value=0)
    _write_partial(arr, sample(shape, dtype, seed=9))
    _check(tmp_path / "a", 2, 1, 0)


def test_shard_index_is_the_chunk_table(tmp_path: Path) -> None:
    """The unit's ChunkTable is the shard index read independently from the shard's bytes,
    and a chunk's index is the C order of the inner grid in the array's axis order."""
    case = V3_CASES["zyx-sharded-zstd-end"]
    arr = _create_v3(tmp_path / "a", case)
    data = sample(case["shape"], case["dtype"])
    arr[...] = data
    arr[8:16, 0:8, 0:8] = 0  # one inner chunk of shard (0, 0, 0) absent
    with open_volume(tmp_path / "a") as v:
        assert v.unit_shape == (2, 2, 2) and v.chunk_shape == (8, 8, 8)
        unit = v.open_unit((0, 0, 0))
        assert unit is not None
        raw = (tmp_path / "a" / "c" / "0" / "0" / "0").read_bytes()
        n = 8
        index = np.frombuffer(raw[-(16 * n + 4):-4], "<u8").reshape(n, 2)
        table: ChunkTable = unit.chunk_table()
        absent = (index == np.uint64(2**64 - 1)).all(axis=1)
        assert absent.tolist() == (~table.present).tolist()
        assert absent.sum() == 1
        assert (table.offsets[~absent] == index[~absent, 0].astype(np.int64)).all()
        assert (table.nbytes[~absent] == index[~absent, 1].astype(np.int64)).all()
        # inner chunk (z=1, y=0, x=0) in C order of (z, y, x) is index 4;
        # as (x, y, z) local (0, 0, 1)
        assert int(v.chunk_index(np.asarray([[0, 0, 1]]))[0]) == 4
        assert v.chunk_local(np.asarray([4])).tolist() == [[0, 0, 1]]
        assert not table.present[4]
        results = unit.read_chunks([0, 4, 1])
        assert results[1] is None
        chunk0 = results[0]
        assert chunk0 is not None and not isinstance(chunk0, Exception)
        np.testing.assert_array_equal(chunk0[0], data[0:8, 0:8, 0:8].transpose(2, 1, 0))
        # index 1 is (z=0, y=0, x=1): x voxels 8..16
        chunk1 = results[2]
        np.testing.assert_array_equal(chunk1[0], data[0:8, 0:8, 8:16].transpose(2, 1, 0))
        facts = unit.describe().fields
        assert facts["index_checksum"] == "ok" and facts["chunks_absent"] == 1
        assert unit.describe_chunk(4)["present"] is False
        assert unit.describe_chunk(1)["stored_bytes"] == int(index[1, 1])


def test_array_dataset_and_info(tmp_path: Path) -> None:
    case = V3_CASES["cxyz-transpose-gzip-start"]
    arr = _create_v3(tmp_path / "img", case)
    arr[...] = sample(case["shape"], case["dtype"])
    ds = open_dataset(tmp_path / "img")
    assert ds.format == "zarr3" and ds.kind == "array"
    [layer] = ds.layers
    assert layer.num_channels == 2 and layer.dtype == np.int16
    assert layer.bounding_box.size == (36, 20, 24)
    info = layer.finest.volume.info()
    assert info.format == "zarr3" and info.compression == "gzip"
    assert info.header["dimension_names"] == ["c", "x", "y", "z"]
    assert info.header["document"]["zarr_format"] == 3
    ds.close()
    # the metadata file itself opens the array too
    with open_volume(tmp_path / "img" / "zarr.json") as v:
        assert v.shape == (36, 20, 24)
