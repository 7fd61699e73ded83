"""The native box-read kernel against the Python path and the reference ``wkw``: the same
voxels for every shape of read, voxel type, channel count and block type, and the same error
(type, message, block, offset) for every kind of damage.  Where the kernel was not built the
Python path is still checked against the reference and the kernel's cases skip.

The kernel's reads by path are checked here too: a small box of a file a ``Dataset`` has not
opened (``nativebox.read_path``: open, checks, read and close in one call) and a batch of
one-block files (``WkwVolume.read_units`` through ``nativebox.read_files``), against the
reference's voxels and the Python path's errors, and the ordinary way wherever the file is
not the one remembered (rewritten, changed a moment ago, absent, of another header)."""

from __future__ import annotations

import os
import shutil
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import wkw as reference

from viewer.format import FormatError, native
from viewer.format import wkw as ours
from viewer.format.handles import RACY_WINDOW_NS
from viewer.format.wkw import boxread, nativebox
from viewer.format.wkw.volume import WkwVolume

BLOCK_LEN, FILE_LEN = 8, 4
SIDE = BLOCK_LEN * FILE_LEN

needs_kernel = pytest.mark.skipif(not native.available(), reason="native kernel not built")

#: (offset, shape) of the reads: planes, boxes across blocks, one voxel, the whole file, and
#: boxes reaching past the file (clipped).
READS = [((0, 0, 0), (SIDE, SIDE, SIDE)), ((0, 0, 13), (SIDE, SIDE, 1)),
         ((0, 9, 0), (SIDE, 1, SIDE)), ((21, 0, 0), (1, SIDE, SIDE)),
         ((3, 5, 7), (17, 11, 19)), ((7, 7, 7), (1, 1, 1)), ((20, 20, 20), (20, 20, 20)),
         ((0, 0, 5), (SIDE, SIDE, 2)), ((1, 2, 3), (30, 29, 9))]


def _write(path: Path, dtype: Any, channels: int, block_type: int, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 4, size=(channels, SIDE, SIDE, SIDE)).astype(dtype)
    data[:, 8:20] = rng.integers(0, 200, size=(channels, 12, SIDE, SIDE)).astype(dtype)
    header = reference.Header(voxel_type=dtype, num_channels=channels, block_type=block_type,
                              block_len=BLOCK_LEN, file_len=FILE_LEN)
    with reference.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), data)
    return data


def _data_file(root: Path) -> Path:
    return next(root.glob("z*/y*/x*.wkw"))


def _read(path: Path, offset: tuple[int, int, int], shape: tuple[int, int, int],
          use_native: bool, order: str = "F") -> Any:
    with ours.File.open(_data_file(path)) as f:
        out = np.zeros((f.header.num_channels, *shape), dtype=f.header.dtype, order=order)
        boxread.read_into(f, out, offset, native=use_native)
    return out


def _expected(data: Any, offset: tuple[int, int, int], shape: tuple[int, int, int]) -> Any:
    out = np.zeros((data.shape[0], *shape), dtype=data.dtype)
    part = data[:, offset[0]:offset[0] + shape[0], offset[1]:offset[1] + shape[1],
                offset[2]:offset[2] + shape[2]]
    out[:, :part.shape[1], :part.shape[2], :part.shape[3]] = part
    return out


BLOCK_TYPES = {"lz4hc": reference.Header.BLOCK_TYPE_LZ4HC,
               "lz4": reference.Header.BLOCK_TYPE_LZ4, "raw": reference.Header.BLOCK_TYPE_RAW}


@pytest.mark.parametrize("use_native", [pytest.param(True, marks=needs_kernel), False],
                         ids=["native", "python"])
@pytest.mark.parametrize("kind", ["lz4hc", "lz4", "raw"])
@pytest.mark.parametrize(("dtype", "channels"), [(np.uint8, 1), (np.uint16, 1), (np.uint8, 3),
                                                 (np.float32, 2), (np.uint64, 1)])
def test_reads_equal_reference(tmp_path: Path, use_native: bool, kind: str, dtype: Any,
                               channels: int) -> None:
    data = _write(tmp_path, dtype, channels, BLOCK_TYPES[kind])
    for offset, shape in READS:
        got = _read(tmp_path, offset, shape, use_native)
        np.testing.assert_array_equal(got, _expected(data, offset, shape),
                                      err_msg=f"{offset} {shape}")


@needs_kernel
def test_output_in_c_order_and_inside_a_larger_array(tmp_path: Path) -> None:
    data = _write(tmp_path, np.uint16, 2, BLOCK_TYPES["lz4hc"])
    data_file = _data_file(tmp_path)
    with ours.File.open(data_file) as f:
        for order in "CF":
            big = np.full((2, 50, 50, 50), 7, dtype=np.uint16, order=order)
            boxread.read_into(f, big, (3, 4, 5), out_offset=(6, 7, 8), shape=(20, 21, 22))
            want = np.full_like(big, 7)
            want[:, 6:26, 7:28, 8:30] = data[:, 3:23, 4:25, 5:27]
            np.testing.assert_array_equal(big, want)


def _aligned(shape: tuple[int, ...], dtype: Any) -> Any:
    """A zeroed Fortran-order array whose memory starts on a 64-byte line (as ``bigmemory``'s
    big arrays do): where the kernel stores whole lines."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    return np.ndarray(shape, dtype, raw[start:start + nbytes], order="F")


@needs_kernel
@pytest.mark.parametrize("kind", ["lz4hc", "lz4"])
@pytest.mark.parametrize(("dtype", "channels"), [(np.float32, 1), (np.uint8, 4)])
def test_reads_stored_as_whole_lines_equal_reference(tmp_path: Path, monkeypatch: Any,
                                                     kind: str, dtype: Any,
                                                     channels: int) -> None:
    """Rows of 32 bytes (8 voxels of 4 bytes) in an aligned output, every read counted as
    large: x-neighbour blocks are stored together as whole lines, and read the same voxels."""
    monkeypatch.setattr(nativebox, "STREAM_OVER_BYTES", 0)
    data = _write(tmp_path, dtype, channels, BLOCK_TYPES[kind])
    with ours.File.open(_data_file(tmp_path)) as f:
        for offset, shape in READS:
            got = _aligned((channels, *shape), dtype)
            boxread.read_into(f, got, offset)
            np.testing.assert_array_equal(got, _expected(data, offset, shape),
                                          err_msg=f"{offset} {shape}")


@needs_kernel
def test_damage_met_by_whole_line_stores_is_the_python_paths_error(tmp_path: Path,
                                                                     monkeypatch: Any) -> None:
    """A corrupt block among those stored as whole lines: the Python path's error."""
    monkeypatch.setattr(nativebox, "STREAM_OVER_BYTES", 0)
    _write(tmp_path, np.float32, 1, BLOCK_TYPES["lz4hc"])
    _corrupt_block(tmp_path)
    outcomes = []
    for use_native in (True, False):
        with ours.File.open(_data_file(tmp_path)) as f:
            try:
                boxread.read_into(f, _aligned((1, SIDE, SIDE, SIDE), np.float32), (0, 0, 0),
                                  native=use_native)
                outcomes.append(("ok", "", None, None))
            except FormatError as exc:
                outcomes.append((type(exc).__name__, str(exc), exc.block, exc.offset))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] != "ok"


# -- damage: both paths raise the same error ---------------------------------------------------

def _corrupt_block(root: Path) -> None:
    """Overwrite the middle of block 5's stored bytes (LZ4 that no longer decodes right)."""
    path = _data_file(root)
    with ours.File.open(path) as f:
        starts, ends = f.block_ranges()
    start, end = int(starts[5]), int(ends[5])
    with open(path, "r+b") as fh:
        fh.seek(start)
        fh.write(b"\xff" * (end - start))


def _jump_past_eof(root: Path) -> None:
    """Block 9's end in the jump table points past the end of the file."""
    path = _data_file(root)
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(16 + 8 * 9)
        fh.write(struct.pack("<Q", size + 1000))


def _truncate(root: Path) -> None:
    """The file cut in the middle of its blocks."""
    path = _data_file(root)
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def _zero_length(root: Path) -> None:
    """Block 3 made zero bytes long (its end equal to its start)."""
    path = _data_file(root)
    with ours.File.open(path) as f:
        starts, _ = f.block_ranges()
    with open(path, "r+b") as fh:
        fh.seek(16 + 8 * 3)
        fh.write(struct.pack("<Q", int(starts[3])))


DAMAGE: dict[str, tuple[str, Callable[[Path], None]]] = {
    "corrupt-lz4": ("lz4hc", _corrupt_block), "jump-past-eof": ("lz4hc", _jump_past_eof),
    "truncated-lz4": ("lz4hc", _truncate), "truncated-raw": ("raw", _truncate),
    "zero-length": ("lz4", _zero_length)}


def _outcome(root: Path, offset: tuple[int, int, int], shape: tuple[int, int, int],
             use_native: bool) -> tuple[str, str, Any, Any]:
    try:
        _read(root, offset, shape, use_native)
    except FormatError as exc:
        return type(exc).__name__, str(exc), exc.block, exc.offset
    return "ok", "", None, None


@needs_kernel
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damage_raises_the_same_error_on_both_paths(tmp_path: Path, case: str) -> None:
    kind, damage = DAMAGE[case]
    _write(tmp_path, np.uint8, 1, BLOCK_TYPES[kind])
    damage(tmp_path)
    failures = 0
    for offset, shape in READS:
        native_outcome = _outcome(tmp_path, offset, shape, True)
        python_outcome = _outcome(tmp_path, offset, shape, False)
        assert native_outcome == python_outcome, (offset, shape)
        failures += native_outcome[0] != "ok"
    assert failures, "the damage was never met: the test would not see a difference"


@needs_kernel
def test_file_shrunk_after_open_is_named_not_zeros(tmp_path: Path) -> None:
    """A file cut short by another program after it was opened: the read names a block or
    the change, on both paths; never zeros."""
    for kind in ("lz4hc", "raw"):
        root = tmp_path / kind
        _write(root, np.uint8, 1, BLOCK_TYPES[kind])
        path = _data_file(root)
        for use_native in (True, False):
            shutil.copy(path, path.with_suffix(".bak"))
            with ours.File.open(path) as f:
                os.truncate(path, path.stat().st_size // 3)
                out = np.zeros((1, SIDE, SIDE, SIDE), dtype=np.uint8, order="F")
                with pytest.raises(FormatError):
                    boxread.read_into(f, out, (0, 0, 0), native=use_native)
            shutil.copy(path.with_suffix(".bak"), path)


def _blocks_outcome(root: Path, use_native: bool) -> list[Any]:
    with ours.File.open(_data_file(root)) as f:
        indices = np.arange(f.header.num_blocks)[::-1]  # not in file order
        got = f.read_blocks(indices, native=use_native)
    return [(type(r).__name__, str(r)) if isinstance(r, FormatError) else r.copy() for r in got]


@needs_kernel
@pytest.mark.parametrize("case", ["sound-lz4hc", "sound-raw", *sorted(DAMAGE)])
def test_read_blocks_the_same_on_both_paths(tmp_path: Path, case: str) -> None:
    """The loader's whole-block reads: the same arrays, and the same error for each
    damaged block while the others still read."""
    kind, damage = DAMAGE.get(case, (case.split("-")[1], None))
    _write(tmp_path, np.uint16, 2, BLOCK_TYPES[kind])
    if damage is not None:
        damage(tmp_path)
    native_blocks = _blocks_outcome(tmp_path, True)
    python_blocks = _blocks_outcome(tmp_path, False)
    assert len(native_blocks) == len(python_blocks) == FILE_LEN ** 3
    for a, b in zip(native_blocks, python_blocks, strict=True):
        if isinstance(a, tuple) or isinstance(b, tuple):
            assert a == b
        else:
            np.testing.assert_array_equal(a, b)
    errors = sum(isinstance(a, tuple) for a in native_blocks)
    assert (errors > 0) == (damage is not None)


def test_kernel_usable_matches_what_was_built() -> None:
    assert nativebox.usable(False) == native.available()


# -- reads by path ------------------------------------------------------------------------------

def _settled() -> None:
    """Wait until files written just now are older than the racy window (the kernel leaves a
    file changed a moment ago to the ordinary way, which waits for it)."""
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.02)


def _dataset_outcome(root: Path, offset: tuple[int, int, int], shape: tuple[int, int, int]
                     ) -> tuple[Any, bool]:
    """``(voxels or (error type, message, block, offset), whether the dataset read it
    without opening a File)``: a read by path leaves the dataset's open files empty."""
    with ours.Dataset.open(root) as ds:
        try:
            got: Any = ds.read(offset, shape)
        except FormatError as exc:
            got = (type(exc).__name__, str(exc), exc.block, exc.offset)
        return got, not ds._files


@needs_kernel
@pytest.mark.parametrize("kind", ["lz4hc", "raw"])
@pytest.mark.parametrize(("dtype", "channels"), [(np.uint8, 1), (np.uint16, 3)])
def test_dataset_reads_by_path_equal_reference(tmp_path: Path, kind: str, dtype: Any,
                                               channels: int) -> None:
    _write(tmp_path, dtype, channels, BLOCK_TYPES[kind])
    ours.File.open(_data_file(tmp_path)).close()  # parsed (settled) and remembered
    by_path = 0
    with reference.Dataset.open(str(tmp_path)) as ref:
        for offset, shape in READS:
            got, path_read = _dataset_outcome(tmp_path, offset, shape)
            np.testing.assert_array_equal(got, ref.read(offset, shape))
            by_path += path_read
    assert by_path >= len(READS) // 2, "the reads by path were not taken"


@needs_kernel
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damage_by_path_raises_the_python_paths_error(tmp_path: Path, case: str) -> None:
    kind, damage = DAMAGE[case]
    _write(tmp_path, np.uint8, 1, BLOCK_TYPES[kind])
    damage(tmp_path)
    ours.File.open(_data_file(tmp_path)).close()  # the damaged file remembered
    failures = 0
    for offset, shape in READS:
        got, path_read = _dataset_outcome(tmp_path, offset, shape)
        python = _outcome(tmp_path, offset, shape, False)
        if python[0] == "ok":
            assert not isinstance(got, tuple), (offset, shape, got)
            continue
        assert got == python, (offset, shape)
        failures += path_read
    assert failures, "no damage was met by a read by path"


@needs_kernel
def test_file_rewritten_after_it_was_remembered_reads_its_new_voxels(tmp_path: Path) -> None:
    """The remembered table belongs to the old version: the new one (another identity,
    changed a moment ago) is read the ordinary way, never through the old table."""
    _write(tmp_path, np.uint8, 1, BLOCK_TYPES["lz4hc"], seed=1)
    ours.File.open(_data_file(tmp_path)).close()
    box = ((3, 5, 7), (17, 11, 19))
    first, path_read = _dataset_outcome(tmp_path, *box)
    assert path_read
    new = np.random.default_rng(2).integers(0, 200, size=(1, SIDE, SIDE, SIDE)).astype(np.uint8)
    with reference.Dataset.open(str(tmp_path)) as ds:
        ds.write((0, 0, 0), new)  # rewritten at once
    got, _ = _dataset_outcome(tmp_path, *box)
    np.testing.assert_array_equal(got[0], new[0, 3:20, 5:16, 7:26])
    assert not np.array_equal(got, first)


# -- one-block files --------------------------------------------------------------------------

BLOCK = 8
FILES = (4, 3, 2)


def _one_block_dataset(root: Path, kind: str, dtype: Any = np.uint8) -> Any:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 250, size=(1, *(n * BLOCK for n in FILES))).astype(dtype)
    header = reference.Header(voxel_type=dtype, block_type=BLOCK_TYPES[kind], block_len=BLOCK,
                              file_len=1)
    with reference.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), data)
    return data


def _path(root: Path, x: int, y: int, z: int) -> Path:
    return root / f"z{z}" / f"y{y}" / f"x{x}.wkw"


def _corrupt(root: Path) -> None:
    """The block's stored bytes overwritten (LZ4 that no longer decodes; a raw file has no
    way to tell: not a case for raw)."""
    path = _path(root, 1, 1, 0)
    with open(path, "r+b") as fh:
        fh.seek(24)
        fh.write(b"\xff" * (path.stat().st_size - 24))


def _cut(root: Path) -> None:
    path = _path(root, 2, 0, 1)
    os.truncate(path, path.stat().st_size - 9)


def _absent(root: Path) -> None:
    os.remove(_path(root, 3, 2, 1))


def _other_header(root: Path) -> None:
    """One file of another voxel type: the layout error, not its voxels."""
    path = _path(root, 0, 2, 0)
    os.remove(path)
    header = reference.Header(voxel_type=np.uint16, block_type=reference.Header.BLOCK_TYPE_RAW,
                              block_len=BLOCK, file_len=1)
    other = root.parent / f"{root.name}-other"
    with reference.Dataset.create(str(other), header) as ds:
        ds.write((0, 0, 0), np.ones((1, BLOCK, BLOCK, BLOCK), dtype=np.uint16))
    os.replace(_path(other, 0, 0, 0), path)


FILE_DAMAGE: dict[str, Callable[[Path], None]] = {
    "corrupt": _corrupt, "truncated": _cut, "absent": _absent, "other-header": _other_header}


def _units(root: Path, use_kernel: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], int]:
    """Every file's ``read_units`` outcome (one batch, after a first file set the header),
    and how many files the kernel was asked for."""
    asked = [0]
    real = nativebox.read_files

    def counted(paths: list[str], *args: Any) -> Any:
        asked[0] += len(paths)
        return real(paths, *args)

    with monkeypatch.context() as m:
        m.setattr(nativebox, "read_files", counted)
        if not use_kernel:
            m.setattr(nativebox, "files_usable", lambda header: False)
        volume = WkwVolume.open(root)
        try:
            volume.read_units([((0, 0, 0), [0])])
            jobs = [((x, y, z), [0]) for z in range(FILES[2]) for y in range(FILES[1])
                    for x in range(FILES[0])]
            got = volume.read_units(jobs)
        finally:
            volume.close()
    out: list[Any] = []
    for result in got:
        if isinstance(result, list):
            result = [(type(r).__name__, str(r), r.block, r.offset)
                      if isinstance(r, FormatError) else r.copy() for r in result]
        elif isinstance(result, FormatError):
            result = (type(result).__name__, str(result), result.block, result.offset)
        out.append(result)
    return out, asked[0]


@needs_kernel
@pytest.mark.parametrize("kind", ["lz4", "raw"])
@pytest.mark.parametrize("case", ["sound", *sorted(FILE_DAMAGE)])
def test_one_block_files_read_the_same_on_both_paths(tmp_path: Path, kind: str, case: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if (kind, case) == ("raw", "corrupt"):
        pytest.skip("raw blocks carry nothing that tells damage")
    root = tmp_path / "ds"
    data = _one_block_dataset(root, kind)
    if case != "sound":
        FILE_DAMAGE[case](root)
    _settled()
    kernel, asked = _units(root, True, monkeypatch)
    python, _ = _units(root, False, monkeypatch)
    assert asked == FILES[0] * FILES[1] * FILES[2]
    k = 0
    for z in range(FILES[2]):
        for y in range(FILES[1]):
            for x in range(FILES[0]):
                a, b = kernel[k], python[k]
                k += 1
                if isinstance(a, list) and isinstance(b, list) and \
                        not isinstance(a[0], tuple) and not isinstance(b[0], tuple):
                    np.testing.assert_array_equal(a[0], b[0])
                    want = data[:, x * BLOCK:(x + 1) * BLOCK, y * BLOCK:(y + 1) * BLOCK,
                                z * BLOCK:(z + 1) * BLOCK]
                    np.testing.assert_array_equal(a[0], want)
                else:
                    assert a == b, (x, y, z)
    problems = sum(not isinstance(r, list) or isinstance(r[0], tuple) for r in kernel)
    assert problems == (case != "sound")


@pytest.mark.parametrize("use_native", [pytest.param(True, marks=needs_kernel), False],
                         ids=["native", "python"])
def test_raw_planes_of_many_blocks_equal_reference(tmp_path: Path, use_native: bool) -> None:
    """Raw XZ and YZ planes of more blocks than a small box (the kernel takes them, on every
    core from ``boxread.PARALLEL_RAW_PLANE_BYTES``)."""
    side = 64
    data = np.random.default_rng(5).integers(0, 250, size=(2, side, side, side)).astype(np.uint8)
    header = reference.Header(voxel_type=np.uint8, num_channels=2,
                              block_type=reference.Header.BLOCK_TYPE_RAW, block_len=8,
                              file_len=8)
    with reference.Dataset.create(str(tmp_path), header) as ds:
        ds.write((0, 0, 0), data)
    reads = [((0, 9, 0), (side, 1, side)), ((13, 0, 0), (1, side, side)),
             ((0, 30, 2), (side, 3, 60)), ((5, 0, 1), (2, 63, 63))]
    with ours.File.open(_data_file(tmp_path)) as f:
        for threads in (1, 2):
            old = boxread.DECODE_THREADS, boxread.PARALLEL_RAW_PLANE_BYTES
            boxread.DECODE_THREADS, boxread.PARALLEL_RAW_PLANE_BYTES = threads, 0
            try:
                for offset, shape in reads:
                    out = np.zeros((2, *shape), dtype=np.uint8, order="F")
                    boxread.read_into(f, out, offset, native=use_native)
                    np.testing.assert_array_equal(out, _expected(data, offset, shape))
            finally:
                boxread.DECODE_THREADS, boxread.PARALLEL_RAW_PLANE_BYTES = old
