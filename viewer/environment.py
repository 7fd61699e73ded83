"""The program's edge: the environment variables that set how data is read, turned into a
``ReadConfig`` once (``read_config``) and, for a process started with them, back into variables
(``variables``).  Nothing below the command line, the window and the benchmarks reads them.

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
are kept as they were (``ReadConfig.aws_env``), for the S3 settings read from the shared AWS
files.
"""

from __future__ import annotations

from collections.abc import Mapping

from viewer.format.config import AWS_NAMES, DEFAULT_CACHE_MB, ReadConfig

ANON_ENV = "WKW_VIEWER_ANON"
TIMEOUT_ENV = "WKW_VIEWER_REMOTE_TIMEOUT"
RETRIES_ENV = "WKW_VIEWER_REMOTE_RETRIES"
REQUESTS_ENV = "WKW_VIEWER_REMOTE_REQUESTS"
CACHE_MB_ENV = "WKW_VIEWER_REMOTE_CACHE_MB"
CACHE_DIR_ENV = "WKW_VIEWER_REMOTE_CACHE_DIR"
MERGE_GAP_ENV = "WKW_VIEWER_REMOTE_MERGE_GAP"
TABLES_ENV = "WKW_VIEWER_REMOTE_TABLES_KB"


def read_config(env: Mapping[str, str]) -> ReadConfig:
    """The settings the variables of ``env`` give (the defaults for those not set or not
    numbers)."""

    def number(name: str, default: float) -> float:
        try:
            return float(env[name])
        except (KeyError, ValueError):
            return default

    base = ReadConfig()
    return ReadConfig(
        anon=env.get(ANON_ENV, "").strip().lower() in ("1", "true", "yes", "on"),
        timeout_s=max(0.1, number(TIMEOUT_ENV, base.timeout_s)),
        retries=max(0, int(number(RETRIES_ENV, base.retries))),
        max_requests=max(1, int(number(REQUESTS_ENV, base.max_requests))),
        cache_bytes=max(0, int(number(CACHE_MB_ENV, DEFAULT_CACHE_MB))) << 20,
        cache_size_given=bool(env.get(CACHE_MB_ENV, "").strip()),
        cache_dir=env.get(CACHE_DIR_ENV) or None,
        merge_gap=max(0, int(number(MERGE_GAP_ENV, base.merge_gap))),
        tables_ahead_bytes=max(0, int(number(TABLES_ENV, base.tables_ahead_bytes >> 10))) << 10,
        aws_env=tuple((k, env[k]) for k in AWS_NAMES if env.get(k)),
    )


def variables(config: ReadConfig) -> dict[str, str]:
    """The variables that give ``config`` to a process started with them (a cache size set,
    given or not, is then one the run asked for; ``max_request_bytes`` keeps its default)."""
    out = {ANON_ENV: "1" if config.anon else "0", TIMEOUT_ENV: repr(config.timeout_s),
           RETRIES_ENV: str(config.retries), REQUESTS_ENV: str(config.max_requests),
           MERGE_GAP_ENV: str(config.merge_gap),
           TABLES_ENV: str(config.tables_ahead_bytes >> 10)}
    if config.cache_size_given or config.cache_bytes != ReadConfig.cache_bytes:
        out[CACHE_MB_ENV] = str(config.cache_bytes >> 20)
    if config.cache_dir:
        out[CACHE_DIR_ENV] = config.cache_dir
    out.update(config.aws_env)
    return out


__all__ = ["read_config", "variables", "ANON_ENV", "TIMEOUT_ENV", "RETRIES_ENV",
           "REQUESTS_ENV", "CACHE_MB_ENV", "CACHE_DIR_ENV", "MERGE_GAP_ENV", "TABLES_ENV"]
