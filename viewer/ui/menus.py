"""The main window's menus, its position tool bar, and the keys help they point to.

``QtWindowMenus`` builds the File, Edit, View and Help menus and the tool bar on the window (a
``QMainWindow``, which owns the actions and parents the dialogs), and runs what they ask: the
open dialogs, the position field (Ctrl+G, Ctrl+Shift+C), zooming about the mouse, the keys help
and About.  It reads and writes the model (``state``) and calls the window's few services
through its ``WindowHost``; auto-contrast and selecting the segment under the mouse are the
layer drawing's and the status bar's.  The keys help lists every keyed action of the window
(``viewer.ui.keys_help``), those of panels mounted later too.  GUI thread only.

(``add_action`` and ``find_menu`` live in ``viewer.ui.actions``; they are named here too for
the callers that import them from this module.)
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QCursor, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMessageBox,
    QToolBar,
)

from viewer.core.state import format_position, parse_position
from viewer.ui import remote as remote_ui
from viewer.ui.actions import add_action, find_menu
from viewer.ui.layer_drawing import QtLayerDrawing
from viewer.ui.recent import QtRecentDatasets
from viewer.ui.status_bar import QtWindowStatus
from viewer.ui.window_host import WindowHost

__all__ = ["QtWindowMenus", "add_action", "find_menu"]



class QtWindowMenus:
    """The menus and the position tool bar of one window."""

    def __init__(self, window: QMainWindow, host: WindowHost, drawing: QtLayerDrawing,
                 status: QtWindowStatus, contrast_dock: QDockWidget) -> None:
        self.window = window
        self.host = host
        self.state = host.state
        #: The About box, once opened.
        self.about_box: QMessageBox | None = None
        state = self.state

        def act(text: str, slot: Callable[[], object],
                shortcut: str | QKeySequence | QKeySequence.StandardKey | None = None,
                menu: QMenu | None = None, tip: str = "") -> QAction:
            return add_action(window, text, slot, shortcut, menu, tip)

        bar = window.menuBar()
        file_menu = bar.addMenu("&File")
        self.open_action = act("&Open Dataset Folder\u2026", self.choose_folder,
                               QKeySequence.StandardKey.Open, file_menu)
        act("Open .wkw &File\u2026", self.choose_file, "Ctrl+Shift+O", file_menu)
        act("Open &URL\u2026", self.choose_url, "Ctrl+U", file_menu,
            "A dataset over HTTP(S), S3 or GCS")
        act("Remote &Cache\u2026", lambda: remote_ui.choose_cache(window), None, file_menu,
            "Size of the on-disk cache of bytes read over the network")
        self.recent = QtRecentDatasets(file_menu.addMenu("Open &Recent"), host.open_path)
        act("Open &Demo Dataset", self.open_demo, None, file_menu)
        file_menu.addSeparator()
        act("&Export View\u2026", self.export_view, "Ctrl+E", file_menu,
            "Save the focused view or all views as a PNG (1x or 2x)")
        file_menu.addSeparator()
        act("&Quit", window.close, QKeySequence.StandardKey.Quit, file_menu)
        edit = bar.addMenu("&Edit")
        act("&Copy Position", self.copy_position, "Ctrl+Shift+C", edit)
        act("&Go to Position\u2026", self.go_to, "Ctrl+G", edit)
        view = bar.addMenu("&View")
        act("&Maximise Focused View / 2x2", state.toggle_maximized, "M", view)
        act("&Centre on Cursor", state.recenter, "C", view)
        act("Zoom &In", lambda: self.zoom_key(1), QKeySequence.StandardKey.ZoomIn, view)
        act("Zoom In", lambda: self.zoom_key(1), "+")
        act("Zoom In", lambda: self.zoom_key(1), "=")
        act("Zoom &Out", lambda: self.zoom_key(-1), QKeySequence.StandardKey.ZoomOut, view)
        act("Zoom Out", lambda: self.zoom_key(-1), "-")
        act("&Actual Size (1 voxel = 1 pixel)", lambda: state.set_zoom(1.0), "1", view)
        view.addSeparator()
        act("A&uto-Contrast", drawing.auto_contrast, "A", view)
        act("&Invert", lambda: state.set_contrast(invert=not state.contrast.invert), "I", view)
        act("&Select Segment Under Mouse", status.select_hovered_segment, "S", view)
        view.addSeparator()
        view.addAction(contrast_dock.toggleViewAction())
        help_menu = bar.addMenu("&Help")
        act("&Keys and Mouse", self.show_keys, "F1", help_menu)
        act("&About wkw-viewer", self.show_about, None, help_menu)

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
        self._tool(tools, "Copy", "Copy the cursor position (Ctrl+Shift+C)", self.copy_position)
        tools.addSeparator()
        self._tool(tools, "Maximise", "Maximise the focused view / back to 2x2 (M)",
                   state.toggle_maximized)
        self._tool(tools, "Centre", "Centre every view on the cursor (C)", state.recenter)
        self._tool(tools, "Auto-contrast", "Levels from the data on screen (A)",
                   drawing.auto_contrast)
        window.addToolBar(tools)

    def _tool(self, tools: QToolBar, text: str, tip: str, slot: Callable[[], object]) -> None:
        """A button of the tool bar (its key is the menu entry's)."""
        action = QAction(text, self.window)
        action.setToolTip(tip)
        action.triggered.connect(lambda *_: slot())
        tools.addAction(action)

    # -- opening -------------------------------------------------------------------------------
    def choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self.window, "Open WKW dataset folder")
        self.host.focus_views()
        if path:
            self.host.open_path(path)

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open a WKW file", "",
                                              "WKW files (*.wkw);;All files (*)")
        self.host.focus_views()
        if path:
            self.host.open_path(path)

    def choose_url(self) -> None:
        remote_ui.choose_url(self.window, self.host.open_path, self.recent.paths())
        self.host.focus_views()

    def open_demo(self) -> None:
        from viewer.ui.demo_dialog import ensure_demo_with_progress

        path = ensure_demo_with_progress(self.window)
        if path is not None:
            self.host.open_path(path)

    def export_view(self) -> None:
        from viewer.ui.export import choose_and_export

        choose_and_export(self.host)

    # -- the position field and the zoom keys --------------------------------------------------
    def _on_position_entered(self) -> None:
        field = self.position_field
        try:
            pos = parse_position(field.text())
        except ValueError as exc:
            self.host.show_message(str(exc), 6000)
            field.setStyleSheet("border: 1px solid #d44;")
            return
        field.setStyleSheet("")
        self.state.jump_to(pos)  # one notification: each plane fetched and drawn once
        field.setText(format_position(self.state.cursor))
        self.host.views[self.state.focused].setFocus()

    def go_to(self) -> None:
        self.position_field.setFocus()
        self.position_field.selectAll()

    def show_cursor(self) -> None:
        """The cursor moved: show it in the position field (unless someone is typing)."""
        if not self.position_field.hasFocus():
            self.position_field.setText(format_position(self.state.cursor))

    def copy_position(self) -> None:
        text = format_position(self.state.cursor)
        QGuiApplication.clipboard().setText(text)
        self.host.show_message(f"copied {text}", 3000)

    def zoom_key(self, steps: int) -> None:
        """Zoom about the mouse when it is over a view, else about that view's centre."""
        for axis, view in self.host.views.items():
            if not view.isVisible():
                continue
            local = view.mapFromGlobal(QCursor.pos())
            if view.rect().contains(local):
                h, v = view.to_dataset(local.x(), local.y())
                self.state.zoom_by(steps, about=(axis, h, v))
                return
        self.state.zoom_by(steps)

    # -- help ----------------------------------------------------------------------------------
    def show_keys(self) -> None:
        """Every key of the window, from its actions (``viewer.ui.keys_help``)."""
        from viewer.ui.keys_help import show_keys

        show_keys(self.window)
        self.host.focus_views()

    def show_about(self) -> None:
        from viewer.ui.about import show_about

        self.about_box = show_about(self.window)
