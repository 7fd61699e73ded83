"""Whole-unit passes on every core: ``ordered_map`` runs a function over a listing with one
thread per core and hands the results back in the listing's order.

``info`` and compare check or read every storage unit of a volume; a unit's work is mostly
decoding, which releases the GIL (liblz4 through ctypes, zlib, numpy copies), so one thread
per core decodes in parallel.  At most ``ahead`` units are in work or waiting to be taken at a
time (bounded memory on a listing of 100,000 units).  Any thread may call it; the function
must be thread-safe (a ``Volume``'s methods are).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

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


__all__ = ["ordered_map", "cores"]
