"""Files of one block (how N5 and Zarr v2 store every chunk) are read without being kept open
``WkwVolume.read_units`` / ``File.read_whole`` read a file's header, jump table and
block with one ``pread`` and close it again, and ``File.open_read`` opens and reads at once.
They give the blocks, the errors and the looks the kept-open way gives."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

from viewer.format import FormatError, open_volume, wkw
from viewer.format.errors import BlockDecodeError, DatasetLayoutError, HeaderError
from viewer.format.wkw.volume import WkwVolume

BLOCK = 8


def _dataset(root: Path, block_type: int = wkw.BLOCK_TYPE_LZ4, file_len: int = 1,
             value: int | None = None) -> np.ndarray:
    """A 4 x 3 x 2-block uint16 dataset (2 channels) of ``file_len``-block files, the
    file of block (3, 2, 1) absent; returns its voxels (absent: zeros)."""
    rng = np.random.default_rng(3)
    shape = (2, 4 * BLOCK, 3 * BLOCK, 2 * BLOCK)
    data = rng.integers(0, 60000, shape).astype(np.uint16) if value is None \
        else np.full(shape, value, np.uint16)
    header = wkw.Header(np.uint16, num_channels=2, block_len=BLOCK, file_len=file_len,
                        block_type=block_type)
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), data)
    if file_len == 1:
        (root / "z1" / "y2" / "x3.wkw").unlink()
        data[:, 3 * BLOCK:, 2 * BLOCK:, BLOCK:] = 0
    return data


def _block(data: np.ndarray, pos: tuple[int, int, int]) -> np.ndarray:
    x, y, z = (p * BLOCK for p in pos)
    return data[:, x:x + BLOCK, y:y + BLOCK, z:z + BLOCK]


@pytest.mark.parametrize("block_type", [wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4],
                         ids=["raw", "lz4"])
def test_read_units_gives_every_block(tmp_path: Path, block_type: int) -> None:
    data = _dataset(tmp_path, block_type)
    with open_volume(tmp_path) as v:
        assert isinstance(v, WkwVolume) and v.small_units
        positions = [(x, y, z) for z in range(2) for y in range(3) for x in range(4)]
        got = v.read_units([(p, [0]) for p in positions])
    for pos, result in zip(positions, got, strict=True):
        if pos == (3, 2, 1):
            assert result is None  # absent file: an absent unit
            continue
        assert isinstance(result, list) and len(result) == 1
        block = result[0]
        assert isinstance(block, np.ndarray) and not block.flags.writeable
        np.testing.assert_array_equal(block, _block(data, pos))


def test_files_of_many_blocks_are_kept_open(tmp_path: Path) -> None:
    _dataset(tmp_path, file_len=2)
    with open_volume(tmp_path) as v:
        assert not v.small_units


def test_open_read_equals_open_then_read_blocks(tmp_path: Path) -> None:
    _dataset(tmp_path, file_len=2)
    path = tmp_path / "z0" / "y0" / "x0.wkw"
    f, got = wkw.File.open_read(path, [5, 0, 7])
    with f, wkw.File.open(path) as g:
        want = g.read_blocks([5, 0, 7])
        for a, b in zip(got, want, strict=True):
            assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(f.read_block(3), g.read_block(3))


def test_damaged_header_is_the_units_error(tmp_path: Path) -> None:
    _dataset(tmp_path)
    bad = tmp_path / "z0" / "y1" / "x2.wkw"
    raw = bytearray(bad.read_bytes())
    raw[0:3] = b"XYZ"
    bad.write_bytes(bytes(raw))
    with open_volume(tmp_path) as v:
        [result] = v.read_units([((2, 1, 0), [0])])
    assert isinstance(result, HeaderError)
    assert result.path == str(bad) and result.offset == 0


def test_other_geometry_is_a_layout_error(tmp_path: Path) -> None:
    _dataset(tmp_path)
    other = tmp_path / "other"
    header = wkw.Header(np.uint8, block_len=BLOCK, file_len=1, block_type=wkw.BLOCK_TYPE_LZ4)
    with wkw.Dataset.create(str(other), header) as ds:
        ds.write((0, 0, 0), np.ones((BLOCK, BLOCK, BLOCK), np.uint8))
    target = tmp_path / "z0" / "y0" / "x1.wkw"
    target.write_bytes((other / "z0" / "y0" / "x0.wkw").read_bytes())
    with open_volume(tmp_path) as v:
        good, bad = v.read_units([((0, 0, 0), [0]), ((1, 0, 0), [0])])
    assert isinstance(good, list) and isinstance(good[0], np.ndarray)
    assert isinstance(bad, DatasetLayoutError) and bad.path == str(target)


def test_damaged_block_names_file_block_and_offset(tmp_path: Path) -> None:
    _dataset(tmp_path)
    bad = tmp_path / "z1" / "y0" / "x1.wkw"
    with wkw.File.open(bad) as f:
        start, end = (int(a[0]) for a in f.block_ranges())
    raw = bytearray(bad.read_bytes())
    raw[start:end] = b"\xff" * (end - start)
    bad.write_bytes(bytes(raw))
    with open_volume(tmp_path) as v:
        [result] = v.read_units([((1, 0, 1), [0])])
    assert isinstance(result, list)
    [err] = result
    assert isinstance(err, BlockDecodeError)
    assert err.path == str(bad) and err.block == 0 and err.offset == start


def test_a_file_cut_short_is_the_blocks_error(tmp_path: Path) -> None:
    _dataset(tmp_path)
    bad = tmp_path / "z0" / "y2" / "x0.wkw"
    raw = bad.read_bytes()
    bad.write_bytes(raw[:-7])
    with open_volume(tmp_path) as v:
        [result] = v.read_units([((0, 2, 0), [0])])
    assert isinstance(result, list) and isinstance(result[0], FormatError)
    assert result[0].path == str(bad)


def test_blocks_keep_their_voxels_while_memory_is_reused(tmp_path: Path) -> None:
    """Decoded blocks' memory is recycled once their arrays are gone: a block still held
    keeps its voxels however many blocks are read after it, and no two blocks share
    memory."""
    data = _dataset(tmp_path)
    with open_volume(tmp_path) as v:
        positions = [(x, y, z) for z in range(2) for y in range(3) for x in range(4)
                     if (x, y, z) != (3, 2, 1)]
        kept = v.read_units([(positions[0], [0])])[0]
        assert isinstance(kept, list)
        held = kept[0]
        for _ in range(5):
            got = v.read_units([(p, [0]) for p in positions])
            blocks = [r[0] for r in got if isinstance(r, list)]
            assert not any(np.shares_memory(held, b) for b in blocks)
            for a, b in zip(blocks, blocks[1:], strict=False):
                assert not np.shares_memory(a, b)
            del got, blocks
            gc.collect()
        np.testing.assert_array_equal(held, _block(data, positions[0]))


def test_the_loader_reads_small_units_with_their_looks(tmp_path: Path) -> None:
    """Through the loader: data, the absent file's look, a damaged file's look; a file
    rewritten in place by another program shows its new voxels at the next read."""
    from viewer.core.loader import Loader
    from viewer.core.slicing import XY, PlaneRequest, Status

    data = _dataset(tmp_path)
    bad = tmp_path / "z1" / "y0" / "x0.wkw"
    bad.write_bytes(b"WKW")  # a truncated header
    loader = Loader(open_volume(tmp_path), prefetch_enabled=False)
    try:
        req = PlaneRequest(XY, BLOCK + 1, (0, 0), (4 * BLOCK, 3 * BLOCK))
        loader.set_wanted([req], 0, (0, 0, BLOCK + 1))
        assert loader.wait_idle(60)
        plane = loader.plane(req)
        status = plane.status
        assert (status[:BLOCK, :BLOCK] == Status.FAILED).all()
        assert (status[3 * BLOCK:, 2 * BLOCK:] == Status.ABSENT).all()
        ok = np.ones(status.shape, bool)
        ok[:BLOCK, :BLOCK] = ok[3 * BLOCK:, 2 * BLOCK:] = False
        assert (status[ok] == Status.DATA).all()
        np.testing.assert_array_equal(plane.data[:, ok], data[:, :, :, BLOCK + 1][:, ok])
        assert any(str(bad) in str(e) for e in plane.errors.values())

        other = tmp_path / "other"
        _dataset(other, value=7)
        target = tmp_path / "z0" / "y0" / "x1.wkw"
        new = (other / "z0" / "y0" / "x1.wkw").read_bytes()
        with open(target, "r+b") as fh:  # in place, as a foreign tool would
            fh.truncate(0)
            fh.write(new)
        loader.cache.clear()
        later = PlaneRequest(XY, 3, (0, 0), (4 * BLOCK, 3 * BLOCK))
        loader.set_wanted([later], 0, (0, 0, 3))
        assert loader.wait_idle(60)
        plane = loader.plane(later)
        assert (plane.status[BLOCK:2 * BLOCK, :BLOCK] == Status.DATA).all()
        assert (plane.data[:, BLOCK:2 * BLOCK, :BLOCK] == 7).all()
    finally:
        loader.close()
