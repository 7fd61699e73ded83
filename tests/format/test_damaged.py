"""Damaged and foreign files: every case of the damage list, each read in a forked child process,
so that an interpreter crash (or a hang, or a runaway allocation) fails that one test and not
the suite.  Each case checks that a read raises the right ``FormatError`` subclass whose message
names the file, and the block index and byte offset where they apply; that ``validate`` reports
it; and, where FORMAT-NOTES says so, what the reference does (silent zeros: documented, not
depended upon).  Tests are named after what broke (``test_jump_table_past_eof``, ...).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.format import (
    BlockDecodeError,
    DatasetLayoutError,
    FormatError,
    HeaderError,
    JumpTableError,
    wkw,
)
from viewer.format.wkw import lz4block, writer

BLOCK_LEN, FILE_LEN = 8, 2  # 8 blocks of 512 bytes per file: small and quick
SIDE = BLOCK_LEN * FILE_LEN
N_BLOCKS = FILE_LEN**3
BLOCK_BYTES = BLOCK_LEN**3
DATA_OFFSET = 16 + 8 * N_BLOCKS
TIMEOUT = 60.0


# -- running in a child --------------------------------------------------------------------------
def isolated(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """Run ``fn(*args)`` in a forked child: ``("ok", value)`` or ``("raised", exception)``.
    A child killed by a signal, or still running after TIMEOUT seconds, fails the test."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        code = 0
        try:
            result: tuple[str, Any] = ("ok", fn(*args))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            result = ("raised", exc)
        try:
            payload = pickle.dumps(result)
        except Exception:  # noqa: BLE001
            payload = pickle.dumps(("raised", RuntimeError(f"unpicklable: {result!r}")))
        try:
            with os.fdopen(w, "wb") as fh:
                fh.write(payload)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.close(w)
    chunks = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"{fn.__name__} hung (no answer within {TIMEOUT:.0f} s)")
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        pytest.fail(f"{fn.__name__} crashed the interpreter (signal {os.WTERMSIG(status)})")
    if not chunks:
        pytest.fail(f"{fn.__name__}: the child died without an answer (status {status})")
    return pickle.loads(b"".join(chunks))  # type: ignore[no-any-return]


def read_dataset(root: str) -> Any:
    with wkw.Dataset.open(root) as ds:
        return ds.read((0, 0, 0), (SIDE, SIDE, SIDE))


def read_file_blocks(path: str) -> list[Any]:
    with wkw.File.open(path) as f:
        return f.read_blocks(range(f.header.num_blocks))


def validate_path(path: str) -> list[FormatError]:
    return wkw.validate(path)


def read_reference(root: str) -> Any:
    import wkw as wkw_ref

    with wkw_ref.Dataset.open(root) as ds:
        return ds.read((0, 0, 0), (SIDE, SIDE, SIDE))


# -- building damaged files ----------------------------------------------------------------------
def _volume() -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.integers(1, 5, size=(1, SIDE, SIDE, SIDE), dtype=np.uint8)


def make_dataset(root: Path, block_type: int = 2, dtype: Any = np.uint8) -> str:
    """A one-file dataset (file (0, 0, 0)) of nonzero data; returns the data file's path."""
    header = wkw.Header(dtype, block_len=BLOCK_LEN, file_len=FILE_LEN, block_type=block_type)
    ds = wkw.Dataset.create(root, header)
    ds.write((0, 0, 0), _volume().astype(dtype))
    ds.close()
    return str(root / "z0" / "y0" / "x0.wkw")


def patch(path: str, offset: int, payload: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(payload)


def jump_table(path: str) -> list[int]:
    with open(path, "rb") as fh:
        fh.seek(16)
        return list(struct.unpack(f"<{N_BLOCKS}Q", fh.read(8 * N_BLOCKS)))


def set_entry(path: str, index: int, value: int) -> None:
    patch(path, 16 + 8 * index, struct.pack("<Q", value))


def block_start(path: str, index: int) -> int:
    return DATA_OFFSET if index == 0 else jump_table(path)[index - 1]


def rebuild_with_block(path: str, index: int, payload: bytes) -> None:
    """Rewrite a compressed file with block ``index``'s stored bytes replaced (table updated)."""
    with wkw.File.open(path) as f:
        header = f.header
        starts, ends = f.block_ranges()
        with open(path, "rb") as fh:
            data = fh.read()
    blocks = [data[int(s):int(e)] for s, e in zip(starts, ends, strict=True)]
    blocks[index] = payload
    writer.write_atomically(path, b"".join(bytes(b) for b in
                                           writer.assemble_compressed(header, blocks)))


# -- the cases -----------------------------------------------------------------------------------
@dataclass
class Case:
    """A way to damage a dataset, and what a read must raise."""

    damage: Callable[[Path], str]  # builds the dataset under the path, returns the bad file
    error: type[FormatError]
    block: int | None = None
    offset: Callable[[str], int] | int | None = None
    words: str = ""  # a phrase the message contains
    #: The reference returns zeros for this case (FORMAT-NOTES); checked, in a child.
    reference_zeros: bool = False


def _header_byte(offset: int, value: int) -> Callable[[Path], str]:
    def damage(root: Path) -> str:
        path = make_dataset(root)
        patch(path, offset, bytes([value]))
        return path
    return damage


def _truncate(size: Callable[[str], int] | int, block_type: int = 2) -> Callable[[Path], str]:
    def damage(root: Path) -> str:
        path = make_dataset(root, block_type)
        os.truncate(path, size(path) if callable(size) else size)
        return path
    return damage


def _wrong_magic(root: Path) -> str:
    path = make_dataset(root)
    patch(path, 0, b"WKX")
    return path


def _voxel_size_not_multiple(root: Path) -> str:
    path = make_dataset(root)
    patch(path, 6, bytes([2, 3]))  # uint16 voxels of 3 bytes
    return path


def _decreasing(root: Path) -> str:
    path = make_dataset(root)
    table = jump_table(path)
    set_entry(path, 4, table[3] - 10)
    return path


def _past_eof(root: Path) -> str:
    path = make_dataset(root)
    set_entry(path, N_BLOCKS - 1, os.path.getsize(path) + 100)
    return path


def _inconsistent_offset(root: Path) -> str:
    path = make_dataset(root)
    patch(path, 8, struct.pack("<Q", DATA_OFFSET + 8))
    return path


def _data_offset_zero(root: Path) -> str:
    path = make_dataset(root)
    patch(path, 8, struct.pack("<Q", 0))
    return path


def _raw_data_offset_zero(root: Path) -> str:
    path = make_dataset(root, block_type=1)
    patch(path, 8, struct.pack("<Q", 0))
    return path


def _garbage_block(root: Path) -> str:
    path = make_dataset(root)
    start, end = block_start(path, 2), jump_table(path)[2]
    patch(path, start, b"\xff" * (end - start))
    return path


def _block_too_short(root: Path) -> str:
    path = make_dataset(root)
    rebuild_with_block(path, 6, lz4block.encode(bytes(range(256)) * 1))
    return path


def _block_too_long(root: Path) -> str:
    path = make_dataset(root)
    rebuild_with_block(path, 5, lz4block.encode(bytes(2 * BLOCK_BYTES)))
    return path


def _zero_length_block(root: Path) -> str:
    path = make_dataset(root)
    table = jump_table(path)
    rebuild_with_block(path, 3, b"")
    assert jump_table(path)[3] == jump_table(path)[2] and table
    return path


def _entry_above_2_63(root: Path) -> str:
    path = make_dataset(root)
    set_entry(path, 1, (1 << 64) - 5)
    return path


def _geometry_differs(root: Path) -> str:
    path = make_dataset(root)
    other = wkw.Header(np.uint8, block_len=4, file_len=4, block_type=2)
    writer.write_file(path, other, _volume())
    return path


def _voxel_type_differs(root: Path) -> str:
    path = make_dataset(root)
    other = wkw.Header(np.uint16, block_len=BLOCK_LEN, file_len=FILE_LEN, block_type=2)
    writer.write_file(path, other, _volume().astype(np.uint16))
    return path


def _huge_file_len(root: Path) -> str:
    """perDimLog2 claims 2^15 blocks per side (2^45 blocks, a 256 TiB jump table)."""
    path = make_dataset(root)
    patch(path, 4, bytes([(15 << 4) | 3]))
    patch(path, 8, struct.pack("<Q", 16 + 8 * (1 << 45)))
    return path


def _huge_block_len(root: Path) -> str:
    """perDimLog2 claims 2^15-voxel blocks (32 TiB each)."""
    path = make_dataset(root, block_type=1)
    patch(path, 4, bytes([(1 << 4) | 15]))
    return path


CASES: dict[str, Case] = {
    "wrong_magic": Case(_wrong_magic, HeaderError, offset=0, words="magic", reference_zeros=True),
    "unknown_version": Case(_header_byte(3, 2), HeaderError, offset=3, words="version",
                            reference_zeros=True),
    "unknown_block_type": Case(_header_byte(5, 4), HeaderError, offset=5, words="block type"),
    "unknown_voxel_type": Case(_header_byte(6, 11), HeaderError, offset=6, words="voxel type"),
    "voxel_size_not_a_multiple": Case(_voxel_size_not_multiple, HeaderError, offset=7,
                                      words="voxelSize"),
    "empty_file": Case(_truncate(0), HeaderError, offset=0, words="empty",
                       reference_zeros=True),
    "truncated_header": Case(_truncate(10), HeaderError, offset=0, words="truncated header"),
    "jump_table_truncated": Case(_truncate(16 + 8 * 3 + 4), JumpTableError, block=3,
                                 offset=16 + 8 * 3, words="truncated", reference_zeros=True),
    "jump_table_decreasing": Case(_decreasing, JumpTableError, block=4, offset=16 + 8 * 4,
                                  words="decreases"),
    "jump_table_past_eof": Case(_past_eof, JumpTableError, block=N_BLOCKS - 1,
                                offset=16 + 8 * (N_BLOCKS - 1), words="past the end"),
    "jump_table_inconsistent_with_data_offset": Case(_inconsistent_offset, JumpTableError,
                                                     offset=8, words="inconsistent"),
    "jump_table_entry_above_2_63": Case(_entry_above_2_63, JumpTableError, block=1,
                                        offset=16 + 8),
    "data_offset_zero": Case(_data_offset_zero, HeaderError, offset=8, words="dataOffset is 0"),
    "raw_data_offset_zero": Case(_raw_data_offset_zero, HeaderError, offset=8,
                                 words="dataOffset is 0"),
    "block_does_not_decode": Case(_garbage_block, BlockDecodeError, block=2,
                                  offset=lambda p: block_start(p, 2), words="LZ4 block"),
    "block_decodes_too_short": Case(_block_too_short, BlockDecodeError, block=6,
                                    offset=lambda p: block_start(p, 6),
                                    words=f"decodes to 256 bytes, expected {BLOCK_BYTES}"),
    "block_decodes_too_long": Case(_block_too_long, BlockDecodeError, block=5,
                                   offset=lambda p: block_start(p, 5), words="more than"),
    "zero_length_block": Case(_zero_length_block, BlockDecodeError, block=3,
                              offset=lambda p: block_start(p, 3), words="zero length"),
    "raw_file_shorter_than_its_blocks": Case(
        _truncate(16 + 3 * BLOCK_BYTES + 100, block_type=1), BlockDecodeError, block=3,
        offset=16 + 3 * BLOCK_BYTES, words="shorter than its blocks"),
    "geometry_differs_from_header_wkw": Case(_geometry_differs, DatasetLayoutError, offset=0,
                                             words="block_len 8 vs 4"),
    "voxel_type_differs_from_header_wkw": Case(_voxel_type_differs, DatasetLayoutError,
                                               offset=0, words="voxel_type uint8 vs uint16"),
    "huge_file_len_does_not_allocate": Case(_huge_file_len, JumpTableError, words="truncated"),
    "huge_block_len_does_not_allocate": Case(_huge_block_len, HeaderError, offset=4,
                                             words="exceed"),
}


def _check_error(exc: BaseException, case: Case, path: str) -> None:
    assert isinstance(exc, case.error), f"expected {case.error.__name__}, got {exc!r}"
    message = str(exc)
    assert path in message, message
    assert exc.path == path
    if case.block is not None:
        assert exc.block == case.block, message
        assert f"block {case.block}" in message, message
    if case.offset is not None:
        offset = case.offset(path) if callable(case.offset) else case.offset
        assert exc.offset == offset, message
        assert f"byte offset {offset}" in message, message
    assert case.words in message, message


def _run_case(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    root = tmp_path / "ds"
    path = case.damage(root)
    # Expected offsets are computed from the damaged file before anything reads it.
    offset = case.offset(path) if callable(case.offset) else case.offset
    case = Case(case.damage, case.error, case.block, offset, case.words, case.reference_zeros)
    # A dataset read raises it (no silent zeros, no crash, no hang).
    kind, value = isolated(read_dataset, str(root))
    assert kind == "raised", f"read returned data instead of raising: {name}"
    _check_error(value, case, path)
    # validate() reports it, from the dataset and (where the file alone shows it) the file.
    kind, problems = isolated(validate_path, str(root))
    assert kind == "ok", problems
    assert problems, "validate found nothing"
    assert all(isinstance(p, FormatError) for p in problems)
    matching = [p for p in problems if isinstance(p, case.error) and p.path == path]
    assert matching, problems
    _check_error(matching[0], case, path)
    if case.error is not DatasetLayoutError:
        kind, alone = isolated(validate_path, path)
        assert kind == "ok", alone
        assert any(isinstance(p, case.error) for p in alone), alone


def _make_test(name: str) -> Callable[[Path], None]:
    def test(tmp_path: Path) -> None:
        _run_case(name, tmp_path)
    test.__name__ = f"test_{name}"
    test.__doc__ = f"Damaged file: {name.replace('_', ' ')}."
    return test


for _name in CASES:
    globals()[f"test_{_name}"] = _make_test(_name)


# -- the reference, documented -------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.reference_zeros])
def test_reference_returns_silent_zeros(tmp_path: Path, name: str) -> None:
    """FORMAT-NOTES: the reference reads these damaged files as zeros (ours raises)."""
    pytest.importorskip("wkw")
    root = tmp_path / "ds"
    CASES[name].damage(root)
    kind, value = isolated(read_reference, str(root))
    assert kind == "ok", f"the reference now raises {value!r}: update FORMAT-NOTES"
    assert not np.any(value), "the reference returned data"


def test_data_offset_zero_reference_outcome_does_not_matter(tmp_path: Path) -> None:
    """The reference aborts the whole process on an LZ4 file with dataOffset 0 (FORMAT-NOTES);
    run it in a child whatever it does, and check that ours, in this process, raises."""
    pytest.importorskip("wkw")
    root = tmp_path / "ds"
    path = _data_offset_zero(root)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        import faulthandler

        faulthandler.disable()  # an abort here is the reference's, and expected: keep it quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        with contextlib.suppress(BaseException):
            read_reference(str(root))
        os._exit(0)
    os.close(w)
    os.close(r)
    os.waitpid(pid, 0)  # any outcome: crash, error, or zeros
    with pytest.raises(HeaderError) as info:
        read_dataset(str(root))
    assert path in str(info.value) and "byte offset 8" in str(info.value)


# -- validate reports everything -----------------------------------------------------------------
def test_validate_reports_every_damaged_block_not_only_the_first(tmp_path: Path) -> None:
    path = make_dataset(tmp_path)
    table = jump_table(path)
    for index in (1, 6):
        start = block_start(path, index)
        patch(path, start, b"\xff" * (table[index] - start))
    set_entry(path, 3, os.path.getsize(path) + 1)  # block 3 past the end, block 4 before it
    kind, problems = isolated(validate_path, path)
    assert kind == "ok", problems
    flagged = sorted((type(p).__name__, p.block) for p in problems)
    assert ("BlockDecodeError", 1) in flagged and ("BlockDecodeError", 6) in flagged
    assert ("JumpTableError", 3) in flagged
    assert any(p.block == 4 for p in problems)
    # A read of blocks reports each damaged block by itself and decodes the sound ones.
    kind, results = isolated(read_file_blocks, path)
    assert kind == "ok", results
    damaged = {k for k, r in enumerate(results) if isinstance(r, FormatError)}
    assert {1, 3, 6} <= damaged
    assert 0 in set(range(N_BLOCKS)) - damaged
    sound = results[0]
    assert isinstance(sound, np.ndarray)
    assert np.array_equal(sound, _volume()[:, :BLOCK_LEN, :BLOCK_LEN, :BLOCK_LEN])


def test_validate_reports_problems_of_every_file_of_a_dataset(tmp_path: Path) -> None:
    header = wkw.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN, block_type=3)
    with wkw.Dataset.create(tmp_path, header) as ds:
        ds.write((0, 0, 0), np.ones((2 * SIDE, SIDE, SIDE), dtype=np.uint8))
    a = str(tmp_path / "z0" / "y0" / "x0.wkw")
    b = str(tmp_path / "z0" / "y0" / "x1.wkw")
    patch(a, 0, b"NOT")
    os.truncate(b, 40)
    problems = wkw.validate(tmp_path)
    assert {p.path for p in problems} == {a, b}
    assert {type(p) for p in problems} == {HeaderError, JumpTableError}


def test_validate_valid_dataset_and_file_report_nothing(tmp_path: Path) -> None:
    path = make_dataset(tmp_path, block_type=3)
    assert wkw.validate(tmp_path) == []
    assert wkw.validate(path) == []
    with wkw.File.open(path) as f:
        assert f.validate() == []


def test_trailing_bytes_after_last_block_reported_but_readable(tmp_path: Path) -> None:
    path = make_dataset(tmp_path)
    with open(path, "ab") as fh:
        fh.write(b"junk")
    problems = wkw.validate(path)
    assert len(problems) == 1 and isinstance(problems[0], JumpTableError)
    assert "4 bytes follow the last block" in str(problems[0])
    assert np.array_equal(read_dataset(str(tmp_path)), _volume())


def test_block_type_differs_from_header_wkw_reported_but_readable(tmp_path: Path) -> None:
    path = make_dataset(tmp_path, block_type=2)
    with wkw.Dataset.open(tmp_path) as ds:
        ds.compress(tmp_path / "hc")  # header.wkw says LZ4HC there
    os.replace(path, tmp_path / "hc" / "z0" / "y0" / "x0.wkw")
    problems = wkw.validate(tmp_path / "hc")
    assert [type(p) for p in problems] == [DatasetLayoutError]
    assert "block type LZ4 differs" in str(problems[0])
    assert np.array_equal(read_dataset(str(tmp_path / "hc")), _volume())


def test_huge_raw_file_len_validates_without_allocating(tmp_path: Path) -> None:
    """A raw header claiming 2^45 blocks: reading the blocks that exist works; validate
    reports the cut-off blocks in one problem."""
    path = make_dataset(tmp_path, block_type=1)
    patch(path, 4, bytes([(15 << 4) | 3]))
    kind, problems = isolated(validate_path, path)
    assert kind == "ok", problems
    assert len(problems) == 1 and isinstance(problems[0], BlockDecodeError)
    assert problems[0].block == N_BLOCKS


def test_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetLayoutError, match="no header.wkw"):
        wkw.Dataset.open(tmp_path)
    with pytest.raises(DatasetLayoutError, match="no such file"):
        wkw.Dataset.open(tmp_path / "missing")
    problems = wkw.validate(tmp_path)
    assert len(problems) == 1 and isinstance(problems[0], DatasetLayoutError)


def test_damaged_header_wkw(tmp_path: Path) -> None:
    make_dataset(tmp_path)
    patch(str(tmp_path / "header.wkw"), 4, bytes([0xFF]))  # 2^15-voxel blocks
    with pytest.raises(HeaderError) as info:
        wkw.Dataset.open(tmp_path)
    assert str(tmp_path / "header.wkw") in str(info.value)
    problems = wkw.validate(tmp_path)
    assert any(isinstance(p, HeaderError) for p in problems)


def test_read_in_forked_child_after_parent_used_helper_thread(tmp_path: Path) -> None:
    """Regression: a child forked after a two-thread read must not wait for the parent's
    helper thread (it does not exist in the child)."""
    header = wkw.Header(np.uint8, block_len=8, file_len=8, block_type=3)
    data = np.random.default_rng(3).integers(0, 4, size=(1, 64, 64, 64), dtype=np.uint8)
    with wkw.Dataset.create(tmp_path, header) as ds:
        ds.write((0, 0, 0), data)
    with wkw.Dataset.open(tmp_path) as ds:
        assert np.array_equal(ds.read((0, 0, 0), (64, 64, 64)), data)  # uses the helper

    def read() -> Any:
        with wkw.Dataset.open(tmp_path) as ds:
            return ds.read((0, 0, 0), (64, 64, 64))

    kind, value = isolated(read)
    assert kind == "ok" and np.array_equal(value, data)


def test_plane_read_of_damaged_block_names_it(tmp_path: Path) -> None:
    """The partial-decoding path (an XY plane decodes only a prefix) reports damage too."""
    path = make_dataset(tmp_path)
    start, end = block_start(path, 2), jump_table(path)[2]
    patch(path, start, b"\xff" * (end - start))

    def plane() -> Any:
        with wkw.Dataset.open(tmp_path) as ds:
            return ds.read((0, 0, 0), (SIDE, SIDE, 1))

    kind, value = isolated(plane)
    assert kind == "raised" and isinstance(value, BlockDecodeError)
    assert value.block == 2 and value.offset == start


@pytest.mark.parametrize("block_type", [1, 2])
def test_write_into_file_of_other_geometry_refused(tmp_path: Path, block_type: int) -> None:
    """A write must not scramble a data file laid out with other geometry than header.wkw."""
    path = make_dataset(tmp_path, block_type=block_type)
    other = wkw.Header(np.uint8, block_len=4, file_len=4, block_type=block_type)
    writer.write_file(path, other, _volume())
    before = Path(path).read_bytes()
    with wkw.Dataset.open(tmp_path) as ds, pytest.raises(DatasetLayoutError) as info:
        ds.write((1, 2, 3), np.ones((4, 4, 4), dtype=np.uint8))
    assert path in str(info.value) and "block_len 8 vs 4" in str(info.value)
    assert Path(path).read_bytes() == before
