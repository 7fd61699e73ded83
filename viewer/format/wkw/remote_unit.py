"""One WKW data file read through a ``Store`` (``StoreWkwUnit``): the storage unit of a WKW
dataset at a URL (``viewer.format.wkw.remote``).

Its header and jump table are fetched with one range read (``[0, dataOffset)``, whose length
the dataset's ``header.wkw`` fixes), then only the byte ranges of the blocks asked for, which
the store merges into as few requests as it can.  Decoding uses the same LZ4 block decoder as
local files (``lz4block``).

Blocks are read from the version of the file its jump table came from (an ETag, else a
Last-Modified, learnt from the answer that brought the table: ``Store.read_ranges_versioned``,
no request of its own): a file replaced on the server between the two reads has its table
read again and the blocks read through it, as often as it changes within the settle wait
(``handles.SETTLE_NS``, as a shard's index is); a file still changing after that gives every
block of the read a ``FileChangingError``, never a block cut out of one version at another's
offsets.

Opening a unit does not wait for the network: the header fetch starts in the background and
the first call that needs the jump table waits for it.  A hint (``will_need``) for a unit whose
table is not there yet is kept by a thread of ``_background`` until it is, then its blocks'
ranges are asked for (unless the hint went stale meanwhile: ``StoreWkwVolume.hint_dropped``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from viewer.format.description import described
from viewer.format.errors import (
    BlockDecodeError,
    DatasetLayoutError,
    FileChangedError,
    FileChangingError,
    FormatError,
    HeaderError,
    JumpTableError,
)
from viewer.format.executor import Executor
from viewer.format.handles import changing_error, settle_deadline
from viewer.format.remote import timeline
from viewer.format.store import Store
from viewer.format.volume import ChunkTable, IntArray, StorageUnit, StoredResult
from viewer.format.wkw import lz4block
from viewer.format.wkw.file import check_limits
from viewer.format.wkw.header import BLOCK_TYPE_NAMES, HEADER_SIZE, Header


def head_length(h: Header) -> int:
    """Bytes of a data file's header and jump table (read with one range read): its data
    offset in a compressed file, the header alone in a raw one."""
    return h.expected_data_offset if h.is_compressed else HEADER_SIZE


class UnitHost(Protocol):
    """What a unit needs of its volume (``viewer.format.wkw.remote.StoreWkwVolume``)."""

    store: Store
    header: Header

    @property
    def executor(self) -> Executor:
        """Whose threads wait for tables ahead (the volume's, ``Volume.executor``)."""
        ...

    def hint_dropped(self, key: str, asked_at: float) -> bool:
        """Whether a hint for ``key`` given at ``asked_at`` is of no use any more."""
        ...


#: Seconds between two reads of a file found changed (its table and blocks read anew).
CHANGED_PAUSE_S = 0.02

#: The dataset's header file (a unit's header must agree with it).
HEADER_FILE = "header.wkw"

#: Threads (of the volume's executor) that wait for jump tables on behalf of read-ahead.
OPEN_THREADS = 8


def _background(executor: Executor) -> ThreadPoolExecutor | None:
    """Threads of ``executor`` that wait for jump tables on behalf of ``will_need`` (never the
    loader's); None once it closed (nothing is fetched ahead any more)."""
    if executor.closed:
        return None
    try:
        return executor.pool("remote-open", OPEN_THREADS)
    except RuntimeError:
        return None


def _remote_error(exc: OSError, path: str, block: int | None = None,
                  offset: int | None = None) -> FormatError:
    from viewer.format.remote.errors import RemoteError, RemoteIOError

    if isinstance(exc, RemoteIOError):
        return RemoteError.from_io(exc, path, block=block, offset=offset)
    return RemoteError(f"read failed: {exc.strerror or exc}", path, block=block, offset=offset)


class StoreWkwUnit(StorageUnit):
    """One WKW data file read through a store (see the module docstring)."""

    def __init__(self, volume: UnitHost, key: str) -> None:
        self.volume = volume
        self.store = volume.store
        self.key = key
        self.path = self.store.location(key)
        h = volume.header
        self.num_chunks = h.num_blocks
        self.table_bytes = 8 * (h.num_blocks + 1) if h.is_compressed else 0
        self._head_len = head_length(h)
        self._lock = threading.Lock()
        self._loaded = False
        self._absent = False
        self._error: FormatError | None = None
        self._header: Header | None = None
        self._ranges: npt.NDArray[np.int64] | None = None  # n + 1 offsets (compressed)
        self._size = 0
        #: The version of the file the header and table were read from (None: not known).
        self._version: str | None = None
        timeline.mark("unit-open", key)
        if self.store.supports_prefetch:
            self.store.prefetch(key, [(0, self._head_len)])

    # -- the header and jump table -----------------------------------------------------------
    def _load(self) -> None:
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._loaded:
            return
        h = self.volume.header
        timeline.mark("table-wait", self.key)
        results, version = self.store.read_ranges_versioned(self.key,
                                                            [(0, self._head_len)])
        got = results[0]
        timeline.mark("table", self.key)
        if isinstance(got, FileNotFoundError):
            self._absent = True
            self._loaded = True
            return
        if isinstance(got, OSError):
            raise _remote_error(got, self.path, offset=0)  # not kept: tried again later
        if isinstance(got, FormatError):
            raise got
        self._version = version
        try:
            self._parse(h, got)
        except FormatError as exc:
            self._error = exc
        self._loaded = True

    def _reload(self, seen: str | None) -> None:
        """The file is no longer version ``seen``: read its header and table again (once for
        every reader that found the change)."""
        with self._lock:
            if self._version != seen or not self._loaded:
                return  # another reader did
            self._loaded = self._absent = False
            self._error = None
            self._load_locked()

    def _parse(self, h: Header, raw: bytes) -> None:
        header = Header.from_bytes(raw[:HEADER_SIZE], self.path)
        check_limits(header, self.path)
        if not header.same_geometry(h):
            diffs = "; ".join(h.differences(header))
            raise DatasetLayoutError(
                f"file header differs from {HEADER_FILE} ({HEADER_FILE} vs file: {diffs})",
                self.path, offset=0)
        size = self.store.known_size(self.key)
        self._header = header
        if header.data_offset == 0:
            raise HeaderError("dataOffset is 0 in a data file (only header.wkw may have 0)",
                              self.path, offset=8)
        if header.is_compressed:
            if header.data_offset != self._head_len:
                raise JumpTableError(
                    f"dataOffset {header.data_offset} is inconsistent with a jump table of "
                    f"{header.num_blocks} blocks (expected {self._head_len})", self.path,
                    offset=8)
            if len(raw) < self._head_len:
                whole = max((len(raw) - HEADER_SIZE) // 8, 0)
                raise JumpTableError(
                    f"jump table truncated: the file ends at byte {len(raw)}, the table of "
                    f"{header.num_blocks} entries at byte {self._head_len}", self.path,
                    block=min(whole, header.num_blocks - 1), offset=HEADER_SIZE + 8 * whole)
            table = np.frombuffer(raw, dtype="<u8", count=header.num_blocks + 1, offset=8)
            self._ranges = table.view(np.int64)
        self._size = size if size is not None else (
            int(self._ranges[-1]) if self._ranges is not None
            else header.data_offset + header.block_bytes * header.num_blocks)

    def _ready(self) -> None:
        """Load, then raise the unit's own error (a damaged header or table)."""
        self._load()
        if self._error is not None:
            raise self._error

    def _block_ranges(self, idx: IntArray, ranges: npt.NDArray[np.int64] | None = None,
                      header: Header | None = None) -> tuple[IntArray, IntArray]:
        """Where blocks ``idx`` lie, by the table loaded now (or ``ranges`` and ``header``
        taken together under the lock)."""
        h = self.volume.header
        if header is None:
            ranges, header = self._ranges, self._header
        if ranges is None:
            assert header is not None
            starts = header.data_offset + h.block_bytes * idx
            return starts, starts + h.block_bytes
        return ranges[idx], ranges[idx + 1]

    def _range_problem(self, index: int, start: int, end: int,
                       ranges: npt.NDArray[np.int64] | None = None,
                       size: int | None = None) -> FormatError | None:
        h = self.volume.header
        if size is None:
            ranges, size = self._ranges, self._size
        entry = HEADER_SIZE + 8 * index
        if ranges is None:
            if end > size:
                return BlockDecodeError(f"raw file is {size} bytes, shorter than its blocks: "
                                        f"block needs bytes {start}..{end}", self.path,
                                        block=index, offset=start)
            return None
        data_offset = self._head_len
        if start < data_offset or start > size:
            return JumpTableError(f"block starts at byte {start % 2**64}, outside the data "
                                  f"({data_offset}..{size})", self.path, block=index,
                                  offset=entry - 8)
        if end < 0 or end > size:
            return JumpTableError(f"block ends at byte {end % 2**64}, past the end of the "
                                  f"{size}-byte file", self.path, block=index, offset=entry)
        if end < start:
            return JumpTableError(f"jump table decreases: block ends at {end} before it "
                                  f"starts at {start}", self.path, block=index, offset=entry)
        if end == start:
            return BlockDecodeError("block has zero length", self.path, block=index,
                                    offset=start)
        if end - start > lz4block.compress_bound(h.block_bytes):
            return BlockDecodeError(f"block is {end - start} bytes, more than LZ4 can encode "
                                    f"{h.block_bytes} bytes in", self.path, block=index,
                                    offset=start)
        return None

    # -- StorageUnit ----------------------------------------------------------------------------
    @property
    def size(self) -> int:
        self._load()
        return self._size

    @property
    def absent(self) -> bool:
        """Whether the file turned out to be missing (every block absent)."""
        self._load()
        return self._absent

    def chunk_table(self) -> ChunkTable:
        self._ready()
        n = self.num_chunks
        if self._absent:
            return ChunkTable(np.full(n, -1, np.int64), np.zeros(n, np.int64),
                              np.zeros(n, np.bool_))
        starts, ends = self._block_ranges(np.arange(n, dtype=np.int64))
        return ChunkTable(np.asarray(starts, np.int64), np.asarray(ends - starts, np.int64),
                          np.ones(n, np.bool_))

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        """The blocks' stored bytes, from the version of the file the jump table came from
        (see the module docstring)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        deadline = 0
        while True:
            out, seen = self._read_from_table(idx)
            changed = [r for r in out if isinstance(r, FileChangedError)]
            if not changed:
                return out
            if any(isinstance(r, FileChangingError) for r in changed):
                return out
            # Every block again, not only those found changed: the others came of the old
            # version (some from the cache), and one answer must not mix two versions.
            deadline = deadline or settle_deadline()
            if time.monotonic_ns() > deadline:
                reason = changing_error(self.path).reason
                return [FileChangingError(reason, self.path, block=i,
                                          offset=r.offset if isinstance(r, FormatError) else None)
                        for i, r in zip(idx.tolist(), out, strict=True)]
            timeline.mark("table-changed", self.key)
            time.sleep(CHANGED_PAUSE_S)  # not a burst of requests at a file being written
            try:
                self._reload(seen)
            except FormatError as exc:
                return [exc] * len(idx)

    def _read_from_table(self, idx: IntArray) -> tuple[list[StoredResult], str | None]:
        """``read_stored`` through the table loaded now, and the version of the file that
        table is of; a block answered by another version is its ``FileChangedError``."""
        try:
            self._ready()
        except FormatError as exc:
            return [exc] * len(idx), None
        with self._lock:
            absent, ranges, version = self._absent, self._ranges, self._version
            header, size = self._header, self._size
        if absent:
            return [None] * len(idx), version
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_chunks):
            bad = int(idx[(idx < 0) | (idx >= self.num_chunks)][0])
            raise IndexError(f"block index {bad} out of range 0..{self.num_chunks - 1}")
        starts, ends = self._block_ranges(idx, ranges, header)
        out: list[StoredResult] = [None] * len(idx)
        want: list[int] = []
        triples = zip(idx.tolist(), starts.tolist(), ends.tolist(), strict=True)
        for k, (index, s, e) in enumerate(triples):
            problem = self._range_problem(index, s, e, ranges, size)
            if problem is not None:
                out[k] = problem
            else:
                want.append(k)
        timeline.mark("blocks-wait", self.key, note=f"{len(want)} blocks")
        got = self.store.read_ranges_results(
            self.key, [(int(starts[k]), int(ends[k] - starts[k])) for k in want], version)
        timeline.mark("blocks", self.key, note=f"{len(want)} blocks")
        for k, data in zip(want, got, strict=True):
            index, s, e = int(idx[k]), int(starts[k]), int(ends[k])
            if isinstance(data, FileNotFoundError):
                out[k] = BlockDecodeError("the file is gone (HTTP 404) after its jump table "
                                          "was read", self.path, block=index, offset=s)
            elif isinstance(data, FileChangedError):
                out[k] = data.at(block=index, offset=s)
            elif isinstance(data, OSError):
                out[k] = _remote_error(data, self.path, block=index, offset=s)
            elif isinstance(data, FormatError):
                out[k] = data
            elif len(data) < e - s:
                out[k] = BlockDecodeError(f"truncated: block needs bytes {s}..{e}, the file "
                                          f"ends at {s + len(data)}", self.path, block=index,
                                          offset=s)
            else:
                out[k] = data
        return out, version

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        h = self.volume.header
        raw: Any = stored
        if h.is_compressed:
            try:
                raw = lz4block.decode(stored, h.block_bytes)
            except lz4block.LZ4Error:
                raise BlockDecodeError(
                    f"LZ4 block does not decode (corrupt LZ4 data, or it decodes to more than "
                    f"{h.block_bytes} bytes)", self.path, block=index,
                    offset=self._block_offset(index)) from None
        elif len(stored) != h.block_bytes:
            raise BlockDecodeError(f"block is {len(stored)} bytes, expected {h.block_bytes}",
                                   self.path, block=index, offset=self._block_offset(index))
        b = h.block_len
        return np.frombuffer(raw, dtype=h.dtype).reshape(b, b, b, h.num_channels
                                                         ).transpose(3, 2, 1, 0)

    def _block_offset(self, index: int) -> int | None:
        try:
            return int(self._block_ranges(np.asarray([index], np.int64))[0][0])
        except (IndexError, AssertionError):
            return None

    def will_need(self, indices: Sequence[int]) -> None:
        if not self.store.supports_prefetch:
            return
        wanted = [int(i) for i in indices]
        timeline.mark("hint", self.key, note=f"{len(wanted)} blocks"
                      + ("" if self._loaded else ", after the table"))
        if self._loaded:
            self._prefetch_blocks(wanted)
        else:
            pool = _background(self.volume.executor)
            if pool is not None:
                pool.submit(self._load_then_prefetch, wanted, time.monotonic())

    def _load_then_prefetch(self, indices: list[int], asked_at: float) -> None:
        """A hint for a unit whose jump table was not there yet: the blocks' ranges once it
        is, unless the hint went stale meanwhile, the cursor moved on (``drop_read_ahead``)
        or the volume closed."""
        if self.volume.hint_dropped(self.key, asked_at):
            timeline.mark("hint-dropped", self.key)
            return
        try:
            self._load()
        except FormatError:
            return
        if self.volume.hint_dropped(self.key, asked_at):
            timeline.mark("hint-dropped", self.key)
            return
        self._prefetch_blocks(indices)

    def _prefetch_blocks(self, indices: list[int]) -> None:
        if self._absent or self._error is not None or not indices:
            return
        idx = np.asarray(indices, dtype=np.int64)
        idx = idx[(idx >= 0) & (idx < self.num_chunks)]
        starts, ends = self._block_ranges(idx)
        ok = (starts >= 0) & (ends > starts) & (ends <= self._size)
        self.store.prefetch(self.key, [(int(s), int(e - s))
                                       for s, e in zip(starts[ok], ends[ok], strict=True)])

    @described
    def describe(self) -> dict[str, Any]:
        self._load()
        if self._absent:
            return {"url": self.path, "present": False}
        h = self._header or self.volume.header
        return {"magic": "WKW", "url": self.path, "version": h.version,
                "block_len": h.block_len, "file_len": h.file_len,
                "block_type": BLOCK_TYPE_NAMES.get(h.block_type, h.block_type),
                "voxel_type": h.dtype.name, "num_channels": h.num_channels,
                "voxel_size": h.voxel_size, "data_offset": h.data_offset,
                "header_bytes": HEADER_SIZE,
                "jump_table_bytes": 8 * h.num_blocks if h.is_compressed else 0,
                "file_bytes": self._size}

    def problems(self, decode: bool = True) -> list[FormatError]:
        try:
            self._ready()
        except FormatError as exc:
            return [exc]
        if self._absent:
            return []
        found: list[FormatError] = []
        n = self.num_chunks
        starts, ends = self._block_ranges(np.arange(n, dtype=np.int64))
        for index in range(n):
            p = self._range_problem(index, int(starts[index]), int(ends[index]))
            if p is not None:
                found.append(p)
        if decode and not found:
            found.extend(super().problems(decode))
        return found


__all__ = ["StoreWkwUnit", "HEADER_FILE", "head_length"]
