"""The inspector's Byte layout tab: where each chunk lies in its unit, and the chunks the
cursor's planes need.  GUI thread only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from viewer.core import inspect
from viewer.ui.inspector.state import InspectorState

AXIS_NAMES = {2: "XY", 1: "XZ", 0: "YZ"}
AXIS_COLOURS = {2: (230, 60, 60), 1: (60, 200, 60), 0: (80, 120, 255)}


class QtByteLayoutTab(QWidget):
    """The Byte layout tab: each chunk's start offset against its index in the shown unit
    (``layout_plot``, built when first refreshed), the chunks each of the three planes
    through the cursor needs (``layout_marks`` by normal axis) and what reading them costs
    (``layout_text``)."""

    def __init__(self, state: InspectorState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        v = QVBoxLayout(self)
        self._box = v
        self.layout_plot: Any = None  # a pg.PlotWidget once built
        self.layout_curve: Any = None  # its pg.PlotDataItem
        self.layout_marks: dict[int, Any] = {}  # pg.ScatterPlotItem by normal axis
        self.layout_text = QLabel("")
        # One line per plane, wrapped onto a second in a narrow quadrant: the label's height
        # is fixed at two lines per plane, so the page never grows taller than the quadrant
        # (height for width inside the tab stack would).
        self.layout_text.setWordWrap(True)
        self.layout_text.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.layout_text.setFixedHeight(6 * self.layout_text.fontMetrics().lineSpacing() + 2)
        v.addWidget(self.layout_text)

    def _ensure_plot(self) -> Any:
        if self.layout_plot is None:
            self.layout_plot = pg.PlotWidget()
            self.layout_plot.setLabel("bottom", "chunk index in the unit")
            self.layout_plot.setLabel("left", "byte offset", units="B")
            self.layout_curve = self.layout_plot.plot([], [],
                                                      pen=pg.mkPen((180, 180, 180), width=1))
            self.layout_curve.setDownsampling(auto=True, method="peak")  # 32,768 points
            self.layout_curve.setClipToView(True)
            for axis, colour in AXIS_COLOURS.items():
                item = pg.ScatterPlotItem(size=4, pen=None, brush=pg.mkBrush(*colour, 200))
                self.layout_plot.addItem(item)
                self.layout_marks[axis] = item
            self._box.insertWidget(0, self.layout_plot, 1)
        return self.layout_plot

    def refresh(self) -> None:
        """Draw the shown unit's layout and the cursor's planes' chunks."""
        self._ensure_plot()
        t = self._state.table
        if t is None:
            self.layout_curve.setData([], [])
            for item in self.layout_marks.values():
                item.setData([], [])
            self.layout_text.setText("")
            return
        starts = t.starts.astype(np.float64)
        starts[(t.flags & (inspect.ABSENT | inspect.STORED_CONSTANT)) != 0] = np.nan
        self.layout_curve.setData(np.arange(t.num_chunks), starts, connect="finite")
        self._update_marks(t)

    def _update_marks(self, t: inspect.UnitTable) -> None:
        cursor, volume = self._state.cursor, self._state.volume
        if cursor is None or volume is None:
            return
        side = volume.unit_len_vx
        stored = (t.flags & (inspect.ABSENT | inspect.STORED_CONSTANT)) == 0
        lines = []
        for axis, item in self.layout_marks.items():
            need = inspect.plane_chunks(t, axis, cursor[axis] % side[axis])
            need = need[stored[need]]
            item.setData(need.astype(np.float64), t.starts[need].astype(np.float64))
            runs = inspect.read_runs(t, need)
            span = (int(t.ends[need].max() - t.starts[need].min()) if len(need) else 0)
            lines.append(f"{AXIS_NAMES[axis]} plane {'xyz'[axis]}={cursor[axis]}: "
                         f"{len(need):,} chunks, {int(t.sizes[need].sum()):,} B in {runs:,} "
                         f"read(s) over a {span:,} B span")
        self.layout_text.setText("\n".join(lines))
