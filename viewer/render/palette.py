"""Voxel values to screen colours: colormaps, lookup tables, the ``Palette`` of one contrast.

Colours are 32-bit ``0xAARRGGBB`` (``ARGB``).  uint8 and uint16 data index a table that already
holds levels, gamma, invert and colormap (256 or 65,536 entries, built once per ``Contrast`` and
voxel type); every other type is first scaled to 0..255 with the levels (NaN gets its own
colour, +-Inf the ends of the map).  RGB data (three channels) go through one grey ramp each.

Pure numpy, no Qt; any thread (a ``Palette`` is not changed after it is built).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.state import Contrast

#: Pixels as the screen takes them: ``0xAARRGGBB`` per pixel.
ARGB = npt.NDArray[np.uint32]

NAN_COLOR = 0xFFFF00FF  # magenta: not a number is not a grey level


@cache
def colormap_table(name: str) -> npt.NDArray[np.uint8]:
    """The colormap ``name`` as a (256, 3) uint8 RGB table: a named one, or ``"#RRGGBB"``,
    black to that colour (a channel of a composite)."""
    if name.startswith("#") and len(name) == 7:
        anchors = ["#000000", name]
    else:
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
    work: npt.NDArray[np.floating[Any]] = values.astype(
        np.float64 if values.dtype.itemsize > 4 else np.float32)
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
        # ``take``, not ``table[values]``: the same lookup in about half the time
        # (docs/performance.md), once per view per redraw on the GUI thread.
        if self.direct is not None:
            direct: ARGB = self.direct.take(values)
            return direct
        out: ARGB = self.index.take(scale_to_index(values, self.contrast.lo, self.contrast.hi))
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


__all__ = ["ARGB", "NAN_COLOR", "Palette", "colormap_table", "index_table", "scale_to_index"]
