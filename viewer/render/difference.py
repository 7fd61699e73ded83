"""Pixels of the compare modes: B as A's contrast shows it, A - B, and the mismatch mask.

Every function takes ``Plane``s of the same request (A's and B's) and returns 32-bit ARGB
pixels laid out as the view shows them (rows along the view's vertical axis), like
``viewer.render.plane.render_plane``.  Plain numpy, no Qt; called on the GUI thread, on planes
that are already in memory (a plane is at most a few megapixels).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from viewer.core.compare import difference_plane, mismatch_mask
from viewer.core.slicing import Plane
from viewer.render.palette import ARGB
from viewer.render.plane import Rendered, to_screen

#: Pixels with no difference to show (not loaded yet, or unreadable on either side).
NO_DATA_COLOR = 0xFF2E3036
#: Mismatching pixels in the mask mode: yellow over a dimmed grey copy of A.
MASK_COLOR = 0xFFFFD21F
#: Ends and middle of the diverging colormap: A < B blue, A = B near black, A > B red.
DIVERGING_NEG = (70, 150, 255)
DIVERGING_MID = (18, 18, 22)
DIVERGING_POS = (255, 88, 56)


def as_argb(rendered: Rendered | ARGB) -> ARGB:
    """C-contiguous ARGB pixels of what ``render_plane`` returned (or of ARGB pixels)."""
    pixels = rendered.argb() if isinstance(rendered, Rendered) else rendered
    return np.ascontiguousarray(pixels, dtype=np.uint32)


@lru_cache(maxsize=1)
def diverging_table() -> ARGB:
    """257 ARGB colours from -L (index 0) through 0 (index 128) to +L (index 256).  The ramp
    rises with the square root, so that small differences already show."""
    t = np.linspace(-1.0, 1.0, 257)
    weight = np.sqrt(np.abs(t))[:, None]
    mid = np.asarray(DIVERGING_MID, dtype=np.float64)
    end = np.where(t[:, None] < 0, np.asarray(DIVERGING_NEG, np.float64),
                   np.asarray(DIVERGING_POS, np.float64))
    rgb = np.round(mid + weight * (end - mid)).astype(np.uint32)
    return (0xFF000000 | (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]).astype(np.uint32)


def channel_pair(a: Plane, b: Plane, channel: int) -> tuple[Plane, Plane]:
    """The two planes cut to one channel each (``channel``, clamped per side) and, when the
    voxel types differ, both as float64, so the difference helpers accept them."""
    ca = min(channel, a.data.shape[0] - 1)
    cb = min(channel, b.data.shape[0] - 1)
    da, db = a.data[ca:ca + 1], b.data[cb:cb + 1]
    if da.dtype != db.dtype:
        da, db = da.astype(np.float64), db.astype(np.float64)
    return Plane(a.request, da, a.status, a.errors), Plane(b.request, db, b.status, b.errors)


def difference(a: Plane, b: Plane, channel: int) -> npt.NDArray[np.float64]:
    """``A - B`` of one channel as ``(U, V)`` float64; NaN where either side has no data."""
    pa, pb = channel_pair(a, b, channel)
    diff: npt.NDArray[np.float64] = difference_plane(pa, pb)[0]
    return diff


def max_abs(diff: npt.NDArray[np.float64]) -> float:
    """The largest finite ``|A - B|`` (0 when there is none)."""
    finite = np.abs(diff[np.isfinite(diff)])
    return float(finite.max()) if finite.size else 0.0


def difference_image(diff: npt.NDArray[np.float64], axis: int, level: float) -> ARGB:
    """``A - B`` through the diverging colormap with symmetric levels ``-level .. +level``;
    infinite differences take the ends, NaN the no-data colour."""
    level = level if level > 0 else 1.0
    nan = np.isnan(diff)
    scaled = np.clip(np.nan_to_num(diff, nan=0.0, posinf=level, neginf=-level) / level,
                     -1.0, 1.0)
    index = np.round((scaled + 1.0) * 128.0).astype(np.intp)
    out = diverging_table()[index]
    out[nan] = NO_DATA_COLOR
    return np.ascontiguousarray(to_screen(axis, out), dtype=np.uint32)


def mask(a: Plane, b: Plane, channel: int, tolerance: float) -> npt.NDArray[np.bool_]:
    """``(U, V)`` True where ``|A - B| > tolerance``: in any channel when both have the same
    channels, else in the shown one."""
    if a.data.shape == b.data.shape and a.data.dtype == b.data.dtype:
        return mismatch_mask(a, b, tolerance)
    pa, pb = channel_pair(a, b, channel)
    return mismatch_mask(pa, pb, tolerance)


def mask_image(a_pixels: ARGB, mismatch: npt.NDArray[np.bool_], axis: int) -> ARGB:
    """A's rendered pixels as a dim grey, with the mismatching pixels in ``MASK_COLOR``."""
    bgra = a_pixels.view(np.uint8).reshape(*a_pixels.shape, 4)
    grey = (bgra[..., :3].astype(np.uint16).sum(axis=-1) // 3 * 2 // 5).astype(np.uint32)
    out = (0xFF000000 | (grey << 16) | (grey << 8) | grey).astype(np.uint32)
    out[to_screen(axis, mismatch)] = MASK_COLOR
    return np.ascontiguousarray(out)


__all__ = ["MASK_COLOR", "NO_DATA_COLOR", "as_argb", "channel_pair", "difference",
           "difference_image", "diverging_table", "mask", "mask_image", "max_abs"]
