"""One process-wide pool of threads for the formats' big reads: chunks decoded in parallel
(zlib, zstd, blosc, lz4 release the GIL).  Shared, so that reading WKW, N5 and zarr arrays at
once does not start a pool per format.

A reader that uses it never waits for a pool thread to *start*: it works through its own
share on the calling thread and takes over what the pool has not begun (``share``), so a read
finishes even when every pool thread is busy with another read, or the machine gives the pool
no core."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from viewer.format import lifecycle

#: Most threads the pool runs (one per core up to this).
MAX_THREADS = 8

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def cores() -> int:
    """Cores this process may run on (its CPU affinity where the system says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def decode_pool() -> ThreadPoolExecutor:
    """The shared pool (2 to ``MAX_THREADS`` threads, one per core), made on first use."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(2, min(MAX_THREADS, cores())),
                                       thread_name_prefix="format-read")
        return _pool


def share(items: int, run: Callable[[int], None], threads: int) -> None:
    """Call ``run(k)`` for every ``k`` in ``range(items)``, on the calling thread and up to
    ``threads - 1`` pool threads, each taking the next ``k`` until none is left.  Returns
    when every call has returned; the first exception raised (any thread) is raised here,
    after the others stopped taking work (a call already running is waited for: it may
    write into memory the caller owns)."""
    helpers = min(threads, items) - 1
    if helpers < 1:
        for k in range(items):
            run(k)
        return
    counter = itertools.count()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            k = next(counter)
            if k >= items:
                return
            try:
                run(k)
            except BaseException:
                stop.set()
                raise

    pool = decode_pool()
    futures: list[Future[None]] = [pool.submit(work) for _ in range(helpers)]
    error: BaseException | None = None
    try:
        work()
    except BaseException as exc:
        error = exc
    for future in futures:
        if future.cancel():
            continue
        raised = future.exception()
        if raised is not None and error is None:
            error = raised
    if error is not None:
        raise error


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: make a new pool when needed."""
    global _pool, _lock
    _pool = None
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _stop_pool() -> None:
    """``lifecycle.shutdown``: end the pool's threads (a new pool is made when needed)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


lifecycle.at_shutdown("format.pool", lifecycle.POOLS, _stop_pool)


__all__ = ["cores", "decode_pool", "share"]
