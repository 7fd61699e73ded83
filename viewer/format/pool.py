"""Sharing a big read among threads: chunks decoded in parallel (zlib, zstd, blosc, lz4
release the GIL) by the calling thread and the helpers of the executor in effect
(``viewer.format.executor``: the reading volume's), so that reading WKW, N5 and zarr arrays
at once uses one set of threads.

A reader that uses it never waits for a helper to *start*: it works through its own share on
the calling thread and takes over what the helpers have not begun (``share``), so a read
finishes even when every helper is busy with another read, or the machine gives them no
core.  With no executor in effect the caller does it all."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from viewer.format import executor as _executor

#: Most threads a read is shared among (``viewer.format.executor.MAX_HELPERS``).
MAX_THREADS = _executor.MAX_HELPERS


def cores() -> int:
    """Cores this process may run on (its CPU affinity where the system says)."""
    return _executor.cores()


def decode_pool() -> ThreadPoolExecutor | None:
    """The helpers of the executor in effect (None: no executor in effect, or it closed)."""
    service = _executor.current()
    if service is None or service.closed:
        return None
    try:
        return service.helpers()[0]
    except RuntimeError:
        return None


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
    if pool is None:
        for k in range(items):
            run(k)
        return
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


__all__ = ["cores", "decode_pool", "share"]
