"""The inspector's Sizes tab: the histogram of stored chunk sizes and the list of what one
bar holds.

Part of ``QtInspectorPanel`` (``viewer.ui.inspector.panel``), which mixes it in; its methods
use the panel's state.  GUI thread only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

#: Items listed at most when a histogram bar is clicked.
MAX_LISTED = 2000


class SizesTabMixin:
    """The Sizes tab of ``QtInspectorPanel``."""

    def _build_sizes_tab(self) -> None:
        split = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        v = QVBoxLayout(top)
        v.setContentsMargins(0, 0, 0, 0)
        self.hist_scope = QComboBox()
        self.hist_scope.addItems(["current unit", "whole volume"])
        self.hist_scope.currentIndexChanged.connect(lambda _i: self._update_histogram())
        v.addWidget(self.hist_scope)
        self._hist_box = v
        self.hist_plot: pg.PlotWidget | None = None  # built when first shown
        self.hist_list = QListWidget()
        self.hist_list.itemClicked.connect(self._on_target_item_clicked)
        split.addWidget(top)
        split.addWidget(self.hist_list)
        split.setStretchFactor(0, 3)  # the histogram gets most of the height
        split.setStretchFactor(1, 1)
        self.tabs.addTab(split, "Sizes")

    def _ensure_hist_plot(self) -> pg.PlotWidget:
        """The histogram plot, built on first use (pyqtgraph plots cost to build)."""
        if self.hist_plot is None:
            self.hist_plot = pg.PlotWidget()
            self.hist_plot.setLabel("bottom", "stored chunk size", units="B")
            self.hist_plot.setLabel("left", "chunks")
            self.hist_plot.setMouseEnabled(x=False, y=False)
            self.hist_plot.setMinimumHeight(160)  # the list below takes what is left
            self.hist_bars = pg.BarGraphItem(x0=[], x1=[], height=[], brush=(90, 140, 220))
            self.hist_plot.addItem(self.hist_bars)
            self.hist_plot.scene().sigMouseClicked.connect(self._on_histogram_clicked)
            self._hist_box.addWidget(self.hist_plot, 1)
        return self.hist_plot

    def _update_histogram(self) -> None:
        edges = self._hist_edges
        if edges is None:
            return
        if self.hist_scope.currentIndex() == 0:
            t = self.current_table
            counts = (np.histogram(t.sizes[t.stored], bins=edges)[0] if t is not None
                      else np.zeros(len(edges) - 1, dtype=np.int64))
        else:
            counts = np.zeros(len(edges) - 1, dtype=np.int64)
            for r in self.files_model.rows:
                if r.histogram is not None and len(r.histogram) == len(counts):
                    counts += r.histogram
        plot = self._ensure_hist_plot()
        self.hist_bars.setOpts(x0=edges[:-1], x1=edges[1:], height=counts)
        plot.enableAutoRange()
        self.hist_list.clear()

    def _on_histogram_clicked(self, event: Any) -> None:
        edges = self._hist_edges
        if edges is None or self.volume is None:
            return
        vb = self._ensure_hist_plot().getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        x = vb.mapSceneToView(event.scenePos()).x()
        self.list_histogram_bin(int(np.searchsorted(edges, x, side="right")) - 1)

    def list_histogram_bin(self, bin_index: int) -> None:
        """List the chunks (current unit) or units (whole volume) in histogram bar
        ``bin_index``; clicking an entry goes there."""
        edges = self._hist_edges
        self.hist_list.clear()
        if edges is None or self.volume is None or not 0 <= bin_index < len(edges) - 1:
            return
        lo, hi = edges[bin_index], edges[bin_index + 1]
        if self.hist_scope.currentIndex() == 0:
            t = self.current_table
            if t is None:
                return
            found = np.flatnonzero(t.stored & (t.sizes >= lo) & (t.sizes < hi))
            for index in found[:MAX_LISTED].tolist():
                x, y, z = t.coords[index].tolist()
                item = QListWidgetItem(f"chunk {index} ({x}, {y}, {z}): {int(t.sizes[index]):,} B")
                item.setData(Qt.ItemDataRole.UserRole, (t.path, index))
                self.hist_list.addItem(item)
            if len(found) > MAX_LISTED:
                self.hist_list.addItem(f"... {len(found) - MAX_LISTED} more")
        else:
            for r in self.files_model.rows:
                if r.histogram is not None and r.histogram[bin_index] > 0:
                    item = QListWidgetItem(f"{r.path}: {int(r.histogram[bin_index])} chunks")
                    item.setData(Qt.ItemDataRole.UserRole, (r.path, None))
                    self.hist_list.addItem(item)
