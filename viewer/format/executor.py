"""One executor service: every background thread of the format and core layers, for one owner.

Whoever opens data (the window, a command of the command line, a library user) makes one
``Executor`` and hands it to ``open_dataset`` / ``open_volume`` (as it hands a ``ReadConfig``);
the volumes and stores opened keep it and run their background work on it: the helpers that
decode a large read in parallel (``helpers``), the threads that wait for remote tables on behalf
of read-ahead (``pool("waits")``), the remote stores' request loop and range cache
(``shared``), the loader's worker threads (``thread``).  ``close()`` stops all of it, in order:
first what makes new work (remote requests), then what finishes work (the cache writer puts what
it holds on disk), then the threads.

**One limit.**  An executor runs at most ``max_threads`` threads (``DEFAULT_MAX_THREADS`` unless
told): each pool or thread is granted what it asks for while the sum stays under the limit, and
never less than one (so a dozen owners' parts cannot starve each other of their first thread).

**No global.**  A library user who passes none still works: ``open_dataset`` / ``open_volume``
then make one owned by the dataset (or the volume) and closed with it; a volume made without
any opener (a format's class used directly) makes its own on first need.  Nothing here keeps an
executor alive: ``shutdown`` (the command line's last step, and ``atexit``) closes the ones
still open through a weak set.  A forked child (a job's process) forgets its parent's threads
(they do not exist there) and makes new ones when needed; a Dask worker unpickles a volume
without its executor and so gets its own.

**Which executor is in effect** (``current``): the one an opener was given, for the length of
the opening (``using``), so that what it constructs keeps it; inside a read of a volume, the
volume's (``Volume`` sets it around its reads); on the executor's own threads, that executor.
A free function deep in a format (``viewer.format.pool.share``) asks ``current()``; with none in
effect it works on the calling thread alone.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

log = logging.getLogger(__name__)

#: The most threads one executor runs, everything counted (see the module docstring).
DEFAULT_MAX_THREADS = 24
#: The most threads that help a large read decode (one per core up to this, the caller being
#: one of them).
MAX_HELPERS = 8

#: Order of ``close``: requests first, then writes of what they brought, then the threads.
REQUESTS, WRITES, THREADS = 10, 20, 30


class Closable(Protocol):
    def close(self) -> Any: ...


T = TypeVar("T", bound=Closable)

_current: contextvars.ContextVar[Executor | None] = contextvars.ContextVar(
    "wkw_viewer_executor", default=None)


def cores() -> int:
    """Cores this process may run on (its CPU affinity where the system says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Executor:
    """The background threads of one owner (see the module docstring).  Every method may be
    called from any thread; ``close`` not from one of its own threads."""

    def __init__(self, max_threads: int | None = None, name: str = "wkw") -> None:
        self.max_threads = max(1, int(max_threads or DEFAULT_MAX_THREADS))
        self.name = name
        self._lock = threading.Lock()
        self._granted: dict[str, int] = {}
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._threads: list[threading.Thread] = []
        self._shared: dict[str, tuple[int, Closable]] = {}
        self._closed = False
        _live.add(self)

    # -- what the parts ask for -------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def _grant_locked(self, name: str, want: int) -> int:
        used = sum(n for key, n in self._granted.items() if key != name)
        granted = max(1, min(int(want), self.max_threads - used))
        self._granted[name] = granted
        return granted

    def pool(self, name: str, workers: int) -> ThreadPoolExecutor:
        """The pool called ``name`` (made on first use with up to ``workers`` threads, as the
        limit allows).  Its threads have this executor in effect (``current``)."""
        with self._lock:
            pool = self._pools.get(name)
            if pool is None:
                if self._closed:
                    raise RuntimeError(f"executor {self.name!r} is closed")
                pool = ThreadPoolExecutor(self._grant_locked(name, workers),
                                          thread_name_prefix=f"{self.name}-{name}",
                                          initializer=self._enter)
                self._pools[name] = pool
            return pool

    def helpers(self) -> tuple[ThreadPoolExecutor, int]:
        """The pool of threads that help a large read decode, and how many it has (one per
        core, two at least, up to ``MAX_HELPERS``)."""
        pool = self.pool("read", max(2, min(MAX_HELPERS, cores())))
        with self._lock:
            return pool, self._granted.get("read", 1)

    def thread(self, name: str, target: Callable[[], None]) -> threading.Thread:
        """Start a thread of its own for ``target`` (a worker loop that ends when its owner
        tells it to), counted against the limit, joined by ``close``."""
        def run() -> None:
            self._enter()
            target()

        with self._lock:
            if self._closed:
                raise RuntimeError(f"executor {self.name!r} is closed")
            self._threads = [t for t in self._threads if t.is_alive()]
            thread = threading.Thread(target=run, name=f"{self.name}-{name}", daemon=True)
            self._threads.append(thread)
        thread.start()
        return thread

    def grant(self, name: str, want: int) -> int:
        """How many threads the part ``name`` may run (up to ``want``, as the limit allows,
        at least one): a part that starts its own threads with ``thread`` asks first."""
        with self._lock:
            return self._grant_locked(name, want)

    def shared(self, key: str, make: Callable[[], T], order: int = THREADS) -> T:
        """The object ``key`` of this executor (made by ``make`` on first use), closed by
        ``close`` at ``order`` (``REQUESTS``, ``WRITES``, ``THREADS``): the remote stores'
        request loop and range cache, for instance."""
        with self._lock:
            found = self._shared.get(key)
            if found is not None:
                return found[1]  # type: ignore[return-value]
            if self._closed:
                raise RuntimeError(f"executor {self.name!r} is closed")
        made = make()
        with self._lock:
            found = self._shared.get(key)
            if found is None:
                self._shared[key] = (order, made)
                return made
        made.close()
        return found[1]  # type: ignore[return-value]

    def find(self, key: str) -> Any:
        """The object ``key`` if it was made (``shared``), else None."""
        with self._lock:
            found = self._shared.get(key)
        return None if found is None else found[1]

    def threads_running(self) -> list[threading.Thread]:
        """Its live threads (pools' and its own)."""
        with self._lock:
            pools = list(self._pools.values())
            own = list(self._threads)
        out = [t for t in own if t.is_alive()]
        for pool in pools:
            out.extend(t for t in list(pool._threads) if t.is_alive())
        return out

    # -- the end ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop everything, in order (see the module docstring); waits for its threads.  A
        closed executor makes nothing new (``RuntimeError``).  Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            shared = sorted(self._shared.items(), key=lambda item: (item[1][0], item[0]))
            self._shared = {}
        for key, (_, obj) in shared:
            try:
                obj.close()
            except Exception:  # noqa: BLE001 - the other parts must still stop
                log.exception("closing %s of executor %s failed", key, self.name)
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
            threads, self._threads = list(self._threads), []
            self._granted = {}
        me = threading.current_thread()
        for pool in pools:  # (not waited for from one of its own threads: it cannot end)
            pool.shutdown(wait=me not in list(pool._threads), cancel_futures=True)
        for t in threads:
            if t is not me:
                t.join(10.0)
        _live.discard(self)

    def _forget_after_fork(self) -> None:
        """In a forked child its threads do not exist: forget them and what it shares (the
        request loop runs on one), so new ones are made when needed."""
        self._lock = threading.Lock()
        self._pools = {}
        self._threads = []
        self._granted = {}
        self._shared = {}

    def _enter(self) -> None:
        _current.set(self)

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self.threads_running())} threads"
        return f"<Executor {self.name!r} max {self.max_threads} threads, {state}>"


_live: weakref.WeakSet[Executor] = weakref.WeakSet()


class Owned:
    """The executor of an object that reads but is no ``Volume`` (``wkw.Dataset``, as the
    reference binding's API has it): the one in effect when the object was made, else one
    of its own, made on first need and closed by ``close``."""

    def __init__(self) -> None:
        self._found = current()
        self._own: Executor | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def in_effect(self) -> Iterator[None]:
        """Its executor in effect for the block, unless one is already (a volume's read)."""
        if _current.get() is not None:
            yield
            return
        found = self._found
        if found is None or found.closed:
            with self._lock:
                if self._own is None or self._own.closed:
                    self._own = Executor()
                found = self._own
        token = _current.set(found)
        try:
            yield
        finally:
            _current.reset(token)

    def close(self) -> None:
        with self._lock:
            own, self._own = self._own, None
        if own is not None:
            own.close()


def current() -> Executor | None:
    """The executor in effect on this thread (see the module docstring), or None."""
    return _current.get()


@contextlib.contextmanager
def using(executor: Executor | None) -> Iterator[Executor | None]:
    """For the length of the block (on this thread), ``executor`` is in effect (None: the one
    already in effect stays)."""
    if executor is None:
        yield _current.get()
        return
    token = _current.set(executor)
    try:
        yield executor
    finally:
        _current.reset(token)


def live() -> list[Executor]:
    """Executors not closed yet (tests, ``shutdown``)."""
    return [e for e in list(_live) if not e.closed]


def shutdown() -> None:
    """Close every executor still open (the command line's last step; ``atexit``): a client
    thread left running into the interpreter's finalization may abort the process."""
    for executor in live():
        try:
            executor.close()
        except Exception:  # noqa: BLE001 - the others must still close
            log.exception("closing executor %s failed", executor.name)


def _after_fork_in_child() -> None:
    for executor in list(_live):
        executor._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["Executor", "Owned", "current", "using", "live", "shutdown", "cores",
           "DEFAULT_MAX_THREADS", "MAX_HELPERS", "REQUESTS", "WRITES", "THREADS"]
