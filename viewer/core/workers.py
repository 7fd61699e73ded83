"""Worker threads shared by loaders: one group for a window's every layer and mag.

A ``Loader`` used to start two threads of its own; a window browsing three layers of three
mags ran eighteen.  A ``LoaderWorkers`` group runs a few threads (of an ``Executor``, counted
against its limit) that serve every loader attached to it: each thread takes the task ranked
first over all the loaders' queues (what is on screen before prefetch, whichever layer it
belongs to), runs it, and takes the next; with nothing to take it sleeps until a queue
changes or a held prefetch may start.

A loader made without a group makes one of its own (its ``workers`` threads) and closes it
with itself, so a library user's loader works alone as before.

Threads: ``attach``, ``detach`` and ``close`` from the owner's thread; ``wake`` from any.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from viewer.format.executor import Executor

log = logging.getLogger(__name__)

#: Threads of a window's group (shared by all its loaders).
DEFAULT_THREADS = 4


class WorkSource(Protocol):
    """What a group asks of a loader."""

    def next_rank(self) -> tuple[tuple[Any, ...] | None, float | None]:
        """``(rank, None)``: the rank of its first task ready now (lower first); ``(None,
        seconds)``: its first task may start in that many seconds; ``(None, None)``:
        nothing queued."""
        ...

    def run_next(self) -> bool:
        """Take its first ready task and run it on the calling thread; False when there was
        none (another thread took it)."""
        ...


class LoaderWorkers:
    """Threads shared by loaders (see the module docstring)."""

    def __init__(self, executor: Executor, threads: int = DEFAULT_THREADS,
                 name: str = "loader") -> None:
        self.executor = executor
        self._cond = threading.Condition()
        self._seq = 0
        self._sources: list[WorkSource] = []
        self._running: dict[int, int] = {}
        self._stopped = False
        self.size = executor.grant(name, threads)
        self._threads = [executor.thread(f"{name}-{k}", self._loop) for k in range(self.size)]

    @property
    def threads(self) -> list[threading.Thread]:
        return list(self._threads)

    def attach(self, source: WorkSource) -> None:
        with self._cond:
            self._sources.append(source)
            self._seq += 1
            self._cond.notify_all()

    def detach(self, source: WorkSource) -> None:
        """Stop serving ``source``; returns once no thread runs a task of it."""
        with self._cond:
            if source in self._sources:
                self._sources.remove(source)
            while self._running.get(id(source)):
                self._cond.wait()

    def wake(self) -> None:
        """A queue changed: look again.  Any thread (a scheduler calls it under its lock)."""
        with self._cond:
            self._seq += 1
            self._cond.notify_all()

    def close(self) -> None:
        """End the threads (they finish the task they run)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        me = threading.current_thread()
        for t in self._threads:
            if t is not me:
                t.join()

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                seq = self._seq
                sources = list(self._sources)
            best: WorkSource | None = None
            best_rank: tuple[Any, ...] | None = None
            wait: float | None = None
            for source in sources:
                rank, after = source.next_rank()
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = source, rank
                elif after is not None:
                    wait = after if wait is None else min(wait, after)
            if best is not None:
                with self._cond:
                    if best not in self._sources:
                        continue
                    self._running[id(best)] = self._running.get(id(best), 0) + 1
                try:
                    best.run_next()
                except Exception:  # a worker must survive anything
                    log.exception("loader task failed")
                finally:
                    with self._cond:
                        left = self._running[id(best)] - 1
                        if left:
                            self._running[id(best)] = left
                        else:
                            del self._running[id(best)]
                        self._cond.notify_all()
                continue
            with self._cond:
                if self._stopped:
                    return
                if self._seq == seq:
                    self._cond.wait(wait)


def shared_workers(executor: Executor, threads: int = DEFAULT_THREADS) -> LoaderWorkers:
    """The loader group of ``executor`` (made on first use, closed by ``Executor.close``):
    what a window's loaders of one dataset share."""
    return executor.shared("loader-workers", lambda: LoaderWorkers(executor, threads))


__all__ = ["LoaderWorkers", "WorkSource", "shared_workers", "DEFAULT_THREADS"]
