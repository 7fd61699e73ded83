"""One .wkw data file: header, jump table, blocks.

A ``File`` parses its header and jump table once, at open, into one uint64 array; byte ranges
and sizes of blocks are computed from it vectorised, and the range checks of a read are one
vectorised pass over the wanted blocks (only a damaged block costs Python work, to word its
error).

The file is memory-mapped read-only (falling back to ``os.pread`` where mmap is unavailable):
a compressed block is decoded straight from the mapping by the system liblz4 (``lz4block``,
via ctypes, the GIL released), and raw blocks are copied straight from the mapping.  Box
reads (``File.read_into``) go through ``boxread``, which picks one of three paths by size.

Measured (``python -m benchmarks.format`` and CPU time per call, 2 shared cores): mmap against
pread 0.55x on an LZ4HC XY plane, 0.75x XZ, 0.86x on a full read; on a 64^3 box pread of
merged ranges and a fresh mapping cost the same; on raw planes pread of whole blocks costs
1.5-2x the mapping, pread of just the needed planes 0.5x (XY).  Decoding into a small
buffer or in smaller batches gained nothing on planes: the work is the decoding.  Planes
where every block is decoded whole (XZ, YZ) cost about 1.25x the reference on one thread
(its overhead per read is smaller: no page faults or unmapping, copies in compiled code) and
beat it only with the helper on the second core.  Two threads decoding at once each run about
20% slower here (measured on pure decoding, no Python between blocks), and with any other
load the helper often gets no core.  The mapping is made with libc's mmap (no descriptor of
its own), so ``close`` closes the descriptor at once and leaves the unmapping (about 0.5 ms
for a plane's pages) to the helper thread.  Measured and not kept: ``pread`` of the blocks
into a per-thread buffer instead of decoding from the mapping (the copy costs what the page
faults and unmapping cost), MADV_POPULATE_READ of the needed ranges (no gain), sharing the
copy out of a plane with the helper (slower), 2-16 blocks per shared chunk (no difference).  The 64^3 box stays at about 1.3x (LZ4HC)
and 1.6x (raw): numpy's copy costs about 10 ns per row of at most a block's width, and
opening a file costs about 0.08 ms against the reference's 0.02.

A damaged block raises ``BlockDecodeError`` or ``JumpTableError`` naming the file, the block and
the byte offset.  A foreign process that truncates a file while it is mapped can still make the
process fault (SIGBUS); the project's own writer never does (it renames compressed files into
place and only ever grows raw ones).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from viewer.format.errors import BlockDecodeError, FormatError, HeaderError, JumpTableError
from viewer.format.wkw import boxread, lz4block
from viewer.format.wkw.header import HEADER_SIZE, Header

#: Neighbouring byte ranges closer than this are fetched with one read (pread fallback).
MERGE_GAP = 4096
#: Upper bound of one merged read (pread fallback).
MAX_RUN_BYTES = 8 << 20
#: Memory-map files (False: read with pread).  Read at open.
USE_MMAP = os.environ.get("WKW_VIEWER_NO_MMAP", "") == ""
#: ``close`` leaves the unmapping (about 0.5 ms for the pages a plane touched, more for a
#: whole file) to the helper thread instead of making the caller wait for it.
UNMAP_IN_BACKGROUND = True
#: Largest block this reader accepts (what LZ4 can encode; no real dataset comes near).
MAX_BLOCK_BYTES = 0x7E000000

Vec3 = tuple[int, int, int]

class File:
    """An open WKW data file.  Safe to share between threads once opened."""

    def __init__(self, path: str | os.PathLike[str], fd: int, header: Header, file_size: int,
                 jump_table: npt.NDArray[np.uint64] | None) -> None:
        self.path = os.fspath(path)
        self._fd = fd
        self.header = header
        self.file_size = file_size
        #: ``[dataOffset, end of block 0, end of block 1, ...]`` (N+1 entries); compressed only.
        self._extended = jump_table
        self._ranges_i64: npt.NDArray[np.int64] | None = (
            jump_table.view(np.int64) if jump_table is not None else None)
        self._closed = False
        self._lock = threading.Lock()
        self._mmap: mmap.mmap | None = None
        #: The mapping as uint8 (keeps the mapping alive while a read uses it).
        self._data: npt.NDArray[np.uint8] | None = None
        if USE_MMAP and file_size > 0:
            self._data = _map_pages(fd, file_size)
            if self._data is None:
                try:
                    self._mmap = mmap.mmap(fd, file_size, access=mmap.ACCESS_READ)
                    self._data = np.frombuffer(self._mmap, dtype=np.uint8)
                except (OSError, ValueError):
                    self._mmap = None
                    self._data = None

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> File:
        """Open a data file, parse its header and jump table.  Raises FileNotFoundError when the
        file does not exist and a FormatError subclass when it is not a valid WKW data file."""
        path = os.fspath(path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            file_size = os.fstat(fd).st_size
            header = Header.from_bytes(os.pread(fd, HEADER_SIZE, 0), path)
            check_limits(header, path)
            jump_table = cls._read_jump_table(fd, path, header, file_size)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, header, file_size, jump_table)

    @staticmethod
    def _read_jump_table(fd: int, path: str, header: Header,
                         file_size: int) -> npt.NDArray[np.uint64] | None:
        if header.data_offset == 0:
            raise HeaderError("dataOffset is 0 in a data file (only header.wkw may have 0)",
                              path, offset=8)
        if not header.is_compressed:
            if header.data_offset < HEADER_SIZE:
                raise HeaderError(f"dataOffset {header.data_offset} lies inside the header",
                                  path, offset=8)
            return None
        expected = header.expected_data_offset
        if header.data_offset != expected:
            raise JumpTableError(
                f"dataOffset {header.data_offset} is inconsistent with a jump table of "
                f"{header.num_blocks} blocks (expected {expected})", path, offset=8)
        n = header.num_blocks
        if file_size < expected:  # checked before reading: a garbage file_len must not allocate
            whole = max((file_size - HEADER_SIZE) // 8, 0)
            raise JumpTableError(
                f"jump table truncated: file is {file_size} bytes, the table of {n} entries "
                f"ends at byte {expected}; only {whole} entries are present",
                path, block=min(whole, n - 1), offset=HEADER_SIZE + 8 * whole)
        raw = os.pread(fd, 8 * (n + 1), 8)
        if len(raw) < 8 * (n + 1):  # the file shrank since fstat
            raise JumpTableError(f"jump table truncated: read {len(raw) - 8} of {8 * n} bytes",
                                 path, offset=HEADER_SIZE + max(len(raw) - 8, 0))
        table: npt.NDArray[np.uint64] = np.frombuffer(raw, dtype=np.dtype("<u8"))  # read-only
        return table

    def release_pages(self) -> None:
        """Drop this process's mapping of the pages reads touched (they stay in the page cache
        and are mapped again on the next read).  Without it every page a long-running reader
        ever touched counts in its RSS until the file is closed.  Any thread; safe during
        reads (the mapping is shared and read-only, so a dropped page reads back the same)."""
        with self._lock:
            if self._closed or self._data is None or not hasattr(mmap, "MADV_DONTNEED"):
                return
            if self._mmap is None:
                _LIBC.madvise(self._data.ctypes.data, self._data.nbytes, mmap.MADV_DONTNEED)
                return
            try:
                self._mmap.madvise(mmap.MADV_DONTNEED)
            except OSError:
                pass

    def will_need(self, indices: Sequence[int] | npt.NDArray[np.integer[Any]]) -> None:
        """Hint that blocks ``indices`` are about to be read: their pages are asked for all
        at once (``MADV_WILLNEED``, contiguous ranges merged), so that a cold read's disk
        requests run in parallel instead of one page fault after another.  Only a hint: it
        never fails, and does nothing without a libc mapping.  Any thread."""
        data = self._data
        if self._closed or data is None or _LIBC is None or self._mmap is not None \
                or not hasattr(mmap, "MADV_WILLNEED"):
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
        page = mmap.PAGESIZE
        starts = starts - starts % page
        # merge ranges closer than a page apart (sorted by block index = by offset)
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], np.maximum.accumulate(ends[order])
        cut = np.flatnonzero(starts[1:] > ends[:-1] + page) + 1
        base = data.ctypes.data
        with self._lock:
            if self._closed:
                return
            for a, b in zip(np.split(starts, cut), np.split(ends, cut)):
                lo, hi = int(a[0]), int(b[-1])
                _LIBC.madvise(base + lo, hi - lo, mmap.MADV_WILLNEED)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            mm, self._mmap = self._mmap, None
            data, self._data = self._data, None
            os.close(self._fd)
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass  # a read in another thread still uses it: unmapped when that read ends
        elif data is not None:
            if UNMAP_IN_BACKGROUND:
                boxread.release_later(data)  # the last reference dropped on the helper
            del data  # the last reference (unless a read still uses it): unmapped now

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
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
        from viewer.format.wkw import validation

        if self.header.is_compressed:
            return validation.file_problems(self, decode)[1]
        return validation._raw_problems(self)

    def _first_problem(self, indices: npt.NDArray[np.int64], starts: npt.NDArray[np.int64],
                       ends: npt.NDArray[np.int64]) -> FormatError | None:
        bad = np.flatnonzero(self.bad_ranges(starts, ends))
        if not bad.size:
            return None
        k = int(bad[np.argmin(indices[bad])])
        return self._range_problem(int(indices[k]), int(starts[k]), int(ends[k]))

    # -- bytes --------------------------------------------------------------------------------
    def _mapping(self) -> npt.NDArray[np.uint8] | None:
        if self._closed:
            raise ValueError(f"{self.path} is closed")
        return self._data

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
        """The byte ranges ``[lo, hi)`` of blocks ``indices``, sorted by offset: slices of the
        mapping, or (without one) merged ``pread``s; a range past the end yields an error."""
        data = self._mapping()
        order = np.argsort(lo, kind="stable").tolist()
        los = lo.tolist()
        his = hi.tolist()
        if data is not None:
            view = memoryview(data)  # type: ignore[arg-type]
            for k in order:
                if his[k] > self.file_size:
                    yield k, int(indices[k]), self._short(int(indices[k]), los[k], his[k])
                else:
                    yield k, int(indices[k]), view[los[k]:his[k]]
            return
        run: list[int] = []
        run_lo = run_hi = 0

        def flush() -> Iterator[tuple[int, int, memoryview | FormatError]]:
            buf = memoryview(os.pread(self._fd, run_hi - run_lo, run_lo))
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
        them in errors), and the objects that must stay alive while they are used."""
        data = self._mapping()
        if data is not None:
            base = data.ctypes.data
            return (starts + base).tolist(), [data]
        # pread fallback: merged runs read straight into numpy buffers.
        addresses = [0] * len(starts)
        keep: list[Any] = []
        order = np.argsort(starts, kind="stable")
        s_sorted, e_sorted = starts[order], ends[order]
        if len(order):
            gap = s_sorted[1:] - np.maximum.accumulate(e_sorted)[:-1]
            breaks = np.flatnonzero(gap > MERGE_GAP) + 1
            for run in np.split(np.arange(len(order)), breaks):
                lo, hi = int(s_sorted[run[0]]), int(e_sorted[run].max())
                buf = np.empty(hi - lo, dtype=np.uint8)
                if hasattr(os, "preadv"):
                    got = os.preadv(self._fd, [cast(Any, buf)], lo)
                else:  # pragma: no cover - platforms without preadv
                    raw = os.pread(self._fd, hi - lo, lo)
                    got = len(raw)
                    buf[:got] = np.frombuffer(raw, dtype=np.uint8)
                if got < hi - lo:  # the file shrank since it was opened
                    k = int(run[np.argmax(e_sorted[run] > lo + got)])
                    block = int(indices[order[k]]) if indices is not None else -1
                    raise self._short(block, int(s_sorted[k]), int(e_sorted[k]))
                keep.append(buf)
                base = buf.ctypes.data - lo
                for k in run.tolist():
                    addresses[int(order[k])] = base + int(s_sorted[k])
        return addresses, keep

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

    def read_blocks(self, indices: Sequence[int] | npt.NDArray[np.integer[Any]]
                    ) -> list[npt.NDArray[Any] | FormatError]:
        """Decode several whole blocks in one pass over the file.

        Returns, in the order asked, a read-only ``(C, X, Y, Z)`` array per block, or the
        ``FormatError`` that block raised: one damaged block does not hide the others.
        """
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
        # copy them out of a shared buffer, and blocks this size come from the heap, reused,
        # where one large buffer would be fresh pages (faulted in, unmapped) on every call.
        bufs = [np.empty(bb, dtype=np.uint8) for _ in range(len(good))]
        if len(good):
            src, keep = self._sources(starts[good], ends[good], idx[good])
            dst = [buf.__array_interface__["data"][0] for buf in bufs]
            if h.is_compressed:
                sizes = (ends[good] - starts[good]).tolist()
                got = lz4block.decode_many(src, sizes, dst, [bb] * len(good), bb)
            else:
                lz4block.copy_many(src, dst, bb)
                got = [bb] * len(good)
            del keep
            shape = (h.block_len, h.block_len, h.block_len, h.num_channels)
            for j, k in enumerate(good.tolist()):
                if got[j] != bb:
                    out[k] = self._decode_error(int(idx[k]), int(starts[k]), got[j], bb, False)
                    continue
                arr = bufs[j].view(h.dtype).reshape(shape).transpose(3, 2, 1, 0)
                arr.flags.writeable = False
                out[k] = arr
        return out  # type: ignore[return-value]

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


def _load_libc() -> Any:
    if os.name != "posix":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.madvise.restype = ctypes.c_int
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _load_libc()
_MAP_FAILED = ctypes.c_void_p(-1).value


def _map_pages(fd: int, size: int) -> npt.NDArray[np.uint8] | None:
    """Map ``size`` bytes of ``fd`` read-only with libc's ``mmap``, as a uint8 array, or None
    (no libc: ``mmap.mmap`` instead).  Unlike ``mmap.mmap`` the mapping holds no descriptor
    of its own, so it may outlive the file's closing: it is unmapped when the last array
    using it is collected, which ``File.close`` leaves to the helper thread."""
    if _LIBC is None or not hasattr(mmap, "PROT_READ"):
        return None
    address = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address is None or address == _MAP_FAILED:
        return None
    pages = _Pages(address, size)
    # Not at exit: an array still alive then (a daemon thread's) must stay readable; the
    # process's end unmaps everything anyway.
    weakref.finalize(pages, _LIBC.munmap, address, size).atexit = False
    return np.asarray(pages)


class _Pages:
    """Owner of one libc mapping, seen by numpy through the array interface: arrays viewing
    it keep it alive, and it is unmapped when it is collected.  (A ctypes array type per
    mapping size would do the same, but ctypes caches every such type for good: one per
    file size, unbounded over a long session on a dataset of many files.)"""

    def __init__(self, address: int, size: int) -> None:
        self.__array_interface__ = {"data": (address, True), "shape": (size,),
                                    "typestr": "|u1", "version": 3}


def check_limits(header: Header, path: str | os.PathLike[str] | None = None) -> None:
    """Refuse geometry no real file has and that would make a reader allocate absurd memory
    (a garbage header can claim 2^15-voxel blocks)."""
    if header.block_bytes > MAX_BLOCK_BYTES:
        raise HeaderError(
            f"blocks of {header.block_len}^3 voxels x {header.voxel_size} bytes "
            f"({header.block_bytes} bytes) exceed the largest block LZ4 can hold "
            f"({MAX_BLOCK_BYTES} bytes)", path, offset=4)
