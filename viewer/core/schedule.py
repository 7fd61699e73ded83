"""The loader's scheduling: which blocks its workers read next, in which batches.

``Scheduler`` holds a priority queue of tasks (batches of blocks), the generation they were
queued for, and the blocks being read right now:

* **Ranked lists in, batches out.**  The loader hands in ranked lists of blocks (``Ranked``:
  a priority, the blocks' cache keys and coordinates, prefetch or not); each is cut into
  batches per storage unit (``VISIBLE_BATCH`` or ``PREFETCH_BATCH`` blocks), units
  contributing only a few blocks (one chunk per file: N5, Zarr v2) sharing a batch, so that a
  task costs little beside its decoding.  A block cached, queued already or being read is not
  queued again.
* **Generations.**  ``replace`` (a new wish list) drops every queued task and ranks the new
  list: stale work never starts.  A block being read by a worker stays in flight, whatever the
  generation, and is never read twice (the in-flight set).
* **Holding.**  Prefetch tasks (and deferred planes) wait while the hold lasts (``hold``, at
  most its time limit, or until ``release_hold``): the screen's blocks first.
* **Planning tasks.**  A task may carry a prefetch plan instead of blocks: a worker ranks the
  prefetch (off the GUI thread) and hands the ranked lists back (``planned``), unless the wish
  list changed meanwhile (the plan's epoch).
* **Read-ahead.**  ``take`` can also return the blocks of the next few queued tasks not yet
  hinted, for the worker to ask the storage for ahead (``LOOKAHEAD_TASKS``).

One lock (``lock``, with the condition ``changed``) guards the queue; a worker takes a task and
gives it back with one lock round trip each.  Threads: ``take``, ``planned`` and ``done`` on
worker threads; ``replace``, ``add``, ``next_generation`` and ``stop`` on the loader's owner
thread; ``release_hold``, ``wait_idle`` and ``counts`` from any.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import threading
import time
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.cache import BlockCache, BlockKey

Vec3 = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]

#: One ranked list of blocks: (priority, memo name, cache keys, block coordinates, prefetch?).
Ranked = tuple[tuple[int, ...], tuple[Any, ...], list[BlockKey], IntArray, bool]

#: Blocks per task for blocks on screen (a short task: the workers share a plane, and the
#: last task of a jump, which the screen waits for, is short; docs/performance.md).
VISIBLE_BATCH = 32
#: Blocks per prefetch task (short: a jump waits at most one such task for a worker busy
#: with prefetch; larger tasks made jumps slower, docs/performance.md).
PREFETCH_BATCH = 24
#: Units contributing at most ``batch size // SHARED_BATCH_DIVISOR`` blocks to a ranked list
#: share batches with other such units; bigger ones get batches of their own.
SHARED_BATCH_DIVISOR = 4
#: A worker taking a task asks the storage ahead for the blocks of this many of the next
#: queued tasks (``StorageUnit.will_need``): cold reads then overlap instead of faulting page
#: by page (the multires benchmark's cold zoom-out waited for pages most of its time before:
#: docs/performance.md).
LOOKAHEAD_TASKS = 16
#: Priority of a planning task: after the screen, before the prefetch it plans.
PLAN_PRIORITY = (2, -1)

_NO_BLOCKS: IntArray = np.empty((0, 3), np.int64)


@dataclass(eq=False)
class Task:
    """A batch of blocks to read (or, with ``plan``, a prefetch to rank)."""

    keys: list[BlockKey]  #: grouped by storage unit (``key[2]``)
    blocks: IntArray  #: global block coordinates, aligned with keys
    prefetch: bool
    generation: int  #: the generation queued for (of a planning task: the queue's epoch)
    plan: Any = None  #: a prefetch plan to rank instead (``viewer.core.prefetch.Plan``)
    hinted: bool = False  #: its blocks were asked for ahead (``StorageUnit.will_need``)

    @property
    def file(self) -> Vec3:
        """The first storage unit of the batch (a batch may span several small units)."""
        return self.keys[0][2] if self.keys else (0, 0, 0)


@dataclass
class Taken:
    """What ``Scheduler.take`` hands a worker: the task, the part of its blocks still to read
    (neither cached nor in flight: they are in flight now), and units' blocks to ask for
    ahead."""

    task: Task
    keys: list[BlockKey]
    blocks: IntArray
    ahead: list[tuple[Vec3, list[int]]]


class _Changed(threading.Condition):
    """The scheduler's condition, which also tells the worker groups serving it (``wake``):
    their threads wait on a condition of their own, over many schedulers."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.listeners: list[Callable[[], None]] = []

    def notify_all(self) -> None:
        super().notify_all()
        for wake in self.listeners:
            wake()


class Scheduler:
    """Priority queue, generations, in-flight blocks (see the module docstring).

    ``cache``: blocks cached are not read.  ``bad_units``: the storage units known to be absent
    or damaged (their blocks are not queued; read as it changes)."""

    def __init__(self, cache: BlockCache, bad_units: Container[Vec3]) -> None:
        self.cache = cache
        self._bad_units = bad_units
        self.lock = threading.Lock()
        self.changed = _Changed(self.lock)
        self._queue: list[tuple[tuple[int, ...], int, Task]] = []
        self._seq = itertools.count()
        self.generation = 0
        self.epoch = 0  #: bumped by every ``replace`` (a plan of an older epoch is dropped)
        self._in_flight: set[BlockKey] = set()
        self._queued: set[BlockKey] = set()
        self._planning = 0  # workers ranking a prefetch right now
        self._hold_until = 0.0  # prefetch held until this time.monotonic() (0: not held)
        self._stopping = False
        self.dropped = 0  #: queued tasks dropped by ``replace``

    # -- the owner's side ---------------------------------------------------------------------
    def next_generation(self) -> int:
        with self.lock:
            self.generation += 1
            return self.generation

    def replace(self, ranked: list[Ranked], plan: Any = None, hold_s: float = 0.0) -> bool:
        """Drop every queued task and queue ``ranked`` (and a planning task for ``plan``).
        With ``hold_s``, when blocks got queued, prefetch waits that long at most (or until
        ``release_hold``).  Returns whether it holds."""
        with self.lock:
            self.epoch += 1
            self.dropped += len(self._queue)
            self._queue = []
            self._queued = set()
            self.enqueue_locked(ranked)
            held = bool(hold_s and self._queue)
            if held:
                self._hold_until = time.monotonic() + hold_s
            if plan is not None:
                task = Task([], _NO_BLOCKS, True, self.epoch, plan)
                heapq.heappush(self._queue, (PLAN_PRIORITY, next(self._seq), task))
            self.changed.notify_all()
            return held

    def add(self, ranked: list[Ranked]) -> None:
        """Queue ``ranked`` besides what is queued (blocks queued or in flight are skipped)."""
        with self.lock:
            if self._stopping:
                return
            self.enqueue_locked(ranked)
            self.changed.notify_all()

    def any_missing_locked(self, keys: list[BlockKey]) -> bool:
        """Some of ``keys`` are neither queued nor in flight (set operations only)."""
        return not self._in_flight.issuperset(set(keys).difference(self._queued))

    def missing_locked(self, keys: list[BlockKey]) -> list[int]:
        """Positions in ``keys`` of blocks neither queued nor in flight."""
        queued, in_flight = self._queued, self._in_flight
        return [k for k, key in enumerate(keys) if key not in in_flight and key not in queued]

    @property
    def holding(self) -> bool:
        """Prefetch is held (read without the lock: a hint for the owner thread)."""
        return bool(self._hold_until)

    def release_hold(self) -> None:
        """Let held work start now.  Any thread."""
        with self.lock:
            if self._hold_until:
                self._hold_until = 0.0
                self.changed.notify_all()

    def stop(self) -> None:
        """Drop the queue and wake every worker: ``take`` returns None from now on."""
        with self.lock:
            self._stopping = True
            self._queue = []
            self._queued = set()
            self.changed.notify_all()

    @property
    def stopping(self) -> bool:
        return self._stopping

    def enqueue_locked(self, ranked: list[Ranked]) -> None:
        """Cut each ranked list into batches per storage unit and queue what is neither cached
        nor in flight (nor queued already at a better rank).  Under ``lock``."""
        seen = self._queued
        cache = self.cache
        in_flight = self._in_flight
        bad = self._bad_units
        gen = self.generation
        for prio, _, keys, blocks, is_prefetch in sorted(ranked, key=lambda r: r[0]):
            size = PREFETCH_BATCH if is_prefetch else VISIBLE_BATCH
            # What to read: neither cached, queued, in flight, nor of a bad unit (absent or
            # unreadable: nothing to read), found in one pass; then grouped by unit.
            present = cache.present(keys)
            wanted = [k for k, key in enumerate(keys)
                      if not present[k] and key not in seen and key not in in_flight
                      and key[2] not in bad]
            picked = list(map(keys.__getitem__, wanted))
            unique = set(picked)
            if len(unique) < len(picked):  # a key twice in one list: read at its first place
                first: dict[BlockKey, int] = {}
                for k in wanted:
                    first.setdefault(keys[k], k)
                wanted = list(first.values())
                picked = list(map(keys.__getitem__, wanted))
            per_unit = _group_by_unit(wanted, picked)
            seen.update(unique)
            # Batches of up to ``size`` blocks of one unit; units with only a few blocks
            # wanted share a batch, so that a task costs little beside its decoding.
            batch: list[int] = []
            small = max(1, size // SHARED_BATCH_DIVISOR)
            for rows in per_unit:
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
        task = Task(list(map(keys.__getitem__, rows)), blocks[rows], is_prefetch, gen)
        heapq.heappush(self._queue, (prio, next(self._seq), task))

    # -- the workers' side --------------------------------------------------------------------
    def take(self, lookahead: bool = False) -> Taken | None:
        """The next task to work on, waiting for one (None: the scheduler stopped).  Its blocks
        cached or in flight meanwhile are left out (a task left with none is skipped); the rest
        are in flight until ``done``.  A planning task comes with no blocks and must be handed
        back with ``planned``.  ``lookahead``: also the blocks of the next queued tasks not
        hinted yet, per unit (each task once)."""
        with self.changed:
            while True:
                while not self._stopping:
                    if not self._queue:
                        self.changed.wait()
                        continue
                    left = self._held_for_locked()
                    if left > 0:
                        self.changed.wait(left)
                        continue
                    break
                if self._stopping:
                    return None
                taken = self._pop_locked(lookahead)
                if taken is not None:
                    return taken

    def next_rank(self) -> tuple[tuple[int, ...] | None, float | None]:
        """Without waiting: ``(rank, None)`` of the first task ready now, ``(None, seconds)``
        until held prefetch may start, ``(None, None)`` when nothing is queued (or stopped)."""
        with self.lock:
            if self._stopping or not self._queue:
                return None, None
            left = self._held_for_locked()
            if left > 0:
                return None, left
            return self._queue[0][0], None

    def take_ready(self, lookahead: bool = False) -> Taken | None:
        """As ``take``, without waiting: None when no task is ready now."""
        with self.changed:
            while not self._stopping and self._queue and self._held_for_locked() <= 0:
                taken = self._pop_locked(lookahead)
                if taken is not None:
                    return taken
            return None

    def _held_for_locked(self) -> float:
        """Seconds the first queued task waits yet (prefetch held), else 0."""
        head = self._queue[0][2]
        if head.prefetch and self._hold_until:
            left = self._hold_until - time.monotonic()
            if left > 0:
                return left
            self._hold_until = 0.0
        return 0.0

    def _pop_locked(self, lookahead: bool) -> Taken | None:
        """Pop the first task; None when it was superseded or left with no block."""
        task = heapq.heappop(self._queue)[2]
        if task.plan is not None:
            if task.generation != self.epoch:
                self.changed.notify_all()
                return None  # superseded before it was planned
            self._planning += 1
            return Taken(task, [], task.blocks, [])
        keys = task.keys
        self._queued.difference_update(keys)
        in_flight = self._in_flight
        present = self.cache.present(keys)
        if True in present or not in_flight.isdisjoint(keys):
            rows = [k for k, (key, cached) in enumerate(zip(keys, present, strict=True))
                    if not cached and key not in in_flight]
            if not rows:
                self.changed.notify_all()
                return None
            keys = [keys[k] for k in rows]
            blocks = task.blocks[rows]
        else:
            blocks = task.blocks
        in_flight.update(keys)
        ahead = self._upcoming_locked() if lookahead else []
        return Taken(task, keys, blocks, ahead)

    def done(self, keys: list[BlockKey]) -> None:
        """The blocks ``keys`` (taken with ``take``) are read, or failed: no longer in
        flight."""
        with self.changed:
            self._in_flight.difference_update(keys)
            self.changed.notify_all()

    def planned(self, task: Task, ranked: list[Ranked]) -> None:
        """Hand back a planning task with the prefetch it ranked (queued unless the wish list
        changed meanwhile)."""
        with self.changed:
            self._planning -= 1
            if task.generation == self.epoch and not self._stopping:
                self.enqueue_locked(ranked)
            self.changed.notify_all()

    def _upcoming_locked(self) -> list[tuple[Vec3, list[int]]]:
        """Units and block indices of the next queued tasks not hinted yet (each once)."""
        out: list[tuple[Vec3, list[int]]] = []
        for _, _, task in heapq.nsmallest(LOOKAHEAD_TASKS, self._queue):
            if task.hinted or task.plan is not None:
                continue
            task.hinted = True
            by_unit: dict[Vec3, list[int]] = {}
            for key in task.keys:
                by_unit.setdefault(key[2], []).append(key[3])
            out.extend(by_unit.items())
        return out

    # -- any thread ---------------------------------------------------------------------------
    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until the queue is empty and nothing is in flight or being planned."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.changed:
            while self._queue or self._in_flight or self._planning:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.changed.wait(left)
            return True

    def counts(self) -> tuple[int, int, int]:
        """``(queued blocks, queued tasks, blocks in flight)``."""
        with self.lock:
            return (sum(len(t.keys) for _, _, t in self._queue), len(self._queue),
                    len(self._in_flight))


def _group_by_unit(rows: list[int], keys: list[BlockKey]) -> list[list[int]]:
    """``rows`` (aligned with their ``keys``) grouped by storage unit, the units in the order
    of their first row, each unit's rows in their order: one stable sort by the unit's rank,
    every step a C-level call (a screen has about a thousand blocks in a few dozen units)."""
    units = list(map(_unit_of, keys))
    order = dict.fromkeys(units)
    if len(order) <= 1:
        return [rows] if rows else []
    rank = dict(zip(order, itertools.count()))
    ranks = list(map(rank.__getitem__, units))
    grouped = list(map(rows.__getitem__, sorted(range(len(rows)), key=ranks.__getitem__)))
    counts = Counter(units)
    ends = list(itertools.accumulate(map(counts.__getitem__, order)))
    return [grouped[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


_unit_of = operator.itemgetter(2)


__all__ = ["Scheduler", "Task", "Taken", "Ranked", "VISIBLE_BATCH", "PREFETCH_BATCH"]
