"""One .wkw data file: header, jump table, blocks.

(Over 600 lines: ``File`` opens a file and reads its blocks at every size in one class, the
single-block paths in plain ints beside the vectorised ones; box reads (``boxread``), the
checks of every block (``filecheck``), block memory (``blockmemory``) and the header's
parsing (``header``) live apart.  The seam to split along: opening and the small reads.)

A ``File`` parses its header and jump table once, at open, into one uint64 array; byte ranges
and sizes of blocks are computed from it vectorised, and the range checks of a read are one
vectorised pass over the wanted blocks (only a damaged block costs Python work, to word its
error).  The parsed header and table are remembered by path and file identity (``_PARSED``):
a file opened again while unchanged (the ``fstat`` of every open says so) is not read again,
so a ``Dataset`` opened afresh for each read costs ``open``, ``fstat``, ``lseek`` and
``close`` per file.

Stored bytes are read with ``os.pread``/``preadv`` through a ``handles.FileHandle`` (never a
memory mapping): neighbouring blocks are merged into one read into a per-thread buffer, and
compressed blocks are decoded from it by the system liblz4 (``lz4block``, via ctypes, the GIL
released).  Box reads (``File.read_into``) go through ``boxread``, which picks its way by
size and shares large reads among all cores; the checks of every block (``validate``) are in
``filecheck``.  Why not a mapping (the reader once mapped files): a file truncated
by another process while it is mapped kills the reading process with SIGBUS, which no Python
code can catch; a short ``pread`` is an ordinary error.  Unmapping also cost the helper thread
time on every plane and made closing depend on that thread.  The copy out of the page cache
that ``pread`` costs is about what the page faults and unmapping of a mapping cost
(``python -m benchmarks.format``; figures in docs/performance.md).

The descriptor belongs to the handle pool (``viewer.format.handles``): the number of open
files is bounded by ``RLIMIT_NOFILE``, and a file whose descriptor the pool closed is opened
again on its next read (checked to be the same file).  Every read ends with an ``fstat``: a
file changed by another program since it was opened raises ``FileChangedError`` (the bytes
read may mix two versions); a file replaced by a rename keeps reading its old version.

Small reads go in plain ints, the header's numbers worked out once per parsed header
(``parse_header`` remembers headers by their 16 bytes): ``File.open_read`` opens a file and
reads blocks at once (a small file with one ``pread``), ``File.read_whole`` reads blocks of a
file it closes again (no handle: a dataset of one block per file), and every decoded block
gets memory of its own, recycled from blocks whose arrays are gone (``blockmemory``: memory
new to the process costs a page fault per 4 KiB).

A damaged block raises ``BlockDecodeError`` or ``JumpTableError`` naming the file, the block and
the byte offset.  ``close`` and the collector's ``__del__`` never wait for another thread and
take no lock the collector could interrupt (``__del__`` takes none).
"""

from __future__ import annotations

import collections
import ctypes
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from viewer.format.errors import (
    BlockDecodeError,
    FileChangedError,
    FormatError,
    HeaderError,
    JumpTableError,
)
from viewer.format.handles import (
    OPEN_FLAGS,
    FileHandle,
    Identity,
    identity,
    readinto_fd,
    settle,
    settle_deadline,
    wait_for_writers,
)
from viewer.format.wkw import boxread, buffers, filecheck, lz4block, nativebox
from viewer.format.wkw.blockfile import MERGE_GAP
from viewer.format.wkw.blockmemory import (
    FIRST_BYTES,
    decode_whole,
    first_buffer,
    new_block,
    new_blocks,
    stage_buffer,
)
from viewer.format.wkw.header import (
    HEADER_SIZE,
    MAX_BLOCK_BYTES,
    Header,
    Numbers,
    check_limits,
    numbers_of,
    parse_header,
)

T = TypeVar("T")

#: Upper bound of one merged read.
MAX_RUN_BYTES = 8 << 20
#: ``posix_fadvise`` is available (read-ahead hints).
_FADVISE = hasattr(os, "posix_fadvise") and hasattr(os, "POSIX_FADV_WILLNEED")
#: ``read_blocks`` of at most this many blocks takes the plain-int path (``_read_few_blocks``).
FEW_BLOCKS = 4
#: ``File.open_read`` reads a file of at most this many bytes whole, with one ``pread``
#: (a file of one block of 32^3 voxels of 1-2 bytes, LZ4 or raw: N5-like datasets).
SMALL_FILE_BYTES = FIRST_BYTES
#: ``File.open_read`` reads this many bytes of a larger file at once: the header and a jump
#: table of up to 8^3 blocks (at most ``FIRST_BYTES``).
OPEN_READ_BYTES = 16 + 8 * (8 ** 3 + 1)

Vec3 = tuple[int, int, int]

class File:
    """An open WKW data file.  Safe to share between threads once opened."""

    def __init__(self, path: str | os.PathLike[str], handle: FileHandle | None, header: Header,
                 file_size: int, jump_table: npt.NDArray[np.uint64] | None,
                 numbers: Numbers | None = None) -> None:
        self.path = os.fspath(path)
        self._handle = handle  # None: read once, never open (``read_whole``)
        self.header = header
        self.file_size = file_size
        #: ``[dataOffset, end of block 0, end of block 1, ...]`` (N+1 entries); compressed only.
        self._extended = jump_table
        self._ranges_i64: npt.NDArray[np.int64] | None = (
            jump_table.view(np.int64) if jump_table is not None else None)
        self._closed = handle is None
        #: The native kernel's description of this file (``nativebox``), made on first use.
        self.kernel_box: Any = None
        # The header's numbers as plain attributes (its properties would be worked out again
        # per block; these once per parsed header).
        (self._num_blocks, self._block_bytes, self._compressed, self._data_offset, self._bound,
         self._dtype, self._block_shape, self._block_strides) = numbers or numbers_of(header)

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> File:
        """Open a data file, parse its header and jump table.  Raises FileNotFoundError when the
        file does not exist and a FormatError subclass when it is not a valid WKW data file."""
        return cls.open_read(path, ())[0]

    @classmethod
    def open_read(cls, path: str | os.PathLike[str], indices: Sequence[int]
                  ) -> tuple[File, list[npt.NDArray[Any] | FormatError]]:
        """Open a data file (as ``open``) and read the blocks ``indices`` (as ``read_blocks``)
        in one go: a file of at most ``SMALL_FILE_BYTES`` is read whole with one ``pread``
        and its blocks decoded from those bytes, a larger one's header and jump table come
        with one ``pread`` of ``OPEN_READ_BYTES`` (two when the table is longer); one
        ``fstat`` at the end checks that the file did not change meanwhile.  A dataset of one
        block per file (how N5 and Zarr v2 store chunks) then costs five system calls a block:
        ``open``, ``lseek``, ``fstat``, ``pread``, ``fstat``."""
        path = os.fspath(path)
        handle = FileHandle(path, in_use=True)
        fd = handle.fd
        assert fd is not None  # in use: the pool does not close it
        size = handle.size
        known = _PARSED.get(path)
        if known is not None and known[0] == handle.identity and (
                not indices or size > SMALL_FILE_BYTES):
            # Opened before, unchanged since: its header and table as parsed then.
            f = cls(path, handle, known[1], size, known[3], known[2])
            if not indices:
                handle.release()
                return f, []
            few = [int(i) for i in indices]
            try:
                out = f._checked(fd, handle, lambda: f._read_few(fd, few, 0, 0))
            except BaseException:
                handle.release()
                handle.close()
                raise
            handle.release()
            return f, out
        try:
            try:
                view, address = first_buffer()
                want = size if indices and size <= SMALL_FILE_BYTES \
                    else min(size, OPEN_READ_BYTES)
                got = readinto_fd(fd, view[:want], 0)
                header, numbers = parse_header(bytes(view[:min(got, HEADER_SIZE)]), path)
                jump_table = _jump_table(fd, path, header, numbers, size, view, got)
                f = cls(path, handle, header, size, jump_table, numbers)
                out = f._read_few(fd, [int(i) for i in indices], address, got) if indices else []
            except Exception as exc:
                # A short read of a file truncated meanwhile, say: say what happened.
                if not isinstance(exc, FileChangedError) and handle._changed(fd):
                    raise handle._changed_error() from exc
                raise
            handle.verify(fd)
        except BaseException:
            handle.release()
            handle.close()
            raise
        handle.release()
        if not indices or size > SMALL_FILE_BYTES:  # a small file's blocks: never looked up
            _remember(path, handle.identity, header, numbers, jump_table)
        return f, out

    @classmethod
    def read_whole(cls, path: str, indices: Sequence[int], deadline: int = 0
                   ) -> tuple[Header, list[npt.NDArray[Any] | FormatError]]:
        """Read the blocks ``indices`` of the data file at ``path`` and close it again:
        ``(its header, the blocks as read_blocks returns them)``.  For files read once and
        not kept open (``WkwVolume.read_units``: a dataset of one block per file, how N5 and
        Zarr v2 store chunks): no handle, no pool, no ``File`` kept; ``open``, ``lseek``,
        ``fstat``, one ``pread`` of a small file (``SMALL_FILE_BYTES``) that serves its
        header, jump table and blocks, ``fstat`` (a file changed meanwhile raises
        ``FileChangedError``), ``close``.  A file modified within the racy window is waited
        for (``handles.settle``) until ``deadline`` (``time.monotonic_ns()``; 0: from now,
        ``handles.SETTLE_NS``), then ``FileChangingError``.  Raises what ``open`` raises."""
        fd = os.open(path, OPEN_FLAGS)
        try:
            st = settle(fd, path, os.fstat(fd), deadline or settle_deadline())
            wait_for_writers(fd)  # after the fstat (``handles.wait_for_writers``)
            size = st.st_size
            view, address = first_buffer()
            want = size if size <= SMALL_FILE_BYTES else min(size, OPEN_READ_BYTES)
            try:
                got = readinto_fd(fd, view[:want], 0)
                header, numbers = parse_header(bytes(view[:min(got, HEADER_SIZE)]), path)
                one = _only_block(numbers, indices, view, address, got, size) \
                    if numbers[0] == 1 else None
                out: list[npt.NDArray[Any] | FormatError]
                if one is not None:
                    out = [one]
                else:
                    jump_table = _jump_table(fd, path, header, numbers, size, view, got)
                    f = cls(path, None, header, size, jump_table, numbers)
                    out = f._read_few(fd, [int(i) for i in indices], address, got)
            except Exception as exc:
                if not isinstance(exc, FileChangedError) and identity(os.fstat(fd)) != \
                        identity(st):
                    raise FileChangedError(_CHANGED, path) from exc
                raise
            if identity(os.fstat(fd)) != identity(st):
                raise FileChangedError(_CHANGED, path)
        finally:
            os.close(fd)
        return header, out

    def release_pages(self) -> None:
        """Nothing to release: files are read with ``pread``, never mapped (kept for callers
        written when they were).  Any thread."""

    def will_need(self, indices: Sequence[int] | npt.NDArray[np.integer[Any]]) -> None:
        """Hint that blocks ``indices`` are about to be read: their byte ranges are asked for
        all at once (``posix_fadvise(WILLNEED)``, ranges closer than a page merged), so that a
        cold read's disk requests run in parallel instead of one after another.  Only a hint:
        it never fails.  Any thread."""
        if self._closed or not _FADVISE:
            return
        idx = np.asarray(indices, dtype=np.int64)
        idx = idx[(idx >= 0) & (idx < self.header.num_blocks)]
        if not idx.size:
            return
        starts, ends = self._ranges_of(np.sort(idx))
        ok = (ends > starts) & (starts >= 0) & (ends <= self.file_size)
        starts, ends = starts[ok], ends[ok]
        if not starts.size:
            return
        page = 4096
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], np.maximum.accumulate(ends[order])
        cut = np.flatnonzero(starts[1:] > ends[:-1] + page) + 1
        try:
            with self._reading(check=False) as fd:
                for a, b in zip(np.split(starts, cut), np.split(ends, cut), strict=True):
                    lo, hi = int(a[0]), int(b[-1])
                    os.posix_fadvise(fd, lo, hi - lo, os.POSIX_FADV_WILLNEED)
        except (OSError, ValueError, FormatError):
            pass

    def close(self) -> None:
        """Close the file (its descriptor goes at once, or when a read in another thread that
        still uses it ends).  Reads after ``close`` raise ``ValueError``."""
        self._closed = True
        if self._handle is not None:
            self._handle.close()

    def __del__(self) -> None:
        # The collector may run this on any thread at any point, also while that thread holds
        # a lock the closing would need: hand the descriptor over without taking any lock.
        try:
            handle = self._handle
            if handle is not None and not handle._closed:
                handle.release_from_gc()
        except Exception:  # a half-made File, or the interpreter shutting down
            pass

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<wkw.File {self.path!r} {self.header!r}>"

    # -- the jump table -----------------------------------------------------------------------
    @property
    def jump_table(self) -> npt.NDArray[np.uint64]:
        """The N end offsets as stored (compressed files); for raw files, the implied ends."""
        if self._extended is not None:
            return self._extended[1:]
        h = self.header
        ends = h.data_offset + h.block_bytes * (np.arange(h.num_blocks, dtype=np.uint64) + 1)
        return ends.astype(np.uint64)

    def block_ranges(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(starts, ends) byte offsets of every block, as signed ints (a damaged table may
        make ``end < start``; offsets above 2**63 turn negative and are flagged as such)."""
        h = self.header
        if self._ranges_i64 is None:
            starts = h.data_offset + h.block_bytes * np.arange(h.num_blocks, dtype=np.int64)
            return starts, starts + h.block_bytes
        return self._ranges_i64[:-1], self._ranges_i64[1:]

    def _ranges_of(self, indices: npt.NDArray[np.int64]
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(starts, ends) of the blocks ``indices`` only (no array of all blocks for raw)."""
        if self._ranges_i64 is None:
            h = self.header
            starts = h.data_offset + h.block_bytes * indices
            return starts, starts + h.block_bytes
        return self._ranges_i64[indices], self._ranges_i64[indices + 1]

    def block_sizes(self) -> npt.NDArray[np.int64]:
        """Bytes each block takes on disk (Morton order)."""
        starts, ends = self.block_ranges()
        return ends - starts

    def bad_ranges(self, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
                   ) -> npt.NDArray[np.bool_]:
        """Vectorised: which of these block byte ranges the file cannot hold (any reason
        ``block_problem`` names)."""
        h = self.header
        if self._extended is None:
            return np.asarray(ends > self.file_size)
        return np.asarray((starts < h.data_offset) | (ends < starts) | (ends > self.file_size)
                          | (ends == starts)
                          | (ends - starts > lz4block.compress_bound(h.block_bytes)))

    def block_problem(self, index: int) -> FormatError | None:
        """What is wrong with block ``index``'s byte range, judged from the table alone."""
        self._check_indices(np.asarray([index], dtype=np.int64))
        starts, ends = self._ranges_of(np.asarray([index], dtype=np.int64))
        return self._range_problem(int(index), int(starts[0]), int(ends[0]))

    def _range_problem(self, index: int, start: int, end: int) -> FormatError | None:
        h = self.header
        table_offset = HEADER_SIZE + 8 * index
        if self._extended is None:
            if end > self.file_size:
                return BlockDecodeError(
                    f"raw file is {self.file_size} bytes, shorter than its blocks: block needs "
                    f"bytes {start}..{end}", self.path, block=index, offset=start)
            return None
        # Block i ends at the table entry at byte 16 + 8 i and starts at the one before it
        # (for block 0: dataOffset, at byte 8).  Entries of 2^63 and more read as negative.
        end_entry = table_offset
        start_entry = table_offset - 8
        if start < 0 or start > self.file_size:
            return JumpTableError(
                f"block starts at byte {start % 2**64}, past the end of the "
                f"{self.file_size}-byte file", self.path, block=index, offset=start_entry)
        if start < h.data_offset:
            return JumpTableError(
                f"block starts at byte {start}, inside the header and jump table (the data "
                f"begin at {h.data_offset})", self.path, block=index, offset=start_entry)
        if end < 0 or end > self.file_size:
            return JumpTableError(
                f"block ends at byte {end % 2**64}, past the end of the {self.file_size}-byte "
                f"file", self.path, block=index, offset=end_entry)
        if end < start:
            return JumpTableError(
                f"jump table decreases: block ends at {end} before it starts at {start}",
                self.path, block=index, offset=end_entry)
        if end == start:
            return BlockDecodeError("block has zero length", self.path, block=index, offset=start)
        if end - start > lz4block.compress_bound(h.block_bytes):
            return BlockDecodeError(
                f"block is {end - start} bytes, more than LZ4 can encode {h.block_bytes} bytes in",
                self.path, block=index, offset=start)
        return None

    def validate(self, decode: bool = True) -> list[FormatError]:
        """Every problem of this file (empty: valid): the jump table checked for every block,
        bytes after the last block, and, unless ``decode`` is False, every block decoded to
        exactly its size.  Unlike a read, does not stop at the first damaged block."""
        return filecheck.file_problems(self, decode)[1]

    def _first_problem(self, indices: npt.NDArray[np.int64], starts: npt.NDArray[np.int64],
                       ends: npt.NDArray[np.int64]) -> FormatError | None:
        bad = np.flatnonzero(self.bad_ranges(starts, ends))
        if not bad.size:
            return None
        k = int(bad[np.argmin(indices[bad])])
        return self._range_problem(int(indices[k]), int(starts[k]), int(ends[k]))

    # -- bytes --------------------------------------------------------------------------------
    def _reading(self, check: bool = True) -> Any:
        """``with f._reading() as fd``: the descriptor for a read (``ValueError`` when closed;
        ``FileChangedError`` at the end when another program changed the file meanwhile)."""
        if self._closed or self._handle is None:
            raise ValueError(f"{self.path} is closed")
        return self._handle.reading(check)

    def _fetch(self, indices: npt.NDArray[np.int64]
               ) -> Iterator[tuple[int, int, memoryview | FormatError]]:
        """Yield ``(position in indices, block index, bytes or error)`` for whole blocks, in
        file order; a block whose range the jump table gets wrong yields its error."""
        starts, ends = self._ranges_of(indices)
        bad = self.bad_ranges(starts, ends)
        for k in np.flatnonzero(bad).tolist():
            problem = self._range_problem(int(indices[k]), int(starts[k]), int(ends[k]))
            if problem is not None:
                yield k, int(indices[k]), problem
        keep = np.flatnonzero(~bad)
        for k, block, raw in self._read_ranges(indices[keep], starts[keep], ends[keep]):
            yield int(keep[k]), block, raw

    def _read_ranges(self, indices: npt.NDArray[np.int64], lo: npt.NDArray[np.int64],
                     hi: npt.NDArray[np.int64]
                     ) -> Iterator[tuple[int, int, memoryview | FormatError]]:
        """The byte ranges ``[lo, hi)`` of blocks ``indices``, sorted by offset, read with
        merged ``pread``s; a range past the end yields an error."""
        order = np.argsort(lo, kind="stable").tolist()
        los = lo.tolist()
        his = hi.tolist()
        run: list[int] = []
        run_lo = run_hi = 0

        def flush() -> Iterator[tuple[int, int, memoryview | FormatError]]:
            with self._reading() as fd:
                buf = memoryview(os.pread(fd, run_hi - run_lo, run_lo))
            for k in run:
                s, e = los[k] - run_lo, his[k] - run_lo
                if e > len(buf):
                    yield k, int(indices[k]), self._short(int(indices[k]), los[k], his[k])
                else:
                    yield k, int(indices[k]), buf[s:e]

        for k in order:
            s, e = los[k], his[k]
            if run and (s - run_hi > MERGE_GAP or e - run_lo > MAX_RUN_BYTES or s < run_hi):
                yield from flush()
                run = []
            if not run:
                run_lo, run_hi = s, e
            run.append(k)
            run_hi = max(run_hi, e)
        if run:
            yield from flush()

    def _short(self, index: int, start: int, end: int) -> BlockDecodeError:
        kind = "raw file" if self._extended is None else "file"
        return BlockDecodeError(
            f"{kind} is {self.file_size} bytes, shorter than its blocks: block needs bytes "
            f"{start}..{end}", self.path, block=index, offset=start)

    def _sources(self, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64],
                 indices: npt.NDArray[np.int64] | None = None) -> tuple[list[int], list[Any]]:
        """Addresses of the stored bytes of blocks (ranges already checked; ``indices`` name
        them in errors), and the objects that must stay alive while they are used.  Blocks
        closer than ``MERGE_GAP`` are read with one ``pread`` into this thread's buffer; the
        runs and every block's address are worked out vectorised (a slab of a large read
        has tens of runs)."""
        n = len(starts)
        if not n:
            return [], []
        order = np.argsort(starts, kind="stable")
        s_sorted, e_sorted = starts[order], ends[order]
        reach = np.maximum.accumulate(e_sorted)  # the end of everything up to each block
        first = np.flatnonzero(np.concatenate(([True], s_sorted[1:] - reach[:-1] > MERGE_GAP)))
        last = np.append(first[1:], n) - 1
        run_lo, run_hi = s_sorted[first], reach[last]
        size = run_hi - run_lo
        pos = np.cumsum(size) - size  # where each run lands in the buffer
        buf = buffers.source(int(size.sum()))
        run_of = np.repeat(np.arange(len(first)), np.diff(np.append(first, n)))
        addresses = np.empty(n, dtype=np.int64)
        addresses[order] = buf.ctypes.data + pos[run_of] + s_sorted - run_lo[run_of]
        view = memoryview(buf)  # type: ignore[arg-type]
        with self._reading() as fd:
            for lo, hi, at, a in zip(run_lo.tolist(), run_hi.tolist(), pos.tolist(),
                                     first.tolist(), strict=True):
                got = readinto_fd(fd, view[at:at + hi - lo], lo)
                if got < hi - lo:  # the file shrank since it was opened
                    k = a + int(np.argmax(e_sorted[a:] > lo + got))
                    block = int(indices[order[k]]) if indices is not None else -1
                    raise self._short(block, int(s_sorted[k]), int(e_sorted[k]))
        return addresses.tolist(), [buf]

    # -- reading blocks -----------------------------------------------------------------------
    def _as_block(self, buf: npt.NDArray[np.uint8]) -> npt.NDArray[Any]:
        """View a decoded block buffer as ``[z, y, x, c]`` (C order, matching the bytes)."""
        h = self.header
        b = h.block_len
        return buf.view(h.dtype).reshape(b, b, b, h.num_channels)

    def _decode_error(self, index: int, start: int, got: int, wanted: int,
                      partial: bool) -> BlockDecodeError:
        if got < 0:
            why = "does not decode (corrupt LZ4 data, or it decodes to more than "\
                  f"{self.header.block_bytes} bytes)"
        elif partial:
            why = f"decodes to only {got} bytes, the read needs {wanted}"
        else:
            why = f"decodes to {got} bytes, expected {wanted}"
        return BlockDecodeError(f"LZ4 block {why}", self.path, block=index, offset=start)

    def read_block(self, index: int) -> npt.NDArray[Any]:
        """Block ``index`` decoded, as a read-only ``(C, X, Y, Z)`` Fortran-order array."""
        result = self.read_blocks([index])[0]
        if isinstance(result, FormatError):
            raise result
        return result

    def read_blocks(self, indices: Sequence[int] | npt.NDArray[np.integer[Any]],
                    native: bool = True) -> list[npt.NDArray[Any] | FormatError]:
        """Decode several whole blocks in one pass over the file.

        Returns, in the order asked, a read-only ``(C, X, Y, Z)`` array per block, or the
        ``FormatError`` that block raised: one damaged block does not hide the others.
        ``native``: more than a few blocks go through the native kernel where it was built.
        """
        if len(indices) <= FEW_BLOCKS:
            return self._read_few_blocks([int(i) for i in indices])
        if native and nativebox.usable(self._compressed):
            return self._read_native(indices.tolist() if isinstance(indices, np.ndarray)
                                     else [int(i) for i in indices])
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        self._check_indices(idx)
        h = self.header
        n = len(idx)
        out: list[npt.NDArray[Any] | FormatError | None] = [None] * n
        if not n:
            return []
        starts, ends = self._ranges_of(idx)
        bad = self.bad_ranges(starts, ends)
        for k in np.flatnonzero(bad).tolist():
            out[k] = self._range_problem(int(idx[k]), int(starts[k]), int(ends[k]))
        good = np.flatnonzero(~bad)
        bb = h.block_bytes
        # A buffer of its own per block: a caller that keeps some blocks (a cache) need not
        # copy them out of a shared buffer; recycled memory of blocks gone (``new_block``),
        # where one large buffer would be fresh pages (faulted in, unmapped) on every call.
        memory = [new_block(bb) for _ in range(len(good))]
        if len(good):
            src, keep = self._sources(starts[good], ends[good], idx[good])
            dst = [address for _, address in memory]
            if h.is_compressed:
                sizes = (ends[good] - starts[good]).tolist()
                got = lz4block.decode_many(src, sizes, dst, [bb] * len(good), bb)
            else:
                lz4block.copy_many(src, dst, bb)
                got = [bb] * len(good)
            del keep
            for j, k in enumerate(good.tolist()):
                if got[j] != bb:
                    out[k] = self._decode_error(int(idx[k]), int(starts[k]), got[j], bb, False)
                    continue
                out[k] = self._as_result(memory[j][0])
        return out  # type: ignore[return-value]

    def _read_native(self, indices: list[int]) -> list[npt.NDArray[Any] | FormatError]:
        """``read_blocks`` by the native kernel, in plain ints: the kernel checks each block's
        range (what ``bad_ranges`` checks) and reads, decodes and places all of them in one
        call (``_acquired``); the Python here is per batch and per block only."""
        n = self._num_blocks
        if min(indices) < 0 or max(indices) >= n:
            raise IndexError(f"block index out of range 0..{n - 1} in {self.path}")
        memory, addresses = new_blocks(self._block_bytes, len(indices))
        status = self._acquired(lambda fd: nativebox.read_blocks(self, fd, indices, addresses))
        as_result = self._as_result
        if status is None:
            return [as_result(m) for m in memory]
        out: list[npt.NDArray[Any] | FormatError] = []
        for row, m in zip(status, memory, strict=True):
            problem = nativebox.block_error(self, row)
            if problem is not None and not isinstance(problem, FormatError):
                raise problem
            out.append(problem if problem is not None else as_result(m))
        return out

    def _read_few_blocks(self, indices: list[int]) -> list[npt.NDArray[Any] | FormatError]:
        """``read_blocks`` of a few blocks (a unit of one block, a loader batch's share of a
        small file) in plain ints (``_read_few``, through ``_acquired``).  The vectorised
        path's numpy calls cost several times the decoding of one block."""
        return self._acquired(lambda fd: self._read_few(fd, indices, 0, 0))

    def _acquired(self, read: Callable[[int], T]) -> T:
        """``read(fd)`` between one ``acquire`` of the descriptor and one ``fstat``
        (``_checked``): what ``FileHandle.reading`` does, without a context manager (a read of
        one small block costs a few microseconds, and a generator's enter and exit were a
        third of them).  ``ValueError`` when the file is closed."""
        handle = self._handle
        if self._closed or handle is None:
            raise ValueError(f"{self.path} is closed")
        fd = handle.acquire()
        try:
            return self._checked(fd, handle, lambda: read(fd))
        finally:
            handle.release()

    @staticmethod
    def _checked(fd: int, handle: FileHandle, read: Callable[[], T]) -> T:
        """``read()`` from ``fd`` (in use), then one ``fstat``: ``FileChangedError`` when
        the file changed meanwhile (also when that is why a read came up short)."""
        try:
            out = read()
        except Exception as exc:
            if not isinstance(exc, FileChangedError) and handle._changed(fd):
                raise handle._changed_error() from exc
            raise
        handle.verify(fd)
        return out

    def _read_few(self, fd: int, indices: list[int], first: int, first_len: int
                  ) -> list[npt.NDArray[Any] | FormatError]:
        """Blocks ``indices`` read from ``fd`` and decoded, each into a buffer of its own, in
        plain ints; a block whose bytes lie within the first ``first_len`` bytes of the file,
        read already at address ``first`` (``open_read``), is decoded from there, any other
        read with one ``pread``.  No check that the file is unchanged: the caller's."""
        n = self._num_blocks
        for index in indices:
            if index < 0 or index >= n:
                raise IndexError(f"block index out of range 0..{n - 1} in {self.path}")
        bb = self._block_bytes
        ranges = self._ranges_i64
        compressed = self._compressed
        lowest, bound, size_of_file = self._data_offset, self._bound, self.file_size
        out: list[npt.NDArray[Any] | FormatError] = []
        for index in indices:
            if ranges is None:
                start = lowest + bb * index
                end = start + bb
                ok = end <= size_of_file
            else:
                start = int(ranges[index])
                end = int(ranges[index + 1])
                ok = lowest <= start < end <= size_of_file and end - start <= bound
            if not ok:
                problem = self._range_problem(index, start, end)
                if problem is not None:
                    out.append(problem)
                    continue
            buf, dst = new_block(bb)
            size = end - start
            if end <= first_len:
                src = first + start
            elif compressed:
                stage, src = stage_buffer(size)
                if readinto_fd(fd, stage, start) < size:
                    out.append(self._short(index, start, end))
                    continue
            else:
                if readinto_fd(fd, buf, start) < bb:
                    out.append(self._short(index, start, end))
                    continue
                out.append(self._as_result(buf))
                continue
            if compressed:
                got = decode_whole(src, dst, size, bb)
                if got != bb:
                    out.append(self._decode_error(index, start, got, bb, False))
                    continue
            else:
                ctypes.memmove(dst, src, bb)
            out.append(self._as_result(buf))
        return out

    def _as_result(self, buf: Any) -> npt.NDArray[Any]:
        """A decoded block's buffer (bytes in ``[z, y, x, c]`` order) as the read-only
        ``(C, X, Y, Z)`` array ``read_blocks`` returns (one array, no view of a view)."""
        arr: npt.NDArray[Any] = np.ndarray(self._block_shape, self._dtype, buf, 0,
                                           self._block_strides)
        arr.setflags(write=False)
        return arr

    def _check_indices(self, idx: npt.NDArray[np.int64]) -> None:
        n = self.header.num_blocks
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise IndexError(f"block index out of range 0..{n - 1} in {self.path}")

    # -- reading boxes ------------------------------------------------------------------------
    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        """The box ``[offset, offset + shape)`` in file-local voxels as a ``(C, X, Y, Z)``
        Fortran-order array.  Parts outside the file read as zeros."""
        h = self.header
        out = np.zeros((h.num_channels, *map(int, shape)), dtype=h.dtype, order="F")
        self.read_into(out, offset)
        return out

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int],
                  out_offset: Sequence[int] = (0, 0, 0),
                  shape: Sequence[int] | None = None) -> None:
        """Read the box of ``shape`` (default: all of ``out`` past ``out_offset``) starting at
        file-local voxel ``offset`` into ``out[:, out_offset:...]``.  The box is clipped to the
        file; what lies outside is left untouched.  ``out`` is ``(C, X, Y, Z)`` of the file's
        dtype (Fortran order is fastest).  A damaged block raises its ``FormatError``."""
        boxread.read_into(self, out, offset, out_offset, shape)


def _only_block(numbers: Numbers, indices: Sequence[int], first: memoryview, address: int,
                got: int, file_size: int) -> npt.NDArray[Any] | None:
    """The block of a file of one block, when ``indices`` ask for it alone and its bytes are
    whole and sound among the ``got`` first bytes of the file (``first``, at ``address``):
    ``read_whole``'s common case in a few lines, no ``File`` made.  None for anything else
    (the general way then says what is wrong)."""
    if len(indices) != 1 or indices[0] != 0:
        return None
    _, bb, compressed, data_offset, bound, dtype, shape, strides = numbers
    if compressed:
        if data_offset != HEADER_SIZE + 8 or got < data_offset:
            return None
        end = int.from_bytes(first[16:24], "little")  # the jump table's one entry
        if not data_offset < end <= got or end - data_offset > bound or end > file_size:
            return None
        memory, dst = new_block(bb)
        if decode_whole(address + data_offset, dst, end - data_offset, bb) != bb:
            return None
    else:
        if data_offset < HEADER_SIZE or data_offset + bb > got:
            return None
        memory, dst = new_block(bb)
        ctypes.memmove(dst, address + data_offset, bb)
    block: npt.NDArray[Any] = np.ndarray(shape, dtype, memory, 0, strides)
    block.flags.writeable = False
    return block


#: Headers and jump tables of the files opened so far, by path: ``(identity, header,
#: numbers, table)``.  A file opened again whose identity (``handles.identity``: device,
#: inode, size, modification and change times, from the ``fstat`` every open makes) is the
#: one recorded is not read again: its header and table are those parsed and checked then
#: (a ``Dataset`` opened afresh for every read, the loader reopening a unit, costs ``open``,
#: ``fstat``, ``lseek`` and ``close``).  Kept up to ``PARSED_KEEP_BYTES`` of tables and
#: ``PARSED_KEEP_FILES`` files, the oldest dropped first.
_PARSED: collections.OrderedDict[
    str, tuple[Identity, Header, Numbers, npt.NDArray[np.uint64] | None]] = \
    collections.OrderedDict()
PARSED_KEEP_BYTES = 32 << 20
PARSED_KEEP_FILES = 8192
#: A file changed less than this long before it was opened is not remembered: a change
#: within the same tick of a coarse file-system clock would keep its times (and it was
#: changed a moment ago, so it may well change again).  What git calls "racily clean".
RACY_NS = 50_000_000
_parsed_lock = threading.Lock()
_parsed_bytes = 0


def _new_lock_after_fork() -> None:
    global _parsed_lock
    _parsed_lock = threading.Lock()  # a thread of the parent may have held it


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_after_fork)


def _remember(path: str, ident: Identity, header: Header, numbers: Numbers,
              table: npt.NDArray[np.uint64] | None) -> None:
    """Keep a file's parsed header and table for its next open (``_PARSED``)."""
    global _parsed_bytes
    if time.time_ns() - ident[4] < RACY_NS:
        return
    if table is not None:
        table.flags.writeable = False  # shared by every File of this file from now on
    size = 0 if table is None else table.nbytes
    with _parsed_lock:
        old = _PARSED.pop(path, None)
        if old is not None and old[3] is not None:
            _parsed_bytes -= old[3].nbytes
        _PARSED[path] = (ident, header, numbers, table)
        _parsed_bytes += size
        while _PARSED and (_parsed_bytes > PARSED_KEEP_BYTES or
                           len(_PARSED) > PARSED_KEEP_FILES):
            gone = _PARSED.popitem(last=False)[1][3]
            if gone is not None:
                _parsed_bytes -= gone.nbytes


def remembered(path: str) -> tuple[Identity, Header, Numbers,
                                   npt.NDArray[np.uint64] | None] | None:
    """The header and jump table parsed when the file at ``path`` was last opened, with its
    identity then (``_PARSED``), or None: a read that finds the file still of that identity
    may use them (``nativebox.read_path``)."""
    return _PARSED.get(path)


def forget_parsed() -> None:
    """Drop every remembered header and jump table (tests; after rewriting files in place
    faster than the file system's clock tells apart)."""
    global _parsed_bytes
    with _parsed_lock:
        _PARSED.clear()
        _parsed_bytes = 0


def _jump_table(fd: int, path: str, header: Header, numbers: Numbers, file_size: int,
                first: memoryview, got: int) -> npt.NDArray[np.uint64] | None:
    """The extended jump table of a data file (``[dataOffset, end of block 0, ...]``; None
    for raw blocks), taken from the ``got`` first bytes of the file read already (``first``)
    when they hold it, else read; every way the header and the file's size can contradict
    it is a ``HeaderError`` or ``JumpTableError``."""
    n, bb, compressed, data_offset = numbers[0], numbers[1], numbers[2], numbers[3]
    if data_offset == 0:
        raise HeaderError("dataOffset is 0 in a data file (only header.wkw may have 0)",
                          path, offset=8)
    if not compressed:
        if data_offset < HEADER_SIZE:
            raise HeaderError(f"dataOffset {data_offset} lies inside the header",
                              path, offset=8)
        if data_offset + n * bb >= 1 << 62:
            raise HeaderError(f"dataOffset {data_offset} puts the blocks past any "
                              f"possible file size", path, offset=8)
        return None
    expected = HEADER_SIZE + 8 * n
    if data_offset != expected:
        raise JumpTableError(
            f"dataOffset {data_offset} is inconsistent with a jump table of "
            f"{n} blocks (expected {expected})", path, offset=8)
    if file_size < expected:  # checked before reading: a garbage file_len must not allocate
        whole = max((file_size - HEADER_SIZE) // 8, 0)
        raise JumpTableError(
            f"jump table truncated: file is {file_size} bytes, the table of {n} entries "
            f"ends at byte {expected}; only {whole} entries are present",
            path, block=min(whole, n - 1), offset=HEADER_SIZE + 8 * whole)
    end = 8 * (n + 2)
    raw = bytes(first[8:end]) if got >= end else os.pread(fd, 8 * (n + 1), 8)
    if len(raw) < 8 * (n + 1):  # the file shrank since fstat
        raise JumpTableError(f"jump table truncated: read {len(raw) - 8} of {8 * n} bytes",
                             path, offset=HEADER_SIZE + max(len(raw) - 8, 0))
    table: npt.NDArray[np.uint64] = np.frombuffer(raw, dtype=_U64)  # read-only
    return table


_U64 = np.dtype("<u8")
_CHANGED = ("file changed while it was read (rewritten or truncated by another program); "
            "open it again")


__all__ = ["File", "check_limits", "MAX_BLOCK_BYTES"]
