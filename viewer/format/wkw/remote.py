"""WKW read through a ``Store`` (issue 16): a WKW dataset or a single ``.wkw`` file at a URL.

(Over 600 lines: the unit (``StoreWkwUnit``) and the volume (``StoreWkwVolume``) live here
together; they are the seam to split along.)

Each data file is one storage unit (``StoreWkwUnit``).  Its header and jump table are fetched
with one range read (``[0, dataOffset)``, whose length the dataset's ``header.wkw`` fixes), then
only the byte ranges of the blocks asked for, which the store merges into as few requests as
it can.  Decoding uses the same LZ4 block decoder as local files (``lz4block``).

Opening a unit does not wait for the network: ``open_unit`` returns at once and the header
fetch starts in the background; the first call that needs the jump table waits for it.  So the
loader opening the units of the next batches (its read-ahead) starts all their header fetches
together instead of one after another.  The price: a unit whose file turns out to be missing
(HTTP 404) is an open unit whose every block is absent, rather than ``None`` — unless that is
known already (an earlier 404, or the probe of the extent).

Extent: the caller's (a webKnossos layer's box) when given, else the box of the files present —
listed where the store can list (S3, GCS, a local folder), else found by probing (plain HTTP
cannot list): the files at the grid corner are asked for by HEAD, then the neighbours of every
file found, at most ``MAX_PROBES`` requests.  Never by downloading files.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import (
    BlockDecodeError,
    DatasetLayoutError,
    FormatError,
    HeaderError,
    JumpTableError,
)
from viewer.format.store import Store
from viewer.format.volume import (
    ChunkTable,
    IntArray,
    StorageUnit,
    StoredResult,
    Volume,
    VolumeInfo,
    units_box,
)
from viewer.format.wkw import lz4block, morton
from viewer.format.wkw.file import check_limits
from viewer.format.wkw.header import BLOCK_TYPE_NAMES, HEADER_SIZE, Header

Vec3 = tuple[int, int, int]
HEADER_FILE = "header.wkw"
#: Most HEAD requests the extent probe of an unlistable dataset makes.
MAX_PROBES = 4096
#: Units kept open by the volume itself (``read``; the loader keeps its own).
OPEN_UNITS = 256

_opener_lock = threading.Lock()
_opener: ThreadPoolExecutor | None = None


def _background() -> ThreadPoolExecutor:
    """Threads that wait for jump tables on behalf of ``will_need`` (never the loader's)."""
    global _opener
    with _opener_lock:
        if _opener is None:
            _opener = ThreadPoolExecutor(8, thread_name_prefix="wkw-remote-open")
        return _opener


def _remote_error(exc: OSError, path: str, block: int | None = None,
                  offset: int | None = None) -> FormatError:
    from viewer.format.remote.errors import RemoteError, RemoteIOError

    if isinstance(exc, RemoteIOError):
        return RemoteError.from_io(exc, path, block=block, offset=offset)
    return RemoteError(f"read failed: {exc.strerror or exc}", path, block=block, offset=offset)


class StoreWkwUnit(StorageUnit):
    """One WKW data file read through a store (see the module docstring)."""

    def __init__(self, volume: StoreWkwVolume, key: str) -> None:
        self.volume = volume
        self.store = volume.store
        self.key = key
        self.path = self.store.location(key)
        h = volume.header
        self.num_chunks = h.num_blocks
        self.table_bytes = 8 * (h.num_blocks + 1) if h.is_compressed else 0
        self._head_len = h.expected_data_offset if h.is_compressed else HEADER_SIZE
        self._lock = threading.Lock()
        self._loaded = False
        self._absent = False
        self._error: FormatError | None = None
        self._header: Header | None = None
        self._ranges: npt.NDArray[np.int64] | None = None  # n + 1 offsets (compressed)
        self._size = 0
        prefetch = getattr(self.store, "prefetch", None)
        if prefetch is not None:
            prefetch(key, [(0, self._head_len)])

    # -- the header and jump table -----------------------------------------------------------
    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            h = self.volume.header
            got = _read_results(self.store, self.key, [(0, self._head_len)])[0]
            if isinstance(got, FileNotFoundError):
                self._absent = True
                self._loaded = True
                return
            if isinstance(got, OSError):
                raise _remote_error(got, self.path, offset=0)  # not kept: tried again later
            if isinstance(got, FormatError):
                raise got
            try:
                self._parse(h, got)
            except FormatError as exc:
                self._error = exc
            self._loaded = True

    def _parse(self, h: Header, raw: bytes) -> None:
        header = Header.from_bytes(raw[:HEADER_SIZE], self.path)
        check_limits(header, self.path)
        if not header.same_geometry(h):
            diffs = "; ".join(h.differences(header))
            raise DatasetLayoutError(
                f"file header differs from {HEADER_FILE} ({HEADER_FILE} vs file: {diffs})",
                self.path, offset=0)
        size = _known_size(self.store, self.key)
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

    def _block_ranges(self, idx: IntArray) -> tuple[IntArray, IntArray]:
        h = self.volume.header
        if self._ranges is None:
            assert self._header is not None
            starts = self._header.data_offset + h.block_bytes * idx
            return starts, starts + h.block_bytes
        return self._ranges[idx], self._ranges[idx + 1]

    def _range_problem(self, index: int, start: int, end: int) -> FormatError | None:
        h = self.volume.header
        size = self._size
        entry = HEADER_SIZE + 8 * index
        if self._ranges is None:
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
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        try:
            self._ready()
        except FormatError as exc:
            return [exc] * len(idx)
        if self._absent:
            return [None] * len(idx)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_chunks):
            bad = int(idx[(idx < 0) | (idx >= self.num_chunks)][0])
            raise IndexError(f"block index {bad} out of range 0..{self.num_chunks - 1}")
        starts, ends = self._block_ranges(idx)
        out: list[StoredResult] = [None] * len(idx)
        want: list[int] = []
        triples = zip(idx.tolist(), starts.tolist(), ends.tolist(), strict=True)
        for k, (index, s, e) in enumerate(triples):
            problem = self._range_problem(index, s, e)
            if problem is not None:
                out[k] = problem
            else:
                want.append(k)
        got = _read_results(self.store, self.key,
                            [(int(starts[k]), int(ends[k] - starts[k])) for k in want])
        for k, data in zip(want, got, strict=True):
            index, s, e = int(idx[k]), int(starts[k]), int(ends[k])
            if isinstance(data, FileNotFoundError):
                out[k] = BlockDecodeError("the file is gone (HTTP 404) after its jump table "
                                          "was read", self.path, block=index, offset=s)
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
        return out

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
        prefetch = getattr(self.store, "prefetch", None)
        if prefetch is None:
            return
        wanted = [int(i) for i in indices]
        if self._loaded:
            self._prefetch_blocks(wanted)
        else:
            _background().submit(self._load_then_prefetch, wanted, time.monotonic())

    def _load_then_prefetch(self, indices: list[int], asked_at: float) -> None:
        """A hint for a unit whose jump table was not there yet: the blocks' ranges once it
        is, unless the hint went stale meanwhile, the cursor moved on (``drop_read_ahead``)
        or the volume closed."""
        if self.volume.hint_dropped(self.key, asked_at):
            return
        try:
            self._load()
        except FormatError:
            return
        if self.volume.hint_dropped(self.key, asked_at):
            return
        self._prefetch_blocks(indices)

    def _prefetch_blocks(self, indices: list[int]) -> None:
        if self._absent or self._error is not None or not indices:
            return
        idx = np.asarray(indices, dtype=np.int64)
        idx = idx[(idx >= 0) & (idx < self.num_chunks)]
        starts, ends = self._block_ranges(idx)
        ok = (starts >= 0) & (ends > starts) & (ends <= self._size)
        self.store.prefetch(self.key, [(int(s), int(e - s))  # type: ignore[attr-defined]
                                       for s, e in zip(starts[ok], ends[ok], strict=True)])

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


class StoreWkwVolume(Volume):
    """A WKW dataset (or one ``.wkw`` file: ``single_key``) read through a ``Store``."""

    format = "wkw"

    def __init__(self, store: Store, header: Header, bounds: tuple[Vec3, Vec3] | None = None,
                 single_key: str | None = None) -> None:
        self.store = store
        self.header = header
        self.single_key = single_key
        self.path = store.location(single_key) if single_key else store.root
        self.dtype = header.dtype
        self.num_channels = header.num_channels
        self.chunk_shape = (header.block_len,) * 3
        self.unit_shape = (header.file_len,) * 3
        self._bounds = bounds
        self._lock = threading.Lock()
        self._units: dict[Vec3, StoreWkwUnit] = {}
        self._absent: set[Vec3] = set()
        self.probe_problem: FormatError | None = None
        #: Set by ``close``: read-ahead still pending for it is dropped.
        self.closed = False
        #: The last ``drop_read_ahead``: when, and the keys whose read-ahead it kept.
        self._dropped_at = 0.0
        self._kept: frozenset[str] = frozenset()

    @classmethod
    def open(cls, store: Store, bounds: tuple[Vec3, Vec3] | None = None) -> StoreWkwVolume:
        """The dataset whose ``header.wkw`` is at the store's root."""
        try:
            raw = store.read(HEADER_FILE, 0, HEADER_SIZE)
        except FileNotFoundError:
            raise DatasetLayoutError(f"not a WKW dataset: no {HEADER_FILE}",
                                     store.root) from None
        except OSError as exc:
            raise _remote_error(exc, store.location(HEADER_FILE)) from None
        header = Header.from_bytes(raw, store.location(HEADER_FILE))
        check_limits(header, store.location(HEADER_FILE))
        return cls(store, header.replace(data_offset=0) if header.data_offset else header,
                   bounds)

    @classmethod
    def open_file(cls, store: Store, key: str) -> StoreWkwVolume:
        """One ``.wkw`` data file as a dataset of one file (its own coordinates)."""
        try:
            raw = store.read(key, 0, HEADER_SIZE)
        except FileNotFoundError:
            raise DatasetLayoutError("no such file", store.location(key)) from None
        except OSError as exc:
            raise _remote_error(exc, store.location(key)) from None
        header = Header.from_bytes(raw, store.location(key))
        check_limits(header, store.location(key))
        return cls(store, header.replace(data_offset=0), single_key=key)

    # -- extent ---------------------------------------------------------------------------------
    @property
    def bounds(self) -> tuple[Vec3, Vec3]:
        with self._lock:
            known = self._bounds
        if known is None:
            found = self._files_box()
            with self._lock:
                if self._bounds is None:
                    self._bounds = found
                known = self._bounds
        return known

    def _files_box(self) -> tuple[Vec3, Vec3]:
        return units_box(list(self.iter_units()), self.unit_len_vx)

    @property
    def origin(self) -> Vec3:
        return self.bounds[0]

    @property
    def shape(self) -> Vec3:
        lo, hi = self.bounds
        return (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])

    # -- units ------------------------------------------------------------------------------------
    def unit_key(self, unit: Sequence[int]) -> str:
        if self.single_key is not None:
            return self.single_key
        x, y, z = (int(c) for c in unit)
        return f"z{z}/y{y}/x{x}.wkw"

    def unit_path(self, unit: Vec3) -> str:
        return self.store.location(self.unit_key(unit))

    def open_unit(self, unit: Vec3) -> StoreWkwUnit | None:
        pos = (int(unit[0]), int(unit[1]), int(unit[2]))
        with self._lock:
            got = self._units.get(pos)
            if got is not None:
                return got
            if pos in self._absent or (self.single_key is not None and pos != (0, 0, 0)):
                return None
            if min(pos) < 0:
                return None
        made = StoreWkwUnit(self, self.unit_key(pos))
        with self._lock:
            got = self._units.setdefault(pos, made)
            while len(self._units) > OPEN_UNITS:
                self._units.pop(next(iter(self._units)))
        return got

    def done_with(self, unit: StorageUnit) -> None:
        """Units stay open (kept by the volume): nothing to do."""

    def iter_units(self) -> Iterator[Vec3]:
        if self.single_key is not None:
            yield (0, 0, 0)
            return
        listing = getattr(self.store, "can_list", True)
        if listing:
            yield from self._listed()
        else:
            yield from self._probed()

    def _listed(self) -> Iterator[Vec3]:
        store = self.store
        for zname in store.list_dir(""):
            z = _coordinate(zname, "z")
            if z is None:
                continue
            for yname in store.list_dir(zname):
                y = _coordinate(yname, "y")
                if y is None:
                    continue
                for xname in store.list_dir(f"{zname}/{yname}"):
                    if xname.endswith(".wkw"):
                        x = _coordinate(xname[:-4], "x")
                        if x is not None:
                            yield (x, y, z)

    def _probed(self) -> Iterator[Vec3]:
        """Files present, found by HEAD requests from the grid's corner outwards; yielded batch
        by batch (a caller wanting one file stops after the first answers)."""
        seen: set[Vec3] = set()
        frontier = [(x, y, z) for z in range(4) for y in range(4) for x in range(4)]
        probes = failed = 0
        with ThreadPoolExecutor(16, thread_name_prefix="wkw-probe") as pool:
            while frontier and probes < MAX_PROBES:
                batch = list(dict.fromkeys(p for p in frontier if p not in seen))
                batch = batch[:MAX_PROBES - probes]
                seen.update(batch)
                probes += len(batch)
                found = list(pool.map(self._exists, batch))
                frontier = []
                for pos, ok in zip(batch, found, strict=True):
                    if ok is None:  # the request failed: neither present nor absent
                        failed += 1
                        continue
                    if not ok:
                        with self._lock:
                            self._absent.add(pos)
                        continue
                    yield pos
                    x, y, z = pos
                    for d in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1),
                              (0, 0, -1)):
                        n = (x + d[0], y + d[1], z + d[2])
                        if min(n) >= 0 and n not in seen:
                            frontier.append(n)
        if frontier:
            self.probe_problem = DatasetLayoutError(
                f"the extent was probed with {MAX_PROBES} requests and is not complete (the "
                "server cannot list files; open the dataset through its properties file)",
                self.path)
        elif failed:
            self.probe_problem = DatasetLayoutError(
                f"{failed} files could not be checked while probing the extent (requests "
                "failed): the extent may be too small", self.path)

    def _exists(self, pos: Vec3) -> bool | None:
        """Whether the file at ``pos`` is there; None when the request failed (a failed
        request must not make a file absent: its blocks would read as the fill value)."""
        try:
            return self.store.exists(self.unit_key(pos))
        except OSError:
            return None

    def chunk_index(self, local: IntArray) -> IntArray:
        return morton.encode(local[:, 0], local[:, 1], local[:, 2])

    def chunk_local(self, index: IntArray) -> IntArray:
        x, y, z = morton.decode(np.asarray(index, dtype=np.int64))
        return np.stack([x, y, z], axis=1)

    # -- description ------------------------------------------------------------------------------
    def info(self) -> VolumeInfo:
        h = self.header
        return VolumeInfo("wkw", BLOCK_TYPE_NAMES.get(h.block_type, str(h.block_type)), {
            "header_file": self.store.location(self.single_key or HEADER_FILE),
            "version": h.version, "block_len": h.block_len, "file_len": h.file_len,
            "block_type": BLOCK_TYPE_NAMES.get(h.block_type, h.block_type),
            "voxel_type": h.dtype.name, "num_channels": h.num_channels,
            "voxel_size": h.voxel_size})

    def problems(self) -> list[FormatError]:
        return [self.probe_problem] if self.probe_problem is not None else []

    def drop_read_ahead(self, keep: Iterable[Sequence[int]] = ()) -> None:
        """The cursor moved on: stop the read-ahead of every storage unit but ``keep`` (unit
        positions), queued or on the wire, and the hints still waiting for a unit's jump
        table.  What a read waits for is never stopped; what is stopped keeps nothing and is
        asked for again when it is read.  Any thread."""
        kept = frozenset(self.unit_key(u) for u in keep)
        with self._lock:
            self._dropped_at = time.monotonic()
            self._kept = kept
        cancel = getattr(self.store, "cancel_prefetch", None)
        if cancel is not None:
            cancel(kept.__contains__)

    def hint_dropped(self, key: str, asked_at: float) -> bool:
        """Whether a hint for ``key`` given at ``asked_at`` is of no use any more: stale, the
        cursor moved on from its unit, or the volume closed."""
        from viewer.format.remote.store import STALE_PREFETCH_S

        if self.closed or time.monotonic() - asked_at > STALE_PREFETCH_S:
            return True
        with self._lock:
            return asked_at < self._dropped_at and key not in self._kept

    def close(self) -> None:
        self.closed = True
        with self._lock:
            self._units.clear()
        cancel = getattr(self.store, "cancel_prefetch", None)
        if cancel is not None:
            cancel()  # its queued read-ahead is of no use any more


def _coordinate(name: str, prefix: str) -> int | None:
    if not name.startswith(prefix) or not name[1:].isdigit():
        return None
    return int(name[1:])


def _known_size(store: Store, key: str) -> int | None:
    known = getattr(store, "_known_size", None)
    if known is not None:
        value = known(key)
        return value if isinstance(value, int) else None
    return store.size(key)


def _read_results(store: Store, key: str, ranges: Sequence[tuple[int, int]]
                  ) -> list[bytes | OSError | FormatError]:
    """Each range's bytes or its error (stores without per-range results: all or nothing)."""
    per_range = getattr(store, "read_ranges_results", None)
    if per_range is not None:
        return list(per_range(key, ranges))
    if not ranges:
        return []
    try:
        return list(store.read_ranges(key, ranges))
    except (OSError, FormatError) as exc:
        return [exc] * len(ranges)


__all__ = ["StoreWkwVolume", "StoreWkwUnit", "MAX_PROBES"]
