"""Reading datasets over HTTP(S), S3 and GCS: a remote ``Store`` with range reads,
many requests in flight, retries, an on-disk cache of fetched bytes and counters
(``store.py``); settings (``config.py``); WKW and webKnossos datasets at a URL (``entry.py``,
``viewer.format.wkw.remote``).  ``viewer.format.store.open_store`` hands URLs here."""

from __future__ import annotations

from viewer.format.remote.config import (
    RemoteConfig,
    apply_cache_setting,
    configure,
    current,
    set_cache_mb,
)
from viewer.format.remote.errors import RangeNotSupportedError, RemoteError, RemoteIOError
from viewer.format.remote.store import (
    CacheInfo,
    RemoteStats,
    RemoteStore,
    cache_info,
    clear_cache,
    open_remote_store,
    stats,
)
from viewer.format.store import set_url_store_opener

set_url_store_opener(open_remote_store)

__all__ = ["RemoteConfig", "configure", "current", "RemoteStore", "RemoteStats", "stats",
           "RemoteError", "RemoteIOError", "RangeNotSupportedError", "CacheInfo", "cache_info",
           "clear_cache", "set_cache_mb", "apply_cache_setting"]
