"""The inspector's Map tab: the compression map's metric and colour bar, and the toggles of
the overlays (map, chunk grid, unit grid) on the slice views.  GUI thread only."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QVBoxLayout, QWidget

from viewer.core import inspect
from viewer.core.advise import SAVINGS
from viewer.ui.inspector.overlay import colormap, metric_levels
from viewer.ui.inspector.state import InspectorState


class QtMapTab(QWidget):
    """The Map tab: ``map_toggle``, ``metric_box``, ``block_grid_toggle``,
    ``file_grid_toggle`` and the colour bar (``colorbar``, built when first refreshed) of
    ``state.metric`` over ``state.volume``.  It says what the user chose through its signals;
    the overlays themselves are ``QtOverlaySet``'s."""

    #: The user picked a metric: ``inspect.SIZE`` or ``inspect.RATIO``.
    metric_changed = Signal(str)
    #: The toggles changed: (map, chunk grid, unit grid) shown.
    shown_changed = Signal(bool, bool, bool)

    def __init__(self, state: InspectorState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        v = QVBoxLayout(self)
        self.map_toggle = QCheckBox("compression map on the slice views")
        self.map_toggle.setChecked(False)  # a viewer first: the map is asked for
        self.metric_box = QComboBox()
        self.metric_box.addItems(["compressed size", "compression ratio",
                                  "savings of a What if candidate"])
        self.metric_box.currentIndexChanged.connect(self._on_metric_changed)
        self.block_grid_toggle = QCheckBox("chunk grid")
        self.file_grid_toggle = QCheckBox("storage unit grid")
        for box in (self.map_toggle, self.block_grid_toggle, self.file_grid_toggle):
            box.toggled.connect(self._on_toggled)
        v.addWidget(self.map_toggle)
        v.addWidget(self.metric_box)
        v.addWidget(self.block_grid_toggle)
        v.addWidget(self.file_grid_toggle)
        self._box = v
        self.colorbar: Any = None  # a pg.ColorBarItem once built
        self.colorbar_view: Any = None  # its pg.GraphicsLayoutWidget
        v.addStretch(1)

    @property
    def shown(self) -> tuple[bool, bool, bool]:
        """(map, chunk grid, unit grid): which overlays the user asked for."""
        return (self.map_toggle.isChecked(), self.block_grid_toggle.isChecked(),
                self.file_grid_toggle.isChecked())

    def _on_toggled(self, _checked: bool) -> None:
        self.shown_changed.emit(*self.shown)

    def _on_metric_changed(self, index: int) -> None:
        self.metric_changed.emit((inspect.SIZE, inspect.RATIO, SAVINGS)[index])

    def show_savings(self) -> None:
        """Draw the savings metric and turn the map on (the What if tab's candidate)."""
        if self.metric_box.currentIndex() != 2:
            self.metric_box.setCurrentIndex(2)
        else:
            self.metric_changed.emit(SAVINGS)
        self.map_toggle.setChecked(True)

    def _ensure_colorbar(self) -> Any:
        if self.colorbar is None:
            self.colorbar_view = pg.GraphicsLayoutWidget()
            self.colorbar_view.setFixedHeight(80)
            self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(),
                                            interactive=False, orientation="horizontal",
                                            label="bytes")
            self.colorbar_view.addItem(self.colorbar)
            self._box.insertWidget(4, self.colorbar_view)
        return self.colorbar

    def refresh(self) -> None:
        """The colour bar of ``state.metric`` over ``state.volume``'s chunks."""
        volume = self._state.volume
        if volume is None:
            return
        colorbar = self._ensure_colorbar()
        metric = self._state.metric
        colorbar.setLevels(metric_levels(metric, volume.chunk_nbytes))
        savings = self._state.savings
        colorbar.axis.setLabel(
            "stored bytes per chunk" if metric == inspect.SIZE
            else "log2 compression ratio" if metric == inspect.RATIO
            else f"share of today's bytes saved by {savings.label if savings else '...'}")
