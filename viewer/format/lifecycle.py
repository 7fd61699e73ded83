"""An orderly end for the format layer's background threads.

The threads of reading run on executors their owners close (``viewer.format.executor``); what
is left process-wide starts lazily, where it is first needed: the remote stores' request loop
(an asyncio loop on a thread of its own, with the HTTP client's threads under it) and the
range cache's writer.  Left running, they meet the interpreter's finalization: a client
thread that calls back into Python then may abort the process (exit status 134) after its
work was done.

Each owner registers how to stop its threads (``at_shutdown``); ``shutdown()`` stops them all,
in the order given: first what makes new work (requests on the wire are cancelled and the
request loop stopped), then the executors still open, then what finishes work (the cache
writer puts what it holds on disk).  The command line calls it before it returns its exit
status; a library user may too.  Everything stopped starts again when it is next needed, so
``shutdown`` is safe to call more than once and in the middle of a program (tests).  Any
thread but a pool's own.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable

from viewer.format import executor

log = logging.getLogger(__name__)

#: Order of the steps: requests first, then writes of what they brought, then the pools.
REQUESTS, WRITES, POOLS = 10, 20, 30

_lock = threading.Lock()
_steps: dict[str, tuple[int, Callable[[], None]]] = {}


def at_shutdown(name: str, order: int, stop: Callable[[], None]) -> None:
    """Have ``shutdown`` call ``stop`` (at ``order``: ``REQUESTS``, ``WRITES``, ``POOLS``);
    registering a ``name`` again replaces its step."""
    with _lock:
        _steps[name] = (order, stop)


def shutdown() -> None:
    """Stop every registered owner's threads, in order (see the module docstring).  A step
    that fails is logged and the others still run."""
    with _lock:
        steps = sorted(_steps.items(), key=lambda item: (item[1][0], item[0]))
    for name, (_, stop) in steps:
        try:
            stop()
        except Exception:  # noqa: BLE001 - the other steps must still run
            log.exception("stopping %s failed", name)


# The executors still open (a library user's that were never closed, the command's own):
# after the requests on the wire were cancelled, so none of their threads waits on one.
at_shutdown("executors", REQUESTS + 5, executor.shutdown)

# A program that did not call ``shutdown`` (a library user) still ends in order: handlers run
# before the interpreter finalizes, while the threads can still be stopped.
atexit.register(shutdown)

__all__ = ["at_shutdown", "shutdown", "REQUESTS", "WRITES", "POOLS"]
