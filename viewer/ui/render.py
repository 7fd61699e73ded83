"""Voxels to screen colours: lookup tables, every voxel type, the four looks of missing data.

A plane's values become 32-bit ``0xAARRGGBB`` pixels in one numpy gather through a lookup
table: uint8 and uint16 data index a table that already holds levels, gamma, invert and colormap
(256 or 65,536 entries, rebuilt only when the contrast changes); every other type is first scaled
to 0..255 with the levels (NaN gets its own colour, +-Inf the ends of the map).  The result is
laid out as the screen shows it (rows = the view's vertical axis), ready to wrap in a QImage.

Pixels whose ``Status`` is not DATA get their own look, never confused with data: PENDING a grey
hatch, ABSENT (no file: sparse) a faint blue tint over the zero colour, FAILED a red hatch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.slicing import IN_PLANE, Plane, Status
from viewer.core.state import SCREEN_AXES, Contrast

ARGB = npt.NDArray[np.uint32]

NAN_COLOR = 0xFFFF00FF  # magenta: not a number is not a grey level
PENDING_COLORS = (0xFF3A3D44, 0xFF4A4E57)
FAILED_COLORS = (0xFFB0202A, 0xFF5A1016)
ABSENT_TINT = np.array([40, 20, 0], dtype=np.int16)  # +B, +G (slightly), in BGR byte order


@cache
def colormap_table(name: str) -> npt.NDArray[np.uint8]:
    """The colormap ``name`` as a (256, 3) uint8 RGB table."""
    text = resources.files("viewer.resources").joinpath("colormaps.json").read_text("utf-8")
    anchors = json.loads(text)[name]
    rgb = np.array([[int(a[i:i + 2], 16) for i in (1, 3, 5)] for a in anchors], dtype=np.float64)
    pos = np.linspace(0.0, 1.0, len(rgb))
    x = np.linspace(0.0, 1.0, 256)
    table = np.stack([np.interp(x, pos, rgb[:, k]) for k in range(3)], axis=1)
    return np.round(table).astype(np.uint8)


def index_table(contrast: Contrast) -> ARGB:
    """The 256-entry ARGB table for already scaled 0..255 indices: gamma, invert, colormap."""
    t = np.linspace(0.0, 1.0, 256)
    if contrast.gamma != 1.0:
        t = t ** (1.0 / contrast.gamma)
    if contrast.invert:
        t = 1.0 - t
    rgb = colormap_table(contrast.colormap)[np.round(t * 255).astype(np.intp)].astype(np.uint32)
    return (0xFF000000 | (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]).astype(np.uint32)


def scale_to_index(values: npt.NDArray[Any], lo: float, hi: float) -> npt.NDArray[np.uint8]:
    """Values mapped linearly so ``lo`` -> 0 and ``hi`` -> 255, clipped (NaN -> 0)."""
    span = float(hi) - float(lo)
    scale = 255.0 / span if span > 0 else 0.0
    work = values.astype(np.float64 if values.dtype.itemsize > 4 else np.float32)
    work -= lo
    work *= scale
    np.clip(work, 0.0, 255.0, out=work)
    np.nan_to_num(work, copy=False, nan=0.0)
    work += 0.5
    return work.astype(np.uint8)


class Palette:
    """The lookup tables for one ``Contrast`` and voxel type; build once, apply to many planes."""

    def __init__(self, contrast: Contrast, dtype: np.dtype[Any]) -> None:
        self.contrast = contrast
        self.dtype = np.dtype(dtype)
        self.index = index_table(contrast)
        self.direct: ARGB | None = None
        if self.dtype.kind == "u" and self.dtype.itemsize <= 2:
            values = np.arange(2 ** (8 * self.dtype.itemsize), dtype=np.float64)
            self.direct = self.index[scale_to_index(values, contrast.lo, contrast.hi)]
        grey = Contrast(contrast.lo, contrast.hi, contrast.gamma, contrast.invert, "grey")
        # RGB data: one grey ramp per channel, gamma and invert applied to each.
        self.ramp = (index_table(grey) & 0xFF).astype(np.uint32)
        if self.dtype == np.uint8:
            values = np.arange(256, dtype=np.float64)
            self.ramp = self.ramp[scale_to_index(values, contrast.lo, contrast.hi)]

    def colors(self, values: npt.NDArray[Any]) -> ARGB:
        """ARGB pixels for a 2-D array of one channel's values (same shape)."""
        if self.direct is not None:
            return self.direct[values]
        out = self.index[scale_to_index(values, self.contrast.lo, self.contrast.hi)]
        if values.dtype.kind == "f":
            nan = np.isnan(values)
            if nan.any():
                out[nan] = NAN_COLOR
        return out

    def rgb_colors(self, channels: npt.NDArray[Any]) -> ARGB:
        """ARGB pixels for (3, H, W) channels shown as red, green, blue."""
        r, g, b = (self.ramp[scale_to_index(c, self.contrast.lo, self.contrast.hi)]
                   if self.dtype != np.uint8 else self.ramp[c] for c in channels[:3])
        return (0xFF000000 | (r << 16) | (g << 8) | b).astype(np.uint32)


def to_screen(axis: int, array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """An in-plane array indexed (u, v) (``slicing.IN_PLANE`` order) as the view shows it:
    rows along the view's vertical axis, columns along its horizontal one."""
    u, _ = IN_PLANE[axis]
    horizontal, _ = SCREEN_AXES[axis]
    return array.T if horizontal == u else array


@dataclass
class Rendered:
    """A plane ready for the screen, rows along the view's vertical axis (C-contiguous):
    either ``pixels`` are ARGB (``table`` None) or uint8 indices into the 256-entry ARGB
    ``table`` (uint8 data with nothing missing: Qt maps them while drawing, no gather here).
    ``plane`` and ``palette`` are what it was rendered from (so that the next version of the
    same plane can re-render only what changed)."""

    pixels: npt.NDArray[Any]
    table: ARGB | None = None
    plane: Plane | None = None
    palette: Palette | None = None

    def argb(self) -> ARGB:
        return self.table[self.pixels] if self.table is not None else self.pixels


def render_plane(plane: Plane, palette: Palette, previous: Rendered | None = None) -> Rendered:
    """The plane as the view shows it, with the looks of pixels that are not data.

    ``previous``: what was rendered of an earlier version of the same request with the same
    palette (blocks arrived since).  Only the rectangle whose status changed is rendered again,
    into a copy of its pixels: a plane filling in block by block costs per arrival what arrived,
    not the whole plane."""
    axis = plane.request.axis
    c = palette.contrast
    missing = bool(plane.status.any())
    rgb = c.rgb and plane.data.shape[0] >= 3
    if (missing and not rgb and previous is not None and previous.table is None
            and previous.palette is palette and previous.plane is not None
            and previous.plane.request == plane.request
            and previous.plane.status.shape == plane.status.shape
            and previous.plane.factors == plane.factors
            and previous.plane.image_origin == plane.image_origin):
        return _render_changes(plane, palette, previous)
    if rgb:
        out = palette.rgb_colors(np.stack([to_screen(axis, ch) for ch in plane.data[:3]]))
    elif missing and not (plane.status != Status.PENDING).any():
        # Nothing of it has arrived yet (just after a jump): the hatch alone.
        out = hatch(PENDING_COLORS, *to_screen(axis, plane.status).shape).copy()
        return Rendered(out, None, plane, palette)
    else:
        channel = min(c.channel, plane.data.shape[0] - 1)
        # Transpose the narrow values, not the 4-byte colours.
        values = np.ascontiguousarray(to_screen(axis, plane.data[channel]))
        if values.dtype == np.uint8 and palette.direct is not None and not missing:
            return Rendered(values, palette.direct, plane, palette)
        out = palette.colors(values)
    out = np.ascontiguousarray(out, dtype=np.uint32)
    if missing:
        paint_status(out, to_screen(axis, plane.status))
    return Rendered(out, None, plane, palette)


def _render_changes(plane: Plane, palette: Palette, previous: Rendered) -> Rendered:
    """``render_plane`` for a plane of which ``previous`` shows an earlier version."""
    assert previous.plane is not None
    axis = plane.request.axis
    status = to_screen(axis, plane.status)
    changed = status != to_screen(axis, previous.plane.status)
    rows = np.flatnonzero(changed.any(axis=1))
    if rows.size == 0:
        return Rendered(previous.pixels, None, plane, palette)
    cols = np.flatnonzero(changed.any(axis=0))
    r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    out = previous.pixels.copy()
    channel = min(palette.contrast.channel, plane.data.shape[0] - 1)
    values = to_screen(axis, plane.data[channel])[r0:r1, c0:c1]
    part = out[r0:r1, c0:c1]
    part[...] = palette.colors(np.ascontiguousarray(values))
    paint_status(part, status[r0:r1, c0:c1], (r0, c0))
    return Rendered(out, None, plane, palette)


#: Hatch patterns by colour pair, grown on demand; a plane's hatch is a view of its corner.
_hatches: dict[tuple[int, int], ARGB] = {}


def hatch(colors: tuple[int, int], rows: int, cols: int) -> ARGB:
    """A (rows, cols) read-only view of stripes of ``colors`` along screen diagonals, cut
    from one pattern built once (painting the stripes per pixel cost ~20 ms a plane)."""
    have = _hatches.get(colors)
    if have is None or have.shape[0] < rows or have.shape[1] < cols:
        r = max(rows, have.shape[0] if have is not None else 0, 512)
        c = max(cols, have.shape[1] if have is not None else 0, 512)
        i, j = np.indices((r, c), sparse=True)
        have = np.where(((i + j) // 3) % 2 == 0, np.uint32(colors[0]),
                        np.uint32(colors[1])).astype(np.uint32)
        have.flags.writeable = False
        _hatches[colors] = have
    return have[:rows, :cols]


def paint_status(out: ARGB, status: npt.NDArray[np.uint8],
                 origin: tuple[int, int] = (0, 0)) -> None:
    """Give non-DATA pixels their look, in place.  The hatch runs along screen diagonals;
    ``origin``: where ``out`` lies in the whole plane (so that a part's hatch lines up)."""
    r0, c0 = origin
    rows, cols = status.shape
    pending = status == Status.PENDING
    if pending.any():
        np.copyto(out, hatch(PENDING_COLORS, r0 + rows, c0 + cols)[r0:, c0:], where=pending)
    if not (status > Status.PENDING).any():
        return  # neither failed nor absent (the common case: only loading)
    failed = status == Status.FAILED
    if failed.any():
        np.copyto(out, hatch(FAILED_COLORS, r0 + rows, c0 + cols)[r0:, c0:], where=failed)
    absent = status == Status.ABSENT
    if absent.any():
        bgr = out.view(np.uint8).reshape(*out.shape, 4)[..., :3]
        tinted = bgr[absent].astype(np.int16) // 2 + 12 + ABSENT_TINT
        bgr[absent] = np.clip(tinted, 0, 255).astype(np.uint8)


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


def type_range(dtype: np.dtype[Any]) -> tuple[float, float] | None:
    """The full value range of an integer voxel type (None for floats)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return float(info.min), float(info.max)
    return None
