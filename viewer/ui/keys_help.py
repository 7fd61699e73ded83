"""The window's list of keys (F1), made from the window's actions themselves.

Every keyed action a window has (its menus', the layers panel's, compare's...) is listed with
its keys and its menu text, grouped when several keys do one thing; what the views handle
themselves (mouse, arrows, PgUp/PgDn) comes first, from ``VIEW_KEYS``.  A panel that adds a
keyed action to the window is listed without telling anyone.  GUI thread only.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QSize
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from viewer.ui.screen_fit import fit_to_screen

#: What the slice views do with the mouse and the moving keys (not actions of the window).
VIEW_KEYS: tuple[tuple[str, str], ...] = (
    ("Click", "move the cursor there (the other views follow)"),
    ("Drag (any button)", "pan the view"),
    ("Double-click", "maximise the view / back to 2x2"),
    ("Wheel down / up (Shift: x10)", "next / previous slice, as PgDn / PgUp"),
    ("Ctrl+Wheel", "zoom about the mouse"),
    ("Arrows (Shift: x10)", "move the cursor in the focused view's plane"),
    ("PgUp / PgDn (Shift: x10)", "move along the focused view's normal"),
)


def action_text(action: QAction) -> str:
    """An action's menu text without its mnemonic and trailing ellipsis."""
    return action.text().replace("&&", "\0").replace("&", "").replace("\0", "&") \
        .rstrip("\u2026").rstrip(".").strip()


def shortcut_rows(window: QWidget) -> list[tuple[list[str], str]]:
    """``(keys, what)`` for every keyed action of ``window``, in the order they were added;
    actions of one text (Zoom In: Ctrl++, + and =) share a row."""
    rows: dict[str, list[str]] = {}
    for action in window.actions():
        keys = [k.toString(QKeySequence.SequenceFormat.NativeText)
                for k in action.shortcuts() if not k.isEmpty()]
        if not keys:
            continue
        listed = rows.setdefault(action_text(action), [])
        listed.extend(k for k in keys if k not in listed)
    return [(keys, what) for what, keys in rows.items()]


def window_shortcuts(window: QWidget) -> set[str]:
    """Every key of ``window``'s actions (as ``shortcut_rows`` spells them)."""
    return {k.toString(QKeySequence.SequenceFormat.NativeText)
            for action in window.actions() for k in action.shortcuts() if not k.isEmpty()}


def keys_help_html(window: QWidget) -> str:
    """The table F1 shows: the views' mouse and keys, then every keyed action."""
    cells = [(f"<b>{html.escape(k)}</b>", html.escape(w)) for k, w in VIEW_KEYS]
    cells += [(" / ".join(f"<b>{html.escape(k)}</b>" for k in keys), html.escape(what))
              for keys, what in shortcut_rows(window)]
    body = "".join(f"<tr><td>{keys}</td><td>{what}</td></tr>" for keys, what in cells)
    return f"<table cellspacing=4>{body}</table>"


def show_keys(window: QWidget) -> QDialog:
    """Show the keys of ``window`` in a modal dialog (it scrolls: the list is longer than a
    small screen is tall); returns when it is closed."""
    dialog = QDialog(window)
    dialog.setWindowTitle("Keys and mouse")
    text = QTextBrowser()
    text.setObjectName("keysHelp")
    text.setHtml(keys_help_html(window))
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.reject)
    column = QVBoxLayout(dialog)
    column.addWidget(text)
    column.addWidget(buttons)
    fit_to_screen(dialog, QSize(560, 760))
    dialog.exec()
    return dialog
