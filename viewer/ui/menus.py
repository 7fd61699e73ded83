"""The main window's menus, tool bar and shortcuts, and the keys help they point to.

``MenusMixin`` is a part of ``QtMainWindow`` (viewer.ui.main_window): its methods run on the
window and use what the window holds (``state``, ``contrast_dock``, its slots).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QLineEdit, QMessageBox, QToolBar

from viewer.ui import remote as remote_ui

KEYS_HELP = """<table cellspacing=4>
<tr><td><b>Click</b></td><td>move the cursor there (the other views follow)</td></tr>
<tr><td><b>Drag</b> (any button)</td><td>pan the view</td></tr>
<tr><td><b>Wheel</b> down / up (Shift: x10)</td><td>next / previous slice, as PgDn / PgUp</td></tr>
<tr><td><b>Ctrl+Wheel</b>, <b>+</b> / <b>-</b></td><td>zoom about the mouse</td></tr>
<tr><td><b>1</b></td><td>one screen pixel per voxel (per smallest voxel side)</td></tr>
<tr><td><b>Arrows</b> (Shift: x10)</td><td>move the cursor in the focused view's plane</td></tr>
<tr><td><b>PgUp</b> / <b>PgDn</b> (Shift: x10)</td><td>move along the focused view's normal</td></tr>
<tr><td><b>C</b></td><td>centre every view on the cursor</td></tr>
<tr><td><b>M</b>, <b>double-click</b></td><td>maximise the focused view / back to 2x2</td></tr>
<tr><td><b>A</b></td><td>auto-contrast from the data on screen</td></tr>
<tr><td><b>S</b></td><td>select the segment under the mouse (again: none)</td></tr>
<tr><td><b>I</b></td><td>invert</td></tr>
<tr><td><b>Ctrl+G</b></td><td>go to a position (type or paste x, y, z)</td></tr>
<tr><td><b>Ctrl+Shift+C</b></td><td>copy the cursor position</td></tr>
<tr><td><b>Ctrl+O</b> / <b>Ctrl+Shift+O</b></td><td>open a dataset folder / a .wkw file</td></tr>
<tr><td><b>Ctrl+E</b></td><td>export the focused view or all views as PNG (1x or 2x)</td></tr>
</table>"""


def add_action(window: Any, text: str, slot: Callable[[], Any],
               shortcut: str | QKeySequence | None = None, menu: Any = None, tip: str = "",
               checkable: bool = False) -> QAction:
    """An action of ``window`` (its shortcut works wherever the focus is), listed in ``menu``
    when given; ``slot`` is called without arguments."""
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setToolTip(tip)
    action.setCheckable(checkable)
    action.triggered.connect(lambda *_: slot())
    if menu is not None:
        menu.addAction(action)
    window.addAction(action)
    return action


def find_menu(window: Any, title: str) -> Any:
    """The menu of ``window``'s menu bar titled ``title`` (ignoring the ``&``), or None."""
    bar = window.menuBar() if hasattr(window, "menuBar") else None
    if bar is None:
        return None
    for act in bar.actions():
        menu = act.menu()
        if menu is not None and act.text().replace("&", "") == title:
            return menu
    return None


class MenusMixin:
    """Builds the menus and the position tool bar of ``QtMainWindow``; shows the keys help."""

    def _action(self, text: str, slot: Callable[[], Any], shortcut: str | QKeySequence | None = None,
                menu: Any = None, tip: str = "") -> QAction:
        return add_action(self, text, slot, shortcut, menu, tip)

    def _build_actions(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.open_action = self._action("&Open Dataset Folder\u2026", self.choose_folder,
                                        QKeySequence.StandardKey.Open, file_menu)
        self._action("Open .wkw &File\u2026", self.choose_file, "Ctrl+Shift+O", file_menu)
        self._action("Open &URL\u2026", lambda: remote_ui.choose_url(self), "Ctrl+U", file_menu,
                     "A dataset over HTTP(S), S3 or GCS")
        self._action("Remote &Cache\u2026", lambda: remote_ui.choose_cache(self), None,
                     file_menu, "Size of the on-disk cache of bytes read over the network")
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self._action("Open &Demo Dataset", self.open_demo, None, file_menu)
        file_menu.addSeparator()
        self._action("&Export View\u2026", self._on_export_view, "Ctrl+E", file_menu,
                     "Save the focused view or all views as a PNG (1x or 2x)")
        file_menu.addSeparator()
        self._action("&Quit", self.close, QKeySequence.StandardKey.Quit, file_menu)
        edit = bar.addMenu("&Edit")
        self._action("&Copy Position", self.copy_position, "Ctrl+Shift+C", edit)
        self._action("&Go to Position\u2026", self._on_go_to, "Ctrl+G", edit)
        view = bar.addMenu("&View")
        self._action("&Maximise Focused View / 2x2", self.state.toggle_maximized, "M", view)
        self._action("&Centre on Cursor", self.state.recenter, "C", view)
        self._action("Zoom &In", lambda: self._zoom_key(1), QKeySequence.StandardKey.ZoomIn, view)
        self._action("Zoom In", lambda: self._zoom_key(1), "+")
        self._action("Zoom In", lambda: self._zoom_key(1), "=")
        self._action("Zoom &Out", lambda: self._zoom_key(-1), QKeySequence.StandardKey.ZoomOut,
                     view)
        self._action("Zoom Out", lambda: self._zoom_key(-1), "-")
        self._action("&Actual Size (1 voxel = 1 pixel)", lambda: self.state.set_zoom(1.0), "1",
                     view)
        view.addSeparator()
        self._action("A&uto-Contrast", self.auto_contrast, "A", view)
        self._action("&Invert", lambda: self.state.set_contrast(
            invert=not self.state.contrast.invert), "I", view)
        self._action("&Select Segment Under Mouse", self.select_hovered_segment, "S", view)
        view.addSeparator()
        view.addAction(self.contrast_dock.toggleViewAction())
        help_menu = bar.addMenu("&Help")
        self._action("&Keys and Mouse", self.show_keys, "F1", help_menu)
        self._action("&About wkw-viewer", self._on_about, None, help_menu)

        tools = QToolBar("Position")
        tools.setObjectName("positionToolbar")
        tools.setMovable(False)
        tools.addAction(self.open_action)
        tools.addSeparator()
        tools.addWidget(QLabel(" Position "))
        self.position_field = QLineEdit()
        self.position_field.setPlaceholderText("x, y, z")
        self.position_field.setToolTip("Type or paste x, y, z and press Enter (Ctrl+G)")
        self.position_field.setFixedWidth(170)
        self.position_field.returnPressed.connect(self._on_position_entered)
        tools.addWidget(self.position_field)
        copy = QAction("Copy", self)
        copy.setToolTip("Copy the cursor position (Ctrl+Shift+C)")
        copy.triggered.connect(lambda *_: self.copy_position())
        tools.addAction(copy)
        tools.addSeparator()
        maximise = QAction("Maximise", self)
        maximise.setToolTip("Maximise the focused view / back to 2x2 (M)")
        maximise.triggered.connect(lambda *_: self.state.toggle_maximized())
        tools.addAction(maximise)
        centre = QAction("Centre", self)
        centre.setToolTip("Centre every view on the cursor (C)")
        centre.triggered.connect(lambda *_: self.state.recenter())
        tools.addAction(centre)
        auto = QAction("Auto-contrast", self)
        auto.setToolTip("Levels from the data on screen (A)")
        auto.triggered.connect(lambda *_: self.auto_contrast())
        tools.addAction(auto)
        self.addToolBar(tools)
        self._update_recent_menu()

    def _on_export_view(self) -> None:
        from viewer.ui.export import choose_and_export

        choose_and_export(self)

    def _on_about(self) -> None:
        from viewer.ui.about import show_about

        show_about(self)

    def show_keys(self) -> None:
        from viewer.ui.layers_panel import KEYS_HELP_ROWS

        rows = KEYS_HELP_ROWS if getattr(self, "layers_panel", None) is not None else ""
        QMessageBox.information(self, "Keys and mouse",
                                KEYS_HELP.replace("</table>", rows + "</table>"))
