"""The inspector's Problems tab: damage found by the unit scan and by decoding.

Part of ``QtInspectorPanel`` (``viewer.ui.inspector.panel``), which mixes it in; its methods
use the panel's state.  GUI thread only."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QListWidget,
    QListWidgetItem,
)

from viewer.core import inspect


class ProblemsTabMixin:
    """The Problems tab of ``QtInspectorPanel``."""

    def _build_problems_tab(self) -> None:
        self.problems_list = QListWidget()
        self.problems_list.itemClicked.connect(self._on_target_item_clicked)
        self.tabs.addTab(self.problems_list, "Problems")

    def _add_problems(self, rows: tuple[inspect.UnitStats, ...]) -> None:
        if not any(r.problems for r in rows):
            return
        for r in rows:
            if r.problems:
                self._add_problem_items(r.path, r.problems)

    def _add_problem_items(self, path: str, problems: Any) -> None:
        self.problems_list.setUpdatesEnabled(False)
        for p in problems:
            item = QListWidgetItem(str(p))
            item.setData(Qt.ItemDataRole.UserRole, (p.path or path, p.block))
            self.problems_list.addItem(item)
        self.problems_list.setUpdatesEnabled(True)
        self.tabs.setTabText(5, f"Problems ({self.problems_list.count()})")
