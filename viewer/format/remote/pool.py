"""The request pool of the remote stores: requests on one asyncio event loop (its own thread),
at most ``limit`` on the wire, for the remote stores of one executor.

Reads someone waits for (``READ``) go before read-ahead (``PREFETCH``), in the order asked;
read-ahead of the newest place first (``new_place``: the cursor moved on, older hints are for
places it left), in the order asked within a place (the loader hints its batches in the order
it reads them: a far jump's hints, sent newest first, had the blocks the screen needed first
wait behind the rest of the screen for a free slot).  Read-ahead
nobody waits for is dropped when it waited more than ``STALE_PREFETCH_S`` in the queue, and
``abort`` stops one queued or on the wire (the client's request is cancelled: its connection
closed, nothing of it kept).  The pool knows nothing of ranges, caches or merging: a ``Job``'s
owner (the store) decides, under its own lock, whether a job starts (``_claim``) and what a
request is (``_request_async``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import threading
import time
import weakref
from concurrent.futures import Future
from typing import Protocol

from viewer.format.remote import timeline

#: Priorities of queued requests (lower first).
READ, PREFETCH = 0, 1
#: Read-ahead still queued after this many seconds is dropped (the cursor has moved on).
STALE_PREFETCH_S = 3.0


class Dropped(Exception):
    """A read-ahead request dropped (stale, its volume closed, or the cursor moved on) before
    it finished: nobody waited for it, nothing of it was kept."""


class Closed(Exception):
    """The pool was closed (its executor closed) before the request finished, or when it was
    asked for: a closed pool sends nothing more."""


class JobOwner(Protocol):
    """What the pool asks of a job's store."""

    def _claim(self, job: Job) -> str:
        """Under the owner's lock: ``"start"`` (the job is started now: its range fixed),
        ``"stale"`` (dropped now: queued too long and nobody waits for it) or ``"skip"``
        (started already, or dropped: settled elsewhere)."""
        ...

    async def _request_async(self, key: str, start: int, end: int) -> bytes: ...

    def _forget(self, job: Job) -> None: ...


class Job:
    """One request: ``[start, end)`` of ``key`` for ``store``.  ``wanted`` (someone waits for
    it, or it must not be dropped), ``dropped``, ``started`` and, until it starts, its range
    change only under the store's lock, so a job is either waited for or dropped, never both,
    and a job grown by a later ask (``RemoteStore._schedule``) is sent with its whole range.
    Its future is settled on the pool's event loop only."""

    __slots__ = ("store", "key", "start", "end", "priority", "future", "started", "wanted",
                 "dropped", "queued_at", "task")

    def __init__(self, store: JobOwner, key: str, start: int, end: int, priority: int) -> None:
        self.store = store
        self.key = key
        self.start = start
        self.end = end
        self.priority = priority
        self.future: Future[bytes] = Future()
        self.started = False
        #: Someone waits for it (a read), or it is kept on purpose: never dropped.
        self.wanted = False
        self.dropped = False
        self.queued_at = time.monotonic()
        self.task: asyncio.Task[bytes] | None = None


class Pool:
    """Requests on one asyncio event loop (see the module docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._heap: list[tuple[int, int, int, Job]] = []
        self._place = 0
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._running = 0
        #: Jobs sent and not settled yet (on the loop; read by ``close`` once it has ended).
        self._on_wire: set[Job] = set()
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, args=(self._loop,),
                                        name="wkw-remote-io", daemon=True)
        self._thread.start()
        # A pool whose owner was dropped unclosed (a store a library user never closed) ends
        # its loop when it is collected: its thread refers to the loop, never to the pool.
        # Not at the interpreter's exit, where its owner may still close it (and the thread
        # is a daemon).
        weakref.finalize(self, _stop_soon, self._loop).atexit = False
        _open.add(self)

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()
        loop.close()

    def close(self, timeout: float = 5.0) -> None:
        """Stop for good: requests on the wire are cancelled, queued ones dropped (a waiter
        sees ``Closed``), the loop and its thread end (waited for up to ``timeout`` seconds).
        A later ``submit`` is settled at once with ``Closed``: a pool that started again
        would run a thread its closed owner no longer ends.  Any thread but the loop's."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
            queued = [entry[-1] for entry in self._heap]
            self._heap.clear()

        async def end() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()  # ``_go`` settles each job's future as its task ends
            if tasks:
                await asyncio.wait(tasks, timeout=timeout / 2)
            loop.stop()

        def begin() -> None:
            loop.create_task(end())

        with contextlib.suppress(RuntimeError):  # the loop ended already: nothing runs
            loop.call_soon_threadsafe(begin)
        thread.join(timeout)
        ended = not thread.is_alive()
        if ended:
            self._running = 0
        _open.discard(self)
        # What the loop did not settle (a request whose cancellation did not end in time;
        # jobs still queued) is settled here, once the loop no longer runs.
        for job in (list(self._on_wire) if ended else []) + queued:
            job.store._forget(job)
            if not job.future.done():
                job.future.set_exception(Closed())

    def submit(self, job: Job, priority: int) -> None:
        seq = next(self._seq)
        with self._lock:
            closed = self._closed
            if not closed:
                place = 0 if priority == READ else -self._place
                heapq.heappush(self._heap, (priority, place, seq, job))
                self._loop.call_soon_threadsafe(self._pump)
        if closed:
            job.store._forget(job)
            if not job.future.done():
                job.future.set_exception(Closed())

    def new_place(self) -> None:
        """The cursor moved on: read-ahead asked for from now on goes before older."""
        with self._lock:
            self._place += 1

    def abort(self, job: Job) -> None:
        """Stop ``job`` (already marked dropped under its store's lock), queued or on the
        wire; any thread."""
        with self._lock:  # (the loop ends only after ``close`` set ``_closed``)
            if not self._closed:  # else nothing runs: settled by ``close``
                self._loop.call_soon_threadsafe(self._abort, job)

    def queued(self) -> int:
        with self._lock:
            return sum(1 for *_, j in self._heap if not j.started and not j.dropped)

    # -- on the loop ------------------------------------------------------------------------------
    def _abort(self, job: Job) -> None:
        if job.task is not None:
            job.task.cancel()  # settles the future as it ends (``_go``)
        elif not job.future.done():
            timeline.mark("dropped", job.key, job.start, job.end, note="aborted in queue", job=job)
            job.future.set_exception(Dropped())

    def _pump(self) -> None:
        while self._running < self.limit:
            with self._lock:
                if not self._heap:
                    return
                job = heapq.heappop(self._heap)[-1]
            verdict = job.store._claim(job)
            if verdict == "stale":
                timeline.mark("dropped", job.key, job.start, job.end, note="stale", job=job)
                job.future.set_exception(Dropped())
                continue
            if verdict != "start":
                continue  # queued twice (raised to READ priority), or dropped: settled there
            self._running += 1
            self._on_wire.add(job)
            timeline.mark("sent", job.key, job.start, job.end, note=f"{self._running} running",
                          job=job)
            job.task = self._loop.create_task(self._go(job))

    async def _go(self, job: Job) -> bytes:
        try:
            data = await job.store._request_async(job.key, job.start, job.end)
        except asyncio.CancelledError:
            timeline.mark("cancelled", job.key, job.start, job.end, job=job)
            job.store._forget(job)
            if not job.future.done():
                job.future.set_exception(Closed() if self._closed else Dropped())
            return b""
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            timeline.mark("failed", job.key, job.start, job.end, note=type(exc).__name__, job=job)
            job.store._forget(job)
            if not job.future.done():
                job.future.set_exception(exc)
            return b""
        finally:
            self._running -= 1
            self._on_wire.discard(job)
            self._loop.call_soon(self._pump)
        timeline.mark("done", job.key, job.start, job.end, len(data), job=job)
        job.store._forget(job)
        if not job.future.done():
            job.future.set_result(data)
        return data


#: Pools not closed yet, so that ``close_all`` also reaches those whose owner is gone.
_open: weakref.WeakSet[Pool] = weakref.WeakSet()


def _stop_soon(loop: asyncio.AbstractEventLoop) -> None:
    if not loop.is_closed():
        with contextlib.suppress(RuntimeError):  # closed meanwhile
            loop.call_soon_threadsafe(loop.stop)


def close_all() -> None:
    """Close every pool still open (``lifecycle.shutdown``), including one whose owner was
    dropped unclosed but not collected yet."""
    for pool in list(_open):
        pool.close()


__all__ = ["close_all", "Pool", "Job", "JobOwner", "Dropped", "Closed", "READ", "PREFETCH",
           "STALE_PREFETCH_S"]
