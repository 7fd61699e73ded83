"""How datasets are read: ``ReadConfig``, the settings of reading (remote time-outs, retries,
requests in flight, the on-disk cache of fetched bytes, the merge gap, the credentials mode),
given to ``open_dataset`` / ``open_volume`` and passed down to the stores they open.

The format layer never reads the environment: the program's edge (the command line, the
window, the child process of a job, a Dask task) builds a ``ReadConfig`` once
(``viewer.environment.read_config`` names the variables that set it) and makes it the default
of its process (``set_default``).  A child process or a Dask worker is handed it explicitly,
pickled with the work.

Which config a store gets: the one given to the opener (``open_dataset(path, config=...)``,
held for the length of that call by ``using``, and kept by the volumes it opened), else the
process default.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass

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


__all__ = ["ReadConfig", "default", "set_default", "effective", "using", "AWS_NAMES",
           "DEFAULT_CACHE_MB"]
