"""``RemoteStore``: a ``Store`` over HTTP(S), S3 (and S3-compatible endpoints) and GCS.

(Over 600 lines: the store's scheduling (range merging, queued requests growing, the cache
front), its counters and the building of its client live here together; the pool went to
``pool.py``, and the client's building (``_make_store``, ``aws_config``) is the next seam.)

Requests go through ``obstore`` (Rust's ``object_store``: connection pooling, retries with
exponential back-off of timeouts, 5xx answers and dropped connections, request timeouts, S3
signing with the usual AWS environment variables, ``AWS_ENDPOINT_URL``).  On top of it:

* **Range reads only.**  Chunks are read by byte range; ranges asked for together that lie
  less than ``merge_gap`` apart are fetched in one request (and runs longer than
  ``max_request_bytes`` split and fetched in parallel); a range asked for while a request of
  the same object near it is still queued joins that request.  A server that answers a range
  request with the whole object is detected and named (``RangeNotSupportedError``).
* **Many requests in flight** (``pool.Pool``): one process-wide asyncio event loop (its own
  thread) with at most ``max_requests`` requests on the wire (obstore's async API: no thread
  per request).  Reads someone waits for go before read-ahead (``prefetch``); read-ahead of
  the newest place first.  Read-ahead nobody waits for is dropped when it waited more than
  ``STALE_PREFETCH_S`` in the queue, and stopped, queued or on the wire, by
  ``cancel_prefetch`` (its volume closed, or the cursor moved on to other storage units): the
  request is cancelled (its connection closed), nothing of it reaches the cache, and it is
  counted as cancelled, not as an error.  A job is either waited for or dropped, never both
  (both decided under the store's lock), so a read never sees a false failure; a range
  already being fetched is never asked for twice.
* **A bounded on-disk cache** of the fetched ranges (``diskcache.RangeCache``), so a second
  visit, in this run or a later one, costs no request; objects found missing are remembered for
  the run.
* **Counters** (``stats()``): requests made and in flight, bytes fetched, throughput over the
  last seconds, errors and the last of them, cancelled read-ahead, cache hits.

Keys are paths below the URL given (``s3://bucket/prefix`` + ``key``).  A missing object raises
``FileNotFoundError``; a request that failed for good ``RemoteIOError`` (an ``OSError`` with the
URL and HTTP status).  Plain HTTP cannot list folders: ``list_dir`` is empty and ``is_dir`` only
true for the root; S3 and GCS list.
"""

from __future__ import annotations

import asyncio
import configparser
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from viewer.format import lifecycle
from viewer.format.errors import FormatError
from viewer.format.executor import REQUESTS, Executor
from viewer.format.executor import current as current_executor
from viewer.format.executor import live as live_executors
from viewer.format.handles import COARSE_WINDOW_NS, changing_error, settle_deadline
from viewer.format.remote import config as _config
from viewer.format.remote import diskcache, timeline
from viewer.format.remote.diskcache import RangeCache
from viewer.format.remote.errors import (
    RangeNotSupportedError,
    RemoteError,
    RemoteIOError,
    describe,
)
from viewer.format.remote.pool import (
    PREFETCH,
    READ,
    STALE_PREFETCH_S,
    Closed,
    Dropped,
    Job,
    Pool,
)
from viewer.format.remote.pool import close_all as pool_close_all
from viewer.format.store import ObjectStat, Store, version_changed

SCHEMES = ("http", "https", "s3", "gs", "gcs")
#: How long a request that failed for an object whose last answer was racy waits before it
#: is asked again (``RemoteStore._racy_keys``).
RACY_FAILURE_WAIT_NS = COARSE_WINDOW_NS // 4
#: Schemes whose server may serve a file while another program writes it in place (a web
#: server in front of a folder): their answers follow the racy-timestamp rule.  An object
#: store (S3, GCS) replaces an object whole, so none of its answers is half written.
RACY_SCHEMES = ("http", "https")


# -- counters -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RemoteStats:
    """A snapshot of remote reading in this process (for the status bar and benchmarks)."""

    requests: int  #: requests made (each retry inside the client counts once)
    in_flight: int  #: requests on the wire right now
    queued: int  #: requests waiting for a free slot
    bytes_fetched: int
    errors: int  #: requests that failed for good (after their retries)
    cache_hits: int  #: ranges served from the on-disk cache
    cache_bytes: int  #: bytes served from it
    bytes_per_s: float  #: fetched over the last few seconds
    last_error: str | None
    stores: int  #: remote stores opened (0: nothing remote was read)
    cancelled: int = 0  #: read-ahead requests stopped on the wire (the cursor moved on)


class _Counters:
    WINDOW_S = 3.0

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = self.in_flight = self.bytes = self.errors = 0
        self.hits = self.hit_bytes = 0
        self.stores = self.cancelled = 0
        self.last_error: str | None = None
        self.recent: deque[tuple[float, int]] = deque()

    def begin(self) -> None:
        with self.lock:
            self.requests += 1
            self.in_flight += 1

    def end(self, nbytes: int, error: str | None = None, cancelled: bool = False) -> None:
        now = time.monotonic()
        with self.lock:
            self.in_flight -= 1
            self.cancelled += cancelled
            self.bytes += nbytes
            if nbytes:
                self.recent.append((now, nbytes))
            if error is not None:
                self.errors += 1
                self.last_error = error

    def hit(self, nbytes: int) -> None:
        with self.lock:
            self.hits += 1
            self.hit_bytes += nbytes

    def snapshot(self, queued: int) -> RemoteStats:
        now = time.monotonic()
        with self.lock:
            while self.recent and self.recent[0][0] < now - self.WINDOW_S:
                self.recent.popleft()
            rate = sum(n for _, n in self.recent) / self.WINDOW_S
            return RemoteStats(self.requests, self.in_flight, queued, self.bytes, self.errors,
                               self.hits, self.hit_bytes, rate, self.last_error, self.stores,
                               self.cancelled)


COUNTERS = _Counters()


#: The range cache (one per process: it indexes a folder every process of the user shares;
#: its writer thread ends when it has nothing to write, and in ``lifecycle.shutdown``).
_cache: RangeCache | None = None
_shared_lock = threading.Lock()


def _range_cache(cfg: _config.ReadConfig | None = None) -> RangeCache | None:
    global _cache
    cfg = cfg if cfg is not None else _config.current()
    with _shared_lock:
        want_dir = _config.cache_dir(cfg) if cfg.cache_bytes > 0 else None
        if want_dir is None:
            if _cache is not None:
                _cache.set_budget(0)  # stores still holding it neither keep nor serve bytes
            _cache = None
        elif _cache is None or _cache.root != want_dir:
            _cache = RangeCache(want_dir, cfg.cache_bytes, write_behind=True)
        else:
            _cache.set_budget(cfg.cache_bytes)
        return _cache


def _shared(cfg: _config.ReadConfig | None = None, executor: Executor | None = None
            ) -> tuple[Pool, RangeCache | None]:
    """The request loop of ``executor`` (the one in effect; made on first use, closed with
    the executor) and the range cache for ``cfg``."""
    cfg = cfg if cfg is not None else _config.current()
    service = executor if executor is not None else current_executor()
    if service is None:
        raise RuntimeError("no executor in effect for the remote requests")
    limit = cfg.max_requests
    pool = service.shared("remote.requests", lambda: Pool(limit), REQUESTS)
    return pool, _range_cache(cfg)


def _stop_cache_writer() -> None:
    """``lifecycle.shutdown``: put what the range cache holds on disk, end its writer."""
    with _shared_lock:
        cache = _cache
    if cache is not None:
        cache.close()
    diskcache.close_all()  # caches of other folders too: no writer outlives the shutdown


lifecycle.at_shutdown("remote.cache", lifecycle.WRITES, _stop_cache_writer)
# After the executors (which close their own pools in order): a pool whose executor was
# dropped unclosed.
lifecycle.at_shutdown("remote.pools", lifecycle.REQUESTS + 6, pool_close_all)


class _Stores(dict[tuple[str, _config.ReadConfig], "RemoteStore"]):
    """The remote stores of one executor, by URL and settings."""

    def close(self) -> None:
        self.clear()


def open_remote_store(url: str, config: _config.ReadConfig | None = None) -> RemoteStore:
    """The store of ``url`` with ``config`` (default: the settings in effect, see
    ``viewer.format.config.effective``): one per URL and settings on the executor in effect
    (its client, connections and knowledge of missing objects are shared)."""
    cfg = config if config is not None else _config.current()
    key = (url.rstrip("/"), cfg)
    service = current_executor()
    if service is None:
        return RemoteStore(url, cfg)
    stores = service.shared("remote.stores", _Stores, REQUESTS)
    with _shared_lock:
        found = stores.get(key)
    if found is not None:
        return found
    made = RemoteStore(url, cfg, service)
    with _shared_lock:
        return stores.setdefault(key, made)


def stats() -> RemoteStats:
    """Counters of remote reading in this process (see ``RemoteStats``)."""
    pools = [e.find("remote.requests") for e in live_executors()]
    return COUNTERS.snapshot(sum(p.queued() for p in pools if p is not None))


def range_cache() -> RangeCache | None:
    """The on-disk range cache remote stores use now (None: disabled)."""
    return _range_cache()


@dataclass(frozen=True)
class CacheInfo:
    """The on-disk cache of fetched bytes, for the window's setting."""

    folder: str
    used_bytes: int
    budget_bytes: int
    #: The size came from the environment or the command line (the stored setting waits).
    size_from_run: bool


def cache_info() -> CacheInfo:
    """Where the on-disk cache is, how much it holds and may hold (reads its folder once)."""
    cfg = _config.current()
    cache = _range_cache(cfg)
    return CacheInfo(_config.cache_dir(cfg), cache.used_bytes if cache is not None else 0,
                     cfg.cache_bytes, _config.cache_size_from_run())


def clear_cache() -> None:
    """Delete every range the on-disk cache holds."""
    cache = _range_cache()
    if cache is not None:
        cache.clear()


# -- the store ------------------------------------------------------------------------------------
class RemoteStore(Store):
    """A ``Store`` rooted at a URL (see the module docstring)."""

    def __init__(self, url: str, config: _config.ReadConfig | None = None,
                 executor: Executor | None = None) -> None:
        self.root = url.rstrip("/")
        #: Whose thread runs its requests: the one given, else the one in effect, else one
        #: of its own (closed by ``close``).
        found = executor if executor is not None else current_executor()
        self._owns_executor = found is None
        self.executor = found if found is not None else Executor()
        self.config = config if config is not None else _config.current()
        scheme, _, rest = self.root.partition("://")
        self.scheme = scheme.lower()
        if self.scheme not in SCHEMES:
            from viewer.format.errors import UnsupportedFormatError
            raise UnsupportedFormatError(
                f"unsupported URL scheme {scheme!r} (reads: http, https, s3, gs)", url)
        self._store = _make_store(self.scheme, self.root, rest, self.config)
        self._pool, self._cache = _shared(self.config, self.executor)
        self._lock = threading.Lock()
        #: key -> fetches queued or under way
        self._flying: dict[str, list[Job]] = {}
        self._missing: set[str] = set()
        self._sizes: dict[str, int] = {}
        #: key -> the object's version (``version_tag``) as the last answer gave it
        self._versions: dict[str, str] = {}
        #: Keys whose last answer came from a file modified within the racy window: a request
        #: of one that then fails (a body cut short as the file shrank) is asked again as a
        #: racy answer would be, and named ``FileChangingError`` if the file never settles.
        self._racy_keys: set[str] = set()
        with COUNTERS.lock:
            COUNTERS.stores += 1

    def close(self) -> None:
        """Close the executor the store made for itself (a store opened outside any
        opener); a store on its opener's executor ends with it."""
        if self._owns_executor:
            self._owns_executor = False
            self.executor.close()

    def __repr__(self) -> str:
        return f"<RemoteStore {self.root!r}>"

    def location(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def _path(self, key: str) -> str:
        return key.strip("/")

    # -- one request ----------------------------------------------------------------------------
    def _note_request(self, key: str, start: int, end: int | None) -> None:
        """Called as each request goes out (a hook for the benchmark's request log)."""

    @staticmethod
    def _options(start: int, end: int | None) -> Any:
        if end is not None:
            return {"range": (start, end)}
        return {"range": {"offset": start}} if start else None

    def _request(self, key: str, start: int, end: int | None) -> bytes:
        """Fetch ``[start, end)`` (``end`` None: to the end of the object): one request, on
        the calling thread (whole-object reads; ranges go through the pool)."""
        import obstore

        self._note_request(key, start, end)
        COUNTERS.begin()
        got = 0
        error: str | None = None
        try:
            result = obstore.get(self._store, self._path(key), options=self._options(start, end))
            data = _Answer(result.bytes())
            got = len(data)
            return self._answered(key, start, end, result.meta, data)
        except BaseException as exc:
            failure, error = self._failure(key, exc, start, end)
            if failure is None:
                return b""
            raise failure from None
        finally:
            COUNTERS.end(got, error)

    async def _request_async(self, key: str, start: int, end: int) -> bytes:
        """Fetch ``[start, end)``: one request, on the pool's event loop (cancellable: a
        cancelled request keeps nothing and counts as cancelled, not failed)."""
        import obstore

        self._note_request(key, start, end)
        COUNTERS.begin()
        got = 0
        error: str | None = None
        cancelled = False
        try:
            result = await obstore.get_async(self._store, self._path(key),
                                             options=self._options(start, end))
            data = _Answer(await result.bytes_async())
            got = len(data)
            # No await below: a cancellation cannot land between the bytes and the cache.
            return self._answered(key, start, end, result.meta, data)
        except asyncio.CancelledError:
            cancelled = True
            raise
        except BaseException as exc:
            failure, error = self._failure(key, exc, start, end)
            if failure is None:
                return b""
            raise failure from None
        finally:
            COUNTERS.end(got, error, cancelled)

    def _answered(self, key: str, start: int, end: int | None, meta: Any,
                  data: _Answer) -> bytes:
        """Check an answer, note the object's size and version (``data.version``), keep the
        bytes in the range cache."""
        url = self.location(key)
        if end is not None and len(data) > end - start:
            raise RangeNotSupportedError(
                f"the server ignores Range requests (asked for {end - start} bytes at "
                f"{start}, got {len(data)}): reading through it would download whole files",
                url)
        size = meta.get("size")
        etag = version_tag(meta)
        data.version = etag
        if self.scheme in RACY_SCHEMES:
            data.racy_ns = racy_answer_ns(meta.get("last_modified"))
        with self._lock:
            if data.racy_ns:
                self._racy_keys.add(key)
            else:
                self._racy_keys.discard(key)
            if isinstance(size, int):
                self._sizes[key] = size
            if etag is not None:
                self._versions[key] = etag
        if self._cache is not None and not data.racy_ns:  # untrusted bytes are not kept
            self._cache.put(url, start, data, size if isinstance(size, int) else None, etag)
        return data

    def _failure(self, key: str, exc: BaseException, start: int = 0, end: int | None = None
                 ) -> tuple[BaseException | None, str | None]:
        """What a request's exception becomes (None: an empty read) and the error counted."""
        from obstore.exceptions import NotSupportedError

        url = self.location(key)
        if isinstance(exc, FileNotFoundError):
            with self._lock:
                self._missing.add(key)
            return FileNotFoundError(2, "no such object (HTTP 404)", url), None
        if isinstance(exc, NotSupportedError):
            return RangeNotSupportedError(
                "the server ignores Range requests (answers with the whole object): reading "
                "through it would download whole files", url), \
                "the server ignores Range requests"
        if isinstance(exc, FormatError):
            return exc, exc.reason
        if not isinstance(exc, Exception):
            return exc, None  # KeyboardInterrupt and the like: as they are
        message, status = describe(exc)
        if status == 416:  # the range starts past the end: an empty read, as pread ...
            known = self.known_size(key)
            if known is None or start >= known:
                return None, None
            # ... unless an earlier answer said the object reaches past it: it shrank since.
            return version_changed(url), None
        if end is None:  # a whole object (a chunk file): no range to name
            return RemoteIOError(f"{message} (reading the whole object from byte {start})",
                                 url, status), message
        return RemoteIOError(message, url, status, (start, end)), message

    def known_size(self, key: str) -> int | None:
        """The size learnt from an earlier answer or the range cache; None: not known yet."""
        with self._lock:
            size = self._sizes.get(key)
        if size is None and self._cache is not None:
            value = self._cache.meta(self.location(key)).get("size")
            size = value if isinstance(value, int) else None
        return size

    # -- scheduling -----------------------------------------------------------------------------
    def _schedule(self, key: str, ranges: Sequence[tuple[int, int]], priority: int,
                  keep: bool = False) -> list[Job]:
        """A fetch for every ``(start, end)``, the job that brings its bytes: one under way or
        queued when it covers the range; else a queued one of the same object grown to take
        it in (a request not sent yet; the union is no further apart than ``merge_gap`` and
        no longer than ``max_request_bytes``); else a new one (neighbouring ranges merged).
        So the read-ahead of the batches of a screen, asked for batch by batch, goes out as
        few requests, not one set per batch.  ``keep``: read-ahead never dropped (a unit's
        header and jump table)."""
        out: list[Job | None] = [None] * len(ranges)
        new: list[int] = []
        raise_: list[Job] = []
        read = priority == READ
        cfg = self.config
        gap, longest = cfg.merge_gap, cfg.max_request_bytes
        with self._lock:
            flying = self._flying.setdefault(key, [])
            for i, (s, e) in enumerate(ranges):
                for job in flying:
                    if job.start <= s and e <= job.end:
                        out[i] = job
                        if read and not job.wanted:
                            job.wanted = True
                            if not job.started:
                                raise_.append(job)
                        break
                else:
                    new.append(i)
            new.sort(key=lambda i: ranges[i][0])
            groups: list[tuple[int, int, list[int]]] = []
            for i in new:
                s, e = ranges[i]
                if groups:
                    gs, ge, members = groups[-1]
                    if s - ge <= gap and max(e, ge) - gs <= longest:
                        groups[-1] = (gs, max(ge, e), members + [i])
                        continue
                groups.append((s, e, [i]))
            jobs: list[Job] = []
            grown: list[Job] = []
            waiting = [j for j in flying if not j.started and not j.dropped]
            for gs, ge, members in groups:
                into: Job | None = None
                for j in waiting:
                    if gs - j.end <= gap and j.start - ge <= gap and \
                            max(ge, j.end) - min(gs, j.start) <= longest:
                        into = j
                        break
                if into is not None:
                    job = into
                    job.start, job.end = min(gs, job.start), max(ge, job.end)
                    job.queued_at = time.monotonic()
                    if (read or keep) and not job.wanted:
                        job.wanted = True
                        if read:
                            raise_.append(job)
                    grown.append(job)
                else:
                    job = Job(self, key, gs, ge, priority)
                    job.wanted = read or keep
                    flying.append(job)
                    waiting.append(job)
                    jobs.append(job)
                for i in members:
                    out[i] = job
        for job in jobs:
            timeline.mark("queued", key, job.start, job.end,
                          note="read" if read else "prefetch", job=job)
            self._pool.submit(job, priority)
        for job in grown:
            timeline.mark("grown", key, job.start, job.end,
                          note="read" if read else "prefetch", job=job)
        for job in dict.fromkeys(raise_):
            timeline.mark("raised", key, job.start, job.end, note="to read", job=job)
            self._pool.submit(job, READ)
        return [o for o in out if o is not None]

    def _forget(self, job: Job) -> None:
        """``job`` is over: later asks for its bytes find them in the cache, or ask anew."""
        with self._lock:
            flying = self._flying.get(job.key)
            if flying is not None and job in flying:
                flying.remove(job)
                if not flying:
                    del self._flying[job.key]

    def _claim(self, job: Job) -> str:
        """The pool is about to send ``job``: ``"start"`` (its range is fixed from now on),
        ``"stale"`` (queued too long, nobody waits for it: dropped) or ``"skip"``."""
        with self._lock:
            if job.started or job.dropped:
                return "skip"
            if not job.wanted and time.monotonic() - job.queued_at > STALE_PREFETCH_S:
                job.dropped = True
                flying = self._flying.get(job.key)
                if flying is not None and job in flying:
                    flying.remove(job)
                    if not flying:
                        del self._flying[job.key]
                return "stale"
            job.started = True
            return "start"

    def cancel_prefetch(self, keep: Callable[[str], bool] | None = None) -> int:
        """Stop this store's read-ahead that nobody waits for, queued or on the wire (its
        volume closed, or the cursor moved on); ``keep``: keys whose read-ahead is still
        wanted.  A read waiting for a request is never stopped; a stopped request keeps
        nothing.  The number stopped."""
        dropped: list[Job] = []
        self._pool.new_place()
        with self._lock:
            for key, flying in list(self._flying.items()):
                if keep is not None and keep(key):
                    continue
                for job in flying:
                    if not job.wanted and not job.dropped:
                        job.dropped = True
                        dropped.append(job)
                flying[:] = [j for j in flying if not j.dropped]
                if not flying:
                    del self._flying[key]
        for job in dropped:
            self._pool.abort(job)
        return len(dropped)

    def _wait(self, job: Job) -> bytes:
        cfg = self.config
        bound = (cfg.timeout_s + 2.0) * (cfg.retries + 1) * 4 + 30.0
        try:
            return job.future.result(timeout=bound)
        except TimeoutError:
            raise RemoteIOError("timed out waiting for a free request slot", self.root) from None

    # -- Store ------------------------------------------------------------------------------------
    def read_ranges_results(self, key: str, ranges: Sequence[tuple[int, int]],
                            version: str | None = None
                            ) -> list[bytes | OSError | FormatError]:
        """Each ``(offset, length)`` range's bytes, or the error met fetching it (one failed
        request does not fail the others).  ``version`` (``stat``): a range answered by
        another version of the object (its ETag, else its Last-Modified) is the range's
        ``FileChangedError``; cached ranges of another version are fetched anew."""
        return self._results(key, ranges, version)[0]

    def read_ranges_versioned(self, key: str, ranges: Sequence[tuple[int, int]]
                              ) -> tuple[list[bytes | OSError | FormatError], str | None]:
        """As ``Store.read_ranges_versioned``: the version is the one the first answer (or
        cached range) names; a range of another version is its ``FileChangedError``."""
        out, tags = self._results(key, ranges, None)
        version = next((t for t in tags if t is not None), None)
        for i, tag in enumerate(tags):
            if tag is not None and tag != version:
                out[i] = version_changed(self.location(key))
        return out, version

    def _results(self, key: str, ranges: Sequence[tuple[int, int]], version: str | None
                 ) -> tuple[list[bytes | OSError | FormatError], list[str | None]]:
        """``read_ranges_results`` and the version each range's bytes came from (None: not
        known, or no bytes).  Ranges answered from a file modified within the racy window
        (``racy_answer_ns``) are asked for again once it has passed; still racy after
        ``handles.SETTLE_NS``: their ``FileChangingError``."""
        deadline = 0
        while True:
            out, tags, racy = self._results_once(key, ranges, version)
            if not racy:
                return out, tags
            wait = max(racy.values())
            deadline = deadline or settle_deadline()
            if time.monotonic_ns() + wait > deadline:
                for i in racy:
                    out[i], tags[i] = changing_error(self.location(key)), None
                return out, tags
            time.sleep(wait / 1e9)

    def _results_once(self, key: str, ranges: Sequence[tuple[int, int]], version: str | None
                      ) -> tuple[list[bytes | OSError | FormatError], list[str | None],
                                 dict[int, int]]:
        """One round of ``_results``, and the ranges answered from a racy file (index ->
        ns until its window has passed)."""
        url = self.location(key)
        racy: dict[int, int] = {}
        out: list[bytes | OSError | FormatError] = [b""] * len(ranges)
        tags: list[str | None] = [None] * len(ranges)
        with self._lock:
            missing = key in self._missing
        if missing:
            return [FileNotFoundError(2, "no such object (HTTP 404)", url)
                    for _ in ranges], tags, racy
        # Ranges are clipped at the object's end only when that size is of the version asked
        # for: the last answer may be of another one (a replaced object), and clipping by its
        # size would hand the reader fewer bytes of the right version.
        size = self.known_size(key) if version is None or self._known_version(key) == version \
            else None
        todo: list[tuple[int, int, int]] = []
        for i, (off, n) in enumerate(ranges):
            end = off + max(int(n), 0)
            if size is not None:
                end = min(end, size)
            if end <= off:
                continue
            if self._cache is not None:
                hit = self._cache_get(url, off, end, version)
                if hit is not None:
                    COUNTERS.hit(len(hit[0]))
                    out[i], tags[i] = hit
                    continue
            todo.append((i, off, end))
        if not todo:
            return out, tags, racy
        scheduled = self._schedule(key, [(s, e) for _, s, e in todo], READ)
        timeline.mark("wait", key, todo[0][1], todo[-1][2], note=f"{len(todo)} ranges")
        for (i, off, end), job in zip(todo, scheduled, strict=True):
            for _ in range(3):
                try:
                    data = self._wait(job)
                except Dropped:  # defensive: a job waited for is never dropped; ask again
                    job = self._schedule(key, [(off, end)], READ)[0]
                    continue
                except Closed:
                    out[i] = RemoteIOError("not read: its executor was closed", url,
                                           byte_range=(off, end))
                    break
                except RemoteError as exc:
                    out[i] = exc.for_range(off, end)  # this range, not the merged request's
                    if self._was_racy(key):
                        racy[i] = RACY_FAILURE_WAIT_NS
                    break
                except (OSError, FormatError) as exc:
                    out[i] = exc
                    break
                got = data.version if isinstance(data, _Answer) else None
                if version is not None and got is not None and got != version:
                    out[i] = version_changed(url)
                else:
                    out[i] = data[off - job.start:end - job.start]  # fixed once it started
                    tags[i] = got
                    if isinstance(data, _Answer) and data.racy_ns:
                        racy[i] = data.racy_ns
                break
            else:
                out[i] = RemoteIOError("read-ahead dropped repeatedly", url,
                                       byte_range=(off, end))
        timeline.mark("waited", key, todo[0][1], todo[-1][2])
        return out, tags, racy

    def _known_version(self, key: str) -> str | None:
        with self._lock:
            return self._versions.get(key)

    def _was_racy(self, key: str) -> bool:
        with self._lock:
            return key in self._racy_keys

    def _cache_get(self, url: str, start: int, end: int, version: str | None
                   ) -> tuple[bytes, str | None] | None:
        """Cached bytes ``[start, end)`` and the version they are of (the cache drops an
        object's ranges when an answer names another version); with ``version``, only when
        the cache holds them of that version.  None: not cached (or the object's version
        changed in the cache while they were taken)."""
        assert self._cache is not None
        before = self._cache.meta(url).get("etag")
        if version is not None and before != version:
            return None
        hit = self._cache.get(url, start, end)
        if hit is None or self._cache.meta(url).get("etag") != before:
            return None
        return hit, before if isinstance(before, str) else None

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        return self.read_ranges_of(key, ranges, None)

    def read_ranges_of(self, key: str, ranges: Sequence[tuple[int, int]],
                       version: str | None) -> list[bytes]:
        """As ``Store.read_ranges_of``: ``version`` is the ETag (else Last-Modified) of the
        object ``stat`` saw; ranges fetched from another version raise ``FileChangedError``."""
        got = self.read_ranges_results(key, ranges, version)
        for g in got:
            if isinstance(g, BaseException):
                raise g
        return [g for g in got if isinstance(g, bytes)]

    def stat(self, key: str) -> ObjectStat | None:
        """As ``Store.stat``: the size and version (ETag, else Last-Modified) the last answer
        gave, or a ``HEAD`` request."""
        with self._lock:
            if key in self._missing:
                return None
            size, version = self._sizes.get(key), self._versions.get(key)
        if size is None and self._cache is not None:
            meta = self._cache.meta(self.location(key))
            cached, tag = meta.get("size"), meta.get("etag")
            if isinstance(cached, int):
                size, version = cached, tag if isinstance(tag, str) else None
        if size is not None:
            return ObjectStat(size, version)
        head = self._head(key)
        return None if head is None else ObjectStat(int(head["size"]), version_tag(head))

    def read(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        if length is not None:
            return self.read_ranges(key, [(offset, length)])[0]
        size = self.known_size(key)
        if size is not None:
            return self.read_ranges(key, [(offset, size - offset)])[0]
        with self._lock:
            if key in self._missing:
                raise FileNotFoundError(2, "no such object (HTTP 404)", self.location(key))
        deadline = 0
        while True:
            try:
                data = self._request(key, offset, None)
            except RemoteError:
                if not self._was_racy(key):
                    raise
                data, wait = b"", RACY_FAILURE_WAIT_NS
            else:
                wait = data.racy_ns if isinstance(data, _Answer) else 0
            if not wait:
                return data
            deadline = deadline or settle_deadline()
            if time.monotonic_ns() + wait > deadline:
                raise changing_error(self.location(key))
            time.sleep(wait / 1e9)

    def prefetch(self, key: str, ranges: Sequence[tuple[int, int]], keep: bool = False) -> None:
        """Start fetching these ``(offset, length)`` ranges (read-ahead) and return at once.
        ``keep``: never dropped (neither stale nor by ``cancel_prefetch``)."""
        url = self.location(key)
        with self._lock:
            if key in self._missing:
                return
        todo = [(off, off + n) for off, n in ranges if n > 0 and
                (self._cache is None or not self._cache.covers(url, off, off + n))]
        if todo:
            self._schedule(key, todo, PREFETCH, keep)

    def size(self, key: str) -> int | None:
        with self._lock:
            if key in self._missing:
                return None
        known = self.known_size(key)
        if known is not None:
            return known
        meta = self._head(key)
        return None if meta is None else int(meta["size"])

    def _head(self, key: str) -> Any:
        """A ``HEAD`` request: the object's metadata (size, ETag, ...), None when missing;
        its size and version noted."""
        import obstore

        COUNTERS.begin()
        error: str | None = None
        try:
            meta = obstore.head(self._store, self._path(key))
        except FileNotFoundError:
            with self._lock:
                self._missing.add(key)
            return None
        except Exception as exc:  # noqa: BLE001
            message, status = describe(exc)
            error = message
            raise RemoteIOError(f"{message} (asking for its size)", self.location(key),
                                status) from None
        finally:
            COUNTERS.end(0, error)
        size = int(meta["size"])
        tag = version_tag(meta)
        with self._lock:
            self._sizes[key] = size
            if tag is not None:
                self._versions[key] = tag
        if self._cache is not None:
            self._cache.note_meta(self.location(key), size, tag)
        return meta

    @property
    def tables_ahead_bytes(self) -> int:
        """Bytes of storage-unit tables a volume may fetch ahead (``RemoteConfig``); 0 when
        nothing fetched is kept (no range cache)."""
        if self._cache is None or self._cache.budget <= 0:
            return 0
        return self.config.tables_ahead_bytes

    @property
    def supports_listing(self) -> bool:
        return self.scheme not in ("http", "https")

    @property
    def supports_prefetch(self) -> bool:
        return True

    def list_dir(self, key: str) -> list[str]:
        if not self.supports_listing:
            return []
        import obstore

        prefix = self._path(key)
        COUNTERS.begin()
        error: str | None = None
        try:
            found = obstore.list_with_delimiter(self._store, prefix + "/" if prefix else None)
        except FileNotFoundError:
            return []
        except Exception as exc:  # noqa: BLE001
            message, status = describe(exc)
            error = message
            raise RemoteIOError(message, self.location(key), status) from None
        finally:
            COUNTERS.end(0, error)
        names = {p.rstrip("/").rsplit("/", 1)[-1] for p in found["common_prefixes"]}
        names.update(str(o["path"]).rsplit("/", 1)[-1] for o in found["objects"])
        return sorted(n for n in names if n)

    def is_dir(self, key: str) -> bool:
        if not key:
            return True
        if not self.supports_listing:
            return False
        return bool(self.list_dir(key))


class _Answer(bytes):
    """An answer's bytes, the version of the object they came from (``version_tag``) and,
    when the object was modified within the racy window, ns until that has passed
    (``racy_answer_ns``; 0: trusted)."""

    version: str | None = None
    racy_ns: int = 0


def racy_answer_ns(modified: Any, now_ns: int | None = None) -> int:
    """The racy-timestamp rule for an answer (``handles.racy_wait_ns`` for local files): ns
    until its ``Last-Modified`` lies outside the coarse racy window (an HTTP date holds whole
    seconds); 0 when it does already, or when the answer names no time (a server that sends
    none: the client sees the epoch) or one ahead of our clock by more than the window (a
    server whose clock runs ahead: waiting cannot tell).  A web server serving a file that
    another program writes in several ``write`` calls answers with bytes of two versions,
    under a version tag (an ETag of time and size) that is right for them; only the time
    tells that it may be such a moment."""
    if modified is None or not hasattr(modified, "timestamp"):
        return 0
    newest = int(modified.timestamp()) * 1_000_000_000
    if newest <= 0:
        return 0
    if now_ns is None:
        now_ns = time.time_ns()
    if newest - now_ns > COARSE_WINDOW_NS:
        return 0
    return max(0, newest + COARSE_WINDOW_NS - now_ns)


def version_tag(meta: Any) -> str | None:
    """An object's version as a server's answer names it: its ETag, else its Last-Modified
    time; None when it gives neither (its versions cannot be told apart)."""
    etag = meta.get("e_tag")
    if isinstance(etag, str) and etag:
        return etag
    modified = meta.get("last_modified")
    return f"modified {modified.isoformat()}" if modified is not None else None


# -- building the client --------------------------------------------------------------------------
#: Why a URL cannot be opened without obstore: the stand-alone bundle leaves it out on purpose
#: (its user cannot pip install into it); an installed program has it as a dependency.
_NO_CLIENT = ("this build of wkw-viewer has no client for URLs (the stand-alone bundle reads "
              "local datasets only; the program installed with pip reads URLs)")


def _make_store(scheme: str, url: str, rest: str, cfg: _config.ReadConfig) -> Any:
    try:
        from obstore.store import GCSStore, HTTPStore, S3Store
    except ImportError:  # the bundle leaves the client out (packaging/wkw-viewer.spec)
        from viewer.format.errors import UnsupportedFormatError

        raise UnsupportedFormatError(_NO_CLIENT, url) from None

    retry: Any = {
        "max_retries": cfg.retries,
        "backoff": {"init_backoff": timedelta(milliseconds=100),
                    "max_backoff": timedelta(seconds=2), "base": 2.0},
        "retry_timeout": timedelta(seconds=cfg.timeout_s * (cfg.retries + 1) + 10),
    }
    client: Any = {"allow_http": True, "timeout": timedelta(seconds=cfg.timeout_s),
                   "connect_timeout": timedelta(seconds=min(cfg.timeout_s, 10.0))}
    if scheme in ("http", "https"):
        return HTTPStore.from_url(url, client_options=client, retry_config=retry)
    bucket, _, tail = rest.partition("/")
    prefix = tail.strip("/") or None
    if scheme == "s3":
        s3: Any = aws_config(cfg.anon, dict(cfg.aws_env))
        return S3Store(bucket, prefix=prefix, config=s3,
                       client_options=client, retry_config=retry)
    gcs: Any = {"skip_signature": True} if cfg.anon else {}
    return GCSStore(bucket, prefix=prefix, config=gcs, client_options=client,
                    retry_config=retry)


def aws_config(anon: bool, env: Mapping[str, str]) -> dict[str, Any]:
    """S3 settings the client does not read itself: credentials, region and endpoint from the
    shared AWS files (``~/.aws/credentials``, ``~/.aws/config``, ``AWS_PROFILE``), for what the
    AWS variables ``env`` (``ReadConfig.aws_env``, taken at the program's edge) do not set;
    ``anon``: unsigned requests."""
    out: dict[str, Any] = {}
    if anon:
        out["skip_signature"] = True
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    home = os.path.expanduser("~")
    if not anon and not env.get("AWS_ACCESS_KEY_ID"):
        creds = _ini(env.get("AWS_SHARED_CREDENTIALS_FILE")
                     or os.path.join(home, ".aws", "credentials"), profile)
        for name in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
            if creds.get(name):
                out[name] = creds[name]
    conf = _ini(env.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config"),
                profile if profile == "default" else f"profile {profile}")
    if not (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")) and conf.get("region"):
        out["aws_region"] = conf["region"]
    if env.get("AWS_DEFAULT_REGION") and not env.get("AWS_REGION"):
        out["aws_region"] = env["AWS_DEFAULT_REGION"]
    if not (env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT")) and conf.get("endpoint_url"):
        out["aws_endpoint"] = conf["endpoint_url"]
    return out


def _ini(path: str, section: str) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error):
        return {}
    if not parser.has_section(section):
        return {}
    return {k: v.strip() for k, v in parser.items(section)}


__all__ = ["RemoteStore", "open_remote_store", "RemoteStats", "stats", "range_cache",
           "CacheInfo", "cache_info", "clear_cache", "aws_config", "SCHEMES"]
