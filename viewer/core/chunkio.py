"""The loader's chunk I/O: storage units opened, kept and read through the format seam.

``ChunkReader`` reads batches of blocks of one ``Volume`` (any format) through the
``Volume`` / ``StorageUnit`` interface of ``viewer.format.volume`` only, and stores what it read
in the ``BlockCache``:

* **One read path.**  A batch's blocks come grouped by unit; the whole batch is one
  ``Volume.read_batch`` call, handed this reader as the table of the units it opened
  (``viewer.format.batchread.UnitTable``: ``state``, ``remember``, ``forget``).  The volume says
  how its units are read: opened once and kept here (the first read of one opened and read at
  once, a unit another program rewrote opened again and read once more), or, for units of a
  chunk or so each (``Volume.small_units``), many read in one call and none kept.  The batch
  goes into the cache with one ``put_many``.
* **Units kept open.**  At most ``open_units_limit`` of them (sized from ``RLIMIT_NOFILE``: a
  screen of a one-chunk-per-file format touches several hundred units, and a limit below that
  closed and reopened units every jump).  An open unit's index is charged to the cache budget
  (``account_file``).  A unit found absent or unreadable is remembered as such (``state``):
  its blocks are not asked for again.
* **Read-ahead only where it pays.**  ``will_need`` hints are given only while reads go to the
  disk (``HINT_MEMORY``) or over a network (``_latency_bound``): on pages already in memory a
  hint is pure cost.
* **The four looks.**  An absent chunk is cached as ``ABSENT``, a damaged one as its
  ``FormatError``; an absent or unreadable unit is its ``state`` (None or the error); real data,
  zeros included, is an array.

Threads: ``read``, ``hint`` and ``resolve`` on worker threads (concurrently); ``state``,
``unreadable`` and ``stopping`` from any (lock-free reads); ``remember`` and ``forget`` from
the volume's ``read_batch`` on a worker thread; ``stop`` and ``close`` from the owner.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.cache import ABSENT, BlockCache, BlockKey, BlockValue
from viewer.format import (
    BlockDecodeError,
    FormatError,
    StorageUnit,
    Volume,
)
from viewer.format.batchread import UNKNOWN, Unknown, open_state
from viewer.format.errors import FileChangedError

log = logging.getLogger(__name__)

Vec3 = tuple[int, int, int]
#: What is known of a storage unit: open | it failed to open | absent.
UnitState = StorageUnit | FormatError | None

#: Descriptors left for the rest of the process when sizing the open-unit limit.
RESERVED_DESCRIPTORS = 64
#: Bounds of the open-unit limit (``open_units_limit``).
MIN_OPEN_UNITS = 64
MAX_OPEN_UNITS = 8192
#: The reader drops the pages of the units it read from (``StorageUnit.release_pages``: a
#: mapped file's pages count in the process's RSS) once every this many blocks read, and a
#: unit's as it is closed.  A unit that maps nothing releases nothing.
RELEASE_EVERY = 256
#: Read-ahead hints (``StorageUnit.will_need``) are given only while reads go to the disk: a
#: batch during which the worker's thread had to read from the disk (its ``ru_inblock`` or
#: ``ru_majflt`` grew: ``getrusage(RUSAGE_THREAD)``) turns them on for the next
#: ``HINT_MEMORY`` batches.  On pages already in memory a hint is pure cost (a
#: ``MADV_WILLNEED`` per block on resident pages).  (Wall time against CPU time is no signal on
#: a shared machine: there a worker waits for a core far more than for the disk.)
HINT_MEMORY = 16


def open_units_limit() -> int:
    """How many open storage units a loader keeps (their indexes are charged to the budget):
    half the file descriptors the process may open beyond ``RESERVED_DESCRIPTORS``
    (``RLIMIT_NOFILE``), between ``MIN_OPEN_UNITS`` and ``MAX_OPEN_UNITS``.  A screen of a
    one-chunk-per-file format (N5, Zarr v2) touches several hundred units, and a limit below
    that closed and reopened units every jump (a large share of the workers' time:
    docs/performance.md)."""
    soft = 1024
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            soft = 1 << 20
    except (ImportError, OSError, ValueError):
        pass
    return max(MIN_OPEN_UNITS, min(MAX_OPEN_UNITS, (soft - RESERVED_DESCRIPTORS) // 2))


def _disk_reads() -> int:
    """Blocks this thread read from the disk so far (input blocks and major page faults), or
    -1 where the system does not say."""
    if _RUSAGE_THREAD is None:
        return -1
    try:
        r = _resource.getrusage(_RUSAGE_THREAD)
    except (OSError, ValueError):
        return -1
    return int(r.ru_inblock + r.ru_majflt)


try:
    import resource as _resource

    _RUSAGE_THREAD: int | None = getattr(_resource, "RUSAGE_THREAD", None)
except ImportError:  # pragma: no cover - not POSIX
    _RUSAGE_THREAD = None


class ChunkReader:
    """Open units and batched chunk reads of one volume (see the module docstring).

    ``layer`` and ``mag`` name the volume's blocks in the shared ``cache``."""

    def __init__(self, volume: Volume, layer: Hashable, mag: Hashable,
                 cache: BlockCache) -> None:
        self.volume = volume
        self.layer = layer
        self.mag = mag
        self.cache = cache
        self._lock = threading.Lock()
        self._open: OrderedDict[Vec3, StorageUnit] = OrderedDict()
        self._states: dict[Vec3, UnitState] = {}
        #: Units known to be absent or unreadable (their ``state`` None or a ``FormatError``):
        #: a set, so that the scheduler and the planes test a block's unit at C speed.
        self.bad_units: set[Vec3] = set()
        self._stopping = False
        #: Blocks whose file another program was changing (their value or their unit's state
        #: a ``FileChangedError``), by unit: to be read again (``take_changing``).
        self._changing: dict[BlockKey, Vec3] = {}
        self._touched: dict[int, StorageUnit] = {}  # units read since pages were released
        self._touched_blocks = 0
        #: Open units kept, at most this many (``open_units_limit``).
        self.open_units_limit = open_units_limit()
        #: Batches left that give read-ahead hints (see ``HINT_MEMORY``); where the system
        #: cannot say whether reads went to the disk, always (-1).
        self._hint_tasks = 0 if _RUSAGE_THREAD is not None else -1
        #: A volume read over a network: every read waits on it (the thread's disk counters
        #: do not see it), so read-ahead always pays.
        self._latency_bound = volume.over_network
        if self._latency_bound:
            self._hint_tasks = -1
        #: The storage units whose read-ahead is kept (a volume at a URL: ``follow_screen``).
        self._hint_units: frozenset[Vec3] = frozenset()
        self._hint_visible: set[BlockKey] | None = None
        # Counters (under ``_lock``).
        self.blocks_read = 0
        self.bytes_decoded = 0
        self.decode_seconds = 0.0  #: worker wall time spent reading and decoding
        self.decode_cpu_seconds = 0.0  #: worker CPU time spent reading and decoding

    # -- unit states ----------------------------------------------------------------------------
    def state(self, unit: Vec3) -> UnitState | Unknown:
        """What is known of the unit at ``unit``: ``UNKNOWN`` (not opened yet), the open
        ``StorageUnit``, its ``FormatError`` (unreadable) or None (absent).  Any thread."""
        return self._states.get(unit, UNKNOWN)

    @property
    def stopping(self) -> bool:
        """The loader is closing (``stop``): no unit is opened or remembered any more, and a
        unit closed under a read ends the batch.  Any thread."""
        return self._stopping

    def unreadable(self, unit: Vec3) -> bool:
        """The unit is known to be absent or damaged (in ``bad_units``).  Any thread."""
        return unit in self.bad_units

    @property
    def hinting(self) -> bool:
        """Read-ahead hints pay now (reads went to the disk lately, or go over a network)."""
        return self._hint_tasks != 0

    def resolve(self, pos: Vec3) -> UnitState:
        """Open the unit at ``pos`` and remember it (keeping at most ``open_units_limit``
        open: the least recently opened are closed).  Worker thread."""
        return self.remember(pos, open_state(self.volume, pos))

    def remember(self, pos: Vec3, state: UnitState) -> UnitState:
        """Keep what opening the unit at ``pos`` found (closing the least recently opened
        beyond ``open_units_limit``), and return it.  Worker thread."""
        closing: list[StorageUnit] = []
        opened = state if state is not None and not isinstance(state, FormatError) else None
        with self._lock:
            if self._stopping:
                return state
            if opened is not None:
                self._open[pos] = opened
                self._open.move_to_end(pos)
                while len(self._open) > self.open_units_limit:
                    old, unit = self._open.popitem(last=False)
                    self._states.pop(old, None)
                    self.cache.release_file((self.layer, self.mag, old))
                    closing.append(unit)
            self._states[pos] = state
            if opened is None:
                self.bad_units.add(pos)
            elif self.bad_units:
                self.bad_units.discard(pos)
        for old_unit in closing:  # its pages released by file, once, as it goes
            old_unit.release_pages()
            self.volume.done_with(old_unit)
        if opened is not None and opened.table_bytes:
            self.cache.account_file((self.layer, self.mag, pos), opened.table_bytes)
        return state

    def forget(self, pos: Vec3, old: StorageUnit) -> None:
        """Forget the unit at ``pos`` (``old``, which another program changed) if it is still
        the one kept, so that it is opened again.  ``old`` is not closed here: other workers
        may still be reading from it (their reads fail on their own); it goes when the last
        of them lets go.  Worker thread."""
        with self._lock:
            if self._states.get(pos) is old:
                self._states.pop(pos, None)
                self._open.pop(pos, None)

    # -- reading --------------------------------------------------------------------------------
    def follow_screen(self, visible: set[BlockKey]) -> None:
        """A volume at a URL: when the screen moved to other storage units, stop the network
        read-ahead of units neither on screen nor next to one (queued or on the wire: their
        requests would hold the connections the new screen's reads need).  Scrolling and
        panning keep theirs; a far jump drops them all.  GUI thread."""
        if not self._latency_bound or visible is self._hint_visible:
            return
        self._hint_visible = visible
        units = {key[2] for key in visible}
        near = frozenset((x + dx, y + dy, z + dz) for x, y, z in units
                         for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1))
        if near == self._hint_units:
            return
        self._hint_units = near
        self.volume.drop_read_ahead(near)

    def _hint_units_of(self, keys: list[BlockKey]) -> bool:
        """A volume at a URL, a batch over several storage units (an N5 or zarr v2 chunk per
        file): ask for all of them before reading the first, so that their requests are on
        the wire together rather than one unit's after another's.  Whether it did.  Worker
        thread."""
        by_unit: dict[Vec3, list[int]] = {}
        for key in keys:
            by_unit.setdefault(key[2], []).append(key[3])
        if len(by_unit) < 2:
            return False
        self.hint(list(by_unit.items()), lambda: self._stopping)
        return True

    def hint(self, ahead: list[tuple[Vec3, list[int]]], stopping: Callable[[], bool]) -> None:
        """Ask the storage for the chunks of units about to be read (opening the units first
        when needed: a WKW file's header and jump table are one small read).  Worker thread."""
        for pos, indices in ahead:
            if stopping():
                return
            state = self._states.get(pos, UNKNOWN)
            if state is UNKNOWN:
                state = self.resolve(pos)
            if state is not None and not isinstance(state, FormatError):
                state.will_need(indices)

    def read(self, keys: list[BlockKey], hint: bool) -> int:
        """Read and decode the blocks ``keys`` (grouped by unit: one job per run, the batch one
        ``Volume.read_batch``), put them into the cache and return how many were read (blocks
        of absent or unreadable units are not; their look is the unit's ``state``; none when
        the loader stopped under the batch).  ``hint``: give the units a ``will_need`` first
        (read-ahead is on and the batch was not hinted before).  Worker thread."""
        started = time.perf_counter()
        cpu_started = time.thread_time()
        disk_started = _disk_reads()
        hint = hint and self._hint_tasks != 0
        if hint and self._latency_bound and self._hint_units_of(keys):
            hint = False  # every unit of the batch was asked for already
        runs: list[tuple[Vec3, list[BlockKey], list[int]]] = []  # one per storage unit
        start = 0
        n = len(keys)
        while start < n:
            pos = keys[start][2]
            end = start + 1
            while end < n and keys[end][2] == pos:
                end += 1
            run = keys[start:end] if end - start < n else keys
            runs.append((pos, run, [key[3] for key in run]))
            start = end
        found = self.volume.read_batch([(pos, indices) for pos, _, indices in runs], self, hint)
        if found is None:
            return 0  # closing
        states = self._states
        ndarray = np.ndarray
        done: list[BlockKey] = []  # the keys read, in order
        changing: list[BlockKey] = []  # ... and those whose file another program changes
        values: list[BlockValue] = []
        touched: list[StorageUnit] = []
        decoded = 0
        for (pos, run, indices), results in zip(runs, found, strict=True):
            if results is None or isinstance(results, FormatError):
                if isinstance(results, FileChangedError):
                    changing.extend(run)
                continue  # absent or unreadable: the plane reads its state
            unit = states.get(pos)  # a kept unit (small units are not: None)
            kept = unit if unit is not None and not isinstance(unit, FormatError) else None
            if kept is not None and kept.holds_pages:
                touched.append(kept)
            if len(results) != len(indices):  # a format's bug: the blocks fail, not the worker
                path = kept.path if kept is not None else self.volume.unit_path(pos)
                results = [BlockDecodeError(f"the format returned {len(results)} chunks for "
                                            f"{len(indices)} asked for", path, block=i)
                           for i in indices]
            done += run
            for key, value in zip(run, results, strict=True):
                if type(value) is ndarray or isinstance(value, ndarray):  # (the common case first)
                    if isinstance(value.base, ndarray):
                        value = _own(value)
                    decoded += value.nbytes
                    values.append(value)
                elif value is None:
                    values.append(ABSENT)
                else:
                    if isinstance(value, FileChangedError):
                        changing.append(key)
                    values.append(value)
        read = len(done)
        if read:
            self.cache.put_many(list(zip(done, values, strict=True)))
        if changing:
            with self._lock:
                for key in changing:
                    self._changing[key] = key[2]
        from_disk = _disk_reads() != disk_started
        release: list[StorageUnit] = []
        elapsed = time.perf_counter() - started
        cpu = time.thread_time() - cpu_started
        with self._lock:
            if read:
                self.blocks_read += read
                self.bytes_decoded += decoded
                self.decode_seconds += elapsed
                self.decode_cpu_seconds += cpu
                if self._hint_tasks >= 0:
                    if from_disk:  # cold: ask ahead for the next batches' pages
                        self._hint_tasks = HINT_MEMORY
                    elif self._hint_tasks:
                        self._hint_tasks -= 1
            if touched:
                release = self._touched_locked(touched, read)
        for unit in release:
            unit.release_pages()
        return read

    def _touched_locked(self, units: list[StorageUnit], blocks: int) -> list[StorageUnit]:
        """The units whose mapped pages to drop now: every unit read from (that may hold pages:
        its class overrides ``release_pages``), once every ``RELEASE_EVERY`` blocks read (a
        ``madvise`` over a whole file per batch costs a worker's time with the GIL held).
        Under ``_lock``."""
        touched = self._touched
        for unit in units:
            touched[id(unit)] = unit
        self._touched_blocks += blocks
        if self._touched_blocks < RELEASE_EVERY:
            return []
        self._touched = {}
        self._touched_blocks = 0
        return list(touched.values())

    # -- the owner's side -----------------------------------------------------------------------
    @property
    def has_changing(self) -> bool:
        """Blocks of files another program was changing wait to be read again.  Any thread."""
        return bool(self._changing)

    def take_changing(self) -> list[BlockKey]:
        """The blocks whose file another program was changing, forgotten (cache entries,
        their units' states) so that they are read again.  Any thread."""
        with self._lock:
            keys = list(self._changing)
            units = set(self._changing.values())
            self._changing.clear()
            for pos in units:
                state = self._states.get(pos, UNKNOWN)
                if isinstance(state, FileChangedError):
                    self._states.pop(pos, None)
                    self.bad_units.discard(pos)
        for key in keys:
            self.cache.discard(key)
        return keys

    def stop(self) -> None:
        """No unit is opened or remembered from now on (the loader is closing)."""
        with self._lock:
            self._stopping = True

    def close(self) -> None:
        """Hand every open unit back to the volume and its index's charge back to the cache.
        After the workers stopped."""
        with self._lock:
            positions = list(self._states)
            units = list(self._open.values())
            self._open.clear()
            self._states.clear()
            self.bad_units.clear()
        for unit in units:
            self.volume.done_with(unit)
        for pos in positions:
            self.cache.release_file((self.layer, self.mag, pos))


def _own(block: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``block`` (a view: its ``base`` is set) in memory of its own.  A format may decode a
    batch into one buffer and return views of it: cached as they are, one block would keep the
    whole batch alive and the budget would count a fraction of the memory held."""
    root = block
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is block or root.nbytes <= block.nbytes:
        return block
    own = block.copy(order="K")
    own.flags.writeable = False
    return own


__all__ = ["ChunkReader", "UnitState", "UNKNOWN", "Unknown", "open_units_limit"]
