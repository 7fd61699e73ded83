"""Overlays for the slice views: the compression map and the block and file grids.

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
#: Overlay opacity (0-255) of a block with a value; blocks without one are transparent.
OVERLAY_ALPHA = 150
#: Ratios are coloured on a log2 scale from 1x to 2**RATIO_LOG2_MAX x.
RATIO_LOG2_MAX = 8.0


def colormap() -> pg.ColorMap:
    return pg.colormap.get(COLORMAP_NAME)


def metric_levels(metric: str, block_bytes: int) -> tuple[float, float]:
    """The value range the colour bar spans: bytes 0..block_bytes (incompressible blocks and
    anything larger clip to the top), or log2 ratio 0..RATIO_LOG2_MAX."""
    if metric == inspect.SIZE:
        return (0.0, float(block_bytes))
    return (0.0, RATIO_LOG2_MAX)


def normalised(values: npt.NDArray[np.float64], metric: str,
               block_bytes: int) -> npt.NDArray[np.float64]:
    """Values mapped to 0..1 along the colour bar (NaN stays NaN)."""
    lo, hi = metric_levels(metric, block_bytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = values if metric == inspect.SIZE else np.log2(np.where(np.isinf(values), 2.0 ** hi,
                                                                    values))
        return np.clip((v - lo) / (hi - lo), 0.0, 1.0)


def colourise(values: npt.NDArray[np.float64], metric: str, block_bytes: int,
              alpha: int = OVERLAY_ALPHA) -> npt.NDArray[np.uint8]:
    """RGBA uint8 image ``(U, V, 4)`` of per-block values; NaN (no file, damaged range) is
    transparent."""
    norm = normalised(values, metric, block_bytes)
    nan = np.isnan(norm)
    lut = colormap().getLookupTable(0.0, 1.0, 256, alpha=True)
    idx = np.where(nan, 0, np.round(np.nan_to_num(norm) * 255)).astype(np.intp)
    rgba = np.ascontiguousarray(lut[idx])
    rgba[..., 3] = np.where(nan, 0, alpha)
    return rgba.astype(np.uint8)


class QtCompressionOverlay(pg.ImageItem):  # type: ignore[misc]
    """Per-block compressed size or ratio on one view plane, one image pixel per block, scaled
    to cover the blocks' voxels.  Built by ``QtInspectorPanel.compression_overlay(axis)``,
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
        rgba = colourise(plane.values, plane.metric, plane.block_bytes)
        self.setImage(rgba, autoLevels=False, levels=None)
        nu, nv = plane.values.shape
        b = plane.block_len
        self.setRect(QRectF(plane.origin[0], plane.origin[1], nu * b, nv * b))


class QtGridOverlay(pg.GraphicsObject):  # type: ignore[misc]
    """Lines every ``spacing`` voxels over ``extent`` (u0, v0, u1, v1), drawn only where they
    are at least ``MIN_PIXELS`` apart on screen: the block grid or the file grid."""

    MIN_PIXELS = 4.0

    def __init__(self, spacing: int, color: Any = (255, 255, 255, 90), width: float = 1.0) -> None:
        super().__init__()
        self.spacing = int(spacing)
        self.extent = QRectF()
        self._pen = QPen(QColor(*color) if isinstance(color, tuple) else QColor(color))
        self._pen.setCosmetic(True)
        self._pen.setWidthF(width)
        self.setZValue(21)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)

    def set_grid(self, spacing: int, extent: QRectF) -> None:
        self.prepareGeometryChange()
        self.spacing = max(1, int(spacing))
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
        s = self.spacing
        painter.setPen(self._pen)
        if s * px_u >= self.MIN_PIXELS:
            u = np.ceil(rect.left() / s) * s
            while u <= rect.right():
                painter.drawLine(pg.QtCore.QPointF(u, rect.top()),
                                 pg.QtCore.QPointF(u, rect.bottom()))
                u += s
        if s * px_v >= self.MIN_PIXELS:
            v = np.ceil(rect.top() / s) * s
            while v <= rect.bottom():
                painter.drawLine(pg.QtCore.QPointF(rect.left(), v),
                                 pg.QtCore.QPointF(rect.right(), v))
                v += s
