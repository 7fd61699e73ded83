"""A window's process hands the interpreter lock over sooner than the interpreter's default
(the GUI thread waits less for it while a background thread runs Python)."""

from __future__ import annotations

import sys

from viewer.ui import gil


def test_a_window_shortens_the_switch_interval(qtbot) -> None:  # type: ignore[no-untyped-def]
    from viewer.ui.main_window import QtMainWindow

    saved = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)  # the interpreter's default
        window = QtMainWindow()
        qtbot.addWidget(window)
        assert sys.getswitchinterval() <= gil.SWITCH_INTERVAL_S < 0.005
        sys.setswitchinterval(0.0001)
        gil.favour_gui_thread()  # never lengthened
        assert sys.getswitchinterval() < gil.SWITCH_INTERVAL_S
    finally:
        sys.setswitchinterval(saved)
