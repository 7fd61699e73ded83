"""The read paths of ``wkw.File`` that only some reads take, each checked voxel for voxel
against the reference (PyPI ``wkw``) on files the reference wrote:

- a read of a few blocks (``_read_few``: the blocks staged by columns along z, each column
  copied out at once, x rows as whole elements when the output's rows are contiguous, into
  outputs of any layout);
- raw reads one block thick along x or y, column by column (``_read_raw_columns``);
- a batch of mapped raw blocks forming an aligned power-of-two cube of the block grid,
  copied through one strided view (``_copy_morton_aligned``);
- a read whose decoding the calling thread shares with the pool's threads
  (``_decode_shared``), and one whose slabs it shares (``_read_shared``);
- damaged blocks met by a small read: the error names the lowest damaged block.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

wkw_ref = pytest.importorskip("wkw")

from viewer.format import BlockDecodeError, wkw  # noqa: E402
from viewer.format.wkw import boxread, nativebox, shareddecode  # noqa: E402

BLOCK_LEN, FILE_LEN = 8, 4  # 32 voxels per file side; a 2 x 2 x 2 file grid
SIDE = BLOCK_LEN * FILE_LEN


@pytest.fixture(autouse=True)
def _python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests follow the Python path's ways through a read; the native kernel, where
    it was built, has its own tests (test_native_kernel.py) against this path."""
    monkeypatch.setattr(nativebox, "usable", lambda compressed: False)


def _data(dtype: Any, channels: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 7, size=(channels, 2 * SIDE, 2 * SIDE, 2 * SIDE)).astype(dtype)
    arr.reshape(-1)[::997] = np.iinfo(dtype).max  # extremes: a byte-order slip cannot hide
    return np.asfortranarray(arr)


def _boxes() -> Iterator[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """Boxes of 1 to 48 blocks per file (the few-block path), aligned and not, ending inside
    a block along z (partial decoding), crossing files, and a single voxel."""
    yield (0, 0, 0), (8, 8, 8)  # one whole block
    yield (3, 5, 2), (1, 1, 1)  # one voxel
    yield (11, 23, 5), (16, 16, 16)  # 27 blocks, unaligned on every axis
    yield (9, 1, 17), (14, 7, 3)  # ends inside its blocks along z
    yield (28, 29, 30), (9, 6, 5)  # across the corner of eight files
    yield (0, 3, 7), (SIDE, 1, 1)  # a row: four blocks
    yield (5, 0, 0), (1, 2 * SIDE, 9)  # a narrow YZ strip across two files
    yield (0, 0, 13), (2 * SIDE, 2 * SIDE, 1)  # an XY plane: 16 blocks per file
    yield (8, 8, 8), (24, 16, 16)  # aligned, 3 x 2 x 2 blocks


@pytest.fixture(scope="module", params=[(1, np.uint8, 1), (2, np.uint16, 3),
                                        (3, np.int32, 1), (1, np.float32, 2)],
                ids=["raw-u8", "lz4-u16-c3", "lz4hc-i32", "raw-f32-c2"])
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, np.ndarray]:
    """A 2 x 2 x 2-file dataset written by the reference, and the data written."""
    block_type, dtype, channels = request.param
    root = tmp_path_factory.mktemp("paths")
    data = (_data(np.int32, channels, 3).astype(dtype) if np.dtype(dtype).kind == "f"
            else _data(dtype, channels, 3))
    header = wkw_ref.Header(dtype, num_channels=channels, block_len=BLOCK_LEN,
                            file_len=FILE_LEN, block_type=block_type)
    with wkw_ref.Dataset.create(str(root), header) as ref:
        ref.write((0, 0, 0), data)
    return root, data


def _check_all_boxes(root: Path, data: np.ndarray) -> None:
    with wkw_ref.Dataset.open(str(root)) as ref, wkw.Dataset.open(root) as ours:
        for offset, shape in _boxes():
            got = ours.read(offset, shape)
            want = ref.read(offset, shape)
            sl = tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))
            assert got.dtype == want.dtype
            assert np.array_equal(got, want), f"box {offset} {shape} differs from reference"
            assert np.array_equal(got, data[(slice(None), *sl)]), f"box {offset} {shape}"


def test_few_block_reads_match_the_reference(written: tuple[Path, np.ndarray]) -> None:
    _check_all_boxes(*written)


@pytest.mark.parametrize("layout", ["part-of-fortran", "c-order", "channels-apart"])
def test_few_block_reads_into_outputs_of_any_layout(written: tuple[Path, np.ndarray],
                                                    layout: str) -> None:
    """A small read copies whole x rows at a time when the output's rows are contiguous (an
    F-order output, or a part of one) and element by element otherwise (a C-order output,
    channels apart): every layout gets the reference's voxels, and nothing around the box
    is touched."""
    root, data = written
    c = data.shape[0]
    with wkw_ref.Dataset.open(str(root)) as ref, wkw.Dataset.open(root) as ours:
        for offset, shape in _boxes():
            want = ref.read(offset, shape)
            if layout == "part-of-fortran":  # rows contiguous, the array is not
                big = np.full((c, shape[0] + 3, shape[1] + 2, shape[2] + 1), 77,
                              dtype=data.dtype, order="F")
                out = big[:, 2:2 + shape[0], 1:1 + shape[1], 1:]
            elif layout == "c-order":
                big = np.full((c, *shape), 77, dtype=data.dtype, order="C")
                out = big
            else:  # each channel's voxels apart: rows of voxels are not contiguous
                big = np.full((c, shape[2], shape[1], shape[0]), 77, dtype=data.dtype)
                out = big.transpose(0, 3, 2, 1)
            rows = boxread._byte_rows(out.T)  # the path this layout takes
            if layout == "part-of-fortran":
                assert rows is not None
            elif min(shape) > 1 and (layout == "c-order" or c > 1):
                assert rows is None
            ours.read_into(out, offset)
            assert np.array_equal(out, want), f"{layout}: box {offset} {shape}"
            if layout == "part-of-fortran":
                rest = big.copy()
                rest[:, 2:2 + shape[0], 1:1 + shape[1], 1:] = 77
                assert (rest == 77).all(), f"{layout}: box {offset} {shape} wrote outside"


def test_gathered_reads_match_the_few_block_path(written: tuple[Path, np.ndarray],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The same boxes through the batch path (staging grid, one gather) agree as well."""
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    _check_all_boxes(*written)


@pytest.mark.parametrize("staging", [1 << 24, 1], ids=["one-batch", "layer-batches"])
def test_aligned_raw_batches_match_the_reference(written: tuple[Path, np.ndarray],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 staging: int) -> None:
    """Batches that are aligned power-of-two cubes of the block grid (whole files, their
    planes, halves) are copied from a mapped raw file through one strided view in Morton
    order; the rest falls back to the gather.  Both agree with the reference."""
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    monkeypatch.setattr(boxread, "STAGING_BYTES", staging)
    root, data = written
    boxes = [((0, 0, 0), (2 * SIDE, 2 * SIDE, 2 * SIDE)),  # every file whole
             ((0, 0, 19), (2 * SIDE, 2 * SIDE, 1)),  # XY planes
             ((0, 37, 0), (2 * SIDE, 1, 2 * SIDE)),  # XZ planes
             ((45, 0, 0), (1, 2 * SIDE, 2 * SIDE)),  # YZ planes
             ((16, 0, 32), (16, 32, 16)),  # aligned halves of a file
             ((16, 8, 0), (16, 8, 8)),  # two by one by one blocks
             ((8, 0, 3), (24, 32, 20))]  # three blocks along x: the gather
    with wkw_ref.Dataset.open(str(root)) as ref, wkw.Dataset.open(root) as ours:
        for offset, shape in boxes:
            got = ours.read(offset, shape)
            assert np.array_equal(got, ref.read(offset, shape)), f"box {offset} {shape}"
            sl = tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))
            assert np.array_equal(got, data[(slice(None), *sl)]), f"box {offset} {shape}"


def _read_boxes_through(monkeypatch: pytest.MonkeyPatch, path_name: str, root: Path,
                        data: np.ndarray, boxes: list[tuple[tuple[int, int, int],
                                                            tuple[int, int, int]]]
                        ) -> tuple[list[int], bool]:
    """Read ``boxes`` with ours and the reference and check both against ``data``, counting
    the calls of the read path ``boxread.<path_name>``: ``(calls, the files are raw)``."""
    calls: list[int] = []
    original = getattr(boxread, path_name)

    def spy(f: Any, *args: Any) -> None:
        calls.append(1)
        original(f, *args)

    monkeypatch.setattr(boxread, path_name, spy)
    with wkw_ref.Dataset.open(str(root)) as ref, wkw.Dataset.open(root) as ours:
        raw = not ours.header.is_compressed
        for offset, shape in boxes:
            got = ours.read(offset, shape)
            assert np.array_equal(got, ref.read(offset, shape)), f"box {offset} {shape}"
            sl = tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))
            assert np.array_equal(got, data[(slice(None), *sl)]), f"box {offset} {shape}"
    return calls, raw


def test_raw_thin_slabs_read_by_pread_match_the_reference(
        written: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of raw blocks needing only a few z planes each (XY planes, thin slabs) are
    read plane by plane with pread instead of through the mapping: same voxels."""
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    root, data = written
    boxes = [((0, 0, 0), (2 * SIDE, 2 * SIDE, 1)),
             ((3, 5, 39), (2 * SIDE - 4, 2 * SIDE - 9, 1)),  # unaligned in x and y
             ((0, 0, 14), (2 * SIDE, 2 * SIDE, 2)),  # two planes of each block
             ((7, 30, 63), (40, 20, 1))]  # the last plane, across files
    calls, raw = _read_boxes_through(monkeypatch, "_read_raw_planes", root, data, boxes)
    assert bool(calls) == raw  # raw files really took this path, compressed ones never


def test_raw_columns_match_the_reference(written: tuple[Path, np.ndarray],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw reads one block thick along x or y (XZ and YZ planes, thin slabs) go column by
    column through a staging buffer of one column (``_read_raw_columns``): same voxels."""
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    root, data = written
    boxes = [((0, 37, 0), (2 * SIDE, 1, 2 * SIDE)),  # XZ plane across files
             ((45, 0, 0), (1, 2 * SIDE, 2 * SIDE)),  # YZ plane
             ((3, 9, 5), (50, 3, 41)),  # a thin XZ slab, unaligned
             ((17, 2, 11), (6, 60, 30)),  # a thin YZ slab ending inside blocks
             ((0, 0, 0), (SIDE, SIDE, SIDE))]  # not thin: the other way
    calls, raw = _read_boxes_through(monkeypatch, "_read_raw_columns", root, data, boxes)
    assert len(calls) == (16 if raw else 0)  # the four thin boxes touch four files each


def test_shared_decoding_matches_the_reference(written: tuple[Path, np.ndarray],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoding split over the two threads a block at a time (forced with tiny limits)."""
    monkeypatch.setattr(boxread, "DECODE_THREADS", 2)
    monkeypatch.setattr(boxread, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(shareddecode, "ITEM_BLOCKS", 1)
    root, data = written
    for _ in range(3):
        _check_all_boxes(root, data)
    with wkw.File.open(root / "z1" / "y0" / "x1.wkw") as f:
        whole = f.read((0, 0, 0), (SIDE, SIDE, SIDE))
    assert np.array_equal(whole, data[:, SIDE:, :SIDE, SIDE:])


def test_reads_shared_slab_by_slab_match_the_reference(written: tuple[Path, np.ndarray],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads cut into slabs of one block that the two threads take in turn (forced with
    tiny limits), raw and compressed."""
    monkeypatch.setattr(boxread, "DECODE_THREADS", 2)
    monkeypatch.setattr(boxread, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(boxread, "PARALLEL_RAW_BYTES", 0)
    monkeypatch.setattr(boxread, "ONE_BATCH_BYTES", 0)
    monkeypatch.setattr(boxread, "STAGING_BYTES", 1)
    root, data = written
    for _ in range(3):
        _check_all_boxes(root, data)


def _lz4_file(tmp_path: Path) -> tuple[Path, np.ndarray]:
    data = _data(np.uint8, 1, 5)[:, :SIDE, :SIDE, :SIDE]
    header = wkw_ref.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN,
                            block_type=wkw_ref.Header.BLOCK_TYPE_LZ4)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), np.ascontiguousarray(data))
    return tmp_path / "z0" / "y0" / "x0.wkw", data


def _damage(path: Path, blocks: tuple[int, ...]) -> np.ndarray:
    """Overwrite the stored bytes of ``blocks`` with garbage; the blocks' start offsets."""
    with wkw.File.open(path) as f:
        starts, ends = f.block_ranges()
    with open(path, "r+b") as fh:
        for block in blocks:
            fh.seek(int(starts[block]))
            fh.write(b"\xff" * int(ends[block] - starts[block]))
    return starts


@pytest.mark.parametrize("shape", [(16, 16, 16), (16, 16, 11)], ids=["whole", "partial"])
def test_small_read_names_the_lowest_damaged_block(tmp_path: Path, shape: tuple[int, ...]
                                                   ) -> None:
    """Blocks 1 and 6 (both in the 2 x 2 x 2 box at the origin) are garbage: the read names
    block 1 and its offset, whether the blocks are decoded whole or up to a z plane."""
    path, _ = _lz4_file(tmp_path)
    starts = _damage(path, (6, 1))
    with wkw.File.open(path) as f:
        with pytest.raises(BlockDecodeError) as info:
            f.read((0, 0, 0), shape)
        assert info.value.block == 1
        assert info.value.offset == int(starts[1])
        assert str(path) in str(info.value)
        # A box that avoids the damaged blocks still reads.
        assert f.read((0, 0, 0), (8, 8, 8)).shape == (1, 8, 8, 8)


def test_small_read_of_a_short_raw_file_names_the_block(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    header = wkw_ref.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), np.ones((SIDE, SIDE, SIDE), dtype=np.uint8))
    path = tmp_path / "z0" / "y0" / "x0.wkw"
    with wkw.File.open(path) as f:
        data_offset = f.header.data_offset
    block_bytes = BLOCK_LEN ** 3
    with open(path, "r+b") as fh:
        fh.truncate(data_offset + 5 * block_bytes + 100)  # block 5 cut short, 6 and 7 gone
    with wkw.File.open(path) as f:
        with pytest.raises(BlockDecodeError) as info:
            f.read((0, 0, 0), (16, 16, 16))  # blocks 0..7
        assert info.value.block == 5
        assert info.value.offset == data_offset + 5 * block_bytes
        assert np.array_equal(f.read((0, 0, 0), (16, 16, 8)), np.ones((1, 16, 16, 8)))
    with monkeypatch.context() as patched, wkw.File.open(path) as f:
        patched.setattr(boxread, "PER_BLOCK_COPY", 0)  # the batch paths
        with pytest.raises(BlockDecodeError) as info:
            f.read((0, 0, 9), (32, 32, 1))  # an XY plane through blocks 4..7 (pread path)
        assert info.value.block == 5
        with pytest.raises(BlockDecodeError) as info:
            f.read((0, 0, 0), (16, 16, 16))
        assert info.value.block == 5
        with pytest.raises(BlockDecodeError) as info:
            f.read((0, 3, 0), (32, 1, 32))  # an XZ plane through blocks 0, 1, 4, 5, ...
        assert info.value.block == 5  # column by column (``_read_raw_columns``)
        assert info.value.offset == data_offset + 5 * block_bytes


def test_read_blocks_gives_each_block_its_own_memory(written: tuple[Path, np.ndarray]) -> None:
    """``read_blocks`` decodes every block into a buffer of its own (a cache keeping one block
    must not keep the others alive, nor copy it out); the blocks equal the reference's."""
    root, data = written
    with wkw.File.open(root / "z0" / "y1" / "x0.wkw") as f:
        blocks = f.read_blocks([0, 5, 63])
    for got, (bx, by, bz) in zip(blocks, [(0, 0, 0), (1, 0, 1), (3, 3, 3)], strict=True):
        assert isinstance(got, np.ndarray)
        root_buf = got
        while isinstance(root_buf.base, np.ndarray):
            root_buf = root_buf.base
        assert root_buf.nbytes == got.nbytes
        x, y, z = bx * BLOCK_LEN, SIDE + by * BLOCK_LEN, bz * BLOCK_LEN
        assert np.array_equal(got, data[:, x:x + BLOCK_LEN, y:y + BLOCK_LEN, z:z + BLOCK_LEN])
    assert not np.shares_memory(blocks[0], blocks[1])


def test_reading_a_closed_file_raises_on_every_path(written: tuple[Path, np.ndarray],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A closed file refuses reads (never reads from a descriptor number reused since)."""
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    root, _ = written
    f = wkw.File.open(root / "z0" / "y0" / "x0.wkw")
    f.close()
    for offset, shape in [((0, 0, 3), (SIDE, SIDE, 1)), ((0, 0, 0), (SIDE, SIDE, SIDE)),
                          ((0, 5, 0), (SIDE, 1, SIDE))]:
        with pytest.raises(ValueError, match="closed"):
            f.read(offset, shape)


def test_small_reads_alternating_between_geometries_read_each_file_right(
        tmp_path: Path) -> None:
    """Small reads take their geometry from each file's header (``boxread._geometry``): files
    of other voxel types, channels, block sizes and block types opened and read in turn, each
    read as written."""
    specs = [(np.uint8, 1, 8, wkw_ref.Header.BLOCK_TYPE_RAW),
             (np.uint16, 2, 4, wkw_ref.Header.BLOCK_TYPE_LZ4HC),
             (np.float32, 1, 8, wkw_ref.Header.BLOCK_TYPE_LZ4)]
    written = []
    for n, (dtype, channels, block_len, block_type) in enumerate(specs):
        rng = np.random.default_rng(n)
        data = np.asfortranarray(rng.integers(0, 200, (channels, 16, 16, 16)).astype(dtype))
        root = tmp_path / f"d{n}"
        header = wkw_ref.Header(dtype, num_channels=channels, block_len=block_len,
                                file_len=16 // block_len, block_type=block_type)
        with wkw_ref.Dataset.create(str(root), header) as ref:
            ref.write((0, 0, 0), data)
        written.append((root, data))
    for k in range(600):
        root, data = written[k % len(written)]
        offset = (k % 5, k % 7, k % 3)
        with wkw.Dataset.open(root) as ds:
            got = ds.read(offset, (9, 6, 11))
        sl = tuple(slice(o, o + s) for o, s in zip(offset, (9, 6, 11), strict=True))
        assert got.dtype == data.dtype
        assert np.array_equal(got, data[(slice(None), *sl)]), f"read {k} of {root.name}"


def _shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force every batch read of a compressed file onto the shared path, an item per block."""
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    monkeypatch.setattr(boxread, "DECODE_THREADS", 2)
    monkeypatch.setattr(boxread, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(shareddecode, "ITEM_BLOCKS", 1)


def test_shared_read_names_the_lowest_damaged_block(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks 5 and 12 garbage: a plane read and decoded by both threads names block 5
    (the lowest), whichever thread met which block first."""
    _shared(monkeypatch)
    path, data = _lz4_file(tmp_path)
    starts = _damage(path, (12, 5))
    with wkw.File.open(path) as f:
        for _ in range(5):
            with pytest.raises(BlockDecodeError) as info:
                f.read((0, 0, 0), (SIDE, SIDE, 16))  # blocks 0..15 (z layers 0 and 1)
            assert info.value.block == 5
            assert info.value.offset == int(starts[5])
        # A plane clear of both reads, voxel for voxel.
        assert np.array_equal(f.read((0, 0, 20), (SIDE, SIDE, 1)), data[:, :, :, 20:21])


def test_shared_read_of_a_file_cut_short_meanwhile_says_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is truncated after it was opened: the shared read's short pread is reported
    as the file having changed (the cause names the first block past the new end), never as
    blocks of zeros."""
    from viewer.format.errors import FileChangedError

    _shared(monkeypatch)
    path, _ = _lz4_file(tmp_path)
    with wkw.File.open(path) as f:
        starts, _ = f.block_ranges()
        os.truncate(path, int(starts[40]) + 10)  # block 40 cut, 41.. gone
        with pytest.raises(FileChangedError) as info:
            f.read((0, 0, 0), (SIDE, SIDE, SIDE))
        cause = info.value.__cause__
        assert isinstance(cause, BlockDecodeError) and cause.block == 40
        assert str(path) in str(info.value)
