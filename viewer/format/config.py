"""How datasets are read: ``ReadConfig``, the settings of reading (remote time-outs, retries,
requests in flight, the on-disk cache of fetched bytes, the merge gap, the credentials mode),
given to ``open_dataset`` / ``open_volume`` and passed down to the stores they open.

The format layer never reads the environment: the program's edge (the command line, the
window, the child process of a job, a Dask task) builds a ``ReadConfig`` once, with
``ReadConfig.from_environ(os.environ)`` and its own options, and makes it the default of its
process (``set_default``).  A child process or a Dask worker is handed it explicitly (pickled
with the work, or as environment variables through ``to_environ``).

=============================== ===================================================== =========
``WKW_VIEWER_ANON``             ``1``: unsigned requests (public buckets; ``--anon``)  off
``WKW_VIEWER_REMOTE_TIMEOUT``   seconds one request may take before it is retried      10
``WKW_VIEWER_REMOTE_RETRIES``   retries of a timeout, 5xx or dropped connection        3
``WKW_VIEWER_REMOTE_REQUESTS``  requests in flight at once (per process)               64
``WKW_VIEWER_REMOTE_CACHE_MB``  size of the on-disk cache of fetched bytes (0: none)   4096
``WKW_VIEWER_REMOTE_CACHE_DIR`` where it lives                     the user's cache folder
``WKW_VIEWER_REMOTE_MERGE_GAP`` ranges closer than this (bytes) are one request        131072
``WKW_VIEWER_REMOTE_TABLES_KB`` a dataset whose jump tables (or shard indexes) are      4096
                                together at most this (KiB) has them all fetched when
                                it opens (0: each when first needed)
=============================== ===================================================== =========

The AWS client's own variables (``AWS_PROFILE``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ...)
are kept as they were at the edge (``aws_env``), for the S3 settings read from the shared AWS
files.

Which config a store gets: the one given to the opener (``open_dataset(path, config=...)``,
held for the length of that call by ``using``, and kept by the volumes it opened), else the
process default.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

ANON_ENV = "WKW_VIEWER_ANON"
TIMEOUT_ENV = "WKW_VIEWER_REMOTE_TIMEOUT"
RETRIES_ENV = "WKW_VIEWER_REMOTE_RETRIES"
REQUESTS_ENV = "WKW_VIEWER_REMOTE_REQUESTS"
CACHE_MB_ENV = "WKW_VIEWER_REMOTE_CACHE_MB"
CACHE_DIR_ENV = "WKW_VIEWER_REMOTE_CACHE_DIR"
MERGE_GAP_ENV = "WKW_VIEWER_REMOTE_MERGE_GAP"
TABLES_ENV = "WKW_VIEWER_REMOTE_TABLES_KB"

#: The AWS client's variables kept in ``aws_env`` (what ``remote.store.aws_config`` reads).
AWS_NAMES = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID",
             "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION",
             "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")

DEFAULT_CACHE_MB = 4096


@dataclass(frozen=True)
class ReadConfig:
    """The settings of reading (see the module docstring).  Frozen and picklable: it is
    handed to child processes and Dask workers as it is."""

    #: Credentials mode: unsigned requests (public buckets) instead of the usual credentials.
    anon: bool = False
    #: Seconds one request may take (connecting included) before it counts as failed.
    timeout_s: float = 10.0
    #: Times a timeout, a 5xx answer or a dropped connection is retried (with back-off).
    retries: int = 3
    #: Requests in flight at once, over every remote store of the process.
    max_requests: int = 64
    #: Bytes of the on-disk range cache (0: no cache).
    cache_bytes: int = DEFAULT_CACHE_MB << 20
    #: Whether this run asked for ``cache_bytes`` (environment or command line): a stored
    #: setting of the window does not override it then.
    cache_size_given: bool = False
    #: Its folder (None: ``platformdirs.user_cache_dir("wkw-viewer")/remote``).
    cache_dir: str | None = None
    #: Neighbouring byte ranges less than this far apart are fetched in one request: a
    #: request's cost (client, server, round trip) outweighs the bytes of a small gap
    #: (the figures are in docs/performance.md).
    merge_gap: int = 128 << 10
    #: A merged request is at most this long (longer runs are split and fetched in parallel).
    max_request_bytes: int = 8 << 20
    #: A dataset whose storage units' tables (WKW headers and jump tables) together are at
    #: most this many bytes has them all fetched ahead, once its units are known: a far jump
    #: then waits for no table (0: each table when first needed).
    tables_ahead_bytes: int = 4 << 20
    #: The AWS client's variables at the edge (``AWS_NAMES``), as ``(name, value)`` pairs.
    aws_env: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> ReadConfig:
        """The settings the variables of ``env`` give (the defaults for those not set or not
        numbers).  Called by the program's edge with ``os.environ``."""

        def number(name: str, default: float) -> float:
            try:
                return float(env[name])
            except (KeyError, ValueError):
                return default

        base = cls()
        return cls(
            anon=env.get(ANON_ENV, "").strip().lower() in ("1", "true", "yes", "on"),
            timeout_s=max(0.1, number(TIMEOUT_ENV, base.timeout_s)),
            retries=max(0, int(number(RETRIES_ENV, base.retries))),
            max_requests=max(1, int(number(REQUESTS_ENV, base.max_requests))),
            cache_bytes=max(0, int(number(CACHE_MB_ENV, DEFAULT_CACHE_MB))) << 20,
            cache_size_given=bool(env.get(CACHE_MB_ENV, "").strip()),
            cache_dir=env.get(CACHE_DIR_ENV) or None,
            merge_gap=max(0, int(number(MERGE_GAP_ENV, base.merge_gap))),
            tables_ahead_bytes=max(0, int(number(TABLES_ENV, base.tables_ahead_bytes >> 10)))
            << 10,
            aws_env=tuple((k, env[k]) for k in AWS_NAMES if env.get(k)),
        )

    def to_environ(self) -> dict[str, str]:
        """The variables that give these settings to a process started with them (a cache
        size set, given or not, is then one the run asked for; ``max_request_bytes`` keeps
        its default)."""
        out = {ANON_ENV: "1" if self.anon else "0", TIMEOUT_ENV: repr(self.timeout_s),
               RETRIES_ENV: str(self.retries), REQUESTS_ENV: str(self.max_requests),
               MERGE_GAP_ENV: str(self.merge_gap),
               TABLES_ENV: str(self.tables_ahead_bytes >> 10)}
        if self.cache_size_given or self.cache_bytes != ReadConfig.cache_bytes:
            out[CACHE_MB_ENV] = str(self.cache_bytes >> 20)
        if self.cache_dir:
            out[CACHE_DIR_ENV] = self.cache_dir
        out.update(self.aws_env)
        return out

    def replace(self, **changes: object) -> ReadConfig:
        """A copy with ``changes`` (fields of ``ReadConfig``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


_lock = threading.Lock()
_default = ReadConfig()
_given: contextvars.ContextVar[ReadConfig | None] = contextvars.ContextVar(
    "wkw_viewer_read_config", default=None)


def default() -> ReadConfig:
    """The process default: what the edge set (``set_default``), else ``ReadConfig()``."""
    with _lock:
        return _default


def set_default(config: ReadConfig) -> ReadConfig:
    """Make ``config`` the default of this process (the program's edge, once; the window's
    cache setting); stores opened afterwards use it.  Returns it."""
    global _default
    with _lock:
        _default = config
    return config


def effective(config: ReadConfig | None = None) -> ReadConfig:
    """``config`` when given, else the one of the opening under way (``using``), else the
    process default."""
    if config is not None:
        return config
    given = _given.get()
    return given if given is not None else default()


@contextlib.contextmanager
def using(config: ReadConfig | None) -> Iterator[ReadConfig]:
    """For the length of the block (on this thread), stores opened without a config of their
    own use ``config`` (None: the one already in effect)."""
    chosen = effective(config)
    token = _given.set(chosen)
    try:
        yield chosen
    finally:
        _given.reset(token)


__all__ = ["ReadConfig", "default", "set_default", "effective", "using"]
