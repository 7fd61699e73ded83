"""The inspector's Files tab: one row per storage unit of the volume (a WKW file, a zarr
shard, an N5 chunk file...), filled by the scan.

Part of ``QtInspectorPanel`` (``viewer.ui.inspector.panel``), which mixes it in; its methods
use the panel's state.  GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import (
    QTableView,
)

from viewer.ui.inspector.models import QtFilesModel


class FilesTabMixin:
    """The Files tab of ``QtInspectorPanel``."""

    def _build_files_tab(self) -> None:
        self.files_model = QtFilesModel()
        self.files_view = QTableView()
        self.files_view.setModel(self.files_model)
        self._fast_table(self.files_view)
        self.files_view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.files_view.setSortingEnabled(True)
        self.files_view.horizontalHeader().resizeSection(0, 120)
        # Mouse and keyboard alike: the current row moving is the user's choice.
        self.files_view.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self._on_file_row_clicked(cur))
        self.tabs.addTab(self.files_view, "Units")

    def _on_file_row_clicked(self, index: QModelIndex) -> None:
        if self._syncing or not index.isValid():
            return
        row = self.files_model.rows[index.row()]
        self._go_to(row.path, None)
