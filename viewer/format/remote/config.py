"""Settings of remote reading: timeouts, retries, requests in flight, anonymous access, and the
on-disk cache of fetched bytes.

Defaults come from the environment, so a child process (``info``, the window's helpers) reads
the same way as its parent:

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

``configure(...)`` changes them for this process (the command line's ``--anon`` and
``--remote-cache-mb``); stores opened afterwards use the new values.

The on-disk cache's size is also a setting of the window (File > Remote Cache...), kept with
its other settings: ``apply_cache_setting(mb)`` applies that stored value unless the
environment or the command line said otherwise for this run (they win: a run asked for a size
gets it).  The command line's ``--remote-cache-mb N`` sets ``WKW_VIEWER_REMOTE_CACHE_MB``, so
child processes read the same size.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass

ANON_ENV = "WKW_VIEWER_ANON"
TIMEOUT_ENV = "WKW_VIEWER_REMOTE_TIMEOUT"
RETRIES_ENV = "WKW_VIEWER_REMOTE_RETRIES"
REQUESTS_ENV = "WKW_VIEWER_REMOTE_REQUESTS"
CACHE_MB_ENV = "WKW_VIEWER_REMOTE_CACHE_MB"
CACHE_DIR_ENV = "WKW_VIEWER_REMOTE_CACHE_DIR"
MERGE_GAP_ENV = "WKW_VIEWER_REMOTE_MERGE_GAP"
TABLES_ENV = "WKW_VIEWER_REMOTE_TABLES_KB"

DEFAULT_CACHE_MB = 4096


@dataclass(frozen=True)
class RemoteConfig:
    anon: bool = False
    #: Seconds one request may take (connecting included) before it counts as failed.
    timeout_s: float = 10.0
    #: Times a timeout, a 5xx answer or a dropped connection is retried (with back-off).
    retries: int = 3
    #: Requests in flight at once, over every remote store of the process.
    max_requests: int = 64
    #: Bytes of the on-disk range cache (0: no cache).
    cache_bytes: int = DEFAULT_CACHE_MB << 20
    #: Its folder (None: ``platformdirs.user_cache_dir("wkw-viewer")/remote``).
    cache_dir: str | None = None
    #: Neighbouring byte ranges less than this far apart are fetched in one request.
    #: 128 KiB: on the remote benchmark's far jumps (WKW, 32^3 uint8 LZ4 blocks of ~25 KB,
    #: 20 ms per request) 27 % fewer requests than 64 KiB for 3 % more bytes (1.11 x the
    #: blocks asked for), and faster jumps: a request's cost (client, server) outweighed the
    #: bytes of the gaps.
    merge_gap: int = 128 << 10
    #: A merged request is at most this long (longer runs are split and fetched in parallel).
    max_request_bytes: int = 8 << 20
    #: A dataset whose storage units' tables (WKW headers and jump tables) together are at
    #: most this many bytes has them all fetched ahead, once its units are known: a far jump
    #: then waits for no table (0: each table when first needed).
    tables_ahead_bytes: int = 4 << 20


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return default


def from_env() -> RemoteConfig:
    base = RemoteConfig()
    return RemoteConfig(
        anon=os.environ.get(ANON_ENV, "").strip().lower() in ("1", "true", "yes", "on"),
        timeout_s=max(0.1, _env_float(TIMEOUT_ENV, base.timeout_s)),
        retries=max(0, int(_env_float(RETRIES_ENV, base.retries))),
        max_requests=max(1, int(_env_float(REQUESTS_ENV, base.max_requests))),
        cache_bytes=max(0, int(_env_float(CACHE_MB_ENV, DEFAULT_CACHE_MB))) << 20,
        cache_dir=os.environ.get(CACHE_DIR_ENV) or None,
        merge_gap=max(0, int(_env_float(MERGE_GAP_ENV, base.merge_gap))),
        tables_ahead_bytes=max(0, int(_env_float(TABLES_ENV, base.tables_ahead_bytes >> 10)))
        << 10,
    )


_lock = threading.Lock()
_current: RemoteConfig | None = None


def current() -> RemoteConfig:
    global _current
    with _lock:
        if _current is None:
            _current = from_env()
        return _current


def configure(**changes: object) -> RemoteConfig:
    """Change settings for this process (fields of ``RemoteConfig``); returns the new ones.
    ``anon`` is also put in the environment, so child processes inherit it."""
    global _current
    with _lock:
        base = _current if _current is not None else from_env()
        _current = dataclasses.replace(base, **changes)  # type: ignore[arg-type]
        if "anon" in changes:
            os.environ[ANON_ENV] = "1" if _current.anon else "0"
        return _current


def cache_size_from_run() -> bool:
    """Whether this run's cache size came from the environment or the command line (a stored
    setting of the window does not override it)."""
    return bool(os.environ.get(CACHE_MB_ENV, "").strip())


def set_cache_mb(mb: int, *, for_children: bool = False) -> RemoteConfig:
    """Size the on-disk cache (MiB, 0: none) for this process; ``for_children``: also in the
    environment (the command line's ``--remote-cache-mb``, inherited by child processes)."""
    mb = max(0, int(mb))
    if for_children:
        os.environ[CACHE_MB_ENV] = str(mb)
    return configure(cache_bytes=mb << 20)


def apply_cache_setting(mb: int | None) -> bool:
    """Apply the window's stored cache size (MiB; None: none stored) unless this run's size
    came from the environment or the command line; whether it was applied."""
    if mb is None or cache_size_from_run():
        return False
    set_cache_mb(mb)
    return True


def reset() -> None:
    """Forget ``configure`` changes: read the environment again (tests)."""
    global _current
    with _lock:
        _current = None


def cache_dir(config: RemoteConfig) -> str:
    if config.cache_dir:
        return config.cache_dir
    import platformdirs

    return os.path.join(platformdirs.user_cache_dir("wkw-viewer", appauthor=False), "remote")
