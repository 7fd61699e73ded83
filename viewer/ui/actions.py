"""Window actions: one helper that adds a keyed action to a window (and a menu), one that finds
a menu of the menu bar by its title.  The menus, the layers panel, the window memory and the
compare side all add their keys through these; this module imports none of them."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QWidget


def add_action(window: QWidget, text: str, slot: Callable[[], object],
               shortcut: str | QKeySequence | QKeySequence.StandardKey | None = None,
               menu: QMenu | None = None, tip: str = "", checkable: bool = False) -> QAction:
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


def find_menu(window: QWidget, title: str) -> QMenu | None:
    """The menu of ``window``'s menu bar titled ``title`` (ignoring the ``&``), or None (also
    for a widget that has no menu bar)."""
    if not isinstance(window, QMainWindow):
        return None
    for act in window.menuBar().actions():
        menu = act.menu()
        if isinstance(menu, QMenu) and act.text().replace("&", "") == title:
            return menu
    return None
