"""compressed_segmentation chunks decoded by the native kernel
(``viewer/format/native/cseg.c``): a box of each chunk of a batch written straight into the
caller's arrays, every offset and index checked, without the interpreter lock.  Where the
kernel was not built (``usable`` is False) callers decode with ``precomputed.cseg``; a chunk
the kernel finds damaged is decoded again there, which builds its error (the same words on
both paths).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import native

Vec3 = tuple[int, int, int]
#: The version of ``cseg.c``'s functions this module calls.
ABI = 1

_i64 = ctypes.c_int64


class _Job(ctypes.Structure):
    _fields_ = [("words", ctypes.c_void_p), ("nwords", _i64), ("box", _i64 * 3),
                ("lo", _i64 * 3), ("hi", _i64 * 3), ("out", ctypes.c_void_p),
                ("stride", _i64 * 4), ("status", _i64), ("channel", _i64), ("block", _i64)]


def _function() -> Any:
    lib = native.LIBRARY
    if lib is None or sys.byteorder != "little":
        return None
    try:
        lib.cseg_abi.restype = _i64
        if lib.cseg_abi() != ABI:
            return None
        fn = lib.cseg_decode
    except AttributeError:  # a kernel built before this file was added
        return None
    fn.argtypes = [ctypes.POINTER(_Job), _i64, _i64, ctypes.POINTER(_i64), _i64]
    fn.restype = _i64
    return fn


_DECODE = _function()


def usable(dtype: np.dtype[Any]) -> bool:
    """True when the kernel was built and decodes values of ``dtype`` (uint32, uint64)."""
    return _DECODE is not None and dtype in (np.dtype("<u4"), np.dtype("<u8"))


class Batch:
    """Chunks to decode in one call (``add``, then ``run``).  The words and outputs added
    must stay alive until ``run`` returns (the batch keeps a reference to each)."""

    def __init__(self, channels: int, block: Vec3, dtype: np.dtype[Any]) -> None:
        self.channels = channels
        self.block = (_i64 * 3)(*block)
        self.wide = dtype.itemsize // 4
        self.dtype = dtype
        self._jobs: list[_Job] = []
        self._keep: list[Any] = []

    def __len__(self) -> int:
        return len(self._jobs)

    def add(self, words: npt.NDArray[np.uint32], box: Vec3, lo: Sequence[int],
            hi: Sequence[int], out: npt.NDArray[Any]) -> None:
        """Decode the voxels ``[lo, hi)`` (inside ``box``) of the chunk ``words`` into
        ``out`` (``(C, hi - lo)`` of this batch's dtype, any strides)."""
        # checked always (not asserts): the kernel writes wherever these say
        if out.dtype != self.dtype or out.shape != (
                self.channels, hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]):
            raise ValueError(f"output {out.dtype} {out.shape} is not the box {lo}-{hi} of "
                             f"{self.channels} channel(s) of {self.dtype}")
        if not all(0 <= lo[a] <= hi[a] <= box[a] for a in range(3)) \
                or words.dtype != np.dtype("<u4") or words.ctypes.data % 4:
            raise ValueError(f"box {lo}-{hi} outside the chunk's {box}, or words not aligned "
                             "32-bit words")
        job = _Job()
        job.words = words.ctypes.data
        job.nwords = len(words)
        job.box[:] = box
        job.lo[:] = [int(v) for v in lo]
        job.hi[:] = [int(v) for v in hi]
        job.out = out.ctypes.data
        job.stride[:] = out.strides
        self._jobs.append(job)
        self._keep.append((words, out))

    def run(self) -> list[bool]:
        """Decode every chunk added (the interpreter lock released meanwhile): per chunk
        whether it decoded (False: damaged, its output partly written)."""
        n = len(self._jobs)
        if not n:
            return []
        jobs = (_Job * n)(*self._jobs)
        assert _DECODE is not None
        failed = _DECODE(jobs, n, self.channels, self.block, self.wide)
        self._jobs, self._keep = [], []
        if not failed:
            return [True] * n
        return [jobs[k].status == 0 for k in range(n)]


__all__ = ["usable", "Batch", "ABI"]
