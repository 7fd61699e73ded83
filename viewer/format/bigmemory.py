"""Memory for the arrays that big reads return, kept for the next read of about the same size.

A read of a whole file (128 MiB for a 512^3 uint8 cube) writes into memory new to the process,
and the kernel zeroes and maps every page at its first write, which costs the full LZ4HC read
of ``benchmarks.format`` more CPU than with this module (figures in docs/performance.md).
Compare's passes (``viewer.core.compare``) and scripts read box after
box of one size and drop each before reading the next: ``empty`` hands such a read the memory
of the array dropped last.

At most one buffer waits (the last one dropped, if it is at most ``KEEP_BYTES``), so a program
keeps at most that much memory it does not use; ``release`` gives it back.  Reads of less than
``MIN_BYTES`` take ordinary memory (the allocator keeps small blocks itself).

Any thread: the waiting buffer is a one-place deque (appends and pops are atomic), and the
``__del__`` that gives a buffer back takes no lock (the collector may run it anywhere).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import functools
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

#: Arrays of at least this many bytes get their memory here.
MIN_BYTES = 8 << 20
#: The largest buffer kept for the next read.
KEEP_BYTES = 256 << 20
#: A big array's memory starts on a cache line: the native kernel stores whole lines of a
#: large read's output without reading them first where they are aligned.
ALIGN = 64

_waiting: collections.deque[npt.NDArray[np.uint8]] = collections.deque(maxlen=1)


class _Memory(ctypes.Array[ctypes.c_char]):
    """The memory of one returned array: a ctypes array over a numpy buffer (``inner``),
    which the array and its views name as their base.  When the last of them goes, the buffer
    waits for the next read (``__del__``)."""

    _length_ = 0
    _type_ = ctypes.c_char
    inner: npt.NDArray[np.uint8]

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if self.inner.nbytes - ALIGN <= KEEP_BYTES:
                _waiting.append(self.inner)


@functools.lru_cache(maxsize=64)
def _memory_type(nbytes: int) -> type[_Memory]:
    return type(f"_Memory{nbytes}", (_Memory,), {"_length_": nbytes, "_type_": ctypes.c_char})


def empty(shape: Sequence[int], dtype: npt.DTypeLike,
          order: Literal["C", "F"] = "F") -> npt.NDArray[Any]:
    """An uninitialised array like ``np.empty(shape, dtype, order=order)``; one of at least
    ``MIN_BYTES`` reuses the memory of the last such array dropped when that is at least as
    big and at most twice as big (its pages are then mapped already).  Its memory starts on
    a multiple of ``ALIGN``."""
    dt = np.dtype(dtype)
    nbytes = dt.itemsize
    for n in shape:  # plain ints: ``np.prod`` costs more than a small read's set-up
        nbytes *= int(n)
    if nbytes < MIN_BYTES:
        return np.empty(tuple(shape), dt, order=order)
    inner = None
    with contextlib.suppress(IndexError):  # another thread took it
        inner = _waiting.pop()
    if inner is None or not nbytes + ALIGN <= inner.nbytes <= 2 * nbytes + ALIGN:
        inner = np.empty(nbytes + ALIGN, dtype=np.uint8)  # what was waiting (if any) goes now
    start = -inner.ctypes.data % ALIGN
    memory = _memory_type(nbytes).from_buffer(inner, start)  # type: ignore[arg-type]
    memory.inner = inner
    return np.ndarray(tuple(shape), dt, memory, 0, order=order)  # type: ignore[arg-type]


def release() -> None:
    """Give the waiting buffer back (to the allocator, and so to the system)."""
    _waiting.clear()


def waiting_bytes() -> int:
    """Bytes the buffer kept for the next big read holds for it (for tests and the curious;
    the ``ALIGN`` bytes spent on aligning it not counted)."""
    return sum(b.nbytes - ALIGN for b in list(_waiting))


__all__ = ["KEEP_BYTES", "MIN_BYTES", "empty", "release", "waiting_bytes"]
