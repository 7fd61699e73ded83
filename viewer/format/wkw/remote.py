"""WKW read through a ``Store``: a WKW dataset or a single ``.wkw`` file at a URL.

Each data file is one storage unit (``StoreWkwUnit``, ``viewer.format.wkw.remote_unit``): its
header and jump table fetched with one range read, then only the byte ranges of the blocks
asked for.  Opening a unit does not wait for the network: ``open_unit`` returns at once and
the header fetch starts in the background; the first call that needs the jump table waits for
it.  So the loader opening the units of the next batches (its read-ahead) starts all their
header fetches together instead of one after another.  The price: a unit whose file turns out
to be missing (HTTP 404) is an open unit whose every block is absent, rather than ``None`` —
unless that is known already (an earlier 404, or the probe of the extent).

Extent: the caller's (a webKnossos layer's box) when given, else the box of the files present —
listed where the store can list (S3, GCS, a local folder), else found by probing (plain HTTP
cannot list): the files at the grid corner are asked for by HEAD, then the neighbours of every
file found, at most ``MAX_PROBES`` requests.  Never by downloading files.

Jump tables ahead: once a view browses the dataset (the loader's first ``drop_read_ahead``)
and its units are known (the files listed or probed, or the grid of the box given), a dataset
of at most ``WARM_UNITS`` units whose headers and jump tables together are at most the
store's ``tables_ahead_bytes`` (the remote setting, 4 MiB) has them all fetched in the
background (read-ahead never dropped, kept by the store's range cache).  A far jump then waits
for no table: on the remote benchmark a jump to files not opened yet waited one round trip for
their tables before it could ask for a block (the timeline is in docs/performance.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from viewer.format.errors import DatasetLayoutError, FormatError, RemoteError
from viewer.format.remote import timeline
from viewer.format.store import Store
from viewer.format.volume import IntArray, StorageUnit, Volume, VolumeInfo, units_box
from viewer.format.wkw import morton
from viewer.format.wkw.file import check_limits
from viewer.format.wkw.header import BLOCK_TYPE_NAMES, HEADER_SIZE, Header
from viewer.format.wkw.remote_unit import (
    HEADER_FILE,
    StoreWkwUnit,
    _background,
    _remote_error,
    head_length,
)

Vec3 = tuple[int, int, int]
#: Most HEAD requests the extent probe of an unlistable dataset makes.
MAX_PROBES = 4096
#: Units kept open by the volume itself (``read``; the loader keeps its own).
OPEN_UNITS = 256
#: A dataset of at most this many units, whose headers and jump tables together are at most
#: its store's ``tables_ahead_bytes``, has them all fetched ahead (see the module docstring).
WARM_UNITS = 1024


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
        self._declared = bounds is not None
        self._lock = threading.Lock()
        self._units: dict[Vec3, StoreWkwUnit] = {}
        self._absent: set[Vec3] = set()
        self.probe_problem: FormatError | None = None
        #: Set by ``close``: read-ahead still pending for it is dropped.
        self.closed = False
        #: The last ``drop_read_ahead``: when, and the keys whose read-ahead it kept.
        self._dropped_at = 0.0
        self._kept: frozenset[str] = frozenset()
        #: The jump tables were fetched ahead, or it was decided not to (``_warm_tables``).
        self._warmed = single_key is not None
        #: The units present, once listed or probed to the end.
        self._found: list[Vec3] | None = None

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

    def _warm_tables(self) -> None:
        """A view browses the volume: fetch the header and jump table of every unit ahead,
        once the units are known, when they are few and small (``WARM_UNITS``, the store's
        ``tables_ahead_bytes``: 0 when it keeps nothing it fetched); files known absent are
        left out.  Any thread."""
        with self._lock:
            if self._warmed or not self._dropped_at:
                return
            if self._found is not None:
                units = list(self._found)
            elif self._bounds is not None:  # a box given: the units it touches
                units = self._box_units(self._bounds)
            else:
                return  # the units are not known yet: when they are (``iter_units``)
            self._warmed = True
            absent = set(self._absent)
        store = self.store
        head = head_length(self.header)
        allowed = store.tables_ahead_bytes
        if not store.supports_prefetch or not units or len(units) > WARM_UNITS \
                or len(units) * head > allowed:
            return
        keys = [self.unit_key(pos) for pos in units if pos not in absent]
        timeline.mark("warm-tables", note=f"{len(keys)} units")

        def ask() -> None:  # off the caller's thread (the GUI's, through the loader)
            for key in keys:
                if self.closed:
                    return
                store.prefetch(key, [(0, head)], keep=True)

        pool = _background(self.executor)
        if pool is not None:
            pool.submit(ask)

    def _box_units(self, box: tuple[Vec3, Vec3]) -> list[Vec3]:
        """The grid positions of the units ``box`` touches (none past ``WARM_UNITS``)."""
        side = self.unit_len_vx
        lo = [max(0, b // s) for b, s in zip(box[0], side, strict=True)]
        hi = [max(0, -(-b // s)) for b, s in zip(box[1], side, strict=True)]
        n = 1
        for a, b in zip(lo, hi, strict=True):
            n *= max(0, b - a)
        if n > WARM_UNITS:
            return []
        return [(x, y, z) for z in range(lo[2], hi[2]) for y in range(lo[1], hi[1])
                for x in range(lo[0], hi[0])]

    @property
    def origin(self) -> Vec3:
        return self.bounds[0]

    @property
    def extent_declared(self) -> bool:
        """True when given a box (a webKnossos layer's); else the files present say."""
        return self._declared

    def set_extent(self, bounds: tuple[Vec3, Vec3]) -> None:
        """A webKnossos layer's box at this mag as the extent (see ``Volume``)."""
        with self._lock:
            self._bounds = bounds
            self._declared = True

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

    @property
    def lists_units(self) -> bool:
        """A listing of the store finds every unit present, where the store can list."""
        return self.store.supports_listing

    def iter_units(self) -> Iterator[Vec3]:
        if self.single_key is not None:
            yield (0, 0, 0)
            return
        listing = self.store.supports_listing
        found: list[Vec3] = []
        for pos in self._listed() if listing else self._probed():
            found.append(pos)
            yield pos
        with self._lock:  # listed to the end: the units present are known
            self._found = found
        self._warm_tables()

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
        elif failed:  # not reachable, not damaged: what is there was not checked
            self.probe_problem = RemoteError(
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
        self._warm_tables()
        stopped = self.store.cancel_prefetch(kept.__contains__)
        timeline.mark("drop-ahead", note=f"{len(kept)} units kept, {stopped} stopped")

    def hint_dropped(self, key: str, asked_at: float) -> bool:
        """Whether a hint for ``key`` given at ``asked_at`` is of no use any more: stale, the
        cursor moved on from its unit, or the volume closed."""
        from viewer.format.remote.pool import STALE_PREFETCH_S

        if self.closed or time.monotonic() - asked_at > STALE_PREFETCH_S:
            return True
        with self._lock:
            return asked_at < self._dropped_at and key not in self._kept

    def close(self) -> None:
        self.closed = True
        with self._lock:
            self._units.clear()
        self.store.cancel_prefetch()  # its queued read-ahead is of no use any more


def _coordinate(name: str, prefix: str) -> int | None:
    if not name.startswith(prefix) or not name[1:].isdigit():
        return None
    return int(name[1:])


__all__ = ["StoreWkwVolume", "StoreWkwUnit", "MAX_PROBES"]
