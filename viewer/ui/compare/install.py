"""Building the compare mode of the main window, in one call.

``build_compare(window)`` (called by ``QtMainWindow.add_compare``, which holds the result as
``window.compare``) builds the ``QtCompareController`` on the members of the window listed in
``host.CompareHost`` (checked here: a window that lacks one is a ``TypeError`` naming it), adds
File > Compare with... (Ctrl+B), a Compare menu with every mode and key, and the Compare dock
(``QtComparePanel``), and returns the controller.  ``settle`` waits for B's planes and the
comparison (``--screenshot``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMenu

from viewer.ui.compare import modes
from viewer.ui.compare.controller import QtCompareController
from viewer.ui.compare.host import as_host
from viewer.ui.compare.modes import MODE_KEYS
from viewer.ui.compare.panel import QtComparePanel
from viewer.ui.docks import dock_beside_contrast
from viewer.ui.menus import add_action, find_menu
from viewer.ui.waiting import wait_until


def build_compare(window: QMainWindow) -> QtCompareController:
    """Create the compare controller and its dock, add the menus."""
    controller = QtCompareController(as_host(window))
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
    return controller


def settle(controller: QtCompareController, timeout_s: float = 60.0) -> None:
    """Wait on the GUI thread until B's planes on screen are in and the comparison ended
    (for ``--screenshot``)."""
    wait_until(lambda: controller.planes_complete() and not controller.run.running,
               [controller.b.plane_changed, controller.run.results_changed,
                controller.run.job_finished], timeout_s)
