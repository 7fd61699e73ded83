"""The inspector's Problems tab: every problem the program knows of for the inspected layer
and mag: what kept the dataset or a mag from opening (structure checks), damage found by the
unit scan and by decoding in the tabs, and chunks that failed to read, decode or verify (or
whose file another program is changing) as they are met while browsing.  Above the list, what
was checked; with no problem, that nothing was found.  GUI thread only."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from viewer.core import inspect
from viewer.format import FormatError
from viewer.ui.inspector.host import InspectorHost
from viewer.ui.inspector.target_list import QtTargetList


class QtProblemsTab(QWidget):
    """The Problems tab: one entry per problem (``problems_list``, each listed once); an entry
    that names a unit (and a chunk) goes there when activated.  ``summary`` says what was
    checked and, with no entry, that nothing was found."""

    #: The number of problems listed changed (the tab's title shows it).
    count_changed = Signal(int)

    def __init__(self, host: InspectorHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.problems_list = QtTargetList(host)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(self.problems_list)
        self._seen: set[str] = set()
        self._checks: dict[str, str] = {}
        self._show_summary()

    def clear(self) -> None:
        self.problems_list.clear()
        self._seen.clear()
        self._checks.clear()
        self._show_summary()
        self.count_changed.emit(0)

    def set_check(self, name: str, text: str) -> None:
        """Say what check ``name`` covered (``text``: "the dataset's structure on opening",
        "12 of 12 storage units scanned", ...); shown in the summary in the order first set."""
        self._checks[name] = text
        self._show_summary()

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
            self.add_problem(str(p), p.path or path, p.block)
        self.problems_list.setUpdatesEnabled(True)

    def add_problem(self, text: str, path: str | None = None, chunk: int | None = None) -> None:
        """One problem (listed once however often it is met); with ``path`` activating it
        goes to that unit (its chunk ``chunk``)."""
        if text in self._seen:
            return
        self._seen.add(text)
        self.problems_list.add_target(text, path, chunk)
        self._show_summary()
        self.count_changed.emit(self.problems_list.count())

    def add_text(self, text: str) -> None:
        """A problem that names no unit (a layer or mag that did not open)."""
        self.add_problem(text)

    def _show_summary(self) -> None:
        checked = "; ".join(self._checks.values())
        n = self.problems_list.count()
        if not checked:
            self.summary.setText("Nothing checked yet." if not n else
                                 f"{n} problem{'s' if n != 1 else ''}.")
            return
        if n:
            self.summary.setText(f"{n} problem{'s' if n != 1 else ''}. Checked: {checked}.")
        else:
            self.summary.setText(f"No problems found. Checked: {checked}.")
