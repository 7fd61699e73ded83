"""Runs the real program (``viewer.app.main``) on an X display and looks at it from inside:
``python driver.py DATASET OUT.json OUT.png WIDTH HEIGHT`` (DISPLAY and QT_QPA_PLATFORM=xcb
set by the test).

The QApplication is made here first (``main`` takes the one that exists), so a timer can
follow the window through phases, each waited for with a deadline: the window is up with its
data and inspector; it is resized to WIDTH x HEIGHT and the mouse moved over XY (the status
bar at its fullest); the X server's picture of the window is saved (``QScreen.grabWindow``);
M is pressed on XY; M again.  What was seen goes to OUT.json (``error`` names a phase that
did not finish in time).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from PySide6.QtCore import QPoint, QRect, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QWidget

DEADLINE_S = 60.0


def rect(widget: QWidget, window: QWidget) -> list[int]:
    top_left = widget.mapTo(window, QPoint(0, 0))
    return [top_left.x(), top_left.y(), widget.width(), widget.height()]


def cut_status_sections(window: Any) -> list[str]:
    """The status bar's sections whose text does not fully show."""
    cut = []
    for kind in (QLabel, QAbstractButton):
        for widget in window.statusBar().findChildren(kind):
            if not widget.isVisible() or not widget.text():
                continue
            shown = widget.visibleRegion().boundingRect()
            if shown.size() != widget.size() or widget.width() < widget.sizeHint().width():
                cut.append(widget.text())
    return cut


def main() -> int:
    dataset, out_json, out_png = sys.argv[1:4]
    width, height = int(sys.argv[4]), int(sys.argv[5])
    app = QApplication(["wkw-viewer"])
    report: dict[str, Any] = {"platform": app.platformName()}
    started = time.monotonic()
    phase = ["up"]
    seen: dict[str, Any] = {}

    def window() -> Any:
        from viewer.ui.main_window import QtMainWindow

        for widget in app.topLevelWidgets():
            if isinstance(widget, QtMainWindow) and widget.isVisible():
                return widget
        return None

    def finish() -> None:
        timer.stop()
        with open(out_json, "w") as out:
            json.dump(report, out)
        found = window()
        if found is not None:
            found.close()
        app.quit()

    def step() -> None:
        if time.monotonic() - started > DEADLINE_S:
            report["error"] = f"phase {phase[0]!r} did not finish within {DEADLINE_S} s"
            finish()
            return
        w = window()
        if w is None:
            return
        xy = w.views[2]
        if phase[0] == "up":
            if w.planes_complete() and type(w.side_panel).__name__ != "QLabel":
                w.resize(width, height)
                phase[0] = "resized"
        elif phase[0] == "resized":
            if (w.width(), w.height()) == (width, height) and w.planes_complete():
                QTest.mouseMove(xy, QPoint(int(xy.width() * 0.6), int(xy.height() * 0.6)))
                seen["since"] = time.monotonic()
                phase[0] = "hovered"
        elif phase[0] == "hovered":
            # the texts changed: give the layout a moment, then everything must show
            if time.monotonic() - seen["since"] < 0.3 and cut_status_sections(w):
                return
            report["size"] = [w.width(), w.height()]
            report["status_cut"] = cut_status_sections(w)
            report["value_text"] = w.status.value_label.text()
            report["layout"] = {
                "menu": rect(w.menuBar(), w), "status": rect(w.statusBar(), w),
                "views": {str(a): rect(v, w) for a, v in w.views.items()},
                "side": rect(w._side_holder, w), "dock": rect(w.contrast_dock, w),
                "grid": [*w.grid.geometry().getRect()],
                "central": rect(w.centralWidget(), w),
            }
            screen = w.screen()
            picture = screen.grabWindow(w.winId())
            report["picture"] = [picture.width(), picture.height()]
            picture.save(out_png, "PNG")
            report["xy_before"] = [xy.width(), xy.height()]
            # Shortcuts go to the active window; with no window manager on the server, the
            # window asks for the focus itself.
            w.activateWindow()
            phase[0] = "active"
        elif phase[0] == "active":
            if app.activeWindow() is w:
                w.state.set_focused(2)
                QTest.keyClick(xy, Qt.Key.Key_M)
                phase[0] = "maximised"
        elif phase[0] == "maximised":
            if xy.width() > report["xy_before"][0]:
                margins = w.grid.contentsMargins()
                area = QRect(w.grid.geometry()).adjusted(margins.left(), margins.top(),
                                                          -margins.right(), -margins.bottom())
                report["xy_maximised"] = [xy.width(), xy.height()]
                report["views_area"] = [area.width(), area.height()]
                QTest.keyClick(xy, Qt.Key.Key_M)
                phase[0] = "back"
        elif phase[0] == "back" and xy.width() < report["xy_maximised"][0]:
            report["xy_back"] = [xy.width(), xy.height()]
            finish()

    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(step)
    timer.start()
    from viewer import app as program

    code = program.main([dataset, "--no-settings"])
    report["exit"] = code
    with open(out_json, "w") as out:
        json.dump(report, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
