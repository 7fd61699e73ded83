"""N5 chunk files read as small units: on a local disk ``N5Volume.read_units`` reads
each chunk file once with no ``stat`` before and keeps nothing open.  Checked on files written
by tensorstore (padded edges) and z5py (truncated edges): the chunks voxel for voxel, absent
files, a damaged chunk's typed error naming the file and chunk, a file rewritten in place
during the read (never a torn chunk), and the loader end to end."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from n5_writers import source, write_tensorstore, write_z5py
from small_units import (
    check_a_file_that_keeps_changing,
    check_damaged_chunk,
    check_loader_looks,
    read_rewritten_once,
)

from viewer.format import open_volume
from viewer.format.n5.volume import N5Volume

pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")

SHAPE = (41, 23, 19)
BLOCK = (16, 8, 8)
GRID = tuple(-(-s // b) for s, b in zip(SHAPE, BLOCK, strict=True))
ABSENT = (2, 0, 1)
DAMAGED = (1, 1, 1)


@pytest.fixture(scope="module")
def _pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("n5-small")
    arr = source(SHAPE, "uint16", seed=21)
    write_tensorstore(root / "d", arr, BLOCK, {"type": "gzip"})
    (root / "d" / "2" / "0" / "1").unlink()  # an absent chunk file
    arr[32:, :8, 8:16] = 0
    return root / "d", arr


@pytest.fixture
def data(tmp_path: Path, _pristine: tuple[Path, Any]) -> tuple[Path, Any]:
    shutil.copytree(_pristine[0], tmp_path / "d")
    return tmp_path / "d", _pristine[1]


def _chunk(arr: Any, pos: tuple[int, int, int]) -> Any:
    lo = [p * b for p, b in zip(pos, BLOCK, strict=True)]
    return arr[lo[0]:lo[0] + BLOCK[0], lo[1]:lo[1] + BLOCK[1], lo[2]:lo[2] + BLOCK[2]]


def _positions() -> list[tuple[int, int, int]]:
    return [(x, y, z) for z in range(GRID[2]) for y in range(GRID[1]) for x in range(GRID[0])]


def _assert_chunk(result: Any, arr: Any, pos: tuple[int, int, int]) -> None:
    assert isinstance(result, np.ndarray), result
    want = _chunk(arr, pos)
    assert result.shape == (1, *BLOCK)
    sx, sy, sz = want.shape
    np.testing.assert_array_equal(result[0, :sx, :sy, :sz], want)
    assert (result[0, sx:] == 0).all() and (result[0, :, sy:] == 0).all()


def test_every_chunk_voxel_for_voxel(data: tuple[Path, Any]) -> None:
    path, arr = data
    with open_volume(path) as v:
        assert isinstance(v, N5Volume) and v.small_units
        positions = _positions()
        got = v.read_units([(p, [0]) for p in positions])
        outside = v.read_units([((GRID[0], 0, 0), [0]), ((0, 0, -1), [0])])
    assert outside == [None, None]
    assert got[positions.index(ABSENT)] is None
    for pos, result in zip(positions, got, strict=True):
        if result is None:  # the file removed, or one tensorstore did not write (all zero)
            assert pos == ABSENT or not _chunk(arr, pos).any()
            continue
        assert isinstance(result, list) and len(result) == 1
        _assert_chunk(result[0], arr, pos)
    assert sum(r is not None for r in got) > len(got) // 2


def test_z5py_truncated_edges(tmp_path: Path) -> None:
    pytest.importorskip("z5py", reason="z5py is not installed")
    arr = source(SHAPE, "uint16", seed=22)
    path = write_z5py(tmp_path / "c.n5", "raw", arr, BLOCK, "raw")
    with open_volume(path) as v:
        assert v.small_units
        positions = _positions()
        got = v.read_units([(p, [0]) for p in positions])
    for pos, result in zip(positions, got, strict=True):
        if result is None:  # z5py skips chunks of zeros
            assert not _chunk(arr, pos).any()
            continue
        assert isinstance(result, list)
        _assert_chunk(result[0], arr, pos)


def test_damaged_chunk_is_its_typed_error(data: tuple[Path, Any]) -> None:
    path, _ = data
    target = path.joinpath(*map(str, DAMAGED))
    raw = bytearray(target.read_bytes())
    raw[20:40] = b"\xff" * 20
    target.write_bytes(bytes(raw))
    check_damaged_chunk(path, DAMAGED, target)


def test_a_chunk_file_that_is_a_folder_is_absent(data: tuple[Path, Any]) -> None:
    path, _ = data
    (path / "2" / "0" / "1").mkdir()
    with open_volume(path) as v:
        assert v.read_units([(ABSENT, [0])]) == [None]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_file_rewritten_during_the_read_is_read_again(
        tmp_path: Path, data: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = data
    pos = (1, 0, 0)
    target = path.joinpath(*map(str, pos))
    write_tensorstore(tmp_path / "flat", np.full(SHAPE, 7, np.uint16), BLOCK, {"type": "gzip"})
    target.write_bytes(tmp_path.joinpath("flat", *map(str, pos)).read_bytes())
    noise = source(SHAPE, "uint16", seed=23)
    write_tensorstore(tmp_path / "noise", noise, BLOCK, {"type": "gzip"})
    new = tmp_path.joinpath("noise", *map(str, pos)).read_bytes()
    got = read_rewritten_once(monkeypatch, path, pos, target, new)
    _assert_chunk(got, noise, pos)  # the new version whole, not a mix


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_file_that_keeps_changing_is_the_chunks_error(
        tmp_path: Path, data: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = data
    pos = (0, 1, 0)
    check_a_file_that_keeps_changing(monkeypatch, path, pos, path.joinpath(*map(str, pos)))


def test_the_loader_reads_small_units_with_their_looks(data: tuple[Path, Any]) -> None:
    """Through the loader: every chunk's voxels, the absent file's look and the damaged
    chunk's look, with its error naming the file and chunk; no unit kept open."""
    path, arr = data
    target = path.joinpath(*map(str, DAMAGED))
    target.write_bytes(target.read_bytes()[:9])  # cut inside the header
    z = 12  # chunk layer 1: the absent (2, 0, 1) and the damaged (1, 1, 1) are on it
    bx, by = BLOCK[0], BLOCK[1]
    check_loader_looks(path, z, (SHAPE[0], SHAPE[1]), arr[:, :, z],
                       absent=(slice(2 * bx, None), slice(None, by)),
                       damaged=(slice(bx, 2 * bx), slice(by, 2 * by)),
                       target=target, damaged_pos=DAMAGED, absent_pos=ABSENT)
