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
import multiprocessing.process
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection, wait
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


#: Bytes each worker's result pipe holds (Linux's default most a process may ask for): a
#: result of a few hundred kB (a batch's report text) is written at once.
RESULT_PIPE_BYTES = 1 << 20
#: Items a worker is given and has not answered, at most: one in work and one waiting, so
#: that it goes on at once while the parent takes its result.
WORKER_DEPTH = 2


def _quiet_child() -> None:
    """A worker leaves Ctrl+C and SIGTERM to its parent (which ends it): no traceback of its
    own, and the parent's wake-up pipe is not written twice."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(ValueError):  # not the child's main thread: nothing was set
        signal.set_wakeup_fd(-1)


def _serve(fn: Callable[[Any], Any], tasks: Connection, results: Connection,
           inherited: list[Connection]) -> None:
    """A worker's life: answer ``(seq, item)`` with ``(seq, True, fn(item))`` or ``(seq,
    False, error)`` until told to stop (None) or the parent is gone."""
    _quiet_child()
    for conn in inherited:  # the other workers' pipe ends: theirs to close, not ours
        conn.close()
    while True:
        try:
            task = tasks.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        seq, item = task
        try:
            answer: tuple[int, bool, Any] = (seq, True, fn(item))
        except BaseException as exc:  # noqa: BLE001 - raised in the parent at its turn
            answer = (seq, False, exc)
        try:
            results.send(answer)
        except (EOFError, OSError):
            return
        except Exception as exc:  # noqa: BLE001 - a result or error that does not pickle
            results.send((seq, False, RuntimeError(f"a worker's result could not be sent "
                                                   f"back: {exc!r}")))


class ForkedWorkers:
    """``processes`` forked worker processes that run ``fn`` (the parent's, as it was when
    they were forked: nothing of it is pickled; items and results are) over one ordered map
    after another (``map``).  Create it from the main thread, with no other thread of this
    program in the middle of work (a fork copies only the calling thread: a lock another
    thread holds stays held); ``close`` when done (``terminate`` ends the workers at once).
    One at a time: not nestable.

    Each worker has a pipe of its own each way, and the parent's calling thread hands out
    the items and takes the results itself (at most ``WORKER_DEPTH`` items a worker at a
    time, so that a free worker gets the next one): no helper thread of the parent competes
    with it for the interpreter lock or wakes for each piece of a result in the pipe, as
    ``multiprocessing.Pool``'s three do.  An item must pickle to less than a pipe holds (64
    kB: positions and small tasks; results may be larger, up to ``RESULT_PIPE_BYTES`` are
    written at once)."""

    def __init__(self, fn: Callable[[Any], Any], processes: int) -> None:
        self.processes = max(1, processes)
        ctx = multiprocessing.get_context("fork")
        self._workers: list[multiprocessing.process.BaseProcess] = []
        self._tasks: list[Connection] = []
        self._results: list[Connection] = []
        self._ended = False
        try:
            for _ in range(self.processes):
                task_reader, task_writer = ctx.Pipe(duplex=False)
                result_reader, result_writer = ctx.Pipe(duplex=False)
                _widen_pipe(result_writer)
                inherited = [*self._tasks, *self._results, task_writer, result_reader]
                worker = ctx.Process(target=_serve, name="forked-worker", daemon=True,
                                     args=(fn, task_reader, result_writer, inherited))
                worker.start()
                task_reader.close()
                result_writer.close()
                self._workers.append(worker)
                self._tasks.append(task_writer)
                self._results.append(result_reader)
        except BaseException:
            self.terminate()
            raise

    def map(self, items: Iterable[Any], ahead: int | None = None) -> Iterator[Any]:
        """``map(fn, items)`` in the workers, in order, at most ``ahead`` items in work or
        waiting.  An error, an interrupt or closing the iterator early ends the workers."""
        n = self.processes
        window = max(n, 4 * n if ahead is None else ahead)
        given = [0] * n  # items each worker holds, not answered yet
        done: dict[int, tuple[bool, Any]] = {}
        it = iter(items)
        sent = taken = 0
        more = True
        finished = False
        try:
            while True:
                if sent > taken:  # results already there free their workers for more
                    self._receive(given, done, timeout=0)
                while more and sent - taken < window:
                    worker = min(range(n), key=given.__getitem__)
                    if given[worker] >= WORKER_DEPTH:
                        break
                    try:
                        item = next(it)
                    except StopIteration:
                        more = False
                        break
                    self._tasks[worker].send((sent, item))
                    given[worker] += 1
                    sent += 1
                if taken in done:
                    ok, value = done.pop(taken)
                    taken += 1
                    if not ok:
                        raise value
                    yield value
                elif not more and taken == sent:
                    break
                else:
                    self._receive(given, done)
            finished = True
        finally:
            if not finished:
                self.terminate()

    def _receive(self, given: list[int], done: dict[int, tuple[bool, Any]],
                 timeout: float | None = None) -> None:
        """Take the results there are, waiting for at least one (at most ``timeout``
        seconds); a worker that ended while it held items is an error."""
        sentinels = {w.sentinel: k for k, w in enumerate(self._workers)}
        ready = wait([*self._results, *sentinels], timeout)
        for k, conn in enumerate(self._results):
            if conn in ready:
                try:
                    seq, ok, value = conn.recv()
                except EOFError:
                    continue  # the worker ended: its sentinel says so
                given[k] -= 1
                done[seq] = (ok, value)
        for obj in ready:
            ended = sentinels.get(obj) if isinstance(obj, int) else None
            if ended is None:
                continue
            # A worker never ends in the middle of a map: what it sent before it ended is
            # taken, and then its end is the map's error (its sentinel would stay ready, and
            # a wait on it would never block again).
            conn = self._results[ended]
            with contextlib.suppress(EOFError, OSError):
                while conn.poll():
                    seq, ok, value = conn.recv()
                    given[ended] -= 1
                    done[seq] = (ok, value)
            self._workers[ended].join()
            raise RuntimeError(f"a worker process ended (exit status "
                               f"{self._workers[ended].exitcode}) in the middle of its work")

    def close(self) -> None:
        """Let the workers finish and wait for them."""
        self._end(at_once=False)

    def terminate(self) -> None:
        """End the workers now."""
        self._end(at_once=True)

    def _end(self, at_once: bool) -> None:
        if self._ended:
            return
        self._ended = True
        for conn in self._tasks:
            if not at_once:
                with contextlib.suppress(OSError):
                    conn.send(None)
            conn.close()
        for worker in self._workers:
            if at_once:
                worker.terminate()
            worker.join()
        for conn in self._results:
            conn.close()


def _widen_pipe(conn: Connection) -> None:
    """Let the pipe ``conn`` writes into hold ``RESULT_PIPE_BYTES``.  At the default 64 kB a
    worker sending a larger result waits for the parent to read each 64 kB.  Where it cannot
    be resized it stays as it is."""
    with contextlib.suppress(ImportError, AttributeError, OSError):
        import fcntl

        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, RESULT_PIPE_BYTES)


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
