"""Segment ids to screen colours: a random-looking bright colour per id, the picked ids lit up.

Every id of a segmentation layer (any integer type, uint8 .. uint64 and the signed ones) gets a
colour of its own, the same whatever the layer's voxel type, computed and never stored per id:
the id (as its 64-bit two's complement) times the 64-bit golden-ratio constant, the top 16
bits of the product index one table of 65,536 bright colours (1,024 hues along the table, the
low bits of the index vary saturation and value).  Multiplying by an odd constant is a
bijection of 64-bit integers and all of it is integer math, so ids above 2**53 (where a float
would round) stay apart; and two neighbouring ids always land about 0.618 of the table apart:
their hues differ by more than a fifth of the circle, never the same colour.

The alpha channel carries each pixel's coverage for blending (``viewer.render.blend``): id 0 is the
background, fully transparent; a segment is drawn at ``SEGMENT_ALPHA``; the selected and the
hovered id are drawn opaque and mixed towards white, so that they stand out of the rest.

Pixels that are not data keep their looks (``plane.paint_status``): the loading hatch, the
failed hatch (both opaque), and absent (no file) as a tinted veil that stays visible over the
layers below even though absent data reads as id 0.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.slicing import Plane, Status
from viewer.render.palette import ARGB
from viewer.render.plane import Rendered, paint_status, to_screen

#: Alpha of a segment that is neither selected nor hovered (about 0.55).
SEGMENT_ALPHA = 0x8C
#: Alpha given to absent (no file) pixels, whose data reads as id 0 (transparent otherwise).
ABSENT_ALPHA = 0xA0
#: How far the selected and the hovered id are mixed towards white (0..1).
SELECTED_WHITE = 0.55
HOVERED_WHITE = 0.3

#: Fibonacci hashing: 2**64 / golden ratio, odd, so that ``id * GOLDEN`` is a bijection.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
TABLE_BITS = 16
_SHIFT = np.uint64(64 - TABLE_BITS)
#: Ids hashed per step: the scratch array (512 KiB) stays in cache, no big temporaries.
CHUNK = 65536


def _hsv_table() -> npt.NDArray[np.uint32]:
    """The 65,536 bright colours (RGB, alpha 0) indexed by the top bits of the hash: hue from
    the index's top 10 bits, saturation and value from the low 6."""
    i = np.arange(1 << TABLE_BITS, dtype=np.int64)
    h = (i >> 6).astype(np.float64) / 1024.0 * 6.0
    s = 0.62 + 0.38 * ((i >> 3) & 7) / 7.0
    v = 0.82 + 0.18 * (i & 7) / 7.0
    sector = np.floor(h).astype(np.int64) % 6
    f = h - np.floor(h)
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    r = np.choose(sector, [v, q, p, p, t, v])
    g = np.choose(sector, [t, v, v, q, p, p])
    b = np.choose(sector, [p, p, t, v, v, q])
    rgb = [np.round(c * 255).astype(np.uint32) for c in (r, g, b)]
    return ((rgb[0] << 16) | (rgb[1] << 8) | rgb[2]).astype(np.uint32)


#: The segment colours with the normal alpha, and mixed towards white for the picked ids.
_BASE = _hsv_table()
_NORMAL = (_BASE | np.uint32(SEGMENT_ALPHA << 24)).astype(np.uint32)
_NORMAL.flags.writeable = False


def _hash_index(ids: npt.NDArray[Any], out: npt.NDArray[np.uint64]) -> None:
    """Table indices of ``ids`` (any integer type) into ``out`` (same shape).  The product is
    taken in uint64, other types cast to it on the way (modulo 2**64: a negative id as its
    two's complement); numpy would otherwise multiply signed ids by the uint64 constant in
    float64."""
    np.multiply(ids, GOLDEN, out=out, dtype=np.uint64, casting="unsafe")
    np.right_shift(out, _SHIFT, out=out)


def segment_rgb(segment_id: int) -> int:
    """The 0xRRGGBB colour of one id (as ``SegmentPalette`` draws it, before alpha)."""
    index = np.empty(1, np.uint64)
    _hash_index(np.array([int(segment_id) & 0xFFFF_FFFF_FFFF_FFFF], np.uint64), index)
    return int(_BASE[int(index[0])])


def _whiten(rgb: int, amount: float) -> int:
    """``rgb`` mixed towards white by ``amount``, opaque."""
    channels = [(rgb >> s) & 0xFF for s in (16, 8, 0)]
    r, g, b = (int(round(c + (255 - c) * amount)) for c in channels)
    return 0xFF000000 | (r << 16) | (g << 8) | b


class SegmentPalette(Hashable):
    """The colours of one segmentation layer's ids with ``selected_id`` and ``hovered_id``
    highlighted (``None``: nothing picked).  Two palettes with the same ids are equal and hash
    alike, so a cache keeps one until the ids change.  Immutable; any thread (tables of the
    narrow types are built on first use, the same on every thread)."""

    def __init__(self, selected_id: int | None = None, hovered_id: int | None = None) -> None:
        self.selected_id = None if selected_id is None else int(selected_id)
        self.hovered_id = None if hovered_id is None else int(hovered_id)
        # The picked ids in drawing order (the selected one wins over the hovered one).
        picks: list[tuple[int, int]] = []
        for pick, amount in ((self.hovered_id, HOVERED_WHITE), (self.selected_id, SELECTED_WHITE)):
            if pick is not None and pick != 0:
                picks.append((pick, _whiten(segment_rgb(pick), amount)))
        self._picks = tuple(picks)
        self._tables: dict[np.dtype[Any], ARGB] = {}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SegmentPalette):
            return NotImplemented
        return (self.selected_id, self.hovered_id) == (other.selected_id, other.hovered_id)

    def __hash__(self) -> int:
        return hash((SegmentPalette, self.selected_id, self.hovered_id))

    def __repr__(self) -> str:
        return f"SegmentPalette(selected_id={self.selected_id}, hovered_id={self.hovered_id})"

    def color(self, segment_id: int) -> int:
        """The ARGB colour of one id, as ``colors`` draws it."""
        segment_id = int(segment_id)
        if segment_id == 0:
            return 0
        for pick, argb in reversed(self._picks):
            if pick == segment_id:
                return argb
        return SEGMENT_ALPHA << 24 | segment_rgb(segment_id)

    def _table(self, dtype: np.dtype[Any]) -> ARGB:
        """All colours of a 1- or 2-byte integer type, indexed by the values' unsigned bits."""
        table = self._tables.get(dtype)
        if table is None:
            values = np.arange(1 << (8 * dtype.itemsize), dtype=np.uint64)
            if dtype.kind == "i":  # the unsigned bits of a negative value: sign-extend
                values = values.astype(dtype.str.replace("i", "u")).view(dtype).astype(np.int64)
            table = self._hashed(values)
            table.flags.writeable = False
            self._tables[dtype] = table
        return table

    def _hashed(self, ids: npt.NDArray[Any]) -> ARGB:
        """Colours of a 1-D or 2-D C-contiguous array of ids, a block at a time (rows of a
        2-D one): the scratch and each block stay in cache while they are hashed, looked up,
        cleared where 0 and lit where picked (whole-plane temporaries cost more in page
        faults than the arithmetic)."""
        out = np.empty(ids.shape, np.uint32)
        if ids.ndim == 2:
            step = max(1, CHUNK // max(ids.shape[1], 1))
            pieces = [(ids[r:r + step], out[r:r + step]) for r in range(0, ids.shape[0], step)]
        else:
            pieces = [(ids[s:s + CHUNK], out[s:s + CHUNK]) for s in range(0, ids.size, CHUNK)]
        scratch = np.empty(max(part.size for part, _ in pieces) if pieces else 0, np.uint64)
        picks = [(pick, np.uint32(argb)) for pick, argb in self._picks
                 if _representable(pick, ids.dtype)]
        for part, target in pieces:
            index = scratch[:part.size].reshape(part.shape)
            _hash_index(part, index)
            np.take(_NORMAL, index.view(np.intp), out=target, mode="clip")
            np.copyto(target, np.uint32(0), where=part == 0)
            for pick, argb in picks:
                np.copyto(target, argb, where=part == pick)
        return out

    def colors(self, ids: npt.NDArray[Any]) -> ARGB:
        """ARGB pixels (same shape, C order) for an array of ids of any integer type."""
        ids = np.asarray(ids)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"segment ids are integers, not {ids.dtype}")
        if ids.dtype.itemsize <= 2:
            unsigned = ids.view(ids.dtype.str.replace("i", "u")) if ids.dtype.kind == "i" else ids
            return np.ascontiguousarray(self._table(ids.dtype)[unsigned])
        if ids.ndim == 2:  # (a transposed plane: copying it first beat reading it strided)
            return self._hashed(np.ascontiguousarray(ids))
        return self._hashed(np.ascontiguousarray(ids).reshape(-1)).reshape(ids.shape)


def _representable(value: int, dtype: np.dtype[Any]) -> bool:
    info = np.iinfo(dtype)
    return int(info.min) <= value <= int(info.max)


def render_segments(plane: Plane, palette: SegmentPalette,
                    previous: Rendered | None = None) -> Rendered:
    """A segmentation plane as the view shows it: ARGB with each pixel's coverage in alpha
    (id 0 transparent), the looks of pixels that are not data painted over.

    ``previous``: what was rendered of an earlier version of the same request with an equal
    palette (blocks arrived since): only the rectangle whose status changed is coloured again,
    into a copy.  Or what was rendered of this very plane with other picked ids (the mouse
    moved onto another segment): only the pixels of the ids picked before or now are coloured
    again."""
    axis = plane.request.axis
    status = to_screen(axis, plane.status)
    missing = bool(plane.status.any())
    before: object = previous.palette if previous is not None else None
    if (previous is not None and previous.plane is plane and previous.table is None
            and isinstance(before, SegmentPalette) and before != palette):
        return _render_picks(plane, palette, previous, status, missing)
    if (previous is not None and previous.table is None and before == palette
            and previous.plane is not None and same_grid(previous.plane, plane)):
        changed = status != to_screen(axis, previous.plane.status)
        rows = np.flatnonzero(changed.any(axis=1))
        if rows.size == 0:
            return _rendered(previous.pixels, plane, palette)
        cols = np.flatnonzero(changed.any(axis=0))
        r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
        out = previous.pixels.copy()
        part = out[r0:r1, c0:c1]
        ids = to_screen(axis, plane.data[0])[r0:r1, c0:c1]
        part[...] = palette.colors(ids)
        _paint(part, status[r0:r1, c0:c1], (r0, c0))
        return _rendered(out, plane, palette)
    out = palette.colors(to_screen(axis, plane.data[0]))
    if missing:
        _paint(out, status, (0, 0))
    return _rendered(out, plane, palette)


def _render_picks(plane: Plane, palette: SegmentPalette, previous: Rendered,
                  status: npt.NDArray[np.uint8], missing: bool) -> Rendered:
    """``previous`` (this plane, other picked ids) with the pixels of every id picked then or
    now coloured again, into a copy."""
    before: object = previous.palette
    assert isinstance(before, SegmentPalette)
    ids = to_screen(plane.request.axis, plane.data[0])
    touched = {pick for pick in (before.selected_id, before.hovered_id, palette.selected_id,
                                 palette.hovered_id)
               if pick is not None and pick != 0 and _representable(pick, ids.dtype)}
    out = previous.pixels.copy()
    if touched:
        mask = np.zeros(ids.shape, dtype=bool)
        for pick in touched:
            mask |= ids == pick
        if missing:
            mask &= status == Status.DATA
        out[mask] = palette.colors(ids[mask])
    return _rendered(out, plane, palette)


def _rendered(pixels: ARGB, plane: Plane, palette: SegmentPalette) -> Rendered:
    """A ``Rendered`` of ARGB pixels that remembers its plane and ``SegmentPalette``."""
    return Rendered(pixels, None, plane, palette)


def same_grid(before: Plane | None, plane: Plane) -> bool:
    """``before`` is an earlier version of ``plane``: the same request on the same pixel grid
    (a plane of another mag answers the same request with other pixels)."""
    return (before is not None and before.request == plane.request
            and before.status.shape == plane.status.shape
            and before.factors == plane.factors and before.image_origin == plane.image_origin)


def _paint(out: ARGB, status: npt.NDArray[np.uint8], origin: tuple[int, int]) -> None:
    """``plane.paint_status`` plus an alpha for absent pixels (their id 0 is transparent)."""
    if not status.any():
        return
    paint_status(out, status, origin)
    absent = status == Status.ABSENT
    if absent.any():
        alpha = out.view(np.uint8).reshape(*out.shape, 4)[..., 3]
        alpha[absent] = np.maximum(alpha[absent], ABSENT_ALPHA)


__all__ = ["SegmentPalette", "render_segments", "same_grid", "segment_rgb", "SEGMENT_ALPHA"]
