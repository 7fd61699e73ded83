"""A list whose entries are places in the volume (a unit, or one chunk of it): clicking one
moves the cursor there.  The Problems tab and the Sizes tab's bar contents are such lists.
GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QWidget

from viewer.ui.inspector.host import InspectorHost


class QtTargetList(QListWidget):
    """Entries of text, each optionally with a target ``(unit path, chunk index or None)``;
    a click on an entry with a target calls ``host.go_to`` with it."""

    def __init__(self, host: InspectorHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._host = host
        self.itemClicked.connect(self.open_item)

    def add_target(self, text: str, path: str | None = None, chunk: int | None = None) -> None:
        """Append an entry; with ``path`` it is a target (a unit, or its chunk ``chunk``)."""
        item = QListWidgetItem(text)
        if path is not None:
            item.setData(Qt.ItemDataRole.UserRole, (path, chunk))
        self.addItem(item)

    def target(self, row: int) -> tuple[str, int | None] | None:
        """The target of entry ``row`` (None: a plain entry, or no such row)."""
        item = self.item(row)
        if item is None:
            return None
        data = item.data(Qt.ItemDataRole.UserRole)
        if not data:
            return None
        path, chunk = data
        return str(path), None if chunk is None else int(chunk)

    def open_item(self, item: QListWidgetItem) -> None:
        """Go to ``item``'s target, as a click does (nothing for a plain entry)."""
        found = self.target(self.row(item))
        if found is not None:
            self._host.go_to(*found)
