"""N5 written the N5 Java way with the real Java streams (lz4-java's LZ4BlockOutputStream,
Commons Compress gzip / bzip2 / xz, java.util.zip's deflater), read voxel for voxel, and the
inspector's chunk facts against the files read independently."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DTYPES, JAVA_BLOCK, JAVA_COMPRESSIONS
from n5_writers import chunk_files, lz4java_frames

from viewer.format import ChecksumError, ChunkDecodeError, FormatError, open_dataset, open_volume
from viewer.format.n5 import lz4java


@pytest.mark.parametrize("comp", [f"{c}-{p}" for c, p in JAVA_COMPRESSIONS])
def test_java_compression_reads_back(java_n5: dict[str, Any], comp: str) -> None:
    path, arr = java_n5[comp]
    v = open_volume(path)
    assert v.format == "n5"
    assert v.shape == arr.shape and v.chunk_shape == JAVA_BLOCK
    got = v.read((0, 0, 0), arr.shape)
    assert got.shape == (1, *arr.shape) and got.dtype == arr.dtype
    np.testing.assert_array_equal(got[0], arr)
    # a box across chunk edges and past the end
    np.testing.assert_array_equal(v.read((5, 3, 2), (40, 30, 30))[0, :32, :26, :19],
                                  arr[5:, 3:, 2:])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("comp", ["lz4", "raw"])
def test_java_data_types(java_n5: dict[str, Any], dtype: str, comp: str) -> None:
    path, arr = java_n5[f"dtype-{dtype}" if comp == "lz4" else f"dtype-raw-{dtype}"]
    v = open_volume(path)
    assert v.dtype == np.dtype(dtype) and v.dtype.isnative
    got = v.read((0, 0, 0), arr.shape)[0]
    np.testing.assert_array_equal(got, arr)
    chunk = v.open_unit((0, 0, 0))
    assert chunk is not None
    [decoded] = chunk.read_chunks([0])
    assert not isinstance(decoded, FormatError) and decoded is not None
    assert decoded.shape == (1, 8, 4, 4) and decoded.flags.f_contiguous
    np.testing.assert_array_equal(decoded[0], arr[:8, :4, :4])


def test_java_sparse_chunks_are_absent(java_n5: dict[str, Any]) -> None:
    path, arr = java_n5["gzip-6"]
    v = open_volume(path)
    files = chunk_files(path)
    grid = [-(-s // b) for s, b in zip(arr.shape, JAVA_BLOCK, strict=True)]
    everything = {(i, j, k) for i in range(grid[0]) for j in range(grid[1])
                  for k in range(grid[2])}
    absent = everything - set(files)
    assert absent, "the fixture should leave empty chunks unwritten"
    assert set(v.iter_units()) == set(files)
    for unit in absent:
        assert v.open_unit(unit) is None
        lo = [u * b for u, b in zip(unit, JAVA_BLOCK, strict=True)]
        assert not v.read(lo, JAVA_BLOCK).any()


def test_java_edge_chunks_are_truncated(java_n5: dict[str, Any]) -> None:
    path, arr = java_n5["bzip2-9"]
    v = open_volume(path)
    last = (2, 3, 2)  # 37 = 2*16 + 5, 29 = 3*8 + 5, 21 = 2*8 + 5
    facts = v.describe_chunk(last)
    assert facts["stored_block_size"] == [5, 5, 5]
    assert facts["edge"] == "truncated"
    assert facts["block_size"] == list(JAVA_BLOCK)
    unit = v.open_unit(last)
    assert unit is not None
    [decoded] = unit.read_chunks([0])
    assert isinstance(decoded, np.ndarray) and decoded.shape == (1, *JAVA_BLOCK)
    np.testing.assert_array_equal(decoded[0, :5, :5, :5], arr[32:, 24:, 16:])
    assert not decoded[0, 5:].any()


def test_java_varlength_headers(java_n5: dict[str, Any]) -> None:
    path, arr = java_n5["varlength"]
    v = open_volume(path)
    np.testing.assert_array_equal(v.read((0, 0, 0), arr.shape)[0], arr)
    facts = v.describe_chunk((0, 0, 0))
    assert facts["mode"] == "varlength" and facts["header_bytes"] == 20


@pytest.mark.parametrize("name", ["lz4-1024", "big-lz4"])
def test_lz4_inspector_facts_match_the_files(java_n5: dict[str, Any], name: str) -> None:
    path, arr = java_n5[name]
    v = open_volume(path)
    files = chunk_files(path)
    assert files
    itemsize = arr.dtype.itemsize
    block = v.chunk_shape
    several = 0
    for unit, size in files.items():
        data = (Path(path) / "/".join(map(str, unit))).read_bytes()
        mode, ndim = struct.unpack(">HH", data[:4])
        dims = struct.unpack(">3I", data[4:16])
        frames = lz4java_frames(data[16:])
        su = v.open_unit(unit)
        assert su is not None and su.size == size == os.path.getsize(
            Path(path) / "/".join(map(str, unit)))
        assert su.chunk_table().nbytes.tolist() == [size]
        facts = su.describe_chunk(0)
        assert "problem" not in facts, facts
        assert facts["grid"] == list(unit)
        assert facts["file_bytes"] == size
        assert facts["mode"] == "default" and mode == 0 and ndim == 3
        assert facts["stored_block_size"] == list(dims)
        clipped = [min(b, s - u * b) for u, b, s in zip(unit, block, arr.shape, strict=True)]
        assert list(dims) == clipped
        assert facts["edge"] == ("full" if clipped == list(block) else "truncated")
        assert facts["payload_bytes"] == size - 16
        assert facts["uncompressed_bytes"] == int(np.prod(dims)) * itemsize
        assert facts["ratio"] == pytest.approx(facts["uncompressed_bytes"] / (size - 16),
                                               rel=1e-3)
        got = [(f["method"], f["compressed_bytes"], f["original_bytes"])
               for f in facts["lz4_frames"]]
        want = [("end" if c == 0 and o == 0 else {0x10: "raw", 0x20: "lz4"}[t & 0xF0], c, o)
                for t, c, o in frames]
        assert got == want
        assert sum(o for _, _, o in frames) == facts["uncompressed_bytes"]
        several += len(frames) > 2
    assert several, "some chunk should span several lz4-java frames"


def test_lz4_checksums_are_lz4_javas(java_n5: dict[str, Any]) -> None:
    if not lz4java.checksums_available:
        pytest.skip("the xxhash package is not installed: checksums are not verified")
    path, _ = java_n5["lz4-1024"]
    unit = next(iter(chunk_files(path)))
    data = (Path(path) / "/".join(map(str, unit))).read_bytes()
    # the first frame's checksum as Java stored it equals ours over the decoded bytes
    token, comp, orig = lz4java_frames(data[16:])[0]
    (stored,) = struct.unpack("<I", data[16 + 17:16 + 21])
    decoded = lz4java.decode(data[16:], "x")
    assert lz4java.checksum(decoded[:orig]) == stored
    # a flipped checksum is a ChecksumError of that chunk
    bad = bytearray(data)
    bad[16 + 17] ^= 0x01
    v = open_volume(path)
    with pytest.raises(ChecksumError) as err:
        v.decode_chunk(unit, bytes(bad))  # type: ignore[attr-defined]
    assert err.value.chunk == unit and err.value.offset == 16 + 17


def test_lz4_stream_without_end_frame(java_n5: dict[str, Any]) -> None:
    path, _ = java_n5["lz4-1024"]
    unit = next(iter(chunk_files(path)))
    data = (Path(path) / "/".join(map(str, unit))).read_bytes()
    v = open_volume(path)
    with pytest.raises(ChunkDecodeError, match="end frame"):
        v.decode_chunk(unit, data[:-21])  # type: ignore[attr-defined]


def test_java_container_lists_every_dataset(java_container: Path,
                                            java_n5: dict[str, Any]) -> None:
    ds = open_dataset(java_container)
    assert ds.format == "n5"
    assert sorted(layer.name for layer in ds.layers) == sorted(java_n5)
    assert not ds.problems
    layer = ds.layer("gzip-6")
    assert layer.bounding_box.size == java_n5["gzip-6"][1].shape
    v = open_volume(java_container, layer="xz-6")
    np.testing.assert_array_equal(v.read((0, 0, 0), v.shape)[0], java_n5["xz-6"][1])


@pytest.mark.parametrize("name", ["raw-0", "gzip-6", "zlib-6", "bzip2-9", "xz-6", "varlength"])
def test_tensorstore_agrees_on_the_java_datasets(java_n5: dict[str, Any], name: str) -> None:
    """The Java-written datasets are N5 as a third reader sees it (tensorstore cannot read
    lz4-java's framing nor varlength headers: those are ours alone)."""
    ts = pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is missing")
    path, arr = java_n5[name]
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}).result()
    if name == "varlength":  # tensorstore refuses varlength headers; we read them
        with pytest.raises(ValueError, match="varlength"):
            t.read().result()
        np.testing.assert_array_equal(open_volume(path).read((0, 0, 0), arr.shape)[0], arr)
        return
    theirs = t.read().result()
    np.testing.assert_array_equal(theirs, arr)
    np.testing.assert_array_equal(open_volume(path).read((0, 0, 0), arr.shape)[0], theirs)
