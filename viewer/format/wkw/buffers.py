"""Per-thread reusable buffers for reading blocks: one for stored (compressed) bytes read with
``pread``, one for decoded blocks.  Reused, so that repeated reads do not pay page faults on
fresh memory; a buffer far larger than the usual is not kept."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

#: Buffers up to this size are kept for the thread's next read.
KEEP_BYTES = 32 << 20

_local = threading.local()


def _buffer(name: str, nbytes: int) -> npt.NDArray[np.uint8]:
    buf: npt.NDArray[np.uint8] | None = getattr(_local, name, None)
    if buf is not None and buf.nbytes >= nbytes:
        return buf
    buf = np.empty(max(nbytes, 1 << 16), dtype=np.uint8)
    if nbytes <= KEEP_BYTES:
        setattr(_local, name, buf)
    return buf


def staging(nbytes: int) -> npt.NDArray[np.uint8]:
    """This thread's uint8 buffer of at least ``nbytes`` for decoded blocks."""
    return _buffer("staging", nbytes)


def source(nbytes: int) -> npt.NDArray[np.uint8]:
    """This thread's uint8 buffer of at least ``nbytes`` for stored bytes (apart from
    ``staging``, so that blocks decode from one into the other)."""
    return _buffer("source", nbytes)


__all__ = ["source", "staging"]
