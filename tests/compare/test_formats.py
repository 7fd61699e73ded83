"""Compare through the volume interface alone: the test-only toy format (one ``.npy`` file per
chunk, ``tests/toyformat.py``) against WKW, WKW against WKW of other encodings and storage
units; chunks that line up are compared chunk against chunk wherever each side stores them,
others voxel against voxel.  Nothing here is WKW-shaped above the format layer."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import toyformat
from compare_fixtures import SIDE, file_of, volume, write_project

from viewer.cli.compare import main
from viewer.core.compare import INFO, CompareJob, VolumeSpec, compare
from viewer.format import open_volume, wkw
from viewer.ui.compare.remote import CompareProcess

RAW, LZ4, LZ4HC = wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4, wkw.BLOCK_TYPE_LZ4HC
CHANGED = (37, 5, 20)  # in the second WKW file along x: z0/y0/x1.wkw, block (0, 0, 2) of it


def toy(path, data, chunk_shape=(8, 8, 8), **kwargs):
    """``data`` (X, Y, Z) as a toy array."""
    return toyformat.write_toy(path, data[np.newaxis], chunk_shape, **kwargs)


def changed(data, pos=CHANGED, delta=7):
    out = data.copy()
    out[pos] = data[pos] - delta if data[pos] > delta else data[pos] + delta
    return out


def kinds(summary):
    return [f.kind for f in summary.structure]


@pytest.fixture
def data():
    return volume()  # (64, 64, 32) uint8, no block constant


@pytest.mark.parametrize("block_type", [RAW, LZ4HC])
def test_toy_array_equals_its_wkw_copy_both_ways(tmp_path, data, block_type):
    a = toy(tmp_path / "toy", data)
    b = write_project(tmp_path / "wkw", data, block_type)
    for x, y in ((a, b), (b, a)):
        s = compare(x, y)
        assert s.equal, s.structure
        assert s.comparable and s.mismatching_blocks == []
        assert s.blocks_compared == s.blocks_total > 0
        assert "format" in kinds(s)
        assert all(f.severity == INFO for f in s.structure)
    # A's chunks are the toy's (one per unit): 8 x 8 x 4 of them; WKW's 4 files of 64 blocks
    assert compare(a, b).blocks_compared == 8 * 8 * 4
    assert compare(b, a).blocks_compared == 4 * 64


def test_one_voxel_changed_in_the_toy_copy_is_found_and_placed(tmp_path, data):
    a = write_project(tmp_path / "wkw", data, LZ4HC)
    b = toy(tmp_path / "toy", changed(data))
    s = compare(a, b)
    assert not s.equal
    assert [(r.file, r.position, r.voxels_different, r.max_abs_diff)
            for r in s.mismatching_blocks] == [("z0/y0/x1.wkw", (32, 0, 16), 1, 7)]
    assert s.mismatching_blocks[0].morton_index == int(wkw.morton.encode(0, 0, 2))
    # the other way round the block is the toy's chunk file
    s = compare(b, a)
    assert [(r.file, r.morton_index, r.position, r.voxels_different)
            for r in s.mismatching_blocks] == [("c/4.0.2.npy", 0, (32, 0, 16), 1)]
    assert s.voxels_different == 1 and s.max_abs_diff == 7


def test_non_cubic_toy_chunks_are_compared_by_voxels(tmp_path, data):
    a = toy(tmp_path / "toy", data, chunk_shape=(16, 8, 4))
    b = write_project(tmp_path / "wkw", changed(data), RAW)
    s = compare(a, b)
    assert "chunk_shape" in kinds(s) and s.chunk_shape == (16, 8, 4)
    assert [(r.file, r.position, r.voxels_different) for r in s.mismatching_blocks] == [
        ("c/2.0.5.npy", (32, 0, 20), 1)]
    assert s.to_json()["chunk_shape"] == [16, 8, 4]
    assert compare(a, write_project(tmp_path / "same", data, LZ4)).equal


def test_absent_toy_chunks_read_as_the_fill_value(tmp_path, data):
    data[8:16, 0:8, 0:8] = 0  # toy chunk (1, 0, 0) is all zeros in WKW
    a = toy(tmp_path / "toy", data, skip=[(1, 0, 0), (2, 0, 0)])
    b = write_project(tmp_path / "wkw", data, LZ4HC)
    s = compare(a, b)
    # chunk (2, 0, 0) is absent from the toy but not zero in WKW: that block differs (named
    # by A's unit, absent as it is)
    assert [(r.file, r.position) for r in s.mismatching_blocks] == [("c/2.0.0.npy", (16, 0, 0))]
    assert s.mismatching_blocks[0].voxels_different == 8 ** 3


def test_a_damaged_toy_chunk_is_that_blocks_problem(tmp_path, data):
    a = write_project(tmp_path / "wkw", data, RAW)
    b = toy(tmp_path / "toy", data)
    (tmp_path / "toy" / "c" / "1.2.3.npy").write_bytes(b"not a numpy file")
    s = compare(a, b)
    assert not s.equal and len(s.mismatching_blocks) == 1
    r = s.mismatching_blocks[0]
    assert r.position == (8, 16, 24) and r.voxels_different is None
    assert r.error.startswith("B: ") and "1.2.3.npy" in r.error
    assert s.blocks_compared == s.blocks_total


def test_equal_stored_bytes_are_not_decoded(tmp_path, data, monkeypatch):
    a = tmp_path / "a"
    toy(a, data)
    b = tmp_path / "b"
    shutil.copytree(a, b)
    decoded = []
    original = toyformat.ToyUnit.decode

    def counting(self, index, stored):
        decoded.append(self.path)
        return original(self, index, stored)

    monkeypatch.setattr(toyformat.ToyUnit, "decode", counting)
    assert compare(a, b).equal
    assert decoded == []  # same format, same encoding, same bytes: nothing decoded
    toy(b, changed(data))  # rewrites every chunk file with the same bytes but one
    import viewer.core.compare.job as job_module

    monkeypatch.setattr(job_module, "diagnose", lambda *args: [])  # it reads samples itself
    s = compare(a, b)
    assert len(s.mismatching_blocks) == 1
    assert sorted(set(decoded)) == sorted({str(a / "c" / "4.0.2.npy"), str(b / "c" / "4.0.2.npy")})


def test_identical_wkw_copies_are_not_decoded(tmp_path, data, monkeypatch):
    a = write_project(tmp_path / "a", data, LZ4HC)
    b = tmp_path / "b"
    shutil.copytree(a, b)
    from viewer.format.wkw import lz4block, nativebox

    def forbidden(*args, **kwargs):
        raise AssertionError("identical stored bytes must not be decoded")

    for name in ("decode", "decode_into", "decode_many"):
        monkeypatch.setattr(lz4block, name, forbidden)
    for name in ("read", "read_blocks"):  # the native kernel's decoding too
        monkeypatch.setattr(nativebox, name, forbidden)
    s = compare(a, b)
    assert s.equal and s.blocks_compared == 4 * 64


def write_wkw(path, data, block_len, file_len, block_type):
    header = wkw.Header(data.dtype, block_len=block_len, file_len=file_len,
                        block_type=block_type)
    with wkw.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), data)
    return path


def test_other_storage_units_compare_chunk_by_chunk(tmp_path, data, monkeypatch):
    """Same blocks, other files (file_len 2 against 4): each block is found in B's file, and
    the same LZ4HC bytes there need no decoding."""
    a = write_project(tmp_path / "a", data, LZ4HC)
    b = write_wkw(tmp_path / "b", data, 8, 2, LZ4HC)
    import viewer.core.compare.job as job_module

    slabs = []
    monkeypatch.setattr(job_module, "compare_slab",
                        lambda *args: slabs.append(args) or pytest.fail("voxel path"))
    s = compare(a, b)
    assert s.equal and "file_len" in kinds(s) and slabs == []
    assert s.blocks_compared == 4 * 64
    c = write_wkw(tmp_path / "c", changed(data), 8, 2, RAW)
    s = compare(a, c)
    assert [(r.file, r.morton_index, r.position, r.voxels_different)
            for r in s.mismatching_blocks] == [
        ("z0/y0/x1.wkw", int(wkw.morton.encode(0, 0, 2)), (32, 0, 16), 1)]
    # B's units larger than A's: B's file holds the chunks of several of A's
    d = write_wkw(tmp_path / "d", changed(data), 8, 8, LZ4)
    assert [r.position for r in compare(a, d).mismatching_blocks] == [(32, 0, 16)]
    assert [r.position for r in compare(d, a).mismatching_blocks] == [(32, 0, 16)]


def test_lz4hc_against_raw_is_equal_and_finds_a_change(tmp_path, data):
    a = write_project(tmp_path / "a", data, LZ4HC)
    b = write_project(tmp_path / "b", data, RAW)
    s = compare(a, b)
    assert s.equal and kinds(s) == ["block_type"]
    s = compare(a, write_project(tmp_path / "c", changed(data), RAW))
    assert [(r.file, r.position) for r in s.mismatching_blocks] == [("z0/y0/x1.wkw", (32, 0, 16))]


def test_open_volumes_and_specs_are_sides(tmp_path, data):
    a = write_project(tmp_path / "a", data, LZ4HC)
    b = toy(tmp_path / "b", changed(data))
    with open_volume(a) as va:
        s = CompareJob(va, VolumeSpec(str(b))).run()
        assert s.a == va.path and s.b == str(b)
        assert len(s.mismatching_blocks) == 1
        assert va.read((0, 0, 0), (1, 1, 1)).shape == (1, 1, 1, 1)  # not closed by the job


def test_cli_compares_toy_and_wkw(tmp_path, data, capsys):
    a = toy(tmp_path / "toy", data)
    b = write_project(tmp_path / "wkw", data, LZ4HC)
    assert main([str(a), str(b), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["equal"] is True and "pairs" not in report
    assert report["a"] == str(a) and report["chunk_shape"] == [8, 8, 8]
    c = write_project(tmp_path / "changed", changed(data, (3, 60, 30)), RAW)
    assert main([str(a), str(c), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["mismatching_blocks"] == [{
        "file": "c/0.7.3.npy", "morton_index": 0, "position": [0, 56, 24],
        "voxels_different": 1, "max_abs_diff": 7}]


def test_child_process_compares_toy_and_wkw(tmp_path, data):
    """The window's child process opens the toy format too (the registry's plugin
    variable, set for the tests, reaches it)."""
    a = write_project(tmp_path / "a", data, LZ4HC)
    b = toy(tmp_path / "b", changed(data))
    job = CompareProcess(str(a), VolumeSpec(str(b)))
    s = job.run()
    assert job.used_process
    assert [(r.file, r.position) for r in s.mismatching_blocks] == [("z0/y0/x1.wkw", (32, 0, 16))]


def test_toy_against_a_wkw_file_of_its_first_unit(tmp_path):
    data = volume((32, 32, 32))
    a = toy(tmp_path / "toy", data, chunk_shape=(8, 8, 8))
    b = write_project(tmp_path / "wkw", data, LZ4HC)
    s = compare(a, file_of(b, 0, 0, 0))
    assert s.equal and s.blocks_compared == 64
    assert compare(file_of(b, 0, 0, 0), a).mismatching_blocks == []
    assert SIDE == 32


# -- N5, written by tensorstore: a WKW dataset against its N5 conversion ----------------
def n5(path, data, block, compression=None):
    pytest.importorskip("tensorstore")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "n5"))
    from n5_writers import write_tensorstore

    write_tensorstore(path, data, block, compression or {"type": "gzip", "level": 5})
    return path


@pytest.mark.parametrize("block", [(8, 8, 8), (16, 16, 8)])
def test_wkw_against_its_n5_conversion(tmp_path, data, block):
    a = write_project(tmp_path / "wkw", data, LZ4HC)
    b = n5(tmp_path / "n5", data, block)
    s = compare(a, b)
    assert s.equal, s.structure
    assert s.blocks_compared == 4 * 64
    c = n5(tmp_path / "n5c", changed(data), block)
    s = compare(a, c)
    assert [(r.file, r.morton_index, r.position, r.voxels_different, r.max_abs_diff)
            for r in s.mismatching_blocks] == [
        ("z0/y0/x1.wkw", int(wkw.morton.encode(0, 0, 2)), (32, 0, 16), 1, 7)]
    s = compare(c, a)  # named by N5's chunk files the other way round
    assert [(r.file, r.position) for r in s.mismatching_blocks] == [
        ("/".join(str(v // b) for v, b in zip(CHANGED, block, strict=True)),
         tuple(v // b * b for v, b in zip(CHANGED, block, strict=True)))]
