"""A histogram drawn with QPainter: bars over bin edges, the count axis on the left, the edges'
first, middle and last values below.  The Sizes tab's plot: a pyqtgraph plot costs tens of
milliseconds of the GUI thread to build and to lay out its axes the first time it is shown,
this costs a paint of a few dozen rectangles.  GUI thread only."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

BAR_COLOR = QColor(90, 140, 220)
#: Pixels around the bars: left (count labels), top, right, bottom (edge labels, axis title).
MARGINS = (48, 8, 12, 34)


class QtHistogramBars(QWidget):
    """Bars of ``counts`` over ``edges`` (``set_bars``); a click on the bars' area says which
    bin it fell in (``bin_clicked``; -1 left of the first edge, ``len(counts)`` past the
    last)."""

    #: The person clicked at the x of this bin.
    bin_clicked = Signal(int)

    def __init__(self, x_label: str = "", y_label: str = "",
                 value_text: Callable[[float], str] = "{:.3g}".format,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: The axes' titles, and how a value of the edges is written below the bars.
        self.x_label, self.y_label, self.value_text = x_label, y_label, value_text
        self.edges: npt.NDArray[np.float64] = np.zeros(0)
        self.counts: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self.setMinimumHeight(160)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_bars(self, edges: npt.NDArray[np.float64], counts: npt.NDArray[np.int64]) -> None:
        """Show ``counts[i]`` over ``[edges[i], edges[i + 1])``."""
        self.edges = np.asarray(edges, dtype=np.float64)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.update()

    def plot_rect(self) -> QRectF:
        """Where the bars are drawn, in widget pixels."""
        left, top, right, bottom = MARGINS
        return QRectF(left, top, max(1.0, self.width() - left - right),
                      max(1.0, self.height() - top - bottom))

    def bin_at(self, x: float) -> int:
        """The bin under widget x ``x``."""
        edges = self.edges
        if len(edges) < 2:
            return -1
        area = self.plot_rect()
        value = edges[0] + (x - area.left()) / area.width() * (edges[-1] - edges[0])
        return int(np.searchsorted(edges, value, side="right")) - 1

    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        if len(self.edges) >= 2 and self.plot_rect().contains(pos):
            self.bin_clicked.emit(self.bin_at(pos.x()))
        super().mousePressEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            area = self.plot_rect()
            text = self.palette().color(QPalette.ColorRole.WindowText)
            painter.setPen(text)
            painter.drawLine(area.bottomLeft(), area.bottomRight())
            painter.drawLine(area.bottomLeft(), area.topLeft())
            edges, counts = self.edges, self.counts
            top = int(counts.max()) if len(counts) else 0
            metrics = painter.fontMetrics()
            h = metrics.height()
            painter.drawText(QRectF(0, area.top() - 2, area.left() - 4, h),
                             Qt.AlignmentFlag.AlignRight, f"{top:,}")
            painter.drawText(QRectF(0, area.bottom() - h + 2, area.left() - 4, h),
                             Qt.AlignmentFlag.AlignRight, "0")
            painter.save()
            painter.translate(10, area.center().y())
            painter.rotate(-90)
            painter.drawText(QRectF(-area.height() / 2, -h / 2, area.height(), h),
                             Qt.AlignmentFlag.AlignCenter, self.y_label)
            painter.restore()
            if len(edges) >= 2:
                span = edges[-1] - edges[0]
                for frac, align in ((0.0, Qt.AlignmentFlag.AlignLeft),
                                    (0.5, Qt.AlignmentFlag.AlignHCenter),
                                    (1.0, Qt.AlignmentFlag.AlignRight)):
                    x = area.left() + frac * area.width() - 120 * frac
                    painter.drawText(QRectF(x, area.bottom() + 2, 120, h), align,
                                     self.value_text(edges[0] + frac * span))
                painter.drawText(QRectF(area.left(), area.bottom() + 2 + h, area.width(), h),
                                 Qt.AlignmentFlag.AlignHCenter, self.x_label)
            if top > 0 and len(edges) >= 2:
                scale_x = area.width() / (edges[-1] - edges[0])
                scale_y = area.height() / top
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(BAR_COLOR)
                for i in np.flatnonzero(counts).tolist():
                    x0 = area.left() + (edges[i] - edges[0]) * scale_x
                    x1 = area.left() + (edges[i + 1] - edges[0]) * scale_x
                    height = counts[i] * scale_y
                    painter.drawRect(QRectF(x0, area.bottom() - height, max(1.0, x1 - x0),
                                            height))
        finally:
            painter.end()


__all__ = ["QtHistogramBars"]
