"""The inspector's Map tab: the compression map's metric and colour bar, and the toggles
and spacing of the overlays (map, chunk grid, unit grid) on the slice views.

Part of ``QtInspectorPanel`` (``viewer.ui.inspector.panel``), which mixes it in; its methods
use the panel's state.  GUI thread only."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QVBoxLayout,
    QWidget,
)

from viewer.core import inspect
from viewer.ui.inspector.loaded_file import Vec3
from viewer.ui.inspector.overlay import (
    colormap,
    metric_levels,
)
from viewer.ui.inspector.tab_index import MAP_TAB


class MapTabMixin:
    """The Map tab of ``QtInspectorPanel`` and the overlays it drives."""

    def _build_map_tab(self) -> None:
        w = QWidget()
        v = QVBoxLayout(w)
        self.map_toggle = QCheckBox("compression map on the slice views")
        self.map_toggle.setChecked(False)  # a viewer first: the map is asked for
        self.map_toggle.toggled.connect(self._on_overlay_toggles)
        self.metric_box = QComboBox()
        self.metric_box.addItems(["compressed size", "compression ratio"])
        self.metric_box.currentIndexChanged.connect(self._on_metric_changed)
        self.block_grid_toggle = QCheckBox("chunk grid")
        self.file_grid_toggle = QCheckBox("storage unit grid")
        for box in (self.block_grid_toggle, self.file_grid_toggle):
            box.toggled.connect(self._on_overlay_toggles)
        v.addWidget(self.map_toggle)
        v.addWidget(self.metric_box)
        v.addWidget(self.block_grid_toggle)
        v.addWidget(self.file_grid_toggle)
        self._map_box = v
        self.colorbar: pg.ColorBarItem | None = None  # built when first shown
        v.addStretch(1)
        self.tabs.addTab(w, "Map")

    def _ensure_colorbar(self) -> pg.ColorBarItem:
        if self.colorbar is None:
            self.colorbar_view = pg.GraphicsLayoutWidget()
            self.colorbar_view.setFixedHeight(80)
            self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(),
                                            interactive=False, orientation="horizontal",
                                            label="bytes")
            self.colorbar_view.addItem(self.colorbar)
            self._map_box.insertWidget(4, self.colorbar_view)
        return self.colorbar

    def _on_metric_changed(self, index: int) -> None:
        self._metric = inspect.SIZE if index == 0 else inspect.RATIO
        self._update_colorbar()
        self._overlay_keys.clear()
        self._refresh_overlays()

    def _update_colorbar(self) -> None:
        if self.volume is None:
            return
        if self.tabs.currentIndex() != MAP_TAB and self.colorbar is None:
            self._dirty_tabs.add(MAP_TAB)
            return
        colorbar = self._ensure_colorbar()
        lo, hi = metric_levels(self._metric, self.volume.chunk_nbytes)
        colorbar.setLevels((lo, hi))
        colorbar.axis.setLabel("stored bytes per chunk" if self._metric == inspect.SIZE
                                    else "log2 compression ratio")

    def _on_overlay_toggles(self, *_args: Any) -> None:
        for item in self._overlays.values():
            item.setVisible(self.map_toggle.isChecked())
        for block, files in self._grids.values():
            block.setVisible(self.block_grid_toggle.isChecked())
            files.setVisible(self.file_grid_toggle.isChecked())
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.show_map = self.map_toggle.isChecked()
                w.show_block_grid = self.block_grid_toggle.isChecked()
                w.show_file_grid = self.file_grid_toggle.isChecked()
                w.update()

    def _update_grid_spacing(self) -> None:
        if self.volume is None:
            return
        chunk, unit = self.volume.chunk_shape, self.volume.unit_len_vx
        for axis, (block, files) in self._grids.items():
            u, v = inspect.IN_PLANE[axis]
            block.set_grid((chunk[u], chunk[v]), block.extent)
            files.set_grid((unit[u], unit[v]), files.extent)
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.set_grid(chunk, unit, self._extent)

    def _update_grid_extent(self, positions: set[Vec3]) -> None:
        if self.volume is None or not positions:
            return
        side = self.volume.unit_len_vx
        lo = [min(p[a] for p in positions) * side[a] for a in range(3)]
        hi = [(max(p[a] for p in positions) + 1) * side[a] for a in range(3)]
        extent = ((lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2]))
        if extent != self._extent:
            self._extent = extent
            self._update_grid_spacing()
        for axis, (block, files) in self._grids.items():
            u, v = inspect.IN_PLANE[axis]
            rect = QRectF(lo[u], lo[v], hi[u] - lo[u], hi[v] - lo[v])
            block.set_grid(block.spacing, rect)
            files.set_grid(files.spacing, rect)
