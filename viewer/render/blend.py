"""Layers on top of each other: "over" compositing of rendered planes, and one layer's render.

``blend`` stacks ARGB planes, bottom first, each with its layer opacity: a pixel of a layer
covers what is below it by its own alpha times the layer's opacity (a segmentation layer's id 0
has alpha 0 and lets the color layer under it through).  The bottom is composited over opaque
black and the result is opaque (``0xFF`` alpha, ready for a ``QImage.Format_RGB32``).

The arithmetic is integer and two channels at a time: red and blue sit 16 bits apart in a
uint32 (``0x00RR00BB``), so one multiply weighs both without either spilling into the other;
green goes alone.  Weights are 0..256 so that full coverage is an exact copy.  The work runs in
row chunks through a few scratch arrays that stay in cache (whole-plane temporaries cost more
in page faults than the arithmetic).

``render_layer`` turns one layer's plane into pixels with that layer's look: contrast and
colormap for a color layer (``plane.render_plane``), a colour per segment id for a
segmentation layer (``segments.render_segments``), its palettes cached per layer name.

GUI thread (or one thread at a time): pure numpy, no Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.slicing import Plane
from viewer.core.state import LayerDisplay
from viewer.render.palette import ARGB, Palette
from viewer.render.plane import Rendered, render_plane
from viewer.render.segments import SegmentPalette, render_segments, same_grid

OPAQUE = np.uint32(0xFF000000)
_RED_BLUE = np.uint32(0x00FF00FF)
_GREEN = np.uint32(0x0000FF00)
#: Half of the last place of each product field: the shifts round to nearest.
_HALF_RED_BLUE = np.uint32(0x00800080)
_HALF_GREEN = np.uint32(0x00008000)
#: Pixels per step of the blend (about 256 KiB per scratch array).
BLEND_CHUNK = 65536

#: The palettes of the layers, by layer name (the caller keeps one per window).
PaletteCache = dict[str, Palette | SegmentPalette]


def _weight(opacity: float) -> int:
    """The opacity in 256ths (0..256)."""
    return int(round(min(max(float(opacity), 0.0), 1.0) * 256))


def is_opaque(pixels: ARGB) -> bool:
    """Every pixel has alpha 0xFF (a color layer's render always does)."""
    return bool(np.all(pixels >= OPAQUE))


def blend(layers: Sequence[tuple[ARGB, float]]) -> ARGB:
    """``layers`` (ARGB planes of one shape, bottom first, each with its opacity 0..1)
    composited "over" each other onto opaque black; the result has alpha 0xFF.

    A single opaque layer at opacity 1 is returned as it is (the same array, no copy); layers
    of opacity 0 are skipped.  No layer at all is an error (the caller knows the shape)."""
    if not layers:
        raise ValueError("blend needs at least one layer")
    shape = layers[0][0].shape
    for pixels, _ in layers:
        if pixels.shape != shape or pixels.dtype != np.uint32:
            raise ValueError(f"blend: every layer is uint32 of shape {shape}, "
                             f"not {pixels.dtype} {pixels.shape}")
    drawn = [(np.ascontiguousarray(p), _weight(o)) for p, o in layers if _weight(o) > 0]
    if not drawn:
        return np.full(shape, OPAQUE, dtype=np.uint32)
    # Everything under the topmost opaque layer drawn at full opacity is hidden by it.
    start = 0
    for k in range(len(drawn) - 1, -1, -1):
        if drawn[k][1] == 256 and is_opaque(drawn[k][0]):
            start = k
            break
    else:
        start = -1
    if start >= 0:
        if start == len(drawn) - 1:
            return drawn[start][0]
        out = drawn[start][0].copy()
        rest = drawn[start + 1:]
    else:
        out = np.empty(shape, dtype=np.uint32)
        rest = drawn
    flat = out.reshape(-1)
    n = min(BLEND_CHUNK, flat.size)
    scratch = [np.empty(n, np.uint32) for _ in range(4)]
    for k, (pixels, weight) in enumerate(rest):
        src_all = pixels.reshape(-1)
        step = _over_black if (k == 0 and start < 0) else _over
        for s in range(0, flat.size, BLEND_CHUNK):
            step(src_all[s:s + BLEND_CHUNK], flat[s:s + BLEND_CHUNK], weight, scratch)
    return out


def _coverage(src: npt.NDArray[np.uint32], weight: int, a: npt.NDArray[np.uint32]) -> None:
    """``a`` = coverage 0..256 of each pixel: alpha / 255 times the opacity, in 256ths,
    rounded (``weight`` is the opacity in 256ths; 16 fraction bits keep the product exact
    enough that alpha 255 at full opacity is 256, a copy)."""
    np.right_shift(src, 24, out=a)
    np.multiply(a, (weight * 65536 + 127) // 255, out=a)
    np.add(a, 32768, out=a)
    np.right_shift(a, 16, out=a)


def _over_black(src: npt.NDArray[np.uint32], dst: npt.NDArray[np.uint32], weight: int,
                scratch: list[npt.NDArray[np.uint32]]) -> None:
    """``dst`` = ``src`` over opaque black (the bottom layer when it does not cover all)."""
    n = src.size
    a, t, u = (x[:n] for x in scratch[:3])
    _coverage(src, weight, a)
    np.bitwise_and(src, _RED_BLUE, out=t)
    np.multiply(t, a, out=t)
    np.add(t, _HALF_RED_BLUE, out=t)
    np.right_shift(t, 8, out=t)
    np.bitwise_and(t, _RED_BLUE, out=t)
    np.bitwise_and(src, _GREEN, out=u)
    np.multiply(u, a, out=u)
    np.add(u, _HALF_GREEN, out=u)
    np.right_shift(u, 8, out=u)
    np.bitwise_and(u, _GREEN, out=u)
    np.bitwise_or(t, u, out=dst)
    np.bitwise_or(dst, OPAQUE, out=dst)


def _over(src: npt.NDArray[np.uint32], dst: npt.NDArray[np.uint32], weight: int,
          scratch: list[npt.NDArray[np.uint32]]) -> None:
    """``src`` over ``dst`` in place, each pixel weighed by its alpha times ``weight``/256."""
    n = src.size
    a, inv, t, u = (x[:n] for x in scratch)
    _coverage(src, weight, a)
    np.subtract(256, a, out=inv)
    # red and blue together, then green
    np.bitwise_and(src, _RED_BLUE, out=t)
    np.multiply(t, a, out=t)
    np.bitwise_and(dst, _RED_BLUE, out=u)
    np.multiply(u, inv, out=u)
    np.add(t, u, out=t)
    np.add(t, _HALF_RED_BLUE, out=t)
    np.right_shift(t, 8, out=t)
    np.bitwise_and(t, _RED_BLUE, out=t)
    np.bitwise_and(src, _GREEN, out=u)
    np.multiply(u, a, out=u)
    np.bitwise_and(dst, _GREEN, out=a)
    np.multiply(a, inv, out=a)
    np.add(u, a, out=u)
    np.add(u, _HALF_GREEN, out=u)
    np.right_shift(u, 8, out=u)
    np.bitwise_and(u, _GREEN, out=u)
    np.bitwise_or(t, u, out=dst)
    np.bitwise_or(dst, OPAQUE, out=dst)


def composite(layers: Sequence[tuple[ARGB, float, bool]]) -> ARGB:
    """``layers`` bottom first, each ``(pixels, opacity, additive)``: an additive layer (a
    channel of a composite) adds its colour, times its opacity, to what is below it, clipped
    at full brightness per colour (both channels bright: their colours mixed); any other is
    drawn "over" as ``blend`` does.  With no additive layer this is ``blend``."""
    if not any(add for _, _, add in layers):
        return blend([(p, o) for p, o, _ in layers])
    out: ARGB | None = None
    for pixels, opacity, additive in layers:
        if not additive:
            out = blend([(out, 1.0), (pixels, opacity)] if out is not None
                        else [(pixels, opacity)])
            continue
        w = _weight(opacity)
        if w == 0:
            continue
        src = pixels.view(np.uint8).reshape(*pixels.shape, 4)[..., :3].astype(np.uint16)
        if w < 256:
            src = ((src * w + 128) >> 8).astype(np.uint16)
        if out is None:
            out = np.full(pixels.shape, OPAQUE, dtype=np.uint32)
        dst = out.view(np.uint8).reshape(*out.shape, 4)
        dst[..., :3] = np.minimum(dst[..., :3] + src, 255).astype(np.uint8)
    if out is None:
        return np.full(layers[0][0].shape, OPAQUE, dtype=np.uint32)
    return out


def render_layer(plane: Plane, display: LayerDisplay, palette_cache: PaletteCache,
                 previous: Rendered | None = None) -> Rendered:
    """``plane`` of the layer ``display`` describes, with that layer's look: a color layer
    through ``plane.render_plane`` with a ``Palette`` of its contrast and voxel type, a
    segmentation layer through ``render_segments`` with a ``SegmentPalette`` of its selected
    and hovered ids.  ``palette_cache`` (one dict per window, by layer name) keeps each layer's
    palette until its contrast, voxel type or ids change, so that the lookup tables are not
    rebuilt per plane.  ``previous`` is handed on (an earlier render of the same request)."""
    cached = palette_cache.get(display.name)
    if display.is_segmentation:
        wanted = SegmentPalette(display.selected_id, display.hovered_id)
        if not isinstance(cached, SegmentPalette) or cached != wanted:
            palette_cache[display.name] = cached = wanted
        return render_segments(plane, cached, previous)
    if previous is not None and not same_grid(previous.plane, plane):
        previous = None  # another mag's answer to the same request: nothing to patch
    dtype: np.dtype[Any] = plane.data.dtype
    if (not isinstance(cached, Palette) or cached.contrast != display.contrast
            or cached.dtype != dtype):
        palette_cache[display.name] = cached = Palette(display.contrast, dtype)
    return render_plane(plane, cached, previous)


__all__ = ["blend", "composite", "render_layer", "PaletteCache", "is_opaque"]
