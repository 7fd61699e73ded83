"""Exhaustive jobs on a Dask cluster: the same tasks as a local run, submitted through
``dask.distributed``, results streamed back as they finish.

``--scheduler`` takes ``tcp://HOST:PORT`` (an existing cluster's scheduler) or ``local:N`` (a
``LocalCluster`` of N single-threaded worker processes on this machine).  Nothing is distributed
by hand: Dask places the tasks, re-runs those of a worker that died, and cancels the futures
when the caller cancels.  Only summaries travel (a task's result is a small picklable object:
block results, problems), never voxels.

Dask is an optional extra (``pip install 'wkw-viewer[dask]'``); without it ``ClusterRunner``
raises ``SchedulerError`` saying how to get it.

Threads: a ``ClusterRunner`` is used from one thread; ``cancel`` may be called from any.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from viewer.format import config as read_config
from viewer.format.config import ReadConfig

#: Storage units per task, at least (a few files or shards: seconds of work, not
#: milliseconds, so the scheduler's cost per task stays small) ...
UNITS_PER_TASK = 4
#: ... and at most (a large dataset is cut finer than ``TASKS_PER_WORKER``: progress in small
#: steps, and a dead worker's tasks cost little to re-run; 100,000 files are ~1,600 tasks).
MAX_UNITS_PER_TASK = 64
#: Tasks per worker a job is split into (enough to balance uneven units and to let a worker
#: that died have its tasks spread over the others).
TASKS_PER_WORKER = 6
#: What ``--scheduler`` says when Dask is not installed.
INSTALL_HINT = "--scheduler needs the dask extra: pip install 'wkw-viewer[dask]'"


class SchedulerError(Exception):
    """A scheduler that cannot be used: Dask missing, a bad address, a cluster that cannot be
    reached, paths its workers cannot see."""


@dataclass(frozen=True)
class SchedulerSpec:
    """``address`` of an existing scheduler, or ``local_workers`` for a LocalCluster."""

    address: str | None = None
    local_workers: int = 0

    @property
    def is_local(self) -> bool:
        return self.address is None


def parse_scheduler(text: str) -> SchedulerSpec:
    """``tcp://HOST:PORT`` (also ``tls://``, ``ws://``) or ``local:N``."""
    text = text.strip()
    if text.startswith("local:"):
        count = text[len("local:"):]
        if not count.isdigit() or int(count) < 1:
            raise SchedulerError(f"--scheduler local:N needs a number of workers >= 1, not "
                                 f"{text!r}")
        return SchedulerSpec(local_workers=int(count))
    if "://" in text and text.split("://", 1)[1]:
        return SchedulerSpec(address=text)
    raise SchedulerError(f"--scheduler takes tcp://HOST:PORT or local:N, not {text!r}")


def dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def _distributed() -> Any:
    """The ``distributed`` module (untyped: taken as Any)."""
    import importlib

    return importlib.import_module("distributed")


#: glibc's ``mallopt`` parameters, and what a worker sets them to (``_tune_allocator``).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 32 << 20
_tuned = False


def _tune_allocator() -> None:
    """Give a Dask worker's allocator the thresholds a plain Python process reaches by itself.

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``; glibc then keeps its
    mmap threshold fixed at 128 KiB, so every decoded chunk batch (megabytes, allocated and
    freed per unit) is a fresh ``mmap`` whose pages the kernel zeroes again: a 1-worker
    compare spent more CPU than the same code in this process (docs/performance.md).
    Raising the mmap
    threshold to 32 MiB (and the trim threshold to twice that, as glibc's own dynamic rule
    does) reuses the heap instead.  Once per process, glibc only; a no-op elsewhere."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):
        return
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
        mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD)


def _in_worker(fn: Callable[[Any], Any], item: Any, config: ReadConfig) -> Any:
    """A task as it runs on a worker: ``fn(item)``, with the worker tuned first, reading data
    with the settings of the process that submitted it (``config``, sent with the task: a
    worker never takes them from its own environment)."""
    _tune_allocator()
    with read_config.using(config):
        return fn(item)


def _exists_all(paths: Sequence[str]) -> list[str]:
    """On a worker: the paths it cannot see."""
    return [p for p in paths if "://" not in p and not os.path.exists(p)]


class ClusterRunner:
    """A connection to a Dask cluster (or a LocalCluster it starts) that runs tasks.

    ``map(fn, items)`` submits ``fn(item)`` for every item and yields ``(item index, result)``
    as tasks finish, in any order; ``cancel()`` (any thread) cancels what is left.  Use as a
    context manager: leaving it closes the client and a LocalCluster it started."""

    def __init__(self, scheduler: str | SchedulerSpec, timeout_s: float = 30.0,
                 shared: bool = False, config: ReadConfig | None = None) -> None:
        self.spec = parse_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
        #: How the tasks read data: sent with each task (default: this process's settings).
        self.config: ReadConfig = config if config is not None else read_config.default()
        self.timeout_s = timeout_s
        #: ``local:N``: use (and leave running) one LocalCluster of N workers per process,
        #: for jobs that come again and again (the window's scans), instead of starting one.
        self.shared = shared
        self._client: Any = None
        self._cluster: Any = None
        self._futures: list[Any] = []
        self._workers: int | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()

    # -- connection -------------------------------------------------------------------------------
    def __enter__(self) -> ClusterRunner:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if not dask_available():
            raise SchedulerError(INSTALL_HINT)
        Client = _distributed().Client

        try:
            if self.spec.is_local and self.shared:
                self._client = Client(_shared_cluster(self.spec.local_workers),
                                      timeout=self.timeout_s)
            elif self.spec.is_local:
                self._cluster = _local_cluster(self.spec.local_workers)
                self._client = Client(self._cluster, timeout=self.timeout_s)
            else:
                self._client = Client(self.spec.address, timeout=self.timeout_s)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise SchedulerError(f"cannot reach the scheduler "
                                 f"{self.spec.address or 'local'}: {exc}") from None

    @property
    def address(self) -> str:
        """The scheduler's address (of the LocalCluster this runner started, too)."""
        if self._client is None:
            raise SchedulerError("the cluster is not started")
        return str(self._client.scheduler.address)

    @property
    def workers(self) -> int:
        """Workers the cluster had when last asked (``check_paths`` asks each of them)."""
        if self._client is None:
            return 0
        if self._workers is None:
            self._workers = len(self._client.scheduler_info().get("workers", {}))
        return self._workers

    def check_paths(self, paths: Sequence[str]) -> None:
        """``SchedulerError`` naming the paths some worker cannot see (checked up front on
        every worker, so a run does not fail task by task)."""
        if self._client is None:
            raise SchedulerError("the cluster is not started")
        missing: set[str] = set()
        found = self._client.run(_exists_all, list(paths))
        self._workers = len(found)  # the workers that answered: no second round trip
        for worker_missing in found.values():
            missing.update(worker_missing)
        if missing:
            raise SchedulerError("the cluster's workers cannot see "
                                 + ", ".join(sorted(missing))
                                 + " (give a path every worker can read: a shared file system "
                                 "or a URL)")

    # -- running ----------------------------------------------------------------------------------
    def map(self, fn: Callable[[Any], Any], items: Iterable[Any],
            key: str = "wkw-viewer") -> Iterator[tuple[int, Any]]:
        """Submit ``fn(item)`` per item; yield ``(index, result)`` as they finish.  A task that
        raised raises here (after cancelling the rest); a cancelled run stops yielding."""
        as_completed = _distributed().as_completed
        if self._client is None:
            raise SchedulerError("the cluster is not started")
        items = list(items)
        run = uuid.uuid4().hex[:12]  # keys of one map: never those of an earlier run
        futures = [self._client.submit(_in_worker, fn, item, self.config,
                                       key=f"{key}-{run}-{k}", pure=False)
                   for k, item in enumerate(items)]
        index = {f.key: k for k, f in enumerate(futures)}
        with self._lock:
            self._futures = futures
        if self._cancelled.is_set():
            self._cancel_futures()
            return
        try:
            for future in as_completed(futures):
                if self._cancelled.is_set():
                    break
                if future.status == "error":
                    exc = future.exception()
                    self._cancel_futures()
                    raise exc
                if future.status == "cancelled":
                    continue
                yield index[future.key], future.result()
                future.release()
        finally:
            if self._cancelled.is_set():
                self._cancel_futures()

    def cancel(self) -> None:
        """Cancel every task not finished yet (any thread)."""
        self._cancelled.set()
        self._cancel_futures()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _cancel_futures(self) -> None:
        with self._lock:
            futures, self._futures = self._futures, []
        if futures and self._client is not None:
            # A closing client: nothing left to cancel.
            with contextlib.suppress(Exception):
                self._client.cancel(futures)

    def close(self) -> None:
        self._cancel_futures()
        client, self._client = self._client, None
        cluster, self._cluster = self._cluster, None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


def _local_cluster(workers: int) -> Any:
    return _distributed().LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1")


_shared: dict[int, Any] = {}
_shared_lock = threading.Lock()


def _shared_cluster(workers: int) -> Any:
    """The process's LocalCluster of ``workers`` workers, started on first use and closed when
    the program ends."""
    with _shared_lock:
        if workers not in _shared:
            if not _shared:
                atexit.register(_close_shared)
            _shared[workers] = _local_cluster(workers)
        return _shared[workers]


def _close_shared() -> None:
    with _shared_lock:
        clusters = list(_shared.values())
        _shared.clear()
    for c in clusters:
        with contextlib.suppress(Exception):
            c.close()


def units_per_task(units: int, workers: int) -> int:
    """How many storage units a task gets: about ``TASKS_PER_WORKER`` tasks per worker (each
    long enough that the scheduler's cost per task and the worker opening the volume again
    are small next to it), between ``UNITS_PER_TASK`` and ``MAX_UNITS_PER_TASK``."""
    share = -(-units // max(1, workers * TASKS_PER_WORKER))
    return max(UNITS_PER_TASK, min(MAX_UNITS_PER_TASK, share))


def chunked(items: Sequence[Any], per_task: int) -> list[list[Any]]:
    """``items`` in lists of ``per_task`` (the last may be shorter): a task's share."""
    step = max(1, int(per_task))
    return [list(items[k:k + step]) for k in range(0, len(items), step)]


__all__ = ["ClusterRunner", "SchedulerError", "SchedulerSpec", "parse_scheduler",
           "dask_available", "chunked", "INSTALL_HINT", "UNITS_PER_TASK", "MAX_UNITS_PER_TASK",
           "units_per_task"]
