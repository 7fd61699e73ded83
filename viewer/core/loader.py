"""The background loader: a ``PlaneSource`` that never waits for the disk.

(Over 600 lines, long because plane assembly, scheduling and chunk I/O still share this
class; splitting it along those seams is issue 19's item 4.)

Views say which planes are on screen (``set_wanted``) and ask for them (``plane``); the loader
answers at once from its ``BlockCache`` (what is not there yet is ``Status.PENDING``) and has its
worker threads read the rest, calling every listener with the box of data that arrived.

How work is organised, and why:

* **Whole blocks.**  A block is one chunk of the ``Volume`` (any format: a WKW block, a zarr
  inner chunk, an N5 chunk; not necessarily cubic).  A decoded block serves all three views and
  the neighbouring planes, so the loader decodes whole blocks (``StorageUnit.read_chunks``) and
  cuts planes out of them with one numpy slice per block.  An assembled plane is kept per request and only its missing blocks
  are looked up again, so a plane the user keeps looking at costs nothing to redraw.
* **Batches per storage unit.**  A pool task per 32^3 block costs more than decoding it, so a
  task is a batch: one view's visible blocks in one storage unit (a WKW file, a shard, a chunk
  file; a few ms of work), or a prefetch batch.
* **Its own priority queue, rebuilt on every** ``set_wanted`` (a generation bump): queued work
  that is no longer wanted is dropped, the rest re-ranked: visible in the focused view, visible
  in the other views, the next block layers in the direction of motion (and beyond a pan),
  then the Morton neighbourhood of the cursor.  A block already cached or being read by another
  worker is never read again (an in-flight set), whatever the generation.  When a bump leaves
  the wish list as it was (scrolling inside a block layer), the queue is kept as it is.  The
  prefetch is ranked by a worker (a planning task queued behind the screen's blocks), so the
  GUI thread only queues what is on screen.
* **The screen before prefetch.**  When the screen changes and leaves blocks to read, prefetch
  (its planning too) waits until the views have taken every plane complete through ``plane``
  (at most ``PREFETCH_HOLD_S``): on two cores, prefetch running while the GUI thread assembles
  and draws the last blocks of a jump takes the GIL and a core from it.
* **Cold reads overlap.**  A worker taking a batch asks the kernel for the pages of the next
  ``LOOKAHEAD_TASKS`` batches' blocks (``StorageUnit.will_need``) before decoding its own, so
  a cold screen's disk reads run together rather than one page fault after another.  Only
  while reads go to the disk (``HINT_MEMORY``): on pages in memory a hint is pure cost.
* **Many small units.**  A batch may span several storage units (an N5 or Zarr v2 dataset is
  one chunk per file), so the cost per task is shared by up to a batch of blocks; open units
  are kept (``open_units_limit``, sized from ``RLIMIT_NOFILE``) rather than closed and opened
  again on the next screen.
* **Deferred planes** (``set_wanted(deferred=True)``: the coarse placeholders of
  ``viewer.core.layered``) are read like prefetch, held until another loader's screen is
  complete (``release_hold``).
* **Blocks on screen are pinned** in the cache; when the screen alone needs more than the budget,
  ``LoaderStats.over_budget`` says so (the panel shows a warning).

Threads: ``set_wanted``, ``plane``, ``add_listener``, ``set_budget``, ``close`` are called from one
thread (the GUI thread); ``stats`` and ``wait_idle`` from any.  Listeners are called on worker
threads, never under a lock; workers only read files and return numpy arrays.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core import prefetch
from viewer.core.cache import ABSENT, BlockCache, BlockKey, BlockValue, CacheStats
from viewer.core.slicing import Box3, DataArrived, Plane, PlaneRequest, Status
from viewer.format import (
    BlockDecodeError,
    DatasetLayoutError,
    FormatError,
    StorageUnit,
    Volume,
    is_url,
)
from viewer.format.errors import FileChangedError

log = logging.getLogger(__name__)

Vec3 = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]
FileState = StorageUnit | FormatError | None  # open unit | it failed to open | absent

#: Blocks per task for blocks on screen (2-3 ms of decoding: both workers share a plane, and
#: the last task of a jump, which the screen waits for, is short).
VISIBLE_BATCH = 32
#: Blocks per prefetch task (~2 ms of decoding: a jump waits at most that long for a worker
#: busy with prefetch; 64 measured a few ms slower per jump).
PREFETCH_BATCH = 24
#: Units contributing at most ``batch size // SHARED_BATCH_DIVISOR`` blocks to a ranked list
#: share batches with other such units; bigger ones get batches of their own.
SHARED_BATCH_DIVISOR = 4
#: Descriptors left for the rest of the process when sizing the open-unit limit.
RESERVED_DESCRIPTORS = 64
#: Bounds of the open-unit limit (``open_units_limit``).
MIN_OPEN_UNITS = 64
MAX_OPEN_UNITS = 8192


def open_units_limit() -> int:
    """How many open storage units a loader keeps (their indexes are charged to the budget):
    half the file descriptors the process may open beyond ``RESERVED_DESCRIPTORS``
    (``RLIMIT_NOFILE``), between ``MIN_OPEN_UNITS`` and ``MAX_OPEN_UNITS``.  A screen of a
    one-chunk-per-file format (N5, Zarr v2) touches several hundred units, and a limit below
    that closed and reopened units every jump (issue 20: 128 cost 39 % of the workers' time)."""
    soft = 1024
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            soft = 1 << 20
    except (ImportError, OSError, ValueError):
        pass
    return max(MIN_OPEN_UNITS, min(MAX_OPEN_UNITS, (soft - RESERVED_DESCRIPTORS) // 2))


#: The limit when this module was imported (each loader reads ``open_units_limit()`` anew).
OPEN_FILES = open_units_limit()
#: Assembled planes kept beyond the ones on screen.
SPARE_PLANES = 8
#: Prefetch may fill at most this share of the budget left after the screen.
PREFETCH_SHARE = 0.5
#: After a change of the screen that left blocks to read, prefetch waits until the views have
#: taken every plane complete (``plane``), at most this long.  Measured on 2 cores: prefetch
#: batches running while the GUI thread assembles and draws the last visible blocks take the
#: GIL and a core from it, and a jump whose blocks were all decoded after 30-50 ms finished
#: drawing only after 70-80 ms.
PREFETCH_HOLD_S = 0.15
#: A worker taking a task asks the disk ahead for the blocks of this many of the next queued
#: tasks (``File.will_need``): cold reads then overlap instead of faulting page by page.
#: Measured on the multires benchmark's cold zoom-out: the workers' wall time was ~4x their
#: CPU time (waiting for pages) before.
LOOKAHEAD_TASKS = 16
#: The loader drops the pages of the units it read from (``StorageUnit.release_pages``: a
#: mapped file's pages count in the process's RSS) once every this many blocks read, and a
#: unit's as it is closed.  A unit that maps nothing releases nothing.
RELEASE_EVERY = 256
#: Read-ahead hints (``StorageUnit.will_need``) are given only while reads go to the disk: a
#: task during which the worker's thread had to read from the disk (its ``ru_inblock`` or
#: ``ru_majflt`` grew: ``getrusage(RUSAGE_THREAD)``) turns them on for the next
#: ``HINT_MEMORY`` tasks.  On pages already in memory a hint is pure cost (issue 20: 5.7 us a
#: block of ``MADV_WILLNEED`` on resident pages).  (Wall time against CPU time is no signal on
#: a shared machine: there a worker waits for a core far more than for the disk.)
HINT_MEMORY = 16


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

_UNKNOWN: Any = object()

#: One ranked list of blocks: (priority, memo key, cache keys, block coordinates, prefetch?).
_Ranked = tuple[tuple[int, ...], tuple[Any, ...], list[BlockKey], npt.NDArray[np.int64], bool]


@dataclass(frozen=True)
class LoaderStats:
    """A snapshot of the loader for a panel or status bar (Qt-free)."""

    queued_blocks: int
    queued_tasks: int
    in_flight_blocks: int
    cache_used_bytes: int
    cache_budget_bytes: int
    cache_blocks: int
    pinned_blocks: int
    hits: int  #: blocks found in the cache when they came on screen
    misses: int  #: blocks that had to be read when they came on screen
    blocks_read: int
    bytes_decoded: int
    decode_seconds: float  #: worker wall time spent reading and decoding
    decode_cpu_seconds: float  #: worker CPU time spent reading and decoding
    prefetched_blocks: int
    prefetch_useful: int  #: prefetched blocks that later came on screen
    dropped_tasks: int  #: queued tasks dropped by a generation bump
    generation: int
    workers: int
    over_budget: bool  #: the blocks on screen alone need more than the budget
    peak_cache_bytes: int

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 1.0

    @property
    def decode_mb_s(self) -> float:
        """Decoded MB per second of worker time (speed of one worker while busy)."""
        return self.bytes_decoded / 1e6 / self.decode_seconds if self.decode_seconds else 0.0

    @property
    def decode_mb_per_cpu_s(self) -> float:
        """Decoded MB per CPU second (what a worker reaches with a core to itself)."""
        cpu = self.decode_cpu_seconds
        return self.bytes_decoded / 1e6 / cpu if cpu else 0.0

    @property
    def prefetch_useful_fraction(self) -> float:
        return self.prefetch_useful / self.prefetched_blocks if self.prefetched_blocks else 0.0

    @property
    def busy(self) -> bool:
        return bool(self.queued_tasks or self.in_flight_blocks)


@dataclass(frozen=True)
class _Plan:
    """What a worker needs to plan the prefetch of one generation (off the GUI thread)."""

    order: list[int]
    layouts: dict[int, prefetch.PlaneLayout]
    cursor: Vec3
    visible_bytes: int
    normal_dir: dict[int, int]
    pan_dir: dict[int, tuple[int, int]]


@dataclass
class _Task:
    file: Vec3  #: the first storage unit of the batch (a batch may span several small units)
    keys: list[BlockKey]  #: grouped by storage unit (``key[2]``)
    blocks: IntArray  #: global block coordinates, aligned with keys
    prefetch: bool
    generation: int
    plan: _Plan | None = None  #: a planning task (``generation`` is then the queue's epoch)
    hinted: bool = False  #: its blocks' pages were asked for ahead (``File.will_need``)


@dataclass
class _PlaneEntry:
    layout: prefetch.PlaneLayout
    keys: list[BlockKey]
    data: npt.NDArray[Any]
    status: npt.NDArray[np.uint8]
    missing: list[int]
    errors: dict[tuple[str, int], FormatError] = field(default_factory=dict)
    #: The ``Plane`` last handed out, while nothing arrived since (asked again: the same one).
    shown: Plane | None = None


class Loader:
    """Background ``PlaneSource`` over a ``Volume``: cache, priority queue, workers.

    ``layer`` and ``mag`` name the volume inside a shared ``cache`` (pass one cache to several
    loaders to share one budget).  ``close_dataset``: close the volume in ``close()``, as the
    synchronous source does.
    """

    def __init__(self, dataset: Volume, *, layer: Hashable = "", mag: Hashable = 1,
                 workers: int = 2, cache: BlockCache | None = None,
                 budget_bytes: int | None = None, close_dataset: bool = True,
                 prefetch_enabled: bool = True) -> None:
        self.dataset = dataset
        self.volume = dataset
        self.layer = layer
        self.mag = mag
        self._chunk = tuple(int(c) for c in dataset.chunk_shape)
        self._unit = np.asarray(dataset.unit_shape, dtype=np.int64)
        self._dtype = dataset.dtype
        self._channels = dataset.num_channels
        self._block_nbytes = dataset.chunk_nbytes
        self._owns_cache = cache is None
        self.cache = cache if cache is not None else BlockCache(budget_bytes)
        if cache is not None and budget_bytes is not None:
            self.cache.set_budget(budget_bytes)
        self._close_dataset = close_dataset
        self.prefetch_enabled = prefetch_enabled

        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: list[tuple[tuple[int, ...], int, _Task]] = []
        self._seq = itertools.count()
        self._generation = 0
        self._in_flight: set[BlockKey] = set()
        self._planning = 0  # workers planning a prefetch right now
        self._epoch = 0  # bumped when a generation changes the wish list (queue rebuilt)
        self._open_files: OrderedDict[Vec3, StorageUnit] = OrderedDict()
        self._file_states: dict[Vec3, FileState] = {}
        self._visible: set[BlockKey] = set()
        self._queued: set[BlockKey] = set()
        self._prefetched: set[BlockKey] = set()
        self._listeners: list[DataArrived] = []
        self._stopping = False
        self._closed = False
        self._hits = self._misses = 0
        self._blocks_read = self._bytes_decoded = 0
        self._decode_seconds = 0.0
        self._decode_cpu_seconds = 0.0
        self._prefetched_total = self._prefetch_useful = 0
        self._dropped = 0
        #: Prefetch held until this ``time.monotonic()`` (or until the screen is complete).
        self._hold_until = 0.0
        self._touched: dict[int, StorageUnit] = {}  # units read since pages were released
        self._touched_blocks = 0
        #: Open units kept, at most this many (``open_units_limit``).
        self.open_units_limit = open_units_limit()
        #: Tasks left that give read-ahead hints (see ``HINT_MEMORY``); where the system
        #: cannot say whether reads went to the disk, always (-1).
        self._hint_tasks = 0 if _RUSAGE_THREAD is not None else -1
        #: A volume read over a network: every read waits on it (the thread's disk counters
        #: do not see it), so read-ahead always pays.
        self._latency_bound = is_url(str(dataset.path))
        if self._latency_bound:
            self._hint_tasks = -1
        #: The storage units whose read-ahead is kept (a volume at a URL: ``_drop_far_hints``).
        self._hint_units: frozenset[Vec3] = frozenset()
        self._hint_visible: set[BlockKey] | None = None

        # GUI-thread state.
        self._planes: OrderedDict[PlaneRequest, _PlaneEntry] = OrderedDict()
        self._wanted: tuple[PlaneRequest, ...] = ()
        self._focused: int | None = None
        self._cursor: Vec3 | None = None
        self._deferred = False
        self._last_by_axis: dict[int, PlaneRequest] = {}
        self._normal_dir: dict[int, int] = {}
        self._pan_dir: dict[int, tuple[int, int]] = {}
        self._grid_keys: OrderedDict[tuple[Any, ...], tuple[list[BlockKey], IntArray]] = \
            OrderedDict()
        self._memo_lock = threading.Lock()  # _grid_keys: GUI thread and planning worker
        self._layouts: OrderedDict[PlaneRequest, prefetch.PlaneLayout] = OrderedDict()
        self._visible_sig: tuple[Any, ...] = ()
        self._signature: tuple[Any, ...] = ()
        self._signature_visible_held: tuple[Any, ...] = ()

        self._workers = [threading.Thread(target=self._work, name=f"wkw-loader-{n}", daemon=True)
                         for n in range(max(1, int(workers)))]
        for t in self._workers:
            t.start()

    # -- the PlaneSource protocol -------------------------------------------------------------
    def add_listener(self, callback: DataArrived) -> None:
        with self._lock:
            self._listeners.append(callback)

    def set_wanted(self, wanted: Sequence[PlaneRequest], focused: int | None,
                   cursor: tuple[int, int, int], *, deferred: bool = False) -> None:
        """Bump the generation and rebuild the queue for the planes now on screen.

        ``deferred``: the planes are wanted right after another source's screen (coarse
        placeholders under the views, ``viewer.core.layered``): their blocks are read like
        prefetch, held until ``release_hold`` (or ``PREFETCH_HOLD_S``), then first."""
        if self._closed:
            return
        wanted = tuple(wanted)
        cursor = (int(cursor[0]), int(cursor[1]), int(cursor[2]))
        if wanted == self._wanted and focused == self._focused and cursor == self._cursor \
                and deferred == self._deferred:
            return
        self._deferred = deferred
        self._note_motion(wanted, cursor)
        self._wanted, self._focused, self._cursor = wanted, focused, cursor

        order = list(range(len(wanted)))
        if focused is not None and 0 <= focused < len(wanted):
            order.remove(focused)
            order.insert(0, focused)
        layouts = {i: self._layout(wanted[i]) for i in order}

        # Visible blocks, focused view first.
        ranked: list[_Ranked] = []
        for rank, i in enumerate(order):
            lay = layouts[i]
            memo = ("plane", lay.request.axis, lay.layer, lay.u_blocks, lay.v_blocks)
            keys, blocks = self._keys_for(memo, lay.blocks)
            ranked.append(((0 if rank == 0 else 1, rank), memo, keys, blocks, deferred))
        visible_sig = tuple(r[1] for r in ranked) + (("deferred",) if deferred else ())
        if visible_sig != self._visible_sig:
            visible: set[BlockKey] = set()
            for r in ranked:
                visible.update(r[2])
        else:
            visible = self._visible
        visible_bytes = len(visible) * self._block_nbytes

        plan = None
        signature: tuple[Any, ...] = visible_sig
        if self.prefetch_enabled:
            axes = [layouts[i].request.axis for i in order]
            normal_dir = {a: d for a, d in self._normal_dir.items() if a in axes}
            pan_dir = {a: d for a, d in self._pan_dir.items() if a in axes}
            centre = tuple(c // d for c, d in zip(cursor, self._chunk, strict=True))
            signature = (visible_sig, tuple(sorted(normal_dir.items())),
                         tuple(sorted(pan_dir.items())), centre, self.cache.budget_bytes)
            plan = _Plan(order, layouts, cursor, visible_bytes, normal_dir, pan_dir)

        with self._lock:
            self._generation += 1
            if visible_sig != self._visible_sig:
                self.cache.set_pinned(visible, visible_bytes, owner=(self.layer, self.mag))
                states = self._file_states
                newly = [key for key in visible if key not in self._visible and isinstance(
                    states.get(key[2], _UNKNOWN), StorageUnit | type(_UNKNOWN))]
                cached = self._cached_among(newly)
                self._hits += len(cached)
                self._misses += len(newly) - len(cached)
                for key in cached:
                    if key in self._prefetched:
                        self._prefetched.discard(key)
                        self._prefetch_useful += 1
                self._visible = visible
                self._visible_sig = visible_sig
            if signature != self._signature:
                # The wish list changed: drop what is queued and rank the new list.  (When it
                # did not, the queue already holds exactly the unfinished part of it.)
                self._signature = signature
                self._epoch += 1
                self._dropped += len(self._queue)
                self._queue = []
                self._queued = set()
                self._enqueue_locked(ranked)
                if visible_sig != self._signature_visible_held and self._queue:
                    # Blocks on screen to read: prefetch waits until the views have them.
                    self._hold_until = time.monotonic() + PREFETCH_HOLD_S
                    self._signature_visible_held = visible_sig
                if plan is not None:  # ranked by a worker once the screen is queued
                    task = _Task((0, 0, 0), [], np.empty((0, 3), np.int64), True,
                                 self._epoch, plan)
                    heapq.heappush(self._queue, ((2, -1), next(self._seq), task))
                self._changed.notify_all()
        if self._latency_bound and visible is not self._hint_visible:
            self._drop_far_hints(visible)
        self._trim_planes()

    def _drop_far_hints(self, visible: set[BlockKey]) -> None:
        """A volume at a URL: when the screen moved to other storage units, stop the network
        read-ahead of units neither on screen nor next to one (queued or on the wire: their
        requests would hold the connections the new screen's reads need).  Scrolling and
        panning keep theirs; a far jump drops them all.  GUI thread."""
        self._hint_visible = visible
        units = {key[2] for key in visible}
        near = frozenset((x + dx, y + dy, z + dz) for x, y, z in units
                         for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1))
        if near == self._hint_units:
            return
        self._hint_units = near
        drop = getattr(self.volume, "drop_read_ahead", None)
        if drop is not None:
            drop(near)

    def _layout(self, request: PlaneRequest) -> prefetch.PlaneLayout:
        lay = self._layouts.get(request)
        if lay is None:
            lay = prefetch.plane_layout(request, self._chunk)
            self._layouts[request] = lay
            while len(self._layouts) > 64:
                self._layouts.popitem(last=False)
        return lay

    def plane(self, request: PlaneRequest) -> Plane:
        """The plane as far as it is cached now; never waits.  While nothing of it arrived
        since the last call, the same ``Plane`` object comes back (a view can skip redrawing)."""
        entry = self._planes.get(request)
        if entry is None:
            entry = self._new_entry(request)
            self._planes[request] = entry
        else:
            self._planes.move_to_end(request)
        if entry.missing:
            before = len(entry.missing)
            self._fill(entry)
            if len(entry.missing) != before:  # a block's look changed
                entry.shown = None
            if entry.missing and not self._closed:
                self._requeue_orphans(entry)
        if not entry.missing and self._hold_until:
            self._release_hold()
        if entry.shown is not None:
            return entry.shown  # nothing new: the caller can tell by identity
        if not entry.missing:
            entry.data.flags.writeable = False
            entry.status.flags.writeable = False
            plane = Plane(request, entry.data, entry.status, entry.errors)
        else:
            plane = Plane(request, entry.data.copy(order="F"), entry.status.copy(order="F"),
                          dict(entry.errors))
        # Known without scanning the status: a block still missing is a PENDING pixel.
        plane.__dict__["complete"] = not entry.missing
        entry.shown = plane
        return plane

    def release_hold(self) -> None:
        """Let held work start now (another source's screen, which it waits for, is complete:
        see ``set_wanted(deferred=True)``).  Any thread."""
        with self._lock:
            if self._hold_until:
                self._hold_until = 0.0
                self._changed.notify_all()

    def _release_hold(self) -> None:
        """Let prefetch start once every plane on screen has all its blocks (GUI thread)."""
        planes = self._planes
        for req in self._wanted:
            entry = planes.get(req)
            if entry is None or entry.missing:
                return
        with self._lock:
            self._hold_until = 0.0
            self._changed.notify_all()

    def close(self) -> None:
        """Cancel queued work, join every worker, drop the cache and close the dataset."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            self._stopping = True
            self._queue = []
            self._queued = set()
            self._listeners = []
            self._changed.notify_all()
        for t in self._workers:
            t.join()
        with self._lock:
            positions = list(self._file_states)
            units = list(self._open_files.values())
            self._open_files.clear()
            self._file_states.clear()
        for unit in units:
            self.volume.done_with(unit)
        if self._owns_cache:
            self.cache.clear()
        else:
            self.cache.set_pinned((), 0, owner=(self.layer, self.mag))
            self.cache.clear(self.layer, self.mag)
            for pos in positions:
                self.cache.release_file((self.layer, self.mag, pos))
        self._planes.clear()
        if self._close_dataset:
            self.dataset.close()

    # -- settings and stats -------------------------------------------------------------------
    def set_budget(self, budget_bytes: int) -> None:
        """Change the cache budget at run time (evicts at once)."""
        self.cache.set_budget(budget_bytes)

    def stats(self, cache_stats: CacheStats | None = None) -> LoaderStats:
        """A snapshot; ``cache_stats``: the shared cache's, when the caller has them already
        (one cache behind several loaders: its figures are gathered once)."""
        c = cache_stats if cache_stats is not None else self.cache.stats()
        with self._lock:
            return LoaderStats(
                queued_blocks=sum(len(t.keys) for _, _, t in self._queue),
                queued_tasks=len(self._queue),
                in_flight_blocks=len(self._in_flight),
                cache_used_bytes=c.used_bytes,
                cache_budget_bytes=c.budget_bytes,
                cache_blocks=c.blocks,
                pinned_blocks=c.pinned_blocks,
                hits=self._hits,
                misses=self._misses,
                blocks_read=self._blocks_read,
                bytes_decoded=self._bytes_decoded,
                decode_seconds=self._decode_seconds,
                decode_cpu_seconds=self._decode_cpu_seconds,
                prefetched_blocks=self._prefetched_total,
                prefetch_useful=self._prefetch_useful,
                dropped_tasks=self._dropped,
                generation=self._generation,
                workers=sum(t.is_alive() for t in self._workers),
                over_budget=c.pinned_over_budget,
                peak_cache_bytes=c.peak_used_bytes,
            )

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until the queue is empty and nothing is in flight (tests, benchmarks)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while self._queue or self._in_flight or self._planning:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
            return True

    @property
    def threads(self) -> list[threading.Thread]:
        return list(self._workers)

    # -- keys and geometry --------------------------------------------------------------------
    def _keys_for(self, memo: tuple[Any, ...] | None, blocks: IntArray
                  ) -> tuple[list[BlockKey], IntArray]:
        """Cache keys of global block coordinates: (layer, mag, unit, index in the unit),
        memoised per block grid."""
        if memo is not None:
            with self._memo_lock:
                hit = self._grid_keys.get(memo)
                if hit is not None:
                    self._grid_keys.move_to_end(memo)
                    return hit
        files = blocks // self._unit
        index = self.volume.chunk_index(blocks - files * self._unit).tolist()
        layer, mag = self.layer, self.mag
        keys: list[BlockKey] = list(zip(itertools.repeat(layer), itertools.repeat(mag),
                                        map(tuple, files.tolist()), index))
        if memo is not None:
            with self._memo_lock:
                self._grid_keys[memo] = (keys, blocks)
                while len(self._grid_keys) > 64:
                    self._grid_keys.popitem(last=False)
        return keys, blocks

    def _note_motion(self, wanted: tuple[PlaneRequest, ...], cursor: Vec3) -> None:
        """Remember each view's direction of motion along its normal and in its plane."""
        for req in wanted:
            prev = self._last_by_axis.get(req.axis)
            if prev is not None:
                step = prefetch.sign(req.index - prev.index)
                if step:
                    self._normal_dir[req.axis] = step
                du = prefetch.sign(req.lo[0] - prev.lo[0])
                dv = prefetch.sign(req.lo[1] - prev.lo[1])
                if du or dv:
                    self._pan_dir[req.axis] = (du, dv)
                elif step:
                    self._pan_dir.pop(req.axis, None)
            self._last_by_axis[req.axis] = req
        if self._cursor is not None:
            for axis in range(3):
                step = prefetch.sign(cursor[axis] - self._cursor[axis])
                if step and not any(r.axis == axis for r in wanted):
                    self._normal_dir[axis] = step

    def _prefetch_candidates(self, plan: _Plan) -> list[_Ranked]:
        """Rank what to read beyond the screen (see ``prefetch``).  Worker thread."""
        order, layouts, cursor = plan.order, plan.layouts, plan.cursor
        allowance = int((self.cache.budget_bytes - plan.visible_bytes) * PREFETCH_SHARE)
        out: list[_Ranked] = []
        spent = 0

        def add(prio: tuple[int, ...], memo: tuple[Any, ...], make: Any) -> None:
            nonlocal spent
            with self._memo_lock:
                hit = self._grid_keys.get(memo)
            blocks = hit[1] if hit is not None else make()
            if len(blocks) == 0:
                return
            cost = len(blocks) * self._block_nbytes
            if spent + cost > allowance:
                return
            spent += cost
            keys, blocks = self._keys_for(memo, blocks)
            out.append((prio, memo, keys, blocks, True))

        def grid(lay: prefetch.PlaneLayout, layer: int) -> Any:
            return lambda: prefetch.plane_grid(lay.request.axis, layer, lay.u_blocks,
                                               lay.v_blocks)

        # 2: ahead in the direction of motion (nearer layers first, focused view first).
        for rank, i in enumerate(order):
            lay = layouts[i]
            axis = lay.request.axis
            direction = plan.normal_dir.get(axis)
            if direction and len(lay):
                for k in range(1, prefetch.LAYERS_AHEAD + 1):
                    layer = lay.layer + direction * k
                    if layer >= 0:
                        add((2, k, rank), ("plane", axis, layer, lay.u_blocks, lay.v_blocks),
                            grid(lay, layer))
            pan = plan.pan_dir.get(axis)
            if pan:
                for k, band in enumerate(prefetch.pan_band(lay, *pan), 1):
                    add((2, k, rank), ("pan", axis, lay.layer, lay.u_blocks, lay.v_blocks, pan,
                                       k), lambda band=band: band)
        # 3: the neighbourhood of the cursor, then one layer either side of still views.
        centre = tuple(c // d for c, d in zip(cursor, self._chunk, strict=True))
        add((3, 0, 0), ("near", centre),
            lambda: prefetch.neighbourhood(cursor, self._chunk))
        for rank, i in enumerate(order):
            lay = layouts[i]
            axis = lay.request.axis
            if axis in plan.normal_dir or not len(lay):
                continue
            for layer in (lay.layer + 1, lay.layer - 1):
                if layer >= 0:
                    add((3, 1, rank), ("plane", axis, layer, lay.u_blocks, lay.v_blocks),
                        grid(lay, layer))
        return out

    # -- the queue ----------------------------------------------------------------------------
    def _cached_among(self, keys: list[BlockKey]) -> list[BlockKey]:
        return [key for key, hit in zip(keys, self.cache.present(keys), strict=True) if hit]

    def _enqueue_locked(self, ranked: list[_Ranked]) -> None:
        """Group each ranked list of blocks by file into batches and queue what is neither
        cached nor in flight (nor queued already at a better rank)."""
        seen = self._queued
        cache = self.cache
        in_flight = self._in_flight
        states = self._file_states
        gen = self._generation
        for prio, _, keys, blocks, is_prefetch in sorted(ranked, key=lambda r: r[0]):
            size = PREFETCH_BATCH if is_prefetch else VISIBLE_BATCH
            per_file: dict[Vec3, list[int]] = {}
            for k, (key, cached) in enumerate(zip(keys, cache.present(keys), strict=True)):
                if cached or key in seen or key in in_flight:
                    continue
                state = states.get(key[2], _UNKNOWN)
                if state is None or isinstance(state, FormatError):
                    continue  # absent or unreadable file: nothing to read
                seen.add(key)
                per_file.setdefault(key[2], []).append(k)
            # Batches of up to ``size`` blocks of one unit; units with only a few blocks
            # wanted (one chunk per file: N5, Zarr v2) share a batch, so that a task costs
            # little beside its decoding.
            batch: list[int] = []
            small = max(1, size // SHARED_BATCH_DIVISOR)
            for rows in per_file.values():
                if len(rows) > small:
                    for start in range(0, len(rows), size):
                        self._push_locked(prio, keys, blocks, rows[start:start + size],
                                          is_prefetch, gen)
                    continue
                if len(batch) + len(rows) > size:
                    self._push_locked(prio, keys, blocks, batch, is_prefetch, gen)
                    batch = []
                batch.extend(rows)
            if batch:
                self._push_locked(prio, keys, blocks, batch, is_prefetch, gen)

    def _push_locked(self, prio: tuple[int, ...], keys: list[BlockKey], blocks: IntArray,
                     rows: list[int], is_prefetch: bool, gen: int) -> None:
        task_keys = [keys[k] for k in rows]
        task = _Task(task_keys[0][2], task_keys, blocks[rows], is_prefetch, gen)
        heapq.heappush(self._queue, (prio, next(self._seq), task))

    def _requeue_orphans(self, entry: _PlaneEntry) -> None:
        """Queue missing blocks of a plane that nobody is reading (a plane asked for without
        ``set_wanted``, or blocks evicted before they were drawn under a tiny budget)."""
        with self._lock:
            if self._stopping:
                return
            queued = self._queued
            orphans = [k for k in entry.missing
                       if entry.keys[k] not in self._in_flight and entry.keys[k] not in queued]
            if not orphans:
                return
            keys = [entry.keys[k] for k in orphans]
            self._visible.update(keys)  # so that their arrival is announced
            self._enqueue_locked([((1, 99), (), keys, entry.layout.blocks[orphans], False)])
            self._changed.notify_all()

    # -- planes (GUI thread) ------------------------------------------------------------------
    def _new_entry(self, request: PlaneRequest) -> _PlaneEntry:
        lay = self._layout(request)
        keys, _ = self._keys_for(("plane", request.axis, lay.layer, lay.u_blocks, lay.v_blocks),
                                 lay.blocks)
        shape = request.shape
        data = np.zeros((self._channels, *shape), dtype=self._dtype, order="F")
        status = np.full(shape, Status.ABSENT, dtype=np.uint8, order="F")
        if len(lay):  # the blocks tile the request's non-negative part
            status[int(lay.u0.min()):, int(lay.v0.min()):] = Status.PENDING
        return _PlaneEntry(lay, keys, data, status, list(range(len(lay))))

    def _fill(self, entry: _PlaneEntry) -> None:
        """Copy every newly cached block into the plane; mark absent files and failures."""
        lay = entry.layout
        axis, depth = lay.request.axis, lay.depth
        u0, u1, v0, v1 = lay.u0.tolist(), lay.u1.tolist(), lay.v0.tolist(), lay.v1.tolist()
        bu0, bv0 = lay.bu0.tolist(), lay.bv0.tolist()
        with self._lock:
            states = dict(self._file_states)
        cache = self.cache
        data, status = entry.data, entry.status
        still: list[int] = []
        whole: list[int] = []
        parts: list[npt.NDArray[Any]] = []
        full = lay.full
        values = cache.get_many([entry.keys[k] for k in entry.missing])
        for k, value in zip(entry.missing, values, strict=True):
            key = entry.keys[k]
            if value is None:
                state = states.get(key[2], _UNKNOWN)
                if state is None:
                    status[u0[k]:u1[k], v0[k]:v1[k]] = Status.ABSENT
                elif isinstance(state, FormatError):
                    status[u0[k]:u1[k], v0[k]:v1[k]] = Status.FAILED
                    entry.errors[(state.path or self.volume.unit_path(key[2]),
                                  state.block or 0)] = state
                else:
                    still.append(k)
                continue
            if value is ABSENT:
                if self.volume.fill_value:
                    data[:, u0[k]:u1[k], v0[k]:v1[k]] = self.volume.fill_value
                status[u0[k]:u1[k], v0[k]:v1[k]] = Status.ABSENT
                continue
            if isinstance(value, FormatError):
                status[u0[k]:u1[k], v0[k]:v1[k]] = Status.FAILED
                entry.errors[(value.path or self.volume.unit_path(key[2]),
                              key[3])] = value
                continue
            assert isinstance(value, np.ndarray)
            if full[k]:  # a whole block's slice: copied below, all in one go
                whole.append(k)
                parts.append(value[:, :, :, depth] if axis == 2 else
                             value[:, :, depth, :] if axis == 1 else value[:, depth, :, :])
                continue
            w, h = u1[k] - u0[k], v1[k] - v0[k]
            a, b = bu0[k], bv0[k]
            if axis == 2:
                part = value[:, a:a + w, b:b + h, depth]
            elif axis == 1:
                part = value[:, a:a + w, depth, b:b + h]
            else:
                part = value[:, depth, a:a + w, b:b + h]
            data[:, u0[k]:u1[k], v0[k]:v1[k]] = part
            status[u0[k]:u1[k], v0[k]:v1[k]] = Status.DATA
        if whole:
            _scatter_blocks(data, status, lay, whole, parts)
        entry.missing = still

    def _trim_planes(self) -> None:
        wanted = set(self._wanted)
        spare = [r for r in self._planes if r not in wanted]
        for req in spare[:max(0, len(spare) - SPARE_PLANES)]:
            del self._planes[req]

    # -- workers ------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._changed:
                while not self._stopping:
                    if not self._queue:
                        self._changed.wait()
                        continue
                    head = self._queue[0][2]
                    if head.prefetch and self._hold_until:
                        left = self._hold_until - time.monotonic()
                        if left > 0:
                            self._changed.wait(left)
                            continue
                        self._hold_until = 0.0
                    break
                if self._stopping:
                    return
                _, _, task = heapq.heappop(self._queue)
                self._queued.difference_update(task.keys)
                plan = task.plan
                if plan is not None:
                    if task.generation != self._epoch:
                        self._changed.notify_all()
                        continue  # superseded before it was planned
                    self._planning += 1
                else:
                    in_flight = self._in_flight
                    rows = [k for k, (key, cached) in enumerate(
                        zip(task.keys, self.cache.present(task.keys), strict=True))
                        if not cached and key not in in_flight]
                    if not rows:
                        self._changed.notify_all()
                        continue
                    keys = task.keys if len(rows) == len(task.keys) else \
                        [task.keys[k] for k in rows]
                    in_flight.update(keys)
                    file_states = self._file_states
                    states = {key[2]: file_states.get(key[2], _UNKNOWN) for key in keys}
                    hinting = self._hint_tasks != 0
                    ahead = self._upcoming_locked() if hinting else []
            if plan is not None:
                ranked: list[_Ranked] = []
                try:
                    ranked = self._prefetch_candidates(plan)
                except Exception:
                    log.exception("prefetch planning failed")
                finally:
                    with self._changed:
                        self._planning -= 1
                        if task.generation == self._epoch and not self._stopping:
                            self._enqueue_locked(ranked)
                        self._changed.notify_all()
                continue
            try:
                if ahead:
                    self._hint(ahead)
                self._run(task, keys, task.blocks if len(rows) == len(task.keys)
                          else task.blocks[rows], states, hinting)
            except Exception:  # a worker must survive anything; the blocks stay missing
                log.exception("loader task for file %s failed", task.file)
            finally:
                with self._changed:
                    self._in_flight.difference_update(keys)
                    self._changed.notify_all()

    def _upcoming_locked(self) -> list[tuple[Vec3, list[int]]]:
        """The files and blocks of the next queued tasks not hinted yet (each task is hinted
        once, files not known yet included), to ask the disk for ahead."""
        out: list[tuple[Vec3, list[int]]] = []
        for _, _, task in heapq.nsmallest(LOOKAHEAD_TASKS, self._queue):
            if task.hinted or task.plan is not None:
                continue
            task.hinted = True
            by_unit: dict[Vec3, list[int]] = {}
            for key in task.keys:
                by_unit.setdefault(key[2], []).append(key[3])
            for pos, indices in by_unit.items():
                state = self._file_states.get(pos, _UNKNOWN)
                if state is _UNKNOWN or isinstance(state, StorageUnit):
                    out.append((pos, indices))
        return out

    def _hint(self, ahead: list[tuple[Vec3, list[int]]]) -> None:
        """Ask the disk for the pages of blocks about to be read (opening their files first
        when needed: a file's header and jump table are one small read).  Worker thread."""
        for pos, morton in ahead:
            if self._stopping:
                return
            with self._lock:
                state = self._file_states.get(pos, _UNKNOWN)
            if state is _UNKNOWN:
                state = self._resolve(pos)
            if isinstance(state, StorageUnit):
                state.will_need(morton)

    def _resolve(self, pos: Vec3) -> FileState:
        state: FileState
        try:
            state = self.volume.open_unit(pos)
        except FormatError as exc:
            state = exc
        except OSError as exc:
            state = DatasetLayoutError(f"cannot open: {exc.strerror or exc}",
                                       self.volume.unit_path(pos))
        file_key = (self.layer, self.mag, pos)
        with self._lock:
            if self._stopping:
                return state
            closing: list[StorageUnit] = []
            if isinstance(state, StorageUnit):
                self._open_files[pos] = state
                self._open_files.move_to_end(pos)
                while len(self._open_files) > self.open_units_limit:
                    old, unit = self._open_files.popitem(last=False)
                    self._file_states.pop(old, None)
                    self.cache.release_file((self.layer, self.mag, old))
                    closing.append(unit)
            self._file_states[pos] = state
        for unit in closing:  # its pages released by file, once, as it goes
            unit.release_pages()
            self.volume.done_with(unit)
        if isinstance(state, StorageUnit) and state.table_bytes:
            self.cache.account_file(file_key, state.table_bytes)
        return state

    def _reopen(self, pos: Vec3, old: StorageUnit) -> FileState:
        """Forget the unit at ``pos`` (``old``, which another program changed) and open it
        again.  ``old`` is not closed here: other workers may still be reading from it (their
        reads fail on their own); it goes when the last of them lets go."""
        with self._lock:
            if self._file_states.get(pos) is old:
                self._file_states.pop(pos, None)
                self._open_files.pop(pos, None)
        forget = getattr(self.volume, "forget_unit", None)
        if forget is not None:
            forget(pos)
        return self._resolve(pos)

    def _hint_task_units(self, keys: list[BlockKey], states: dict[Vec3, Any]) -> bool:
        """A volume at a URL, a task over several storage units (an N5 or zarr v2 chunk per
        file): ask for all of them before reading the first, so that their requests are on
        the wire together rather than one unit's after another's.  Whether it did (``states``
        then holds the units opened).  Worker thread."""
        by_unit: dict[Vec3, list[int]] = {}
        for key in keys:
            by_unit.setdefault(key[2], []).append(key[3])
        if len(by_unit) < 2:
            return False
        self._hint(list(by_unit.items()))
        with self._lock:
            for pos in by_unit:
                states[pos] = self._file_states.get(pos, states.get(pos, _UNKNOWN))
        return True

    def _run(self, task: _Task, keys: list[BlockKey], blocks: IntArray,
             states: dict[Vec3, Any], hinting: bool) -> None:
        """Read and decode ``keys`` (grouped by unit), cache them, tell the listeners."""
        started = time.perf_counter()
        cpu_started = time.thread_time()
        disk_started = _disk_reads()
        owned: list[tuple[BlockKey, BlockValue]] = []
        touched: list[StorageUnit] = []
        decoded = read = 0
        if hinting and self._latency_bound and not task.hinted:
            hinting = not self._hint_task_units(keys, states)
        start = 0
        n = len(keys)
        while start < n:  # one run of keys per storage unit
            pos = keys[start][2]
            end = start + 1
            while end < n and keys[end][2] == pos:
                end += 1
            run_keys = keys[start:end] if start or end < n else keys
            start = end
            state = states.get(pos, _UNKNOWN)
            if state is _UNKNOWN:
                state = self._resolve(pos)
            if not isinstance(state, StorageUnit):
                continue  # absent or unreadable: ``_fill`` reads its state
            indices = [key[3] for key in run_keys]
            if hinting and not task.hinted:
                state.will_need(indices)
            results: Sequence[Any]
            try:
                try:
                    results = state.read_chunks(indices)
                except FileChangedError:
                    # Another program rewrote the file since it was opened: open it again and
                    # read from the new one (once; a second change is the blocks' error).
                    state = self._reopen(pos, state)
                    if not isinstance(state, StorageUnit):
                        raise
                    results = state.read_chunks(indices)
            except FileChangedError as exc:
                results = [exc] * len(indices)
            except OSError as exc:
                results = [BlockDecodeError(f"read failed: {exc.strerror or exc}", state.path,
                                            block=i) for i in indices]
            except ValueError as exc:  # the file was closed under us (dataset closing)
                if self._stopping:
                    return
                results = [BlockDecodeError(str(exc), state.path, block=i) for i in indices]
            read += len(run_keys)
            touched.append(state)
            for key, value in zip(run_keys, results, strict=True):
                if value is None:
                    owned.append((key, ABSENT))
                elif isinstance(value, np.ndarray):
                    value = _own(value)
                    decoded += value.nbytes
                    owned.append((key, value))
                else:
                    owned.append((key, value))
        if owned:
            self.cache.put_many(owned)
        if touched:
            self._release_pages(touched, read)
        elapsed = time.perf_counter() - started
        cpu = time.thread_time() - cpu_started
        from_disk = _disk_reads() != disk_started
        with self._lock:
            visible = self._visible
            if read:
                self._blocks_read += read
                self._bytes_decoded += decoded
                self._decode_seconds += elapsed
                self._decode_cpu_seconds += cpu
                if self._hint_tasks >= 0:
                    if from_disk:  # cold: ask ahead for the next tasks' pages
                        self._hint_tasks = HINT_MEMORY
                    elif self._hint_tasks:
                        self._hint_tasks -= 1
            shown = [k for k, key in enumerate(keys) if key in visible]
            if task.prefetch and read:
                self._prefetched_total += read
                self._prefetch_useful += len(shown)
                if len(shown) < len(keys):
                    seen = set(shown)
                    self._prefetched.update(key for k, key in enumerate(keys) if k not in seen)
            listeners = list(self._listeners) if shown else []
        if listeners:
            box = self._box(blocks if len(shown) == len(keys) else blocks[shown])
            for callback in listeners:
                try:
                    callback(box)
                except Exception:
                    log.exception("loader listener failed")

    def _release_pages(self, units: list[StorageUnit], blocks: int) -> None:
        """Drop the mapped pages of the units read from (they are page cache, not the
        process's memory) once every ``RELEASE_EVERY`` blocks read: a ``madvise`` over a whole
        file per batch cost ~0.1 ms of a worker's time with the GIL held."""
        with self._lock:
            for unit in units:
                self._touched[id(unit)] = unit
            self._touched_blocks += blocks
            if self._touched_blocks < RELEASE_EVERY:
                return
            files = list(self._touched.values())
            self._touched = {}
            self._touched_blocks = 0
        for f in files:
            f.release_pages()

    def _box(self, blocks: IntArray) -> Box3:
        b = np.asarray(self._chunk, dtype=np.int64)
        lo = blocks.min(axis=0) * b
        hi = (blocks.max(axis=0) + 1) * b
        offset = (int(lo[0]), int(lo[1]), int(lo[2]))
        shape = (int(hi[0] - lo[0]), int(hi[1] - lo[1]), int(hi[2] - lo[2]))
        return (offset, shape)


def _scatter_blocks(data: npt.NDArray[Any], status: npt.NDArray[np.uint8],
                    lay: prefetch.PlaneLayout, rows: list[int],
                    parts: list[npt.NDArray[Any]]) -> None:
    """Copy whole-block slices ``parts`` (each ``(C, b, b)``) of layout rows ``rows`` into the
    plane: one slice assignment per block for the values, and the status of all of them in one
    scatter through a block-grid view when the blocks sit on a grid starting at the plane's
    corner (always, for requests snapped to the block size).  Measured for 224 blocks: ~0.3-0.6
    ms, about half of two slice assignments per block."""
    bu, bv = lay.bu, lay.bv
    u0 = lay.u0[rows]
    v0 = lay.v0[rows]
    for part, a, e in zip(parts, u0.tolist(), v0.tolist(), strict=True):
        data[:, a:a + bu, e:e + bv] = part
    if (u0 % bu == 0).all() and (v0 % bv == 0).all():
        nu, nv = status.shape[0] // bu, status.shape[1] // bv
        tu, tv = status.strides
        grid = np.lib.stride_tricks.as_strided(status, (bu, nu, bv, nv),
                                               (tu, tu * bu, tv, tv * bv), writeable=True)
        grid[:, u0 // bu, :, v0 // bv] = Status.DATA
        return
    for a, e in zip(u0.tolist(), v0.tolist(), strict=True):
        status[a:a + bu, e:e + bv] = Status.DATA


def _own(block: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``block`` in memory of its own.  ``read_blocks`` decodes a batch into one buffer and
    returns views of it: cached as they are, one block would keep the whole batch alive and
    the budget would count a fraction of the memory held."""
    root = block
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is block or root.nbytes <= block.nbytes:
        return block
    own = block.copy(order="K")
    own.flags.writeable = False
    return own


__all__ = ["Loader", "LoaderStats"]
