"""One process-wide pool of threads for the formats' big reads: chunks decoded in parallel
(zlib, zstd, blosc, lz4 release the GIL).  Shared, so that reading N5 and zarr arrays at once
does not start a pool per format."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def decode_pool() -> ThreadPoolExecutor:
    """The shared pool (2 to 8 threads, one per core), made on first use."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2)),
                                       thread_name_prefix="format-read")
        return _pool


__all__ = ["decode_pool"]
