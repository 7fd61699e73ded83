"""F1 lists every key of the window, made from its actions (so it cannot fall behind), and the
views have the keys again once a dialog closes."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QDialog, QTextBrowser

from viewer.core.slicing import XY


def _full_window(window):
    from viewer.ui.layers_panel import install_layers_panel
    from viewer.ui.memory import install_memory

    window.add_compare()
    install_layers_panel(window)
    install_memory(window)
    return window


def _help_keys(html: str) -> set[str]:
    """The keys the help's table names in bold."""
    found = set()
    for part in html.split("<b>")[1:]:
        found.add(part.split("</b>")[0].replace("&amp;", "&").replace("&gt;", ">")
                  .replace("&lt;", "<"))
    return found


def test_keys_help_lists_every_shortcut_of_the_window(window, qtbot):
    from viewer.ui.keys_help import VIEW_KEYS, keys_help_html, window_shortcuts

    _full_window(window)
    listed = _help_keys(keys_help_html(window)) - {k for k, _ in VIEW_KEYS}
    shortcuts = window_shortcuts(window)
    assert listed == shortcuts
    text = QKeySequence.SequenceFormat.NativeText
    for key in ("F1", "Alt+1", "Alt+6", "N", "P", "Ctrl+U", "Ctrl+B", "V", "L", "Ctrl+E"):
        assert QKeySequence(key).toString(text) in listed, key
    # A key added later (a panel mounted afterwards) is listed without telling anyone.
    from viewer.ui.actions import add_action

    add_action(window, "Something &New", lambda: None, "Ctrl+Shift+J")
    assert "Something New" in keys_help_html(window)
    assert QKeySequence("Ctrl+Shift+J").toString(text) in _help_keys(keys_help_html(window))


def test_f1_shows_the_list_and_the_views_have_the_keys_after_it(window, ramp_dataset, qtbot):
    _full_window(window)
    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    window.state.set_focused(XY)
    window.activateWindow()  # F1 is pressed in the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    seen: list[str] = []

    def close_it() -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, QDialog)
        seen.append(dialog.findChild(QTextBrowser).toPlainText())
        dialog.reject()

    QTimer.singleShot(100, close_it)
    window.menus.show_keys()
    assert seen and "Next Mismatch" in seen[0] and "Open URL" in seen[0]
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.views[XY], timeout=5000)
