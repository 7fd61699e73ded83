"""The window remembers, between sessions: its geometry and dock layout, and for each dataset
(by absolute path, or URL) the last cursor, zoom, active layer, and each layer's contrast,
colormap, visibility, opacity and locked mag (``viewer.core.view_memory``), restored when the
dataset is opened again unless ``--pos``/``--zoom`` say otherwise.

View menu: *Remember Each Dataset's View* (on by default; off: nothing per dataset is read or
written) and *Reset Window Layout and Remembered Views*.  With settings off (``--no-settings``,
``--screenshot``, ``WKW_VIEWER_NO_SETTINGS``; ``viewer.ui.settings``) nothing is read or
written.  ``install_memory(window)`` mounts it.  GUI thread only.
"""

from __future__ import annotations

import json
import os
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QObject

from viewer.core import view_memory
from viewer.ui import settings
from viewer.ui.actions import add_action, find_menu
from viewer.ui.main_window import QtMainWindow
from viewer.ui.screen_fit import fit_to_screen

GEOMETRY_KEY = "window/geometry"
DOCKS_KEY = "window/docks"
VIEWS_KEY = "views"
REMEMBER_KEY = "remember_views"


def dataset_key(path: str) -> str:
    """How a dataset is known: its absolute path, or its URL as given."""
    return path if "://" in path else os.path.abspath(path)


class QtWindowMemory(QObject):
    """Saves and restores one window's layout and its datasets' views."""

    def __init__(self, window: QtMainWindow) -> None:
        super().__init__(window)
        self.window = window
        self._key: str | None = None
        self._view: dict[str, Any] | None = None
        self._default_docks = window.saveState()
        self._default_size = window.size()
        view_menu = find_menu(window, "View")
        if view_menu is not None:
            view_menu.addSeparator()
        self.remember_action = add_action(window, "&Remember Each Dataset's View",
                                          self._on_remember_toggled, menu=view_menu,
                                          checkable=True)
        self.reset_action = add_action(window, "Reset Window Layout and Remembered Views",
                                       self.reset, menu=view_menu)
        store = settings.open_settings()
        self.remember_action.setChecked(store is not None and _flag(store.value(REMEMBER_KEY,
                                                                                True)))
        for action in (self.remember_action, self.reset_action):
            action.setEnabled(store is not None)
            if store is None:
                action.setToolTip("Settings are off for this run")
        if store is not None:
            geometry = store.value(GEOMETRY_KEY)
            if isinstance(geometry, QByteArray):
                window.restoreGeometry(geometry)
            self.restore_docks()
        window.state.subscribe(self._on_state_changed)
        window.dataset_opened.connect(self._on_dataset_opened)
        window.installEventFilter(self)

    @property
    def remembering(self) -> bool:
        return settings.enabled() and self.remember_action.isChecked()

    def restore_docks(self) -> None:
        """Put the docks where they were (again, once docks mounted later exist)."""
        store = settings.open_settings()
        docks = store.value(DOCKS_KEY) if store is not None else None
        if isinstance(docks, QByteArray):
            self.window.restoreState(docks)

    # -- each dataset's view -----------------------------------------------------------------
    def _on_state_changed(self, changes: frozenset[str]) -> None:
        path = self.window.dataset_path
        if path is None:
            return
        key = dataset_key(path)
        if key != self._key:
            self.save_view()  # the previous dataset's last view
            self._key = key
        self._view = view_memory.snapshot(self.window.state)

    def _on_dataset_opened(self, path: str) -> None:
        self._on_state_changed(frozenset())
        if not self.remembering:
            return
        saved = self._views().get(dataset_key(path))
        if saved is None:
            return
        window = self.window
        by_pos, by_zoom = window.opened_with
        mags = {name: layer.mag_list for name, layer in window.source.layers.items()} \
            if window.source is not None else {}
        channels = {name: t[1] for name, t in window.drawing.layer_types.items()}
        if view_memory.apply(window.state, saved, mags, position=not by_pos, zoom=not by_zoom,
                             channels=channels):
            window.drawing.auto_pending = False  # the remembered levels, not fresh ones
            window.show_message("restored the last view of this dataset", 4000)
        self._view = view_memory.snapshot(window.state)

    def _views(self) -> dict[str, Any]:
        store = settings.open_settings()
        if store is None:
            return {}
        try:
            found = json.loads(str(store.value(VIEWS_KEY, "{}")))
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def save_view(self) -> None:
        """Write the current dataset's view (when remembering)."""
        if self._key is None or self._view is None or not self.remembering:
            return
        store = settings.open_settings()
        if store is not None:
            views = view_memory.remember(self._views(), self._key, self._view)
            store.setValue(VIEWS_KEY, json.dumps(views))

    # -- the window --------------------------------------------------------------------------
    def save_layout(self) -> None:
        store = settings.open_settings()
        if store is not None:
            store.setValue(GEOMETRY_KEY, self.window.saveGeometry())
            store.setValue(DOCKS_KEY, self.window.saveState())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.Close:
            self.save_view()
            self.save_layout()
        return False

    def _on_remember_toggled(self) -> None:
        store = settings.open_settings()
        if store is not None:
            store.setValue(REMEMBER_KEY, self.remember_action.isChecked())

    def reset(self) -> None:
        """Forget the window layout and every dataset's view; lay the window out anew."""
        store = settings.open_settings()
        if store is not None:
            for key in (GEOMETRY_KEY, DOCKS_KEY, VIEWS_KEY):
                store.remove(key)
        self._view = None
        self.window.restoreState(self._default_docks)
        fit_to_screen(self.window, self._default_size)
        self.window.show_message("window layout and remembered views reset", 4000)


def _flag(value: Any) -> bool:
    return value not in (False, "false", "0", 0)


def install_memory(window: QtMainWindow) -> QtWindowMemory:
    """Give ``window`` (a ``QtMainWindow``) its memory; call after its docks and size are
    set up (the remembered ones then replace them)."""
    memory = QtWindowMemory(window)
    window.memory = memory
    return memory
