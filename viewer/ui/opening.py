"""Helpers for opening datasets: the bridge that brings the background extent scan's reports
to the GUI thread, and the recent-datasets list.

``RecentDatasetsMixin`` is a part of ``QtMainWindow`` (viewer.ui.main_window): its methods run on
the window and use its ``recent_menu`` and ``open_path``.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, Signal

from viewer.core import extent
from viewer.format import is_url
from viewer.ui import settings

RECENT_MAX = 10


class QtExtentBridge(QObject):
    """Carries an ``ExtentScan``'s reports from its thread to the GUI thread (queued)."""

    #: (scan, bounds, done): the files found so far span ``bounds``.
    extent_found = Signal(object, object, bool)

    def report(self, scan: extent.ExtentScan, bounds: extent.Bounds, done: bool) -> None:
        """Called on the scan's thread."""
        self.extent_found.emit(scan, bounds, done)


class RecentDatasetsMixin:
    """The recent datasets of ``QtMainWindow`` (kept in QSettings, unless settings are off)."""

    # -- recent datasets ---------------------------------------------------------------------
    def recent(self) -> list[str]:
        store = settings.open_settings()
        if store is None:
            return []
        value = store.value("recent", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: str) -> None:
        store = settings.open_settings()
        if store is None:
            return
        path = path if is_url(path) else os.path.abspath(path)
        items = [path] + [p for p in self.recent() if p != path]
        store.setValue("recent", items[:RECENT_MAX])
        self._update_recent_menu()

    def _update_recent_menu(self) -> None:
        self.recent_menu.clear()
        items = self.recent()
        for path in items:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda *_, p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(items))
