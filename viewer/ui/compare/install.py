"""Mounting the compare mode into the main window, in one call.

``install_compare(window)`` builds the ``QtCompareController`` the window holds (as
``window.compare``) on the members of the window listed in ``host.CompareHost`` (checked here:
a window that lacks one is a ``TypeError`` naming it), adds File > Compare with... (Ctrl+B), a
Compare menu with every mode and key, and the Compare dock (``QtComparePanel``), and returns
the controller.  ``settle`` waits for B's planes and the comparison (``--screenshot``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QFileDialog, QMainWindow, QMenu

from viewer.ui.compare import modes
from viewer.ui.compare.controller import QtCompareController
from viewer.ui.compare.host import as_host
from viewer.ui.compare.modes import MODE_KEYS
from viewer.ui.compare.panel import QtComparePanel
from viewer.ui.docks import dock_beside_contrast
from viewer.ui.menus import add_action, find_menu


def install_compare(window: QMainWindow, path_b: str | None = None) -> QtCompareController:
    """Create the compare controller and its dock, add the menus; open ``path_b`` as B."""
    controller = QtCompareController(as_host(window))
    # What the window compares with (the remote-data notice asks it for B's path).
    window.compare = controller  # type: ignore[attr-defined]
    run = controller.run
    panel = QtComparePanel(controller)
    dock = dock_beside_contrast(window, "Compare", "compareDock", panel)
    dock.hide()
    controller.dock = dock
    controller.panel = panel

    def choose_b() -> None:
        path = QFileDialog.getExistingDirectory(window, "Compare with dataset B (folder)")
        if path:
            controller.open_b(path)

    def on_b_changed(path: str) -> None:
        if path:
            dock.show()
            dock.raise_()

    controller.b_changed.connect(on_b_changed)
    panel.open_button.clicked.connect(lambda *_: choose_b())

    def action(text: str, slot: Callable[[], Any], shortcut: str | None = None,
               menu: QMenu | None = None, checkable: bool = False) -> QAction:
        return add_action(window, text, slot, shortcut, menu, checkable=checkable)

    compare_with = action("Compare &with\u2026", choose_b, "Ctrl+B")
    file_menu = find_menu(window, "File")
    if file_menu is not None:
        separators = [a for a in file_menu.actions() if a.isSeparator()]
        if separators:
            file_menu.insertAction(separators[-1], compare_with)
        else:
            file_menu.addAction(compare_with)

    menu = QMenu("&Compare", window)
    action("Compare &with\u2026", choose_b, None, menu)
    action("&Close B", controller.close_b, None, menu)
    menu.addSeparator()
    mode_actions: dict[str, QAction] = {}
    for mode in modes.MODES:
        mode_actions[mode] = action(modes.MODE_NAMES[mode], partial(controller.set_mode, mode),
                                    MODE_KEYS[mode], menu, checkable=True)
    action("Flicker: show the other dataset", controller.toggle_flicker, "B", menu)
    menu.addSeparator()
    action("&Next Mismatch", run.next_mismatch, "N", menu)
    action("&Previous Mismatch", run.previous_mismatch, "P", menu)
    menu.addSeparator()
    action("Compare Whole &Dataset", panel.start, "F5", menu)
    action("Cancel Comparison", controller.cancel_comparison, "Esc", menu)
    menu.addSeparator()
    menu.addAction(dock.toggleViewAction())
    help_menu = find_menu(window, "Help")
    bar = window.menuBar()
    if help_menu is not None:
        bar.insertMenu(help_menu.menuAction(), menu)
    else:
        bar.addMenu(menu)

    def on_mode_changed(mode: str) -> None:
        for m, act in mode_actions.items():
            act.setChecked(m == mode)

    controller.mode_changed.connect(on_mode_changed)
    on_mode_changed(controller.mode)
    if path_b is not None:
        controller.open_b(path_b)
    return controller


def settle(controller: QtCompareController, timeout_s: float = 60.0) -> None:
    """Process events until B's planes on screen are in and the comparison ended (for
    ``--screenshot``)."""
    app = QApplication.instance()
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if app is not None:
            app.processEvents()
        if controller.planes_complete() and not controller.run.running:
            break
        time.sleep(0.005)
    if app is not None:
        app.processEvents()
