"""The recent datasets: File > Open Recent, kept in QSettings (unless settings are off for the
run, ``viewer.ui.settings``).  GUI thread only."""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtWidgets import QMenu

from viewer.format import is_url
from viewer.ui import settings

RECENT_MAX = 10


class QtRecentDatasets:
    """The last ``RECENT_MAX`` datasets opened, newest first, listed in ``menu``; choosing one
    calls ``open_path`` with it."""

    def __init__(self, menu: QMenu, open_path: Callable[[str], object]) -> None:
        self.menu = menu
        self._open_path = open_path
        self.update_menu()

    def paths(self) -> list[str]:
        """The recent datasets, newest first (absolute paths, or URLs as given)."""
        store = settings.open_settings()
        if store is None:
            return []
        value = store.value("recent", [])
        if isinstance(value, str):  # QSettings gives a list of one as its item
            return [value]
        return [str(v) for v in value] if isinstance(value, (list, tuple)) else []

    def add(self, path: str) -> None:
        store = settings.open_settings()
        if store is None:
            return
        path = path if is_url(path) else os.path.abspath(path)
        items = [path] + [p for p in self.paths() if p != path]
        store.setValue("recent", items[:RECENT_MAX])
        self.update_menu()

    def update_menu(self) -> None:
        self.menu.clear()
        items = self.paths()
        for path in items:
            action = self.menu.addAction(path)
            action.triggered.connect(lambda *_, p=path: self._open_path(p))
        self.menu.setEnabled(bool(items))
