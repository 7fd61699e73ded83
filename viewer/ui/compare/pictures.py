"""The pictures the compare modes lay over A's views: B (flicker, swipe), A - B, the mask.

``ComparePictures`` turns A's plane on a view and B's plane of the same request into a
``QImage`` (the numpy work is ``viewer.render.difference``), cached per pair of planes and
what the mode draws with (contrast, tolerance, levels), so that a repaint costs one
``drawImage``.  In the difference mode the levels are symmetric, the largest ``|A - B|`` on the
views on screen; a change of them is reported (the panel says the levels).

GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from PySide6.QtGui import QImage

from viewer.core.slicing import IN_PLANE, Plane
from viewer.core.state import SCREEN_AXES
from viewer.render import difference as pixels_of
from viewer.render.palette import Palette
from viewer.render.plane import render_plane
from viewer.ui.compare import modes
from viewer.ui.compare.host import CompareHost
from viewer.ui.compare.side_b import QtSideB

#: A picture and the dataset (h, v) of its top-left pixel.
Picture = tuple[QImage, tuple[int, int]]


class ComparePictures:
    """The mode pictures of A's views.  ``on_level_changed`` is called (during a paint) when the
    difference levels changed."""

    def __init__(self, host: CompareHost, b: QtSideB,
                 on_level_changed: Callable[[], None]) -> None:
        self.host = host
        self.b = b
        self.on_level_changed = on_level_changed
        #: The difference mode's levels: ``-level .. +level``.
        self.level = 1.0
        self._palette_a: Palette | None = None
        # By axis: (key, image, its pixels (the image's memory), the planes it shows).
        self._images: dict[int, tuple[tuple[Any, ...], QImage, npt.NDArray[Any],
                                      tuple[Plane, Plane]]] = {}
        # By axis: (key, A - B, its largest magnitude, the planes).
        self._diffs: dict[int, tuple[tuple[Any, ...], npt.NDArray[np.float64], float,
                                     tuple[Plane, Plane]]] = {}

    def clear(self) -> None:
        """Forget every picture (B closed, another A)."""
        self._images.clear()
        self._diffs.clear()
        self._palette_a = None

    def _palette(self) -> Palette:
        dataset = self.host.dataset
        dtype = dataset.dtype if dataset is not None else np.dtype(np.uint8)
        contrast = self.host.state.contrast
        palette = self._palette_a
        if palette is None or palette.contrast != contrast or palette.dtype != dtype:
            palette = self._palette_a = Palette(contrast, dtype)
        return palette

    def difference(self, axis: int) -> tuple[npt.NDArray[np.float64], float] | None:
        """``A - B`` of the shown channel on view ``axis`` and its largest magnitude (cached
        per pair of planes), None without both planes of the same request."""
        a = self.host.views[axis].plane
        b = self.b.planes.get(axis)
        if a is None or b is None or a.request != b.request:
            return None
        channel = self.host.state.contrast.channel
        key = (id(a), id(b), channel)
        cached = self._diffs.get(axis)
        if cached is None or cached[0] != key:
            diff = pixels_of.difference(a, b, channel)
            cached = (key, diff, pixels_of.max_abs(diff), (a, b))
            self._diffs[axis] = cached
        return cached[1], cached[2]

    def difference_level(self) -> float:
        """Symmetric levels: the largest |A - B| on the views on screen (at least 1 for
        integer data)."""
        top = 0.0
        for axis, view in self.host.views.items():
            if view.isVisibleTo(view.window()):
                found = self.difference(axis)
                if found is not None:
                    top = max(top, found[1])
        dataset = self.host.dataset
        integer = dataset is not None and dataset.dtype.kind in "iu"
        return max(top, 1.0) if integer else (top if top > 0 else 1.0)

    def picture(self, axis: int, mode: str, showing_b: bool, tolerance: float) -> Picture | None:
        """What A's view ``axis`` shows in ``mode`` (None: A's own image)."""
        if mode not in modes.PICTURE_MODES or (mode == modes.FLICKER and not showing_b):
            return None
        a = self.host.views[axis].plane
        b = self.b.planes.get(axis)
        if a is None:
            return None
        if b is None or b.request != a.request:
            self.b.schedule_refresh()  # A's view changed its plane without a state change
            return None
        contrast = self.host.state.contrast
        if mode in (modes.FLICKER, modes.SWIPE):
            # B in place of A's compared layer, A's other layers as A shows them: only the
            # data changes when flicker flips.
            key: tuple[Any, ...] = ("B", id(b), id(self.host.views[axis].rendered))
        elif mode == modes.DIFFERENCE:
            level = self.difference_level()
            if level != self.level:
                self.level = level
                self.on_level_changed()
            key = ("D", id(a), id(b), contrast.channel, self.level)
        else:
            key = ("M", id(a), id(b), contrast, tolerance)
        cached = self._images.get(axis)
        if cached is None or cached[0] != key:
            if key[0] == "B":
                argb = pixels_of.as_argb(self.b.draw(axis, b))
            elif key[0] == "D":
                found = self.difference(axis)
                assert found is not None
                argb = pixels_of.difference_image(found[0], axis, self.level)
            else:
                shown = pixels_of.as_argb(render_plane(a, self._palette()))
                argb = pixels_of.mask_image(
                    shown, pixels_of.mask(a, b, contrast.channel, tolerance), axis)
            rows, cols = argb.shape
            image = QImage(argb.data, cols, rows, cols * 4, QImage.Format.Format_RGB32)
            cached = (key, image, argb, (a, b))
            self._images[axis] = cached
        u, v = IN_PLANE[axis]
        origin = {u: a.request.lo[0], v: a.request.lo[1]}
        h_axis, v_axis = SCREEN_AXES[axis]
        return cached[1], (origin[h_axis], origin[v_axis])


__all__ = ["ComparePictures", "Picture"]
