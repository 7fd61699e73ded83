"""The inspector's Units tab: one row per storage unit of the volume (a WKW file, a zarr
shard, an N5 chunk file...), filled by the scan.  GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QTableView, QVBoxLayout, QWidget

from viewer.core import inspect
from viewer.ui.inspector.host import InspectorHost
from viewer.ui.inspector.models import QtFilesModel
from viewer.ui.inspector.table_style import fast_table


class QtFilesTab(QWidget):
    """The Units tab: the table of units (``files_model``, ``files_view``).  The user moving
    its current row (mouse or keyboard) sends the cursor to that unit's centre through
    ``host``; ``select_path`` moves the row without that."""

    def __init__(self, host: InspectorHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._host = host
        self._syncing = False
        self.files_model = QtFilesModel()
        self.files_view = QTableView()
        self.files_view.setModel(self.files_model)
        fast_table(self.files_view)
        self.files_view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.files_view.setSortingEnabled(True)
        self.files_view.horizontalHeader().resizeSection(0, 120)
        # Mouse and keyboard alike: the current row moving is the user's choice.
        self.files_view.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self._on_row_changed(cur))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.files_view)

    def clear(self, root: str) -> None:
        """No units yet (a new volume at ``root``: unit paths are shown relative to it)."""
        self.files_model.clear(root)

    def append(self, rows: tuple[inspect.UnitStats, ...]) -> None:
        """A batch of the scan's rows."""
        self.files_model.append(rows)

    def select_path(self, path: str) -> None:
        """Select the row of the unit at ``path`` (if listed), without moving the cursor."""
        row = self.files_model.row_of_path(path)
        if row is None:
            return
        self._syncing = True
        try:
            self.files_view.selectRow(row)
        finally:
            self._syncing = False

    def _on_row_changed(self, index: QModelIndex | QPersistentModelIndex) -> None:
        if self._syncing or not index.isValid():
            return
        self._host.go_to(self.files_model.rows[index.row()].path, None)
