"""Statistics that set the levels: the histogram of what is on screen, a robust value range
(percentiles) for auto-contrast.

Pure numpy, no Qt; any thread.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def histogram(values: npt.NDArray[Any], bins: int = 256,
              value_range: tuple[float, float] | None = None
              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Counts and bin edges of the finite values (uint8: one bin per value)."""
    flat = values.reshape(-1)
    if flat.dtype == np.uint8 and value_range is None:
        return np.bincount(flat, minlength=256).astype(np.int64), np.arange(257, dtype=np.float64)
    if flat.dtype.kind == "f":
        flat = flat[np.isfinite(flat)]
    if flat.size == 0:
        return np.zeros(bins, np.int64), np.linspace(0.0, 1.0, bins + 1)
    if value_range is None:
        lo, hi = float(flat.min()), float(flat.max())
    else:
        lo, hi = value_range
    if hi <= lo:
        hi = lo + 1.0
    if flat.dtype.kind in "iu" and hi - lo < bins:
        bins = max(int(hi - lo) + 1, 1)
        hi = lo + bins
    counts, edges = np.histogram(flat, bins=bins, range=(lo, hi))
    return counts.astype(np.int64), edges.astype(np.float64)


def robust_range(values: npt.NDArray[Any], low: float = 0.5, high: float = 99.5,
                 max_samples: int = 1 << 18) -> tuple[float, float] | None:
    """The ``low`` and ``high`` percentiles of the finite values (subsampled evenly when there
    are many), or None when there is no finite value."""
    flat = values.reshape(-1)
    if flat.size > max_samples:
        flat = flat[:: flat.size // max_samples]
    if flat.dtype.kind == "f":
        flat = flat[np.isfinite(flat)]
    if flat.size == 0:
        return None
    lo, hi = np.percentile(flat.astype(np.float64), [low, high])
    if hi <= lo:
        lo, hi = float(flat.min()), float(flat.max())
        if hi <= lo:
            hi = lo + 1.0
    return float(lo), float(hi)


__all__ = ["histogram", "robust_range"]
