"""A plane of voxels as the screen shows it: colours through a ``Palette``, laid out along the
view's axes, with the four looks of missing data.

A plane's values become ARGB pixels in one numpy gather through the palette's lookup table
(``viewer.render.palette``), laid out as the screen shows it (rows = the view's vertical axis),
ready to wrap in a QImage (which the ui does: nothing here imports Qt).

Pixels whose ``Status`` is not DATA get their own look, never confused with data: PENDING a grey
hatch, ABSENT (no file: sparse) a faint blue tint over the zero colour, FAILED a red hatch,
CHANGING (another program is writing the block's file) an amber hatch.

Pure numpy; any thread, one call at a time per ``Rendered`` (the hatch patterns are shared,
read-only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.slicing import IN_PLANE, Plane, Status
from viewer.core.state import SCREEN_AXES
from viewer.render.palette import ARGB, Palette

PENDING_COLORS = (0xFF3A3D44, 0xFF4A4E57)
FAILED_COLORS = (0xFFB0202A, 0xFF5A1016)
CHANGING_COLORS = (0xFFC08A10, 0xFF5A4008)
ABSENT_TINT = np.array([40, 20, 0], dtype=np.int16)  # +B, +G (slightly), in BGR byte order


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
    same plane can re-render only what changed); the palette is a ``Palette`` or a
    ``segments.SegmentPalette``, and is only compared."""

    pixels: npt.NDArray[Any]
    table: ARGB | None = None
    plane: Plane | None = None
    palette: object = None

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
    elif missing and (not plane.status.size or int(plane.status.min()) == Status.PENDING
                      == int(plane.status.max())):
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
    from one pattern built once (painting the stripes per pixel was much slower)."""
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
    if not status.size or int(status.max()) <= Status.PENDING:  # a reduction: no mask made
        return  # neither failed nor absent (the common case: only loading)
    failed = status == Status.FAILED
    if failed.any():
        np.copyto(out, hatch(FAILED_COLORS, r0 + rows, c0 + cols)[r0:, c0:], where=failed)
    changing = status == Status.CHANGING
    if changing.any():
        np.copyto(out, hatch(CHANGING_COLORS, r0 + rows, c0 + cols)[r0:, c0:], where=changing)
    absent = status == Status.ABSENT
    if absent.any():
        bgr = out.view(np.uint8).reshape(*out.shape, 4)[..., :3]
        tinted = bgr[absent].astype(np.int16) // 2 + 12 + ABSENT_TINT
        bgr[absent] = np.clip(tinted, 0, 255).astype(np.uint8)


__all__ = ["ABSENT_TINT", "CHANGING_COLORS", "FAILED_COLORS", "PENDING_COLORS", "Rendered", "hatch",
           "paint_status", "render_plane", "to_screen"]
