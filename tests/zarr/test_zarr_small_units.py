"""Chunk objects of unsharded zarr arrays read as small units: on a local disk
``ZarrVolume.read_units`` reads each chunk file once with no ``stat`` before and keeps nothing
open; sharded arrays keep their shards.  Checked on arrays written by zarr-python (v2, v3
without sharding) and tensorstore (v2; sharded v3): chunks voxel for voxel, absent chunks, a
damaged chunk's typed error naming the file and chunk, a file rewritten in place during the
read (never a torn chunk), and the loader end to end."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from small_units import (
    check_a_file_that_keeps_changing,
    check_damaged_chunk,
    check_loader_looks,
    read_rewritten_once,
)
from zarr_test_fixtures import sample, write_tensorstore_zarr3

from viewer.format import open_volume
from viewer.format.zarr.volume import ZarrVolume

zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")
import numcodecs  # noqa: E402 - after the skip: zarr-python brings it

SHAPE_ZYX = (20, 24, 36)
CHUNKS_ZYX = (8, 8, 16)
#: (x, y, z) grid positions
GRID = (3, 3, 3)
ABSENT = (1, 2, 1)  # its data is zero: zarr-python does not write it
DAMAGED = (2, 1, 0)


def _truth() -> Any:
    """(Z, Y, X) uint16 data; the chunk at ``ABSENT`` all zeros (the fill value)."""
    zyx = sample(SHAPE_ZYX, "uint16", seed=31)
    zyx[8:16, 16:24, 16:32] = 0
    return zyx


def _write_v2(path: Path, zyx: Any, compressor: Any = None) -> Path:
    arr = zarr.create_array(store=str(path), shape=zyx.shape, chunks=CHUNKS_ZYX,
                            dtype="<u2", zarr_format=2,
                            compressors=compressor or numcodecs.Zstd(level=3), fill_value=0)
    arr[...] = zyx
    return path


def _chunk(zyx: Any, pos: tuple[int, int, int]) -> Any:
    """The (X, Y, Z) voxels of the chunk at grid position ``pos`` (clipped at the edge)."""
    x, y, z = (p * c for p, c in zip(pos, CHUNKS_ZYX[::-1], strict=True))
    cx, cy, cz = CHUNKS_ZYX[::-1]
    return zyx[z:z + cz, y:y + cy, x:x + cx].transpose(2, 1, 0)


def _positions() -> list[tuple[int, int, int]]:
    return [(x, y, z) for z in range(GRID[2]) for y in range(GRID[1]) for x in range(GRID[0])]


def _assert_chunk(result: Any, zyx: Any, pos: tuple[int, int, int]) -> None:
    assert isinstance(result, np.ndarray), result
    want = _chunk(zyx, pos)
    sx, sy, sz = want.shape
    np.testing.assert_array_equal(result[0, :sx, :sy, :sz], want)


def _chunk_file(path: Path, pos: tuple[int, int, int]) -> Path:
    return path / ".".join(map(str, pos[::-1]))


@pytest.fixture
def v2(tmp_path: Path) -> tuple[Path, Any]:
    zyx = _truth()
    return _write_v2(tmp_path / "a", zyx), zyx


def test_every_chunk_voxel_for_voxel(v2: tuple[Path, Any]) -> None:
    path, zyx = v2
    with open_volume(path) as v:
        assert isinstance(v, ZarrVolume) and v.small_units
        positions = _positions()
        got = v.read_units([(p, [0]) for p in positions])
    for pos, result in zip(positions, got, strict=True):
        if pos == ABSENT:
            assert result is None
            continue
        assert isinstance(result, list) and len(result) == 1
        _assert_chunk(result[0], zyx, pos)


def test_tensorstore_v2_raw(tmp_path: Path) -> None:
    ts = pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
    zyx = _truth()
    t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "t")},
                 "metadata": {"shape": list(SHAPE_ZYX), "chunks": list(CHUNKS_ZYX),
                              "dtype": "<u2", "compressor": None, "fill_value": 0},
                 "create": True}).result()
    t[...] = zyx
    with open_volume(tmp_path / "t") as v:
        assert v.small_units
        positions = _positions()
        got = v.read_units([(p, [0]) for p in positions])
    for pos, result in zip(positions, got, strict=True):
        if result is None:
            assert not _chunk(zyx, pos).any()
            continue
        assert isinstance(result, list)
        _assert_chunk(result[0], zyx, pos)


def test_v3_unsharded_is_small_and_sharded_is_not(tmp_path: Path) -> None:
    arr = zarr.create_array(store=str(tmp_path / "u"), shape=SHAPE_ZYX, chunks=CHUNKS_ZYX,
                            dtype="uint16", dimension_names=["z", "y", "x"])
    arr[...] = _truth()
    with open_volume(tmp_path / "u") as v:
        assert v.small_units
        [got] = v.read_units([((0, 0, 0), [0])])
        assert isinstance(got, list)
        _assert_chunk(got[0], _truth(), (0, 0, 0))
    pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
    data = sample((1, 32, 32, 16), "uint8", seed=4)
    write_tensorstore_zarr3(tmp_path / "s", data, shard_len=16, chunk_len=8)
    with open_volume(tmp_path / "s") as v:
        assert not v.small_units  # a shard holds many chunks: kept open, its index once


def test_damaged_chunk_is_its_typed_error(v2: tuple[Path, Any]) -> None:
    path, _ = v2
    target = _chunk_file(path, DAMAGED)
    raw = bytearray(target.read_bytes())
    for k in range(8, len(raw) - 4, 3):
        raw[k] ^= 0xA5
    target.write_bytes(bytes(raw))
    check_damaged_chunk(path, DAMAGED, target)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_file_rewritten_during_the_read_is_read_again(
        tmp_path: Path, v2: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = v2
    pos = (0, 1, 0)
    target = _chunk_file(path, pos)
    flat = _write_v2(tmp_path / "flat", np.full(SHAPE_ZYX, 9, np.uint16))
    target.write_bytes(_chunk_file(flat, pos).read_bytes())
    noise = sample(SHAPE_ZYX, "uint16", seed=32)
    new = _chunk_file(_write_v2(tmp_path / "noise", noise), pos).read_bytes()
    got = read_rewritten_once(monkeypatch, path, pos, target, new)
    _assert_chunk(got, noise, pos)  # the new version whole, not a mix


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_file_that_keeps_changing_is_the_chunks_error(
        v2: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = v2
    pos = (1, 0, 2)
    check_a_file_that_keeps_changing(monkeypatch, path, pos, _chunk_file(path, pos))


def test_the_loader_reads_small_units_with_their_looks(v2: tuple[Path, Any]) -> None:
    """Through the loader: every chunk's voxels, the absent chunk's look and the damaged
    chunk's look, with its error naming the file and chunk; no unit kept open."""
    path, zyx = v2
    target = _chunk_file(path, (1, 1, 1))
    target.write_bytes(target.read_bytes()[:-9])  # cut short
    z = 12  # chunk layer 1: the absent (1, 2, 1) and the damaged (1, 1, 1) are on it
    cx, cy = CHUNKS_ZYX[2], CHUNKS_ZYX[1]
    check_loader_looks(path, z, (SHAPE_ZYX[2], SHAPE_ZYX[1]), zyx[z].T,
                       absent=(slice(cx, 2 * cx), slice(2 * cy, None)),
                       damaged=(slice(cx, 2 * cx), slice(cy, 2 * cy)),
                       target=target, damaged_pos=(1, 1, 1), absent_pos=ABSENT)
