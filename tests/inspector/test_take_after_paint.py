"""The inspector takes an opened dataset on a timer, after the events opening posted (the
first paint among them) have run: not in the same pass of posted events, one long stall."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication

main_window = pytest.importorskip("viewer.ui.main_window")

from viewer.ui.inspector import install_inspector  # noqa: E402

WAIT = 20000


def _shown_window_and_panel(qtbot):  # type: ignore[no-untyped-def]
    """A new window, shown, and its inspector (the caller shuts the panel down)."""
    window = main_window.QtMainWindow()
    qtbot.addWidget(window)
    panel = install_inspector(window)
    window.show()
    qtbot.waitExposed(window)
    return window, panel


def test_the_panel_takes_the_dataset_after_the_posted_events(qtbot, known_dataset: Path
                                                              ) -> None:  # type: ignore[no-untyped-def]
    window, panel = _shown_window_and_panel(qtbot)
    try:
        assert window.open_path(str(known_dataset), pos=(1, 1, 3))
        QCoreApplication.sendPostedEvents()  # the paint, the bridges, a zero timer
        assert panel.volume is None
        qtbot.waitUntil(lambda: panel.volume is not None, timeout=WAIT)
        qtbot.waitUntil(lambda: panel.current_path is not None, timeout=WAIT)
        assert panel.current_path == str(known_dataset / "z0" / "y0" / "x0.wkw")
    finally:
        panel.shutdown()


def test_the_panel_takes_the_dataset_a_turn_after_the_first_timers(qtbot, known_dataset: Path
                                                                    ) -> None:  # type: ignore[no-untyped-def]
    """The timers due when the window painted its newly opened dataset run first (one turn of
    the event loop); the panel starts in a turn of its own after them."""
    import time

    from PySide6.QtWidgets import QApplication

    window, panel = _shown_window_and_panel(qtbot)
    try:
        assert window.open_path(str(known_dataset), pos=(1, 1, 3))
        QCoreApplication.sendPostedEvents()
        time.sleep(0.01)  # the first timer is due
        QApplication.processEvents()  # one turn: the timers due run
        assert panel.volume is None
        qtbot.waitUntil(lambda: panel.volume is not None, timeout=WAIT)
    finally:
        panel.shutdown()
