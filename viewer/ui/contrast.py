"""The contrast panel: a histogram of the data on screen with min/max handles, auto-contrast,
gamma, invert, colormap and channel.  It edits ``state.contrast`` and follows it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QIcon,
    QLinearGradient,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPen,
    QPixmap,
    QPolygonF,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from viewer.core.state import COLORMAPS, CONTRAST, DATASET, ViewerState
from viewer.render.palette import colormap_table, index_table

HANDLE_GRAB = 6


class QtHistogram(QWidget):
    """Histogram (log counts) with two draggable handles for the low and high level, and the
    current colour ramp under it."""

    #: A handle moved: (lo, hi).
    levels_dragged = Signal(float, float)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)
        self.counts: np.ndarray = np.zeros(0)
        self.edges: np.ndarray = np.array([0.0, 255.0])
        self.lo, self.hi = 0.0, 255.0
        self.ramp: np.ndarray = index_table_grey()
        self._grab: str | None = None
        #: The histogram's outline and what it was made for (range, width, plot height).
        self._path: QPainterPath | None = None
        self._path_for: tuple[float, float, int, int] | None = None

    def set_histogram(self, counts: np.ndarray, edges: np.ndarray) -> None:
        self.counts, self.edges = counts, edges
        self._path = None
        self.update()

    def set_levels(self, lo: float, hi: float, ramp: np.ndarray) -> None:
        self.lo, self.hi, self.ramp = lo, hi, ramp
        self.update()

    def _range(self) -> tuple[float, float]:
        a = min(float(self.edges[0]), self.lo)
        b = max(float(self.edges[-1]), self.hi)
        if b <= a:
            b = a + 1.0
        return a, b

    def _x(self, value: float) -> float:
        a, b = self._range()
        return 4 + (value - a) / (b - a) * (self.width() - 8)

    def _value(self, x: float) -> float:
        a, b = self._range()
        return a + (x - 4) / max(self.width() - 8, 1) * (b - a)

    def paintEvent(self, event: Any) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        w, h = self.width(), self.height()
        plot_h = h - 18
        p.fillRect(0, 0, w, h, QColor(30, 31, 35))
        if self.counts.size:
            p.fillPath(self._outline(plot_h), QColor(150, 160, 180, 150))
        # the colour ramp between the handles
        x_lo, x_hi = self._x(self.lo), self._x(self.hi)
        grad = QLinearGradient(x_lo, 0, x_hi, 0)
        for k in range(0, 256, 32):
            grad.setColorAt(k / 255, QColor.fromRgb(int(self.ramp[k]) & 0xFFFFFF))
        grad.setColorAt(1.0, QColor.fromRgb(int(self.ramp[255]) & 0xFFFFFF))
        p.fillRect(QRectF(0, plot_h + 4, w, 12), QColor.fromRgb(int(self.ramp[0]) & 0xFFFFFF))
        p.fillRect(QRectF(x_hi, plot_h + 4, w - x_hi, 12),
                   QColor.fromRgb(int(self.ramp[255]) & 0xFFFFFF))
        p.fillRect(QRectF(x_lo, plot_h + 4, max(x_hi - x_lo, 1), 12), grad)
        for x in (x_lo, x_hi):
            p.setPen(QPen(QColor(255, 200, 60), 2))
            p.drawLine(QPointF(x, 0), QPointF(x, plot_h + 16))
        p.end()

    def _outline(self, plot_h: int) -> QPainterPath:
        """The histogram's steps as a closed path, worked out with numpy once per histogram,
        range and size (a widget repaints far more often than its histogram changes: every
        view's redraw while a dataset opens)."""
        a, b = self._range()
        key = (a, b, self.width(), plot_h)
        if self._path is not None and self._path_for == key:
            return self._path
        logc = np.log1p(self.counts.astype(np.float64))
        top = logc.max() or 1.0
        # The same arithmetic as ``_x`` and in the same order: the same points to the bit.
        xs = 4 + (self.edges.astype(np.float64) - a) / (b - a) * (self.width() - 8)
        ys = plot_h - logc / top * (plot_h - 6)
        n = len(logc)
        px, py = np.empty(2 * n + 2), np.empty(2 * n + 2)
        px[0], py[0] = xs[0], plot_h
        px[1:-1:2], px[2:-1:2] = xs[:-1], xs[1:]
        py[1:-1:2], py[2:-1:2] = ys, ys
        px[-1], py[-1] = xs[-1], plot_h
        # A step between bins of equal counts repeats a corner, which ``lineTo`` leaves out.
        keep = np.ones(len(px), bool)
        keep[1:] = (px[1:] != px[:-1]) | (py[1:] != py[:-1])
        px, py = px[keep], py[keep]
        path = QPainterPath()
        path.addPolygon(QPolygonF([QPointF(x, y) for x, y in zip(px.tolist(), py.tolist(),
                                                                  strict=True)]))
        path.closeSubpath()
        self._path, self._path_for = path, key
        return path

    def mousePressEvent(self, event: QMouseEvent) -> None:
        x = event.position().x()
        d_lo, d_hi = abs(x - self._x(self.lo)), abs(x - self._x(self.hi))
        self._grab = "lo" if d_lo <= d_hi else "hi"
        self.mouseMoveEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        x = event.position().x()
        near = min(abs(x - self._x(self.lo)), abs(x - self._x(self.hi))) < HANDLE_GRAB
        self.setCursor(Qt.CursorShape.SizeHorCursor if near or self._grab
                       else Qt.CursorShape.ArrowCursor)
        if self._grab is None:
            return
        value = self._value(x)
        lo, hi = self.lo, self.hi
        if self._grab == "lo":
            lo = min(value, hi - 1e-9)
        else:
            hi = max(value, lo + 1e-9)
        self.levels_dragged.emit(lo, hi)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        self._grab = None


def index_table_grey() -> np.ndarray:
    from viewer.core.state import Contrast

    return index_table(Contrast())


class QtContrastPanel(QWidget):
    """Histogram, level fields, Auto, gamma, invert, colormap and channel for one state."""

    #: The person asked for auto-contrast (the window computes it from what is on screen).
    auto_requested = Signal()

    def __init__(self, state: ViewerState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._updating = False
        self.histogram = QtHistogram()
        self.lo = self._spin()
        self.hi = self._spin()
        self.auto = QPushButton("Auto")
        self.auto.setToolTip("Levels from the 0.5 and 99.5 percentiles of the data on screen (A)")
        self.gamma = QDoubleSpinBox()
        self.gamma.setRange(0.1, 10.0)
        self.gamma.setSingleStep(0.1)
        self.gamma.setDecimals(2)
        self.invert = QCheckBox("Invert")
        self.colormap = QComboBox()
        for name in COLORMAPS:
            self.colormap.addItem(name, name)
        self.channel = QComboBox()
        self.channel.setToolTip("Channel shown (multi-channel data)")

        # One field per row: the panel stays narrow (a dock beside the 2x2 grid).
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setHorizontalSpacing(8)
        form.setVerticalSpacing(5)
        form.addRow("Min", self.lo)
        form.addRow("Max", self.hi)
        form.addRow("Gamma", self.gamma)
        form.addRow("Colormap", self.colormap)
        form.addRow("Channel", self.channel)
        buttons = QHBoxLayout()
        buttons.addWidget(self.invert)
        buttons.addStretch(1)
        buttons.addWidget(self.auto)
        form.addRow("", buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(8)
        layout.addWidget(self.histogram)
        layout.addLayout(form)
        layout.addStretch(1)

        self.histogram.levels_dragged.connect(self._on_levels_dragged)
        self.lo.valueChanged.connect(self._on_fields_changed)
        self.hi.valueChanged.connect(self._on_fields_changed)
        self.gamma.valueChanged.connect(self._on_fields_changed)
        self.invert.toggled.connect(self._on_fields_changed)
        self.colormap.currentIndexChanged.connect(self._on_fields_changed)
        self.channel.currentIndexChanged.connect(self._on_channel_changed)
        self.auto.clicked.connect(self.auto_requested.emit)
        state.subscribe(self._on_state_changed)
        self._on_state_changed(frozenset({CONTRAST}))

    @staticmethod
    def _spin() -> QDoubleSpinBox:
        s = QDoubleSpinBox()
        s.setRange(-1e308, 1e308)
        s.setDecimals(3)
        s.setKeyboardTracking(False)
        s.setMinimumWidth(70)
        return s

    def set_channels(self, count: int, rgb_possible: bool) -> None:
        """Offer the dataset's channels (and "RGB" for three uint8 channels)."""
        self._updating = True
        self.channel.clear()
        if rgb_possible:
            self.channel.addItem("RGB")
        for c in range(count):
            self.channel.addItem(f"channel {c}")
        self.channel.setEnabled(count > 1)
        self._updating = False
        self._on_state_changed(frozenset({CONTRAST}))

    def set_integer_levels(self, integer: bool) -> None:
        for s in (self.lo, self.hi):
            s.setDecimals(0 if integer else 4)

    def _on_state_changed(self, changes: frozenset[str]) -> None:
        if CONTRAST not in changes and DATASET not in changes:
            return
        c = self.state.contrast
        self._updating = True
        self.lo.setValue(c.lo)
        self.hi.setValue(c.hi)
        self.gamma.setValue(c.gamma)
        self.invert.setChecked(c.invert)
        at = self.colormap.findData(c.colormap)
        if at < 0:  # a channel's own colour ("#RRGGBB"): named, with a swatch
            swatch = QPixmap(12, 12)
            swatch.fill(QColor(c.colormap))
            self.colormap.addItem(QIcon(swatch), colour_name(c.colormap), c.colormap)
            at = self.colormap.count() - 1
        self.colormap.setCurrentIndex(at)
        rgb_offered = self.channel.count() > 0 and self.channel.itemText(0) == "RGB"
        index = 0 if (c.rgb and rgb_offered) else c.channel + (1 if rgb_offered else 0)
        if 0 <= index < self.channel.count():
            self.channel.setCurrentIndex(index)
        self.colormap.setEnabled(not c.rgb)
        self._updating = False
        self.histogram.set_levels(c.lo, c.hi, index_table(c))

    def _on_levels_dragged(self, lo: float, hi: float) -> None:
        if self.lo.decimals() == 0:
            lo, hi = float(math.floor(lo)), float(math.ceil(hi))
        self.state.set_contrast(lo=lo, hi=hi)

    def _on_fields_changed(self, *args: Any) -> None:
        if self._updating:
            return
        self.state.set_contrast(lo=self.lo.value(), hi=self.hi.value(),
                                gamma=self.gamma.value(), invert=self.invert.isChecked(),
                                colormap=str(self.colormap.currentData()))

    def _on_channel_changed(self, index: int) -> None:
        if self._updating or index < 0:
            return
        rgb_offered = self.channel.itemText(0) == "RGB"
        if rgb_offered and index == 0:
            self.state.set_contrast(rgb=True)
        else:
            self.state.set_contrast(rgb=False, channel=index - (1 if rgb_offered else 0))


#: Names of the standard channel colours (``viewer.core.layered``'s sets).
COLOUR_NAMES = {"#FF0000": "red", "#00FF00": "green", "#0000FF": "blue", "#FF00FF": "magenta",
                "#00FFFF": "cyan", "#FFFF00": "yellow", "#FFFFFF": "white"}


def colour_name(colour: str) -> str:
    """A channel colour as the colormap list shows it: its name, else "colour #RRGGBB"."""
    return COLOUR_NAMES.get(colour.upper(), f"colour {colour.upper()}")


__all__ = ["QtContrastPanel", "QtHistogram", "colormap_table", "colour_name"]
