"""The inspector's Sizes tab: the histogram of stored chunk sizes (of the shown unit or of
the whole volume) and the list of what one bar holds.  GUI thread only."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QSplitter, QVBoxLayout, QWidget

from viewer.core import inspect
from viewer.core.advise import human_bytes
from viewer.ui.inspector.histogram_bars import QtHistogramBars
from viewer.ui.inspector.host import InspectorHost
from viewer.ui.inspector.state import InspectorState
from viewer.ui.inspector.target_list import QtTargetList

#: Items listed at most when a histogram bar is clicked.
MAX_LISTED = 2000


class QtSizesTab(QSplitter):
    """The Sizes tab: the scope box (``hist_scope``: current unit or whole volume), the
    histogram (``hist_plot``, painted by ``QtHistogramBars``: a pyqtgraph plot cost the GUI
    thread tens of milliseconds to build and show) and the list of a clicked bar's chunks or
    units (``hist_list``; an entry goes there)."""

    def __init__(self, state: InspectorState, host: InspectorHost,
                 parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self._state = state
        self._edges: npt.NDArray[np.float64] | None = None
        top = QWidget()
        v = QVBoxLayout(top)
        v.setContentsMargins(0, 0, 0, 0)
        self.hist_scope = QComboBox()
        self.hist_scope.addItems(["current unit", "whole volume"])
        self.hist_scope.currentIndexChanged.connect(lambda _i: self.refresh())
        v.addWidget(self.hist_scope)
        self.hist_plot = QtHistogramBars("stored chunk size", "chunks", human_bytes)
        self.hist_plot.bin_clicked.connect(self.list_histogram_bin)
        v.addWidget(self.hist_plot, 1)
        self.hist_list = QtTargetList(host)
        self.addWidget(top)
        self.addWidget(self.hist_list)
        self.setStretchFactor(0, 3)  # the histogram gets most of the height
        self.setStretchFactor(1, 1)

    @property
    def whole_volume(self) -> bool:
        """The histogram counts every unit's chunks (else the shown unit's)."""
        return self.hist_scope.currentIndex() == 1

    def volume_changed(self) -> None:
        """A new volume (``state.volume``): its size bins."""
        volume = self._state.volume
        self._edges = inspect.histogram_edges(volume.chunk_nbytes) if volume is not None \
            else None

    def refresh(self) -> None:
        """Draw the histogram of what ``state`` holds now."""
        edges = self._edges
        if edges is None:
            return
        counts: npt.NDArray[np.int64]
        if not self.whole_volume:
            t = self._state.table
            counts = (np.histogram(t.sizes[t.stored], bins=edges)[0] if t is not None
                      else np.zeros(len(edges) - 1, dtype=np.int64))
        else:
            total = self._state.size_histogram
            counts = total.copy() if total is not None and len(total) == len(edges) - 1 \
                else np.zeros(len(edges) - 1, dtype=np.int64)
        self.hist_plot.set_bars(edges, counts)
        self.hist_list.clear()

    def list_histogram_bin(self, bin_index: int) -> None:
        """List the chunks (current unit) or units (whole volume) in histogram bar
        ``bin_index``; clicking an entry goes there."""
        edges = self._edges
        self.hist_list.clear()
        if edges is None or self._state.volume is None or not 0 <= bin_index < len(edges) - 1:
            return
        lo, hi = edges[bin_index], edges[bin_index + 1]
        if not self.whole_volume:
            t = self._state.table
            if t is None:
                return
            found = np.flatnonzero(t.stored & (t.sizes >= lo) & (t.sizes < hi))
            for index in found[:MAX_LISTED].tolist():
                x, y, z = t.coords[index].tolist()
                self.hist_list.add_target(
                    f"chunk {index} ({x}, {y}, {z}): {int(t.sizes[index]):,} B", t.path, index)
            if len(found) > MAX_LISTED:
                self.hist_list.add_target(f"... {len(found) - MAX_LISTED} more")
        else:
            for r in self._state.units:
                if r.histogram is not None and r.histogram[bin_index] > 0:
                    self.hist_list.add_target(f"{r.path}: {int(r.histogram[bin_index])} chunks",
                                              r.path)
