"""The background loader: a ``PlaneSource`` that never waits for the disk.

Views say which planes are on screen (``set_wanted``) and ask for them (``plane``); the loader
answers at once from its ``BlockCache`` (what is not there yet is ``Status.PENDING``) and has its
worker threads read the rest, calling every listener with the box of data that arrived.

``Loader`` composes four parts, each a module of its own:

* ``viewer.core.assembly.PlaneAssembler`` (pure numpy, GUI thread): the planes handed out, cut
  from whole cached blocks (one numpy slice per block); an assembled plane is kept per request
  and only its missing blocks are looked up again.
* ``viewer.core.schedule.Scheduler``: the priority queue of batches (one view's blocks in one
  storage unit, or small units sharing a batch), rebuilt on every change of the wish list (a
  generation bump drops queued work no longer wanted), the in-flight set (a block is never read
  twice), the hold that keeps prefetch behind the screen.
* ``viewer.core.chunkio.ChunkReader``: storage units opened and kept, batches read through
  ``StorageUnit.read_chunks`` (the format seam) into the cache, read-ahead hints while reads go
  to the disk.
* ``viewer.core.prefetch``: what to read beyond the screen (ranked by a worker: a planning task
  queued behind the screen's blocks, so the GUI thread only queues what is on screen).

How the work is ordered, and why:

* **Whole blocks.**  A block is one chunk of the ``Volume`` (any format: a WKW block, a zarr
  inner chunk, an N5 chunk; not necessarily cubic).  A decoded block serves all three views and
  the neighbouring planes, so the loader decodes whole blocks and cuts planes out of them.
* **Priority**: visible in the focused view, visible in the other views, the next block layers
  in the direction of motion (and beyond a pan), then the Morton neighbourhood of the cursor.
  When a generation leaves the wish list as it was (scrolling inside a block layer), the queue
  is kept as it is.
* **The screen before prefetch.**  When the screen changes and leaves blocks to read, prefetch
  (its planning too) waits until the views have taken every plane complete through ``plane``
  (at most ``PREFETCH_HOLD_S``): on two cores, prefetch running while the GUI thread assembles
  and draws the last blocks of a jump takes the GIL and a core from it.  A loader made with
  ``hold_until_drawn`` waits longer, until its owner says the complete planes are on screen
  (``release_hold``: a window, once it painted them), so that prefetch does not start while
  the last planes are rendered and painted either.
* **Deferred planes** (``set_wanted(deferred=True)``: the coarse placeholders of
  ``viewer.core.layered``) are read like prefetch, held until another loader's screen is
  complete (``release_hold``).
* **Blocks on screen are pinned** in the cache; when the screen alone needs more than the budget,
  ``LoaderStats.over_budget`` says so (the panel shows a warning).

Threads: ``set_wanted``, ``plane``, ``add_listener``, ``set_budget``, ``close`` are called from one
thread (the GUI thread); ``stats``, ``release_hold`` and ``wait_idle`` from any.  Listeners are
called on worker threads, never under a lock; workers only read files and return numpy arrays.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core import prefetch
from viewer.core.assembly import PlaneAssembler, PlaneEntry
from viewer.core.blockkeys import BlockKeys, cache_layer
from viewer.core.cache import BlockCache, BlockKey, CacheStats
from viewer.core.chunkio import ChunkReader, open_units_limit
from viewer.core.schedule import Ranked, Scheduler, Taken
from viewer.core.slicing import Box3, DataArrived, Plane, PlaneRequest
from viewer.core.workers import LoaderWorkers
from viewer.format import Volume

log = logging.getLogger(__name__)

Vec3 = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]

#: Prefetch may fill at most this share of the budget left after the screen.
PREFETCH_SHARE = 0.5
#: After a change of the screen that left blocks to read, prefetch waits until the views have
#: taken every plane complete (``plane``), at most this long: prefetch batches running while
#: the GUI thread assembles and draws the last visible blocks take the GIL and a core from it
#: and delay the jump's last drawing (figures in docs/performance.md).
PREFETCH_HOLD_S = 0.15
#: Blocks whose file another program was changing (``Status.CHANGING``) are read again this
#: long after (the read itself already waited ``viewer.format.handles.SETTLE_NS`` for it).
CHANGING_RETRY_S = 1.0


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


class Loader:
    """Background ``PlaneSource`` over a ``Volume``: cache, priority queue, workers.

    ``layer`` and ``mag`` name the volume inside a shared ``cache`` (pass one cache to several
    loaders to share one budget); a volume with extra axes is named with its element of them
    too (``cache_layer``), so loaders of several time points share a cache.  ``workers``: a
    ``LoaderWorkers`` group shared with other loaders (``viewer.core.workers``: a window's
    layers and mags), or how many threads a group of its own runs (on the volume's executor,
    closed with the loader).  ``close_dataset``: close the volume in ``close()``, as the
    synchronous source does.  ``hold_until_drawn``: prefetch held behind a new screen starts
    when the owner calls ``release_hold`` (it drew the complete planes), not when ``plane``
    hands them out complete (both at most ``PREFETCH_HOLD_S`` after the screen changed).
    """

    def __init__(self, dataset: Volume, *, layer: Hashable = "", mag: Hashable = 1,
                 workers: int | LoaderWorkers = 2, cache: BlockCache | None = None,
                 budget_bytes: int | None = None, close_dataset: bool = True,
                 prefetch_enabled: bool = True, hold_until_drawn: bool = False) -> None:
        self.dataset = dataset
        self.volume = dataset
        self.layer = layer
        self.mag = mag
        #: The layer part of this loader's block keys (``layer`` and the volume's index).
        self.cache_layer = cache_layer(layer, dataset)
        c = dataset.chunk_shape
        self._chunk: Vec3 = (int(c[0]), int(c[1]), int(c[2]))
        self._chunk_arr = np.asarray(self._chunk, dtype=np.int64)
        self._block_nbytes = dataset.chunk_nbytes
        self._owns_cache = cache is None
        self.cache = cache if cache is not None else BlockCache(budget_bytes)
        if cache is not None and budget_bytes is not None:
            self.cache.set_budget(budget_bytes)
        self._close_dataset = close_dataset
        self.prefetch_enabled = prefetch_enabled
        #: Prefetch held for a new screen waits for ``release_hold`` (the owner drew the
        #: complete planes) rather than for ``plane`` to hand them out complete.
        self.hold_until_drawn = hold_until_drawn

        self._io = ChunkReader(dataset, self.cache_layer, mag, self.cache)
        self._sched = Scheduler(self.cache, self._io.bad_units)
        self._keys = BlockKeys(dataset, self.cache_layer, mag)
        self._planes = PlaneAssembler(self._chunk, dataset.num_channels, dataset.dtype,
                                      dataset.fill_value, dataset.unit_path)

        # Shared with the workers, under ``_lock``: what is on screen, and counters.
        self._lock = threading.Lock()
        self._visible: set[BlockKey] = set()
        self._prefetched: set[BlockKey] = set()
        self._listeners: list[DataArrived] = []
        self._hits = self._misses = 0
        self._prefetched_total = self._prefetch_useful = 0
        self._closed = False
        #: The timer that reads blocks of changing files again (``_retry_changing``), and the
        #: blocks it handed to the planes to take as missing again (``plane``).
        self._retry: threading.Timer | None = None
        self._stale: set[BlockKey] = set()
        #: Bumped whenever a plane's missing blocks may have changed state: a batch finished
        #: (read, failed or dropped: workers), the wish list changed, blocks went stale (GUI
        #: thread).  A plane looks its missing blocks up again only when it moved.
        self._finished = 0

        # GUI-thread state.
        self._wanted: tuple[PlaneRequest, ...] = ()
        self._focused: int | None = None
        self._cursor: Vec3 | None = None
        self._deferred = False
        self._ahead = False
        self._last_by_axis: dict[int, PlaneRequest] = {}
        self._normal_dir: dict[int, int] = {}
        self._pan_dir: dict[int, tuple[int, int]] = {}
        self._visible_sig: tuple[Any, ...] = ()
        self._signature: tuple[Any, ...] = ()
        self._signature_visible_held: tuple[Any, ...] = ()

        # Worker threads: the group given (shared with the owner's other loaders), else a
        # group of its own on the volume's executor, closed with the loader.
        if isinstance(workers, LoaderWorkers):
            self._group, self._owns_group = workers, False
        else:
            self._group = LoaderWorkers(dataset.executor, max(1, int(workers)))
            self._owns_group = True
        self._sched.changed.listeners.append(self._group.wake)
        self._group.attach(self)

    @property
    def open_units_limit(self) -> int:
        """Open storage units kept, at most (``viewer.core.chunkio.open_units_limit``)."""
        return self._io.open_units_limit

    # -- the PlaneSource protocol -------------------------------------------------------------
    def add_listener(self, callback: DataArrived) -> None:
        with self._lock:
            self._listeners.append(callback)

    def set_wanted(self, wanted: Sequence[PlaneRequest], focused: int | None,
                   cursor: tuple[int, int, int], *, deferred: bool = False,
                   ahead: bool = False) -> None:
        """Bump the generation and rebuild the queue for the planes now on screen.

        ``deferred``: the planes are wanted right after another source's screen (coarse
        placeholders under the views, ``viewer.core.layered``): their blocks are read like
        prefetch, held until ``release_hold`` (or ``PREFETCH_HOLD_S``), then first.
        ``ahead``: deferred, and the planes are not on screen at all (the same planes at the
        next element of a time axis): their blocks are neither pinned nor counted as shown nor
        announced to the listeners until a later ``set_wanted`` without it shows them."""
        if self._closed:
            return
        deferred = deferred or ahead
        wanted = tuple(wanted)
        cursor = (int(cursor[0]), int(cursor[1]), int(cursor[2]))
        if wanted == self._wanted and focused == self._focused and cursor == self._cursor \
                and deferred == self._deferred and ahead == self._ahead:
            return
        self._deferred, self._ahead = deferred, ahead
        self._note_motion(wanted, cursor)
        self._wanted, self._focused, self._cursor = wanted, focused, cursor

        order = list(range(len(wanted)))
        if focused is not None and 0 <= focused < len(wanted):
            order.remove(focused)
            order.insert(0, focused)
        layouts = {i: self._planes.layout(wanted[i]) for i in order}

        # Visible blocks, focused view first.
        ranked: list[Ranked] = []
        for rank, i in enumerate(order):
            lay = layouts[i]
            memo = _plane_memo(lay)
            keys, blocks = self._keys.keys(memo, lay.blocks)
            ranked.append(((0 if rank == 0 else 1, rank), memo, keys, blocks, deferred))
        visible_sig = tuple(r[1] for r in ranked) + (("deferred",) if deferred else ()) \
            + (("ahead",) if ahead else ())
        if visible_sig != self._visible_sig:
            visible: set[BlockKey] = set()
            if not ahead:
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
            plan = prefetch.Plan(order, layouts, cursor, visible_bytes, normal_dir, pan_dir)

        self._sched.next_generation()
        with self._lock:
            self._finished += 1  # queued work dropped: a plane not wanted may be orphaned
        if visible_sig != self._visible_sig:
            self.cache.set_pinned(visible, visible_bytes, owner=(self.cache_layer, self.mag))
            bad = self._io.bad_units
            with self._lock:
                old = self._visible
                newly = list(visible.difference(old))
                if bad:
                    newly = [key for key in newly if key[2] not in bad]
                hit = list(itertools.compress(newly, self.cache.present(newly)))
                self._hits += len(hit)
                self._misses += len(newly) - len(hit)
                useful = self._prefetched.intersection(hit)
                if useful:
                    self._prefetched.difference_update(useful)
                    self._prefetch_useful += len(useful)
                self._visible = visible
            self._visible_sig = visible_sig
        if signature != self._signature:
            # The wish list changed: drop what is queued and rank the new list.  (When it did
            # not, the queue already holds exactly the unfinished part of it.)
            self._signature = signature
            hold = PREFETCH_HOLD_S if visible_sig != self._signature_visible_held else 0.0
            if self._sched.replace(ranked, plan, hold):
                # Blocks on screen to read: prefetch waits until the views have them.
                self._signature_visible_held = visible_sig
        if not ahead:  # the network read-ahead follows the screen, not what lies ahead of it
            self._io.follow_screen(visible)
        self._planes.trim(self._wanted)

    def plane(self, request: PlaneRequest) -> Plane:
        """The plane as far as it is cached now; never waits.  While nothing of it arrived
        since the last call, the same ``Plane`` object comes back (a view can skip redrawing)."""
        planes = self._planes
        if self._stale:
            with self._lock:
                stale, self._stale = self._stale, set()
                self._finished += 1
            planes.forget(stale)
        entry = planes.get(request)
        if entry is None:
            lay = planes.layout(request)
            entry = planes.add(request, self._keys.keys(_plane_memo(lay), lay.blocks)[0])
        if entry.missing and entry.looked != self._finished:
            # Something was read (or dropped) since this plane last looked: look again.  While
            # nothing was, its missing blocks are all still queued or in flight, and a view
            # re-fetched for another view's arrival costs no walk over them.
            entry.looked = self._finished
            keys = entry.keys
            planes.fill(entry, self.cache.get_many([keys[k] for k in entry.missing]),
                        self._io.bad_units, self._io.state)
            if entry.missing and not self._closed:
                self._requeue_orphans(entry)
        if not entry.missing and self._sched.holding and not self.hold_until_drawn \
                and planes.complete(self._wanted):
            self._sched.release_hold()  # the views have the whole screen: prefetch may start
        return planes.snapshot(entry)

    def release_hold(self) -> None:
        """Let held work start now (another source's screen, which it waits for, is complete:
        see ``set_wanted(deferred=True)``; or, with ``hold_until_drawn``, the owner drew the
        complete planes).  Any thread."""
        self._sched.release_hold()

    def close(self, retire: bool = False) -> None:
        """Cancel queued work, join every worker, drop the cache and close the dataset.
        ``retire``: another loader of the same dataset takes over (another element of its
        extra axes): the blocks stay in a shared cache, which its owner clears, and the
        volume stays open."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            self._listeners = []
            retry, self._retry = self._retry, None
        if retry is not None:
            retry.cancel()
            retry.join()
        self._io.stop()
        self._sched.stop()
        self._group.detach(self)
        if self._owns_group:
            self._group.close()
        self._io.close()
        if self._owns_cache:
            self.cache.clear()
        else:
            self.cache.set_pinned((), 0, owner=(self.cache_layer, self.mag))
            if not retire:
                self.cache.clear(self.cache_layer, self.mag)
        self._planes.clear()
        if self._close_dataset and not retire:
            self.dataset.close()

    # -- settings and stats -------------------------------------------------------------------
    def set_budget(self, budget_bytes: int) -> None:
        """Change the cache budget at run time (evicts at once)."""
        self.cache.set_budget(budget_bytes)

    def stats(self, cache_stats: CacheStats | None = None) -> LoaderStats:
        """A snapshot; ``cache_stats``: the shared cache's, when the caller has them already
        (one cache behind several loaders: its figures are gathered once)."""
        c = cache_stats if cache_stats is not None else self.cache.stats()
        queued_blocks, queued_tasks, in_flight = self._sched.counts()
        io = self._io
        with self._lock:
            hits, misses = self._hits, self._misses
            prefetched, useful = self._prefetched_total, self._prefetch_useful
        return LoaderStats(
            queued_blocks=queued_blocks,
            queued_tasks=queued_tasks,
            in_flight_blocks=in_flight,
            cache_used_bytes=c.used_bytes,
            cache_budget_bytes=c.budget_bytes,
            cache_blocks=c.blocks,
            pinned_blocks=c.pinned_blocks,
            hits=hits,
            misses=misses,
            blocks_read=io.blocks_read,
            bytes_decoded=io.bytes_decoded,
            decode_seconds=io.decode_seconds,
            decode_cpu_seconds=io.decode_cpu_seconds,
            prefetched_blocks=prefetched,
            prefetch_useful=useful,
            dropped_tasks=self._sched.dropped,
            generation=self._sched.generation,
            workers=sum(t.is_alive() for t in self._group.threads),
            over_budget=c.pinned_over_budget,
            peak_cache_bytes=c.peak_used_bytes,
        )

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until the queue is empty and nothing is in flight (tests, benchmarks)."""
        return self._sched.wait_idle(timeout)

    @property
    def threads(self) -> list[threading.Thread]:
        """The threads that work for it (its group's: shared with other loaders when given)."""
        return self._group.threads

    # -- GUI thread ---------------------------------------------------------------------------
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

    def _requeue_orphans(self, entry: PlaneEntry) -> None:
        """Queue missing blocks of a plane that nobody is reading (a plane asked for without
        ``set_wanted``, or blocks evicted before they were drawn under a tiny budget)."""
        sched = self._sched
        keys_of = entry.keys.__getitem__
        missing = list(map(keys_of, entry.missing))
        with sched.lock:
            if sched.stopping or not sched.any_missing_locked(missing):
                return  # (all queued or being read: the common case, decided at C speed)
            rows = sched.missing_locked(missing)
            if not rows:
                return
            orphans = [entry.missing[r] for r in rows]
            keys = [entry.keys[k] for k in orphans]
            with self._lock:
                self._visible.update(keys)  # so that their arrival is announced
            sched.enqueue_locked([((1, 99), (), keys, entry.layout.blocks[orphans], False)])
            sched.changed.notify_all()

    # -- workers (``viewer.core.workers.WorkSource``) ------------------------------------------
    def next_rank(self) -> tuple[tuple[int, ...] | None, float | None]:
        """The rank of its first ready task (see ``LoaderWorkers``).  Worker thread."""
        return self._sched.next_rank()

    def run_next(self) -> bool:
        """Take its first ready task and run it.  Worker thread."""
        sched, io = self._sched, self._io
        taken = sched.take_ready(io.hinting)
        if taken is None:
            return False
        task = taken.task
        if task.plan is not None:
            ranked: list[Ranked] = []
            try:
                plan = task.plan
                allowance = int((self.cache.budget_bytes - plan.visible_bytes)
                                * PREFETCH_SHARE)
                ranked = prefetch.rank(plan, self._keys, self._chunk, allowance,
                                       self._block_nbytes)
            except Exception:
                log.exception("prefetch planning failed")
            finally:
                sched.planned(task, ranked)
            return True
        try:
            if taken.ahead:
                io.hint(taken.ahead, lambda: sched.stopping)
            self._read(taken)
        except Exception:  # a worker must survive anything; the blocks stay missing
            log.exception("loader task for file %s failed", task.file)
        finally:
            sched.done(taken.keys)
            with self._lock:
                self._finished += 1  # (a failed batch leaves its blocks to requeue)
        return True

    def _read(self, taken: Taken) -> None:
        """Read a batch into the cache, count it and tell the listeners what is on screen."""
        keys = taken.keys
        read = self._io.read(keys, hint=not taken.task.hinted)
        if self._io.has_changing:
            self._schedule_retry()
        with self._lock:
            self._finished += 1  # before the listeners: their redraw must look again
            visible = self._visible
            # Blocks of absent or unreadable units were not read, and are announced too: the
            # plane shows their look from the unit's state.
            shown = [k for k, key in enumerate(keys) if key in visible]
            if taken.task.prefetch and read:
                self._prefetched_total += read
                self._prefetch_useful += len(shown)
                if len(shown) < len(keys):
                    seen = set(shown)
                    self._prefetched.update(key for k, key in enumerate(keys) if k not in seen)
            listeners = list(self._listeners) if shown else []
        if listeners:
            blocks = taken.blocks
            box = self._box(blocks if len(shown) == len(keys) else blocks[shown])
            for callback in listeners:
                try:
                    callback(box)
                except Exception:
                    log.exception("loader listener failed")

    def _schedule_retry(self) -> None:
        """Read the blocks of changing files again in ``CHANGING_RETRY_S`` (one timer at a
        time, owned by the loader: cancelled by ``close``).  Worker thread."""
        with self._lock:
            if self._closed or self._retry is not None:
                return
            timer = threading.Timer(CHANGING_RETRY_S, self._retry_changing)
            timer.name = "wkw-loader-settle"
            timer.daemon = True
            self._retry = timer
        timer.start()

    def _retry_changing(self) -> None:
        """The timer's work: forget the blocks of changing files (cache, unit states), hand
        them to the planes as missing again (``plane``, on the GUI thread, takes them) and
        tell the listeners, whose redraw asks for the planes and so queues the reads."""
        keys = self._io.take_changing()
        with self._lock:
            self._retry = None
            if self._closed or not keys:
                return
            self._stale.update(keys)
            listeners = list(self._listeners)
        shape = self.dataset.shape
        box: Box3 = ((0, 0, 0), (int(shape[0]), int(shape[1]), int(shape[2])))
        for callback in listeners:
            try:
                callback(box)
            except Exception:
                log.exception("loader listener failed")

    def _box(self, blocks: IntArray) -> Box3:
        b = self._chunk_arr
        lo = blocks.min(axis=0) * b
        hi = (blocks.max(axis=0) + 1) * b
        offset = (int(lo[0]), int(lo[1]), int(lo[2]))
        shape = (int(hi[0] - lo[0]), int(hi[1] - lo[1]), int(hi[2] - lo[2]))
        return (offset, shape)


def _plane_memo(lay: prefetch.PlaneLayout) -> tuple[Any, ...]:
    """The name a plane's block grid is remembered under (``BlockKeys``): planes of one block
    layer and block range share it."""
    return ("plane", lay.request.axis, lay.layer, lay.u_blocks, lay.v_blocks)


__all__ = ["Loader", "LoaderStats", "open_units_limit"]
