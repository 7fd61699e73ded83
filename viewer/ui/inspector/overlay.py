"""The inspector's overlay on a slice view: the compression map and the chunk and
storage-unit grids, drawn over a QPainter-based slice view (``viewer.ui.slice_view``) as a
transparent child widget.  Also the colour scale the map and the Map tab's colour bar share.

Coordinates: a ``CompressionPlane`` holds one value per chunk (u, v) of the in-plane chunk grid
(``inspect.IN_PLANE``: u, v are data axes); the overlay maps them to the view's horizontal and
vertical data axes and through the view's ``to_widget`` to pixels, times ``scale`` (the view's
voxels per inspected voxel, not 1 when another mag than the view's is inspected).
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from viewer.core import inspect
from viewer.core.advise import SAVINGS

#: The colour map of the compression overlay and its colour bar.
COLORMAP_NAME = "viridis"
#: Overlay opacity (0-255) of a chunk with a value; chunks without one are transparent.
OVERLAY_ALPHA = 150
#: Ratios are coloured on a log2 scale from 1x to 2**RATIO_LOG2_MAX x.
RATIO_LOG2_MAX = 8.0

Vec3 = tuple[int, int, int]


def colormap() -> Any:
    """The map's colours (a ``pg.ColorMap``; pyqtgraph keeps it once read)."""
    return pg.colormap.get(COLORMAP_NAME)


@functools.cache
def colormap_lut() -> npt.NDArray[np.uint8]:
    """The map's 256 RGBA colours (read-only), worked out once.  The first call reads the map
    from pyqtgraph's files: the overlays make it when they are made, so that it is not done
    in the middle of the first planes drawn after a dataset opens."""
    lut = np.asarray(colormap().getLookupTable(0.0, 1.0, 256, alpha=True))
    lut.flags.writeable = False
    return lut


def metric_levels(metric: str, chunk_nbytes: int) -> tuple[float, float]:
    """The value range the colour bar spans: bytes 0..chunk_nbytes (incompressible chunks and
    anything larger clip to the top), log2 ratio 0..RATIO_LOG2_MAX, or the share of today's
    bytes a candidate saves, -1..1."""
    if metric == inspect.SIZE:
        return (0.0, float(chunk_nbytes))
    if metric == SAVINGS:
        return (-1.0, 1.0)
    return (0.0, RATIO_LOG2_MAX)


def normalised(values: npt.NDArray[np.float64], metric: str,
               chunk_nbytes: int) -> npt.NDArray[np.float64]:
    """Values mapped to 0..1 along the colour bar (NaN stays NaN)."""
    lo, hi = metric_levels(metric, chunk_nbytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        linear = metric in (inspect.SIZE, SAVINGS)
        v = values if linear else np.log2(np.where(np.isinf(values), 2.0 ** hi, values))
        return np.clip((v - lo) / (hi - lo), 0.0, 1.0)


def colourise(values: npt.NDArray[np.float64], metric: str, chunk_nbytes: int,
              alpha: int = OVERLAY_ALPHA) -> npt.NDArray[np.uint8]:
    """RGBA uint8 image ``(U, V, 4)`` of per-chunk values; NaN (nothing stored, damaged range)
    is transparent."""
    norm = normalised(values, metric, chunk_nbytes)
    nan = np.isnan(norm)
    lut = colormap_lut()
    idx = np.where(nan, 0, np.round(np.nan_to_num(norm) * 255)).astype(np.intp)
    rgba = np.ascontiguousarray(lut[idx])
    rgba[..., 3] = np.where(nan, 0, alpha)
    return rgba.astype(np.uint8)


class OverlayView(Protocol):
    """What the overlay needs of the slice view it covers (``QtSliceView`` offers it): its
    normal ``axis``, the data axes along the screen's horizontal and vertical, screen pixels
    per voxel along them, the map from data to widget pixels and the data range shown."""

    @property
    def axis(self) -> int: ...
    @property
    def h_axis(self) -> int: ...
    @property
    def v_axis(self) -> int: ...
    def scales(self) -> tuple[float, float]: ...
    def to_widget(self, h: float, v: float) -> tuple[float, float]: ...
    def visible_range(self) -> tuple[tuple[float, float], tuple[float, float]]: ...
    def rect(self) -> QRect: ...
    def paint_labels(self, painter: QPainter) -> None: ...
    def paint_scale_bar(self, painter: QPainter) -> None: ...


class QtSliceOverlay(QWidget):
    """The compression map and the chunk and unit grids over one slice view (``view``, a
    ``QWidget`` that is an ``OverlayView``), as a transparent child widget, so the view's own
    code is untouched.  It follows the view's geometry through an event filter; the view's
    repaints repaint it too.  ``QtInspectorPanel.attach_to_view`` makes one and keeps it up
    to date."""

    MIN_PIXELS = 4.0

    def __init__(self, view: OverlayView) -> None:
        if not isinstance(view, QWidget):
            raise TypeError(f"the overlay covers a widget, not {type(view).__name__}")
        super().__init__(view)
        self.view: OverlayView = view
        self._view_widget: QWidget = view
        self.axis: int = view.axis
        self.plane: inspect.CompressionPlane | None = None
        self.show_map = False
        self.show_block_grid = False
        self.show_file_grid = False
        #: Chunk and storage-unit sizes in voxels along x, y, z (0: no grid).
        self.chunk_shape: Vec3 = (0, 0, 0)
        self.unit_shape: Vec3 = (0, 0, 0)
        #: Volume extent in voxels, (lo, hi) per axis, of the units known so far.
        self.extent: tuple[Vec3, Vec3] | None = None
        self.scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
        self._image: QImage | None = None
        self._pixels: npt.NDArray[np.uint8] | None = None
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setGeometry(view.rect())
        view.installEventFilter(self)
        self.show()

    @property
    def pixels(self) -> npt.NDArray[np.uint8] | None:
        """The map as drawn, before scaling: RGBA ``(rows, columns, 4)``, one pixel per chunk,
        rows along the view's vertical axis (None: no map)."""
        return self._pixels

    def grid_spacing(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(chunk grid, unit grid) line spacing in voxels along the plane's (u, v) axes
        (``inspect.IN_PLANE``)."""
        u, v = inspect.IN_PLANE[self.axis]
        return ((self.chunk_shape[u], self.chunk_shape[v]),
                (self.unit_shape[u], self.unit_shape[v]))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._view_widget and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.view.rect())
        return False

    def set_plane(self, plane: inspect.CompressionPlane | None) -> None:
        """Show ``plane``'s values (None: no map)."""
        self.plane = plane
        if plane is None or plane.values.size == 0:
            self._image = None
            self._pixels = None
        else:
            u_ax, _ = inspect.IN_PLANE[self.axis]
            values = plane.values.T if self.view.h_axis == u_ax else plane.values
            rgba = np.ascontiguousarray(colourise(values, plane.metric, plane.chunk_nbytes))
            self._pixels = rgba
            rows, cols = rgba.shape[:2]
            self._image = QImage(rgba.data, cols, rows, cols * 4, QImage.Format.Format_RGBA8888)
        self.update()

    def set_scale(self, scale: tuple[float, float, float]) -> None:
        """View voxels per inspected voxel along x, y, z."""
        self.scale = (float(scale[0]), float(scale[1]), float(scale[2]))
        self.update()

    def set_grid(self, chunk_shape: Vec3, unit_shape: Vec3,
                 extent: tuple[Vec3, Vec3] | None) -> None:
        """Grid lines every chunk and every storage unit (voxels along x, y, z) over
        ``extent``."""
        self.chunk_shape = (int(chunk_shape[0]), int(chunk_shape[1]), int(chunk_shape[2]))
        self.unit_shape = (int(unit_shape[0]), int(unit_shape[1]), int(unit_shape[2]))
        self.extent = extent
        self.update()

    def set_shown(self, show_map: bool, block_grid: bool, file_grid: bool) -> None:
        """Which of the map, the chunk grid and the unit grid are drawn."""
        self.show_map = show_map
        self.show_block_grid = block_grid
        self.show_file_grid = file_grid
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        view = self.view
        painter = QPainter(self)
        # Screen pixels per view voxel along the view's horizontal and vertical axes: the zoom
        # times the stretch that draws anisotropic voxels in their physical shape.
        zh, zv = view.scales()
        if self.show_map and self._image is not None and self.plane is not None:
            p = self.plane
            u_ax, v_ax = inspect.IN_PLANE[self.axis]
            origin = {u_ax: p.origin[0], v_ax: p.origin[1]}
            size = {u_ax: p.chunk_size[0], v_ax: p.chunk_size[1]}
            sh, sv = self.scale[view.h_axis], self.scale[view.v_axis]
            h0, v0 = origin[view.h_axis] * sh, origin[view.v_axis] * sv
            x0, y0 = view.to_widget(h0, v0)
            target = QRectF(x0, y0, self._image.width() * size[view.h_axis] * zh * sh,
                            self._image.height() * size[view.v_axis] * zv * sv)
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
            painter.drawImage(target, self._image)
            # The map covered the view's own labels and scale bar: draw them again on top,
            # where the map is (elsewhere the view's own show).
            painter.save()
            painter.setClipRect(target)
            view.paint_scale_bar(painter)
            view.paint_labels(painter)
            painter.restore()
        if self.extent is not None:
            s = self.scale
            lo_i, hi_i = self.extent
            lo = (int(lo_i[0] * s[0]), int(lo_i[1] * s[1]), int(lo_i[2] * s[2]))
            hi = (int(hi_i[0] * s[0]), int(hi_i[1] * s[1]), int(hi_i[2] * s[2]))
            for show, spacing, colour in (
                    (self.show_block_grid, self.chunk_shape, QColor(255, 255, 255, 70)),
                    (self.show_file_grid, self.unit_shape, QColor(255, 200, 0, 170))):
                steps = (spacing[view.h_axis] * s[view.h_axis],
                         spacing[view.v_axis] * s[view.v_axis])
                if not show or min(steps) <= 0 or min(steps[0] * zh, steps[1] * zv) \
                        < self.MIN_PIXELS:
                    continue
                pen = QPen(colour)
                pen.setCosmetic(True)
                painter.setPen(pen)
                self._paint_lines(painter, lo, hi, steps)
        painter.end()

    def _paint_lines(self, painter: QPainter, lo: Vec3, hi: Vec3,
                     steps: tuple[float, float]) -> None:
        """Grid lines every ``steps`` (horizontal, vertical) view voxels within lo..hi."""
        view = self.view
        ha, va = view.h_axis, view.v_axis
        (vh0, vh1), (vv0, vv1) = view.visible_range()
        h_lo, h_hi = max(lo[ha], vh0), min(hi[ha], vh1)
        v_lo, v_hi = max(lo[va], vv0), min(hi[va], vv1)
        if h_hi <= h_lo or v_hi <= v_lo:
            return
        top = view.to_widget(h_lo, lo[va])[1] if lo[va] >= vv0 else 0.0
        bottom = view.to_widget(h_lo, hi[va])[1] if hi[va] <= vv1 else float(self.height())
        left = view.to_widget(lo[ha], v_lo)[0] if lo[ha] >= vh0 else 0.0
        right = view.to_widget(hi[ha], v_lo)[0] if hi[ha] <= vh1 else float(self.width())
        step_h, step_v = steps
        h = float(np.ceil(h_lo / step_h) * step_h)
        while h <= h_hi:
            x = view.to_widget(h, v_lo)[0]
            painter.drawLine(QPointF(x, top), QPointF(x, bottom))
            h += step_h
        v = float(np.ceil(v_lo / step_v) * step_v)
        while v <= v_hi:
            y = view.to_widget(h_lo, v)[1]
            painter.drawLine(QPointF(left, y), QPointF(right, y))
            v += step_v
