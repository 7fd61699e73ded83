"""Overlays for the slice views: the compression map and the chunk and storage-unit grids.

Coordinates: every overlay draws in the view's *in-plane voxel coordinates* (u, v) of the
dataset, u along the view's horizontal data axis (XY: x; XZ: x; YZ: y) and v along the other,
one scene unit per voxel, voxel (u, v) covering ``[u, u+1) x [v, v+1)``.  That is the frame of a
pyqtgraph ``ImageItem`` holding the plane with ``axisOrder='col-major'`` placed at the plane's
voxel origin.  A view whose image sits elsewhere applies the same transform to the overlays
(``item.setTransform(image_item.transform())`` / ``setPos``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from viewer.core import inspect

#: The colour map of the compression overlay and its colour bar.
COLORMAP_NAME = "viridis"
#: Overlay opacity (0-255) of a chunk with a value; chunks without one are transparent.
OVERLAY_ALPHA = 150
#: Ratios are coloured on a log2 scale from 1x to 2**RATIO_LOG2_MAX x.
RATIO_LOG2_MAX = 8.0


def colormap() -> pg.ColorMap:
    return pg.colormap.get(COLORMAP_NAME)


def metric_levels(metric: str, chunk_nbytes: int) -> tuple[float, float]:
    """The value range the colour bar spans: bytes 0..chunk_nbytes (incompressible chunks and
    anything larger clip to the top), or log2 ratio 0..RATIO_LOG2_MAX."""
    if metric == inspect.SIZE:
        return (0.0, float(chunk_nbytes))
    return (0.0, RATIO_LOG2_MAX)


def normalised(values: npt.NDArray[np.float64], metric: str,
               chunk_nbytes: int) -> npt.NDArray[np.float64]:
    """Values mapped to 0..1 along the colour bar (NaN stays NaN)."""
    lo, hi = metric_levels(metric, chunk_nbytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = values if metric == inspect.SIZE else np.log2(np.where(np.isinf(values), 2.0 ** hi,
                                                                    values))
        return np.clip((v - lo) / (hi - lo), 0.0, 1.0)


def colourise(values: npt.NDArray[np.float64], metric: str, chunk_nbytes: int,
              alpha: int = OVERLAY_ALPHA) -> npt.NDArray[np.uint8]:
    """RGBA uint8 image ``(U, V, 4)`` of per-chunk values; NaN (nothing stored, damaged range)
    is transparent."""
    norm = normalised(values, metric, chunk_nbytes)
    nan = np.isnan(norm)
    lut = colormap().getLookupTable(0.0, 1.0, 256, alpha=True)
    idx = np.where(nan, 0, np.round(np.nan_to_num(norm) * 255)).astype(np.intp)
    rgba = np.ascontiguousarray(lut[idx])
    rgba[..., 3] = np.where(nan, 0, alpha)
    return rgba.astype(np.uint8)


class QtCompressionOverlay(pg.ImageItem):  # type: ignore[misc]
    """Per-chunk stored size or ratio on one view plane, one image pixel per chunk, scaled to
    cover the chunks' voxels (``chunk_size`` along u and v: chunks need not be cubes).  Built by ``QtInspectorPanel.compression_overlay(axis)``,
    which keeps it up to date as the cursor moves."""

    def __init__(self, axis: int) -> None:
        super().__init__(axisOrder="col-major")
        self.axis = axis
        self.plane: inspect.CompressionPlane | None = None
        self.setZValue(20)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)

    def set_plane(self, plane: inspect.CompressionPlane | None) -> None:
        """Show ``plane`` (None: nothing)."""
        self.plane = plane
        if plane is None or plane.values.size == 0:
            self.clear()
            return
        rgba = colourise(plane.values, plane.metric, plane.chunk_nbytes)
        self.setImage(rgba, autoLevels=False, levels=None)
        nu, nv = plane.values.shape
        cu, cv = plane.chunk_size
        self.setRect(QRectF(plane.origin[0], plane.origin[1], nu * cu, nv * cv))


def _pair(spacing: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(spacing, tuple):
        return (max(1, int(spacing[0])), max(1, int(spacing[1])))
    return (max(1, int(spacing)), max(1, int(spacing)))


class QtGridOverlay(pg.GraphicsObject):  # type: ignore[misc]
    """Lines every ``spacing`` (u, v) voxels over ``extent`` (u0, v0, u1, v1), drawn only where
    they are at least ``MIN_PIXELS`` apart on screen: the chunk grid or the unit grid."""

    MIN_PIXELS = 4.0

    def __init__(self, spacing: int | tuple[int, int], color: Any = (255, 255, 255, 90),
                 width: float = 1.0) -> None:
        super().__init__()
        self.spacing = _pair(spacing)
        self.extent = QRectF()
        self._pen = QPen(QColor(*color) if isinstance(color, tuple) else QColor(color))
        self._pen.setCosmetic(True)
        self._pen.setWidthF(width)
        self.setZValue(21)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)

    def set_grid(self, spacing: int | tuple[int, int], extent: QRectF) -> None:
        self.prepareGeometryChange()
        self.spacing = _pair(spacing)
        self.extent = QRectF(extent)
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(self.extent)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        rect = self.extent.intersected(option.exposedRect) if not option.exposedRect.isEmpty() \
            else QRectF(self.extent)
        if rect.isEmpty():
            return
        t = painter.transform()
        px_u = abs(t.m11()) + abs(t.m21())
        px_v = abs(t.m22()) + abs(t.m12())
        su, sv = self.spacing
        painter.setPen(self._pen)
        if su * px_u >= self.MIN_PIXELS:
            u = np.ceil(rect.left() / su) * su
            while u <= rect.right():
                painter.drawLine(pg.QtCore.QPointF(u, rect.top()),
                                 pg.QtCore.QPointF(u, rect.bottom()))
                u += su
        if sv * px_v >= self.MIN_PIXELS:
            v = np.ceil(rect.top() / sv) * sv
            while v <= rect.bottom():
                painter.drawLine(pg.QtCore.QPointF(rect.left(), v),
                                 pg.QtCore.QPointF(rect.right(), v))
                v += sv


class QtSliceOverlay(QWidget):
    """The compression map and the chunk and unit grids drawn over a QPainter-based slice view
    (``viewer.ui.slice_view.QtSliceView``) as a transparent child widget, so the view's own code
    is untouched.  It follows the view's geometry through an event filter and maps dataset
    coordinates with the view's ``to_widget``; the view's repaints repaint it too.

    The view must offer ``axis``, ``h_axis``, ``v_axis`` (dataset axes along the screen's
    horizontal and vertical), ``state.zoom`` and ``to_widget(h, v) -> (x, y)``.  ``scale``
    (``set_scale``) is the view's voxels per inspected voxel along x, y, z: not 1 when the
    inspected dataset is another mag of a webKnossos layer than the one the view shows.
    """

    MIN_PIXELS = 4.0

    def __init__(self, view: QWidget) -> None:
        super().__init__(view)
        self.view = view
        self.axis: int = view.axis  # type: ignore[attr-defined]
        self.plane: inspect.CompressionPlane | None = None
        self.show_map = False
        self.show_block_grid = False
        self.show_file_grid = False
        #: Chunk and storage-unit sizes in voxels along x, y, z (0: no grid).
        self.chunk_shape: tuple[int, int, int] = (0, 0, 0)
        self.unit_shape: tuple[int, int, int] = (0, 0, 0)
        #: Volume extent in voxels, (lo, hi) per axis, of the units known so far.
        self.extent: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None
        self.scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
        self._image: Any = None
        self._pixels: npt.NDArray[np.uint8] | None = None
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setGeometry(view.rect())
        view.installEventFilter(self)
        self.show()

    def eventFilter(self, watched: Any, event: Any) -> bool:
        from PySide6.QtCore import QEvent

        if watched is self.view and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.view.rect())
        return False

    def set_plane(self, plane: inspect.CompressionPlane | None) -> None:
        from PySide6.QtGui import QImage

        self.plane = plane
        if plane is None or plane.values.size == 0:
            self._image = None
            self._pixels = None
        else:
            u_ax, _ = inspect.IN_PLANE[self.axis]
            values = plane.values.T if self.view.h_axis == u_ax else plane.values  # type: ignore[attr-defined]
            rgba = np.ascontiguousarray(colourise(values, plane.metric, plane.chunk_nbytes))
            self._pixels = rgba
            rows, cols = rgba.shape[:2]
            self._image = QImage(rgba.data, cols, rows, cols * 4, QImage.Format.Format_RGBA8888)
        self.update()

    def set_scale(self, scale: tuple[float, float, float]) -> None:
        """View voxels per inspected voxel along x, y, z."""
        self.scale = (float(scale[0]), float(scale[1]), float(scale[2]))
        self.update()

    def set_grid(self, chunk_shape: tuple[int, int, int], unit_shape: tuple[int, int, int],
                 extent: tuple[tuple[int, int, int], tuple[int, int, int]] | None) -> None:
        """Grid lines every chunk and every storage unit (voxels along x, y, z)."""
        self.chunk_shape = (int(chunk_shape[0]), int(chunk_shape[1]), int(chunk_shape[2]))
        self.unit_shape = (int(unit_shape[0]), int(unit_shape[1]), int(unit_shape[2]))
        self.extent = extent
        self.update()

    def paintEvent(self, event: Any) -> None:
        view: Any = self.view
        painter = QPainter(self)
        zoom = float(view.state.zoom)
        # Screen pixels per view voxel along the view's horizontal and vertical axes: the zoom
        # times the stretch that draws anisotropic voxels in their physical shape.
        zh, zv = view.scales() if hasattr(view, "scales") else (zoom, zoom)
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
                self._paint_lines(painter, view, lo, hi, steps)
        painter.end()

    def _paint_lines(self, painter: QPainter, view: Any, lo: tuple[int, int, int],
                     hi: tuple[int, int, int], steps: tuple[float, float]) -> None:
        """Grid lines every ``steps`` (horizontal, vertical) view voxels within lo..hi."""
        ha, va = view.h_axis, view.v_axis
        (vh0, vh1), (vv0, vv1) = view.visible_range() if hasattr(view, "visible_range") else (
            (lo[ha], hi[ha]), (lo[va], hi[va]))
        h_lo, h_hi = max(lo[ha], vh0), min(hi[ha], vh1)
        v_lo, v_hi = max(lo[va], vv0), min(hi[va], vv1)
        if h_hi <= h_lo or v_hi <= v_lo:
            return
        top = view.to_widget(h_lo, lo[va])[1] if lo[va] >= vv0 else 0.0
        bottom = view.to_widget(h_lo, hi[va])[1] if hi[va] <= vv1 else float(self.height())
        left = view.to_widget(lo[ha], v_lo)[0] if lo[ha] >= vh0 else 0.0
        right = view.to_widget(hi[ha], v_lo)[0] if hi[ha] <= vh1 else float(self.width())
        from PySide6.QtCore import QPointF

        step_h, step_v = steps
        h = np.ceil(h_lo / step_h) * step_h
        while h <= h_hi:
            x = view.to_widget(h, v_lo)[0]
            painter.drawLine(QPointF(x, top), QPointF(x, bottom))
            h += step_h
        v = np.ceil(v_lo / step_v) * step_v
        while v <= v_hi:
            y = view.to_widget(h_lo, v)[1]
            painter.drawLine(QPointF(left, y), QPointF(right, y))
            v += step_v
