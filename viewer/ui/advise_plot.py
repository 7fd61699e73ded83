"""The What if plot: each candidate's projected size against its decode speed, the Pareto
front (no other candidate both smaller and faster) joined and marked, the recommendation
ringed, the 95 % intervals as vertical bars.  The inspector's What if tab shows it;
``wkw-viewer advise --plot FILE.png`` writes it (``write_plot``, offscreen).  GUI thread only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from viewer.core.advise import Report

#: Colours: lossless, lossy, the front, the recommendation.
LOSSLESS = (70, 130, 220)
LOSSY = (230, 140, 40)
FRONT = (40, 170, 90)
RECOMMENDED = (220, 40, 40)


class QtAdvisePlot(QWidget):
    """Projected MiB (y) against decode MB/s per core (x: its log10, ticked in MB/s) of a
    ``Report``'s candidates.  ``points`` holds the scatter (for tests); ``front`` the Pareto
    line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        #: The pyqtgraph plot (a ``pg.PlotWidget``).
        self.view: Any = pg.PlotWidget(background="w")
        layout.addWidget(self.view)
        self.view.setLabel("bottom", "decode speed (MB/s of voxels per core, log scale)")
        self.view.setLabel("left", "projected size (MiB)")
        self.view.getAxis("left").enableAutoSIPrefix(False)
        self.view.showGrid(x=True, y=True, alpha=0.3)
        self.points: Any = None
        self.front: Any = None
        self.labels: list[Any] = []

    def show_report(self, report: Report | None) -> None:
        """Draw ``report``'s candidates (None: clear)."""
        self.view.clear()
        self.labels = []
        self.points = self.front = None
        if report is None or not report.projections:
            return
        ps = report.projections
        speed = np.asarray([p.decode_mb_s if math.isfinite(p.decode_mb_s) else 1e5
                            for p in ps])
        size = np.asarray([p.projected_bytes for p in ps]) / 2 ** 20
        lo = np.asarray([p.interval[0] for p in ps]) / 2 ** 20
        hi = np.asarray([p.interval[1] for p in ps]) / 2 ** 20
        # x is log10 of the speed, ticked in MB/s (pyqtgraph's log mode does not reach every
        # item kind alike).
        x = np.log10(np.maximum(speed, 1e-3))
        first, last = int(math.floor(x.min())), int(math.ceil(x.max()))
        ticks = [(float(k), f"{10.0 ** k:g}") for k in range(first, last + 1)]
        minor = [(float(math.log10(m * 10.0 ** k)), "") for k in range(first, last + 1)
                 for m in (2, 5)]
        self.view.getAxis("bottom").setTicks([ticks, minor])
        self.view.addItem(pg.ErrorBarItem(x=x, y=size, top=hi - size, bottom=size - lo, beam=0.0,
                                     pen=pg.mkPen((120, 120, 120), width=1)))
        brushes = [pg.mkBrush(*(LOSSLESS if p.lossless else LOSSY)) for p in ps]
        self.points = pg.ScatterPlotItem(x=x, y=size, size=10, brush=brushes,
                                         pen=pg.mkPen("k"), data=list(range(len(ps))))
        self.view.addItem(self.points)
        front = sorted(report.pareto, key=lambda i: x[i])
        if front:
            self.front = pg.PlotDataItem(x=x[front], y=size[front],
                                         pen=pg.mkPen(FRONT, width=2), symbol="o",
                                         symbolSize=14, symbolBrush=None,
                                         symbolPen=pg.mkPen(FRONT, width=2))
            self.view.addItem(self.front)
        rec = report.recommendation.index
        if rec is not None:
            self.view.addItem(pg.ScatterPlotItem(x=[x[rec]], y=[size[rec]], size=22,
                                            brush=None, pen=pg.mkPen(RECOMMENDED, width=3)))
        for i, p in enumerate(ps):
            text = pg.TextItem(p.candidate.label, color=(40, 40, 40), anchor=(0, 1))
            text.setPos(float(x[i]), float(size[i]))
            self.view.addItem(text)
            self.labels.append(text)


def write_plot(report: Report, path: str, width: int = 1000, height: int = 650) -> None:
    """``report``'s plot as a PNG at ``path`` (a QApplication is made offscreen when there is
    none: the command line has no window).  ``OSError`` when the file cannot be written."""
    import os

    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        if "QT_QPA_PLATFORM" not in os.environ:
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
        app = QApplication([])
        app.setObjectName("wkw-viewer-plot")
    plot = QtAdvisePlot()
    plot.resize(width, height)
    plot.show_report(report)
    from pyqtgraph.exporters import ImageExporter

    exporter = ImageExporter(plot.view.plotItem)
    exporter.parameters()["width"] = width
    image = exporter.export(toBytes=True)
    if not image.save(path, "PNG"):
        raise OSError(f"cannot write {path}")
    plot.close()
    plot.deleteLater()


__all__ = ["QtAdvisePlot", "write_plot"]
