"""Voxel differences, exact for every WKW voxel type.

``|a - b|`` is computed without overflow: integers as ``max - min`` in the unsigned type of the
same width (exact, since the true difference fits), floats in float64 with NaN against NaN
counted as equal and NaN against a number as an infinite difference.  Also the two helpers a
window wants for its compare modes: the difference of two planes and their mismatch mask.
Qt-free; any thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.slicing import Plane, Status


def abs_difference(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Exact ``|a - b|`` elementwise (same dtype on both sides): unsigned integers of the
    input's width for integer types, float64 for floating types."""
    if a.dtype != b.dtype:
        raise TypeError(f"cannot difference {a.dtype} and {b.dtype}")
    if a.dtype.kind in "iu":
        hi = np.maximum(a, b)
        lo = np.minimum(a, b)
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        diff: npt.NDArray[Any] = np.subtract(hi.view(unsigned), lo.view(unsigned), dtype=unsigned)
        return diff
    fa = a.astype(np.float64)
    fb = b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(fa - fb)
    na, nb = np.isnan(fa), np.isnan(fb)
    if na.any() or nb.any():
        d[na & nb] = 0.0
        d[na ^ nb] = np.inf
        same_inf = np.isinf(fa) & (fa == fb)
        d[same_inf] = 0.0
    else:
        same_inf = np.isinf(fa) & (fa == fb)  # inf - inf is NaN: equal infinities differ by 0
        if same_inf.any():
            d[same_inf] = 0.0
    return d


def _threshold(tolerance: float, diff: npt.NDArray[Any]) -> int | float:
    """The tolerance in a form that compares exactly with ``diff``."""
    if diff.dtype.kind == "u" and float(tolerance).is_integer():
        return int(tolerance)
    return float(tolerance)


def voxel_stats(a: npt.NDArray[Any], b: npt.NDArray[Any], tolerance: float = 0.0
                ) -> tuple[int, int | float]:
    """``(voxels that differ by more than tolerance, max |difference|)`` of two equally shaped
    arrays whose LAST axis is the channel (a voxel differs when any channel does)."""
    d = abs_difference(a, b)
    if d.size == 0:
        return 0, 0
    different = d > _threshold(tolerance, d)
    count = int(np.count_nonzero(different.any(axis=-1)))
    top = d.max()
    return count, (int(top) if d.dtype.kind == "u" else float(top))


def difference_plane(a: Plane, b: Plane) -> npt.NDArray[np.float64]:
    """``A - B`` of two planes of the same request as float64 ``(C, U, V)``; NaN where either
    side has no data yet or failed to read (an absent file reads as zeros and is compared)."""
    _check_planes(a, b)
    out = a.data.astype(np.float64) - b.data.astype(np.float64)
    out[:, ~(_readable(a) & _readable(b))] = np.nan
    return out


def mismatch_mask(a: Plane, b: Plane, tolerance: float = 0.0) -> npt.NDArray[np.bool_]:
    """``(U, V)`` True where ``|A - B| > tolerance`` in any channel.  Pixels not yet loaded on
    either side are False; a pixel that failed to read on one side only is True."""
    _check_planes(a, b)
    d = abs_difference(np.moveaxis(a.data, 0, -1), np.moveaxis(b.data, 0, -1))
    mask = np.asarray((d > _threshold(tolerance, d)).any(axis=-1), dtype=bool)
    failed_a = a.status == Status.FAILED
    failed_b = b.status == Status.FAILED
    mask |= failed_a ^ failed_b
    # a block being rewritten is neither equal nor different yet
    mask &= ~((a.status == Status.PENDING) | (b.status == Status.PENDING)
              | (a.status == Status.CHANGING) | (b.status == Status.CHANGING))
    mask &= ~(failed_a & failed_b)
    result: npt.NDArray[np.bool_] = mask
    return result


def _readable(p: Plane) -> npt.NDArray[np.bool_]:
    ok: npt.NDArray[np.bool_] = (p.status == Status.DATA) | (p.status == Status.ABSENT)
    return ok


def _check_planes(a: Plane, b: Plane) -> None:
    if a.data.shape != b.data.shape:
        raise ValueError(f"planes differ in shape: {a.data.shape} vs {b.data.shape}")
