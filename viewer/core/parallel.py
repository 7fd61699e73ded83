"""Whole-unit passes on every core: ``ordered_map`` runs a function over a listing with one
thread per core and hands the results back in the listing's order; ``ordered_map_forked``
does the same in forked worker processes, for work that is mostly Python (the structure check
of many small files: what a thread would do holding the GIL).

``info`` and compare check or read every storage unit of a volume; a unit's work is mostly
decoding, which releases the GIL (liblz4 through ctypes, zlib, numpy copies), so one thread
per core decodes in parallel.  At most ``ahead`` units are in work or waiting to be taken at a
time (bounded memory on a listing of 100,000 units).  Any thread may call it; the function
must be thread-safe (a ``Volume``'s methods are).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def cores() -> int:
    return max(1, os.cpu_count() or 1)


def ordered_map(fn: Callable[[T], R], items: Iterable[T], threads: int | None = None,
                ahead: int | None = None) -> Iterator[R]:
    """``map(fn, items)`` on ``threads`` threads (default: one per core), in order.  An
    exception of ``fn`` is raised when its item's turn comes; closing the iterator early (or
    an interrupt) cancels what was not started and waits for what was."""
    n = cores() if threads is None else max(1, threads)
    if n == 1:
        yield from map(fn, items)
        return
    window = max(n, 4 * n if ahead is None else ahead)
    pool = ThreadPoolExecutor(n, thread_name_prefix="unit-pass")
    pending: deque[Future[R]] = deque()
    try:
        it = iter(items)
        for item in it:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True)


def can_fork() -> bool:
    """Whether ``ordered_map_forked`` can run here: Linux (macOS has ``fork`` too, but its
    system libraries are not safe to use in a forked child), not a frozen bundle."""
    import sys

    return sys.platform.startswith("linux") and not getattr(sys, "frozen", False) and \
        "fork" in multiprocessing.get_all_start_methods()


#: The function the forked workers call (set in the parent before they are forked).
_forked: Callable[[Any], Any] | None = None
#: Bytes the pipe that carries the workers' results holds (Linux's default most a process
#: may ask for): a result of a few hundred kB (a batch's report text) is written at once.
RESULT_PIPE_BYTES = 1 << 20


def _call_forked(item: Any) -> Any:
    assert _forked is not None
    return _forked(item)


def _quiet_child() -> None:
    """A worker leaves Ctrl+C and SIGTERM to its parent (which ends it): no traceback of its
    own, and the parent's wake-up pipe is not written twice."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(ValueError):  # not the child's main thread: nothing was set
        signal.set_wakeup_fd(-1)


class ForkedWorkers:
    """``processes`` forked worker processes that run ``fn`` (the parent's, as it was when
    they were forked: nothing of it is pickled; items and results are) over one ordered map
    after another (``map``).  Create it from the main thread, with no other thread of this
    program in the middle of work (a fork copies only the calling thread: a lock another
    thread holds stays held); ``close`` when done (``terminate`` ends the workers at once).
    One at a time: not nestable."""

    def __init__(self, fn: Callable[[Any], Any], processes: int) -> None:
        global _forked
        self.processes = max(1, processes)
        _forked = fn
        try:
            self._pool = multiprocessing.get_context("fork").Pool(
                self.processes, initializer=_quiet_child)
        except BaseException:
            _forked = None
            raise
        self._ended = False
        _widen_result_pipe(self._pool)

    def map(self, items: Iterable[Any], ahead: int | None = None) -> Iterator[Any]:
        """``map(fn, items)`` in the workers, in order, at most ``ahead`` items in work or
        waiting.  An error, an interrupt or closing the iterator early ends the workers."""
        n = self.processes
        window = max(n, 4 * n if ahead is None else ahead)
        pending: deque[Any] = deque()
        finished = False
        try:
            for item in items:
                pending.append(self._pool.apply_async(_call_forked, (item,)))
                if len(pending) >= window:
                    yield pending.popleft().get()
            while pending:
                yield pending.popleft().get()
            finished = True
        finally:
            if not finished:
                self.terminate()

    def close(self) -> None:
        """Let the workers finish and wait for them."""
        self._end(at_once=False)

    def terminate(self) -> None:
        """End the workers now."""
        self._end(at_once=True)

    def _end(self, at_once: bool) -> None:
        global _forked
        if self._ended:
            return
        self._ended = True
        _forked = None
        if at_once:
            self._pool.terminate()
        else:
            self._pool.close()
            self._pool.join()


def _widen_result_pipe(pool: multiprocessing.pool.Pool) -> None:
    """Let the pool's result pipe hold ``RESULT_PIPE_BYTES``.  At the default 64 kB a worker
    sending a larger result waits for the parent to read each 64 kB, holding the lock every
    worker writes its results under: the workers take turns instead of working.  The pipe is
    the pool's own (``multiprocessing`` names no way to size it); where it cannot be resized
    it stays as it is."""
    with contextlib.suppress(ImportError, AttributeError, OSError):
        import fcntl

        writer = pool._outqueue._writer  # type: ignore[attr-defined]
        fcntl.fcntl(writer.fileno(), fcntl.F_SETPIPE_SZ, RESULT_PIPE_BYTES)


def ordered_map_forked(fn: Callable[[T], R], items: Iterable[T], processes: int,
                       ahead: int | None = None) -> Iterator[R]:
    """``map(fn, items)`` in ``processes`` forked worker processes, in order (one map of
    ``ForkedWorkers``, which see).  Closing the iterator early, an interrupt or an error ends
    the workers at once."""
    workers = ForkedWorkers(fn, processes)
    try:
        yield from workers.map(items, ahead)
    finally:
        workers.close()


__all__ = ["ordered_map", "ordered_map_forked", "ForkedWorkers", "can_fork", "cores"]
