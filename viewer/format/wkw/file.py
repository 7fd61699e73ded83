"""One .wkw data file: header, jump table, blocks.

A ``File`` keeps its descriptor open and reads with ``os.pread`` (thread-safe: no shared file
position), so one object serves every worker thread.  The jump table is parsed once, at open,
into one uint64 array; byte ranges and sizes of blocks are computed from it vectorised.

Reads of a box decode only the blocks the box touches, fetch them sorted by byte offset with
neighbouring ranges merged into one read, and decode each block only as far as the box needs
(an XY plane needs a prefix of each block; see ``lz4block``).  A damaged block raises
``BlockDecodeError`` or ``JumpTableError`` naming the file, the block and the byte offset.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import BlockDecodeError, FormatError, HeaderError, JumpTableError
from viewer.format.wkw import lz4block, morton
from viewer.format.wkw.header import HEADER_SIZE, Header

#: Neighbouring byte ranges closer than this are fetched with one read.
MERGE_GAP = 4096
#: Upper bound of one merged read, so that a full-file read does not hold the file in memory twice.
MAX_RUN_BYTES = 8 << 20

Vec3 = tuple[int, int, int]


class File:
    """An open WKW data file.  Safe to share between threads once opened."""

    def __init__(self, path: str | os.PathLike[str], fd: int, header: Header, file_size: int,
                 jump_table: npt.NDArray[np.uint64] | None) -> None:
        self.path = os.fspath(path)
        self._fd = fd
        self.header = header
        self.file_size = file_size
        #: ``[dataOffset, end of block 0, end of block 1, ...]`` (N+1 entries), compressed files only.
        self._extended = jump_table
        self._closed = False
        self._lock = threading.Lock()

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
        raw = os.pread(fd, 8 * (n + 1), 8)
        if len(raw) < 8 * (n + 1):
            whole = (len(raw) - 8) // 8
            raise JumpTableError(
                f"jump table truncated: file is {file_size} bytes, the table of {n} entries "
                f"ends at byte {expected}; only {max(whole, 0)} entries are present",
                path, block=max(whole, 0), offset=HEADER_SIZE + 8 * max(whole, 0))
        table = np.frombuffer(raw, dtype="<u8").astype(np.uint64)
        table.flags.writeable = False
        return table

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._fd)

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
        make ``end < start``)."""
        h = self.header
        if self._extended is None:
            starts = h.data_offset + h.block_bytes * np.arange(h.num_blocks, dtype=np.int64)
            return starts, starts + h.block_bytes
        ext = self._extended.astype(np.int64)  # offsets above 2**63 turn negative: flagged below
        return ext[:-1], ext[1:]

    def block_sizes(self) -> npt.NDArray[np.int64]:
        """Bytes each block takes on disk (Morton order)."""
        starts, ends = self.block_ranges()
        return ends - starts

    def block_problem(self, index: int) -> FormatError | None:
        """What is wrong with block ``index``'s byte range, judged from the table alone."""
        starts, ends = self.block_ranges()
        return self._range_problem(int(index), int(starts[index]), int(ends[index]))

    def _range_problem(self, index: int, start: int, end: int) -> FormatError | None:
        h = self.header
        table_offset = HEADER_SIZE + 8 * index
        if self._extended is None:
            if end > self.file_size:
                return BlockDecodeError(
                    f"raw file is {self.file_size} bytes, block needs bytes {start}..{end}",
                    self.path, block=index, offset=start)
            return None
        if start < h.data_offset or end < 0 or start < 0:
            return JumpTableError(f"block starts at {start}, before the data at {h.data_offset}",
                                  self.path, block=index, offset=table_offset)
        if end < start:
            return JumpTableError(
                f"jump table decreases: block ends at {end} before it starts at {start}",
                self.path, block=index, offset=table_offset)
        if end > self.file_size:
            return JumpTableError(
                f"block ends at byte {end}, past the end of the {self.file_size}-byte file",
                self.path, block=index, offset=table_offset)
        if end == start:
            return BlockDecodeError("block has zero length", self.path, block=index, offset=start)
        if end - start > lz4block.compress_bound(h.block_bytes):
            return BlockDecodeError(
                f"block is {end - start} bytes, more than LZ4 can encode {h.block_bytes} bytes in",
                self.path, block=index, offset=start)
        return None

    # -- reading blocks -----------------------------------------------------------------------
    def _fetch(self, indices: npt.NDArray[np.int64]
               ) -> Iterator[tuple[int, int, memoryview | FormatError]]:
        """Yield ``(position in indices, block index, bytes or error)`` for whole blocks, in
        file order; a block whose range the jump table gets wrong yields its error."""
        starts_all, ends_all = self.block_ranges()
        starts = starts_all[indices]
        ends = ends_all[indices]
        good = np.ones(len(indices), dtype=bool)
        if self._extended is not None:
            for k in range(len(indices)):
                problem = self._range_problem(int(indices[k]), int(starts[k]), int(ends[k]))
                if problem is not None:
                    good[k] = False
                    yield k, int(indices[k]), problem
        keep = np.flatnonzero(good)
        for k, block, raw in self._read_ranges(indices[keep], starts[keep], ends[keep]):
            yield int(keep[k]), block, raw

    def _read_ranges(self, indices: npt.NDArray[np.int64], lo: npt.NDArray[np.int64],
                     hi: npt.NDArray[np.int64]
                     ) -> Iterator[tuple[int, int, memoryview | FormatError]]:
        """Fetch the byte ranges ``[lo, hi)`` of blocks ``indices`` sorted by offset, merging
        neighbours into one ``pread``; a range the file is too short for yields an error."""
        if self._closed:
            raise ValueError(f"{self.path} is closed")
        order = np.argsort(lo, kind="stable").tolist()
        los = lo.tolist()
        his = hi.tolist()
        run: list[int] = []
        run_lo = run_hi = 0

        def flush() -> Iterator[tuple[int, int, memoryview | FormatError]]:
            buf = memoryview(os.pread(self._fd, run_hi - run_lo, run_lo))
            for k in run:
                s, e = los[k] - run_lo, his[k] - run_lo
                if e > len(buf):
                    idx = int(indices[k])
                    kind = "raw file" if self._extended is None else "file"
                    yield k, idx, BlockDecodeError(
                        f"{kind} is {self.file_size} bytes, block needs bytes up to {his[k]}",
                        self.path, block=idx, offset=los[k])
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

    def _decode(self, idx: int, raw: memoryview, scratch: npt.NDArray[np.uint8],
                prefix: int | None) -> npt.NDArray[np.uint8]:
        """Decode into ``scratch`` (a block-sized uint8 buffer) and return it."""
        h = self.header
        if not h.is_compressed:
            n = len(raw)
            scratch[:n] = np.frombuffer(raw, dtype=np.uint8)
            return scratch
        try:
            lz4block.decode_into(raw, scratch, prefix)
        except lz4block.LZ4Error as exc:
            starts, _ = self.block_ranges()
            raise BlockDecodeError(f"LZ4 block {exc}", self.path, block=idx,
                                   offset=int(starts[idx])) from None
        return scratch

    def _as_block(self, buf: npt.NDArray[np.uint8]) -> npt.NDArray[Any]:
        """View a decoded block buffer as ``[z, y, x, c]`` (C order, matching the bytes)."""
        h = self.header
        b = h.block_len
        return buf.view(h.dtype).reshape(b, b, b, h.num_channels)

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
        out: list[npt.NDArray[Any] | FormatError] = [None] * len(idx)  # type: ignore[list-item]
        for k, block, raw in self._fetch(idx):
            if isinstance(raw, FormatError):
                out[k] = raw
                continue
            buf = np.empty(h.block_bytes, dtype=np.uint8)
            try:
                self._decode(block, raw, buf, None)
            except FormatError as exc:
                out[k] = exc
                continue
            arr = self._as_block(buf).transpose(3, 2, 1, 0)
            arr.flags.writeable = False
            out[k] = arr
        return out

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
        file; what lies outside is left untouched."""
        h = self.header
        b = h.block_len
        side = h.file_len_vx
        if shape is None:
            shape = tuple(int(out.shape[1 + a]) - int(out_offset[a]) for a in range(3))
        lo = np.maximum(np.asarray(offset, dtype=np.int64), 0)
        hi = np.minimum(np.asarray(offset, dtype=np.int64) + np.asarray(shape, dtype=np.int64),
                        side)
        if np.any(hi <= lo):
            return
        shift = np.asarray(out_offset, dtype=np.int64) - np.asarray(offset, dtype=np.int64)
        blo = lo // b
        bhi = (hi - 1) // b + 1
        coords = morton.block_grid(tuple(blo), tuple(bhi))  # type: ignore[arg-type]
        indices = morton.encode(coords[:, 0], coords[:, 1], coords[:, 2])
        # Per block: the voxel range it contributes, block-local.
        base = coords * b
        loc_lo = np.maximum(lo - base, 0)
        loc_hi = np.minimum(hi - base, b)
        last = loc_hi - 1
        prefixes = ((last[:, 0] + b * (last[:, 1] + b * last[:, 2])) + 1) * h.voxel_size
        # Raw files: read only from the first needed byte; compressed: decode only a prefix.
        first = (loc_lo[:, 0] + b * (loc_lo[:, 1] + b * loc_lo[:, 2])) * h.voxel_size
        out_t = out.T  # (Z, Y, X, C) view, C order when out is F order
        scratch = np.empty(h.block_bytes, dtype=np.uint8)
        raw_file = not h.is_compressed
        if raw_file:
            block_starts = h.data_offset + indices * h.block_bytes
            fetch = self._read_ranges(indices, block_starts + first, block_starts + prefixes)
        else:
            fetch = self._fetch(indices)
        for k, block, raw in fetch:
            if isinstance(raw, FormatError):
                raise raw
            if raw_file:
                s = int(first[k])
                n = len(raw)
                scratch[s:s + n] = np.frombuffer(raw, dtype=np.uint8)
                buf = scratch
            else:
                p = int(prefixes[k])
                buf = self._decode(block, raw, scratch, p if p < h.block_bytes else None)
            blk = self._as_block(buf)
            (x0, y0, z0), (x1, y1, z1) = loc_lo[k], loc_hi[k]
            ox, oy, oz = base[k] + shift
            out_t[oz + z0:oz + z1, oy + y0:oy + y1, ox + x0:ox + x1, :] = blk[z0:z1, y0:y1, x0:x1, :]
