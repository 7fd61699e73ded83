"""What the compare modes draw over a slice view, as transparent child widgets.

``QtCompareOverlay`` covers one ``QtSliceView`` (A's, or B's in side by side) without touching
the view's code, like the inspector's overlays: it follows the view's size through an event
filter, maps dataset coordinates with the view's ``to_widget``, and repaints whenever the view
does.  Over A's views it draws the mode's picture (B in flicker, B right of the divider in
swipe, A - B, the mismatch mask), then the crosshair and label again on top of it; over every
view it outlines the mismatching blocks found so far and wears a badge saying what is shown.
What it draws it asks of an ``OverlaySource`` (the compare controller is one) at every paint;
the overlay knows nothing else of the compare mode.
``QtSwipeHandle`` is the draggable divider of one view in swipe mode.

GUI thread only.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QImage,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
)
from PySide6.QtWidgets import QWidget

from viewer.core.slicing import PlaneRequest
from viewer.ui.compare import modes
from viewer.ui.slice_view import AXIS_NAMES, BACKGROUND, VIEW_COLORS, QtSliceView

A_COLOR = QColor(120, 175, 255)
B_COLOR = QColor(245, 166, 35)
BLOCK_COLOR = QColor(236, 72, 153)
DAMAGED_COLOR = QColor(230, 40, 40)
SELECTED_COLOR = QColor(255, 255, 255)
HANDLE_WIDTH = 14


class OverlaySource(Protocol):
    """What the overlays draw, asked at every paint."""

    @property
    def active(self) -> bool:
        """A B is open (without one the overlays draw nothing)."""
        ...

    @property
    def mode(self) -> str:
        """One of ``modes.MODES``."""
        ...

    @property
    def show_blocks(self) -> bool:
        """Outline the mismatching blocks."""
        ...

    @property
    def block_len(self) -> int:
        """The blocks' smallest side in voxels."""
        ...

    def mode_image(self, axis: int) -> tuple[QImage, tuple[int, int]] | None:
        """The picture over A's view ``axis`` and the dataset (h, v) of its top-left pixel
        (None: A's own image shows)."""
        ...

    def block_rects(self, axis: int, request: PlaneRequest
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_],
                               tuple[int, int, int, int] | None]:
        """The mismatching blocks the plane cuts as (h0, v0, h1, v1), which are damaged, and
        the selected one."""
        ...

    def badge(self, role: str) -> tuple[str, QColor]:
        """The text and colour of the pill a view of ``role`` ("A" or "B") wears."""
        ...


class QtCompareOverlay(QWidget):
    """The compare layer of one view; ``role`` is ``"A"`` (the window's view) or ``"B"``."""

    def __init__(self, view: QtSliceView, source: OverlaySource, role: str) -> None:
        super().__init__(view)
        self.view = view
        self.source = source
        self.role = role
        self.axis = view.axis
        #: Swipe divider as a fraction of the view's width (A views).
        self.swipe = 0.5
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setGeometry(view.rect())
        view.installEventFilter(self)
        self.handle: QtSwipeHandle | None = None
        if role == "A":
            self.handle = QtSwipeHandle(view, self)
        self.show()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and id(watched) == id(self.view):
            self.setGeometry(self.view.rect())
            if self.handle is not None:
                self.handle.place()
        return False

    def divider_x(self) -> float:
        return self.swipe * self.width()

    # -- painting -----------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        c = self.source
        if not c.active or self.view.plane is None:
            return
        painter = QPainter(self)
        try:
            self._paint(painter)
        finally:
            painter.end()

    def _paint(self, painter: QPainter) -> None:
        c = self.source
        mode = c.mode
        picture = c.mode_image(self.axis) if self.role == "A" else None
        if picture is not None:
            image, (h0, v0) = picture
            zh, zv = self.view.scales()  # anisotropic voxels keep their physical shape
            clip = QRectF(0, 0, self.width(), self.height())
            if mode == modes.SWIPE:
                x = self.divider_x()
                clip = QRectF(x, 0, self.width() - x, self.height())
            painter.save()
            painter.setClipRect(clip)
            painter.fillRect(clip, BACKGROUND)
            x0, y0 = self.view.to_widget(h0, v0)
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, min(zh, zv) < 1.0)
            painter.drawImage(QRectF(x0, y0, image.width() * zh, image.height() * zv), image)
            self._paint_crosshair(painter)
            self._paint_frame(painter)
            self.view.paint_scale_bar(painter)  # the picture covered the view's own
            painter.restore()
            if mode != modes.SWIPE:
                self._paint_label(painter)
        if c.show_blocks:
            self._paint_blocks(painter)
        if self.role == "A" and mode == modes.SWIPE:
            self._paint_divider(painter)
        self._paint_badge(painter)

    def _paint_crosshair(self, painter: QPainter) -> None:
        state = self.view.state
        z = state.zoom
        h_axis, v_axis = self.view.h_axis, self.view.v_axis
        cx, cy = self.view.to_widget(state.cursor[h_axis] + 0.5, state.cursor[v_axis] + 0.5)
        gap = max(8.0, z * 1.5 + 3)
        w, h = self.width(), self.height()
        painter.setPen(QPen(VIEW_COLORS[h_axis], 1))
        painter.drawLine(QPointF(cx, 0), QPointF(cx, cy - gap))
        painter.drawLine(QPointF(cx, cy + gap), QPointF(cx, h))
        painter.setPen(QPen(VIEW_COLORS[v_axis], 1))
        painter.drawLine(QPointF(0, cy), QPointF(cx - gap, cy))
        painter.drawLine(QPointF(cx + gap, cy), QPointF(w, cy))

    def _paint_label(self, painter: QPainter) -> None:
        """The view's own label (name and slice), which the picture covered."""
        font = QFont(painter.font())
        font.setBold(True)
        painter.setFont(font)
        text = f"{self.view.name}   {AXIS_NAMES[self.axis]} = {self.view.state.cursor[self.axis]}"
        width = painter.fontMetrics().horizontalAdvance(text) + 14
        painter.fillRect(QRectF(6, 6, width, 22), QColor(0, 0, 0, 150))
        painter.setPen(VIEW_COLORS[self.axis])
        painter.drawText(QRectF(13, 6, 400, 22), Qt.AlignmentFlag.AlignVCenter, text)
        font.setBold(False)
        painter.setFont(font)
        z = self.view.state.zoom
        zoom_text = f"{z:.3g}x" if z >= 1 else f"1/{1 / z:.3g}x"
        axes_text = (f"{AXIS_NAMES[self.view.h_axis]} \u2192   "
                     f"{AXIS_NAMES[self.view.v_axis]} \u2193   {zoom_text}")
        width = painter.fontMetrics().horizontalAdvance(axes_text) + 14
        rect = QRectF(self.width() - width - 6, self.height() - 28, width, 22)
        painter.fillRect(rect, QColor(0, 0, 0, 150))
        painter.setPen(QColor(200, 200, 205))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, axes_text)

    def _paint_frame(self, painter: QPainter) -> None:
        """The dataset's outline and the view's border (focused: its colour), which the
        picture covered."""
        state = self.view.state
        lo, hi = state.bounds
        x0, y0 = self.view.to_widget(lo[self.view.h_axis], lo[self.view.v_axis])
        x1, y1 = self.view.to_widget(hi[self.view.h_axis], hi[self.view.v_axis])
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(QColor(90, 92, 100), 1))
        painter.drawRect(QRectF(x0, y0, x1 - x0, y1 - y0))
        focused = state.focused == self.axis and state.layout is None
        painter.setPen(QPen(VIEW_COLORS[self.axis] if focused else QColor(60, 62, 68), 2))
        painter.drawRect(1, 1, self.width() - 2, self.height() - 2)

    def _paint_blocks(self, painter: QPainter) -> None:
        request = self.view.request
        if request is None:
            return
        rects, damaged, selected = self.source.block_rects(self.axis, request)
        if len(rects) == 0:
            return
        view = self.view
        zh, zv = view.scales()
        fill = QColor(BLOCK_COLOR)
        fill.setAlpha(28 if self.source.mode in (modes.A_ONLY, modes.SIDE) else 0)
        thin = min(zh, zv) * self.source.block_len < 6  # too small to outline: fill them
        if thin:
            fill.setAlpha(150)
        # Widget coordinates of every rectangle at once; only those on screen are drawn.
        ch, cv = view.state.centers[self.axis]
        xy = (rects.astype(np.float64) - (ch, cv, ch, cv)) * (zh, zv, zh, zv) \
            + (self.width() / 2, self.height() / 2, self.width() / 2, self.height() / 2)
        seen = (xy[:, 2] >= 0) & (xy[:, 0] <= self.width()) & (xy[:, 3] >= 0) \
            & (xy[:, 1] <= self.height())
        path = QPainterPath()
        bad = QPainterPath()
        for (x0, y0, x1, y1), is_bad in zip(xy[seen].tolist(), damaged[seen].tolist(), strict=True):
            (bad if is_bad else path).addRect(QRectF(x0, y0, x1 - x0, y1 - y0))
        for shape, colour in ((path, BLOCK_COLOR), (bad, DAMAGED_COLOR)):
            if shape.isEmpty():
                continue
            f = QColor(colour)
            f.setAlpha(fill.alpha())
            painter.fillPath(shape, f)
            if not thin:
                painter.setPen(QPen(colour, 1.5))
                painter.drawPath(shape)
        if selected is not None:
            h0, v0, h1, v1 = selected
            x0, y0 = view.to_widget(h0, v0)
            x1, y1 = view.to_widget(h1, v1)
            pen = QPen(SELECTED_COLOR, 2, Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(QRectF(x0 - 1, y0 - 1, x1 - x0 + 2, y1 - y0 + 2))

    def _paint_divider(self, painter: QPainter) -> None:
        x = self.divider_x()
        painter.setPen(QPen(QColor(255, 255, 255, 220), 2))
        painter.drawLine(QPointF(x, 0), QPointF(x, self.height()))
        grip = QRectF(x - 5, self.height() / 2 - 22, 10, 44)
        painter.setBrush(QColor(255, 255, 255, 220))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawRoundedRect(grip, 4, 4)
        self._pill(painter, "A", A_COLOR, QPointF(x - 8, 34), right_aligned=True)
        self._pill(painter, "B", B_COLOR, QPointF(x + 8, 34))

    def _paint_badge(self, painter: QPainter) -> None:
        if self.role == "A" and self.source.mode == modes.SWIPE:
            return
        text, colour = self.source.badge(self.role)
        if text:
            self._pill(painter, text, colour, QPointF(self.width() - 8, 8), right_aligned=True)

    def _pill(self, painter: QPainter, text: str, colour: QColor, at: QPointF,
              right_aligned: bool = False) -> None:
        font = QFont(painter.font())
        font.setBold(True)
        painter.setFont(font)
        width = painter.fontMetrics().horizontalAdvance(text) + 16
        x = at.x() - width if right_aligned else at.x()
        rect = QRectF(x, at.y(), width, 20)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawRoundedRect(rect, 9, 9)
        painter.setPen(QColor(20, 20, 24))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


class QtSwipeHandle(QWidget):
    """The grip of a view's swipe divider: drag it left or right.  Shown in swipe mode only."""

    def __init__(self, view: QtSliceView, overlay: QtCompareOverlay) -> None:
        super().__init__(view)
        self.view = view
        self.overlay = overlay
        self.setCursor(Qt.CursorShape.SplitHCursor)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setToolTip("Drag: A on the left, B on the right")
        self.hide()

    def place(self) -> None:
        x = round(self.overlay.divider_x()) - HANDLE_WIDTH // 2
        self.setGeometry(x, 0, HANDLE_WIDTH, self.view.height())
        self.raise_()

    def set_fraction(self, fraction: float) -> None:
        self.overlay.swipe = min(max(fraction, 0.0), 1.0)
        self.place()
        self.overlay.update()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton and self.view.width() > 0:
            x = self.mapTo(self.view, event.position().toPoint()).x()
            self.set_fraction(x / self.view.width())
        event.accept()

    def paintEvent(self, event: QPaintEvent) -> None:  # the overlay draws the divider
        pass


__all__ = ["A_COLOR", "B_COLOR", "OverlaySource", "QtCompareOverlay", "QtSwipeHandle"]
