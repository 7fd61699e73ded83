"""Damage is named, and the rest stays readable: a shard index entry or a minishard index
entry pointing outside its file, a chunk file cut short (raw, gzip, compressed_segmentation,
jpeg), a jpeg of the wrong size, a chunk id listed twice, and a chunk id listed in a
minishard it does not hash to.  Each is a ``FormatError`` naming the file, the chunk id
(sharded) and the chunk's grid position; never zeros, never a crash."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.format import ChunkDecodeError, FormatError, JumpTableError, open_volume
from viewer.format.precomputed.errors import (
    MinishardIndexError,
    ShardIndexError,
)

MINISHARDS = 4  # minishard_bits 2 in the tests' sharding specs


def shard_layout(path: Path) -> list[tuple[int, int, np.ndarray]]:
    """A shard file with raw minishard indexes parsed by hand: per minishard ``(start, end,
    [3, n] array as stored)``."""
    raw = path.read_bytes()
    index = np.frombuffer(raw[:16 * MINISHARDS], "<u8").reshape(MINISHARDS, 2)
    out = []
    for a, b in index.tolist():
        lo, hi = 16 * MINISHARDS + a, 16 * MINISHARDS + b
        out.append((lo, hi, np.frombuffer(raw[lo:hi], "<u8").reshape(3, -1).copy()))
    return out


def rewrite_minishard(path: Path, lo: int, hi: int, arr: np.ndarray) -> None:
    raw = bytearray(path.read_bytes())
    raw[lo:hi] = arr.astype("<u8").tobytes()
    path.write_bytes(bytes(raw))


def first_shard(root: Path) -> Path:
    return sorted((root / "4_4_40").glob("*.shard"))[0]


def chunk_of(volume: Any, chunk_id: int) -> tuple[int, int, int]:
    """The absolute grid position of ``chunk_id`` (compressed Morton code, decoded here)."""
    grid = volume.scale.grid_shape
    bits = [max(g - 1, 0).bit_length() for g in grid]
    pos, j = [0, 0, 0], 0
    for i in range(max(bits)):
        for d in range(3):
            if i < bits[d]:
                pos[d] |= ((chunk_id >> j) & 1) << i
                j += 1
    g0 = [o // c for o, c in zip(volume.origin, volume.chunk_shape, strict=True)]
    return (pos[0] + g0[0], pos[1] + g0[1], pos[2] + g0[2])


def readable_elsewhere(volume: Any, bad: set[tuple[int, int, int]], truth: np.ndarray) -> None:
    """Every other stored chunk still reads as the writer wrote it."""
    c = volume.chunk_shape
    o = volume.origin
    seen = 0
    for pos in sorted(volume.iter_units()):
        if pos in bad:
            continue
        lo = [pos[a] * c[a] for a in range(3)]
        got = volume.read(lo, c)
        rel = [lo[a] - o[a] for a in range(3)]
        want = truth[:, rel[0]:rel[0] + c[0], rel[1]:rel[1] + c[1], rel[2]:rel[2] + c[2]]
        np.testing.assert_array_equal(got[:, :want.shape[1], :want.shape[2], :want.shape[3]],
                                      want)
        seen += 1
    assert seen


def assert_named(exc: FormatError, path: Path, chunk: tuple[int, int, int],
                 chunk_id: int | None) -> None:
    assert exc.path == str(path)
    assert exc.chunk == chunk
    if chunk_id is not None:
        assert f"chunk id {chunk_id}" in str(exc)


def test_shard_index_entry_outside_the_file(pc: dict[str, Any], pc_copy: Any) -> None:
    root = pc_copy("sharded_identity")
    shard = first_shard(root)
    layout = shard_layout(shard)
    m = next(k for k, (_, _, arr) in enumerate(layout) if arr.shape[1])
    raw = bytearray(shard.read_bytes())
    raw[16 * m + 8:16 * m + 16] = np.uint64(len(raw) * 2).tobytes()  # end far past the file
    shard.write_bytes(bytes(raw))
    v = open_volume(root)
    ids = np.cumsum(layout[m][2][0]).tolist()
    bad = {chunk_of(v, i) for i in ids}
    for chunk_id in ids:
        pos = chunk_of(v, chunk_id)
        with pytest.raises(ShardIndexError) as err:
            v.open_unit(pos)
        assert_named(err.value, shard, pos, chunk_id)
        assert f"minishard {m}" in str(err.value)
        with pytest.raises(ShardIndexError):
            v.read([p * c for p, c in zip(pos, v.chunk_shape, strict=True)], v.chunk_shape)
    readable_elsewhere(v, bad, pc["sharded_identity"][1][0])


def test_minishard_entry_outside_the_file(pc: dict[str, Any], pc_copy: Any) -> None:
    root = pc_copy("sharded_identity")
    shard = first_shard(root)
    layout = shard_layout(shard)
    m, (lo, hi, arr) = next((k, e) for k, e in enumerate(layout) if e[2].shape[1] > 1)
    arr[2, -1] = 1 << 40  # the last chunk's size: far past the end
    rewrite_minishard(shard, lo, hi, arr)
    v = open_volume(root)
    chunk_id = int(np.cumsum(arr[0])[-1])
    pos = chunk_of(v, chunk_id)
    with pytest.raises(MinishardIndexError) as err:
        v.open_unit(pos)
    assert_named(err.value, shard, pos, chunk_id)
    assert isinstance(err.value, JumpTableError)
    readable_elsewhere(v, {pos}, pc["sharded_identity"][1][0])


def test_chunk_id_listed_twice(pc: dict[str, Any], pc_copy: Any) -> None:
    root = pc_copy("sharded_identity")
    shard = first_shard(root)
    layout = shard_layout(shard)
    m, (lo, hi, arr) = next((k, e) for k, e in enumerate(layout) if e[2].shape[1] > 1)
    gone = int(np.cumsum(arr[0])[1])
    arr[0, 1] = 0  # the second id repeats the first
    rewrite_minishard(shard, lo, hi, arr)
    v = open_volume(root)
    pos = chunk_of(v, gone)  # its id was damaged: not found, and the index says so
    with pytest.raises(MinishardIndexError, match="listed twice") as err:
        v.open_unit(pos)
    assert_named(err.value, shard, pos, gone)
    assert "damaged from row 1" in str(err.value)
    # ids from the damaged row on are all shifted: each is an error, never a wrong chunk
    # (identity hash, preshift 1, minishard_bits 2: the minishard is bits 1-2 of the id, the
    # shard bits 3-4)
    number = int(shard.stem, 16)
    ids = {int(i) for i in np.cumsum(arr[0])[1:]} | {int(i) for i in np.cumsum(layout[m][2][0])}
    here = {chunk_of(v, i) for i in ids if (i >> 1) & 3 == m and (i >> 3) & 3 == number
            and i != int(arr[0, 0])}
    for p in here:
        if v.in_grid(p):
            with pytest.raises(MinishardIndexError):
                v.read([q * c for q, c in zip(p, v.chunk_shape, strict=True)], v.chunk_shape)
    readable_elsewhere(v, here, pc["sharded_identity"][1][0])


def test_chunk_id_in_the_wrong_minishard(pc: dict[str, Any], pc_copy: Any) -> None:
    root = pc_copy("sharded_identity")
    shard = first_shard(root)
    layout = shard_layout(shard)
    m, (lo, hi, arr) = next((k, e) for k, e in enumerate(layout) if e[2].shape[1] == 1
                            or e[2].shape[1] > 1)
    arr[0, -1] += 1 << 1  # preshift_bits 1: the next hashed id, another minishard
    rewrite_minishard(shard, lo, hi, arr)
    v = open_volume(root)
    moved = int(np.cumsum(arr[0])[-1])
    original = chunk_of(v, moved - 2)
    with pytest.raises(MinishardIndexError, match="belongs to shard") as err:
        v.open_unit(original)  # its id now hashes elsewhere: not found here, said so
    assert_named(err.value, shard, original, moved - 2)
    listed = set(v.iter_units())
    assert original not in listed
    found = [p for p in v.problems() if isinstance(p, FormatError)]
    assert any("belongs to shard" in str(p) for p in found)


@pytest.mark.parametrize("name", ["raw", "gzip", "cseg32", "jpeg"])
def test_chunk_file_cut_short(pc: dict[str, Any], pc_copy: Any, name: str) -> None:
    root = pc_copy(name)
    v = open_volume(root)
    pos = (1, 1, 1)
    unit = v.open_unit(pos)
    assert unit is not None
    path = Path(unit.path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) * 2 // 3 // 4 * 4])
    v = open_volume(root)
    with pytest.raises(ChunkDecodeError) as err:
        v.read([p * c for p, c in zip(pos, v.chunk_shape, strict=True)], v.chunk_shape)
    assert_named(err.value, path, pos, None)
    readable_elsewhere(v, {pos}, pc[name][1][0])


def test_jpeg_of_the_wrong_size(pc: dict[str, Any], pc_copy: Any) -> None:
    from PIL import Image

    root = pc_copy("jpeg")
    v = open_volume(root)
    pos = (0, 1, 0)
    unit = v.open_unit(pos)
    assert unit is not None
    buf = io.BytesIO()
    Image.fromarray(np.full((16, 16), 9, np.uint8)).save(buf, format="JPEG")
    Path(unit.path).write_bytes(buf.getvalue())
    with pytest.raises(ChunkDecodeError, match="256 values, 2048 expected") as err:
        open_volume(root).read((0, 16, 0), (16, 16, 8))
    assert_named(err.value, Path(unit.path), pos, None)


def test_compressed_segmentation_header_damaged(pc_copy: Any) -> None:
    """A block header with an encoded-bits value the format does not have, and one whose
    values lie past the end: named errors (the compressed-segmentation package, given such
    streams, crashes or reads past the end)."""
    root = pc_copy("cseg32")
    v = open_volume(root)
    for pos, (at, value) in (((0, 0, 0), (4 + 3, 0xFF)), ((1, 0, 0), (4 + 4, 0xF0))):
        unit = v.open_unit(pos)
        assert unit is not None
        path = Path(unit.path)
        raw = bytearray(path.read_bytes())
        raw[at] = value
        path.write_bytes(bytes(raw))
        with pytest.raises(ChunkDecodeError, match="compressed_segmentation") as err:
            open_volume(root).read([p * c for p, c in zip(pos, v.chunk_shape, strict=True)],
                                   v.chunk_shape)
        assert_named(err.value, path, pos, None)


def test_shard_cut_short_inside_its_index(pc_copy: Any) -> None:
    root = pc_copy("sharded_murmur")
    shard = first_shard(root)
    shard.write_bytes(shard.read_bytes()[:40])
    v = open_volume(root)
    errors = []
    for pos in [(x, y, z) for x in range(3) for y in range(3) for z in range(3)]:
        try:
            v.open_unit(pos)
        except ShardIndexError as exc:
            errors.append(exc)
            assert exc.path == str(shard) and exc.chunk == pos
    assert errors


def test_compressed_segmentation_damage_found_by_a_plane(pc_copy: Any) -> None:
    """A plane decodes only part of a chunk: the damage it meets is still named."""
    root = pc_copy("cseg32")
    v = open_volume(root)
    unit = v.open_unit((0, 0, 0))
    assert unit is not None
    path = Path(unit.path)
    raw = bytearray(path.read_bytes())
    raw[4 + 3] = 0xFF  # block 0: 255 encoded bits
    path.write_bytes(bytes(raw))
    with pytest.raises(ChunkDecodeError, match="255 encoded bits") as err:
        open_volume(root).read((0, 0, 1), (16, 16, 1))
    assert_named(err.value, path, (0, 0, 0), None)


def test_gzip_minishard_index_that_does_not_decode(pc: dict[str, Any], pc_copy: Any) -> None:
    import precomputed_writers as w

    root = pc_copy("sharded_murmur")
    v = open_volume(root)
    shard = first_shard(root)
    index, chunks = w.hand_parse_shard(shard, 2, True)
    m = next(k for k, (a, b) in enumerate(index) if b > a)
    a, b = index[m]
    raw = bytearray(shard.read_bytes())
    raw[a + 10:b] = bytes(len(raw[a + 10:b]))  # the deflate stream zeroed after its header
    shard.write_bytes(bytes(raw))
    v = open_volume(root)
    grid = v.scale.grid_shape
    bad = set()
    for chunk_id, (mm, _, _) in chunks.items():
        if mm != m:
            continue
        pos = w.morton_position(chunk_id, grid)
        bad.add(pos)
        with pytest.raises(MinishardIndexError, match="does not decode") as err:
            v.open_unit(pos)
        assert_named(err.value, shard, pos, chunk_id)
    assert bad
    readable_elsewhere(v, bad, pc["sharded_murmur"][1][0])
