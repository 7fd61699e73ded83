"""The inspector's Problems tab: damage found by the unit scan and by decoding, and what
kept a dataset or a mag from opening.  GUI thread only."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from viewer.core import inspect
from viewer.format import FormatError
from viewer.ui.inspector.host import InspectorHost
from viewer.ui.inspector.target_list import QtTargetList


class QtProblemsTab(QWidget):
    """The Problems tab: one entry per problem (``problems_list``); an entry that names a
    unit (and a chunk) goes there when clicked."""

    #: The number of problems listed changed (the tab's title shows it).
    count_changed = Signal(int)

    def __init__(self, host: InspectorHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.problems_list = QtTargetList(host)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.problems_list)

    def clear(self) -> None:
        self.problems_list.clear()
        self.count_changed.emit(0)

    def add_rows(self, rows: tuple[inspect.UnitStats, ...]) -> None:
        """The problems of a batch of the scan's rows."""
        if not any(r.problems for r in rows):
            return
        for r in rows:
            if r.problems:
                self.add_problems(r.path, r.problems)

    def add_problems(self, path: str, problems: Iterable[FormatError]) -> None:
        """Problems found in the unit at ``path`` (each names its chunk, if any)."""
        self.problems_list.setUpdatesEnabled(False)
        for p in problems:
            self.problems_list.add_target(str(p), p.path or path, p.block)
        self.problems_list.setUpdatesEnabled(True)
        self.count_changed.emit(self.problems_list.count())

    def add_text(self, text: str) -> None:
        """A problem that names no unit (a layer or mag that did not open)."""
        self.problems_list.add_target(text)
        self.count_changed.emit(self.problems_list.count())
