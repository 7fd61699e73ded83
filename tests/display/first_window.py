"""Runs the real program (``viewer.app.main``) on an X display of its own size and looks at the
first window as it opens, without resizing it: ``python first_window.py DATASET OUT.json
OUT_PREFIX`` (DISPLAY and QT_QPA_PLATFORM=xcb set by the test).

Phases, each waited for with a deadline: the window is up with its data and the inspector; then
each inspector tab is clicked where it shows on screen (the widget under that point must be the
tab bar, else the tab bar's scroll buttons are clicked first), and once the tab shows, every
text on screen is measured.  OUT.json gets the screen's available geometry, the window's frame,
the tabs reached and every text that does not fit its rectangle; OUT_PREFIX-N.png is the
screen's picture while tab N shows.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from PySide6.QtCore import QPoint, QRect, Qt, QTimer
from PySide6.QtGui import QFontMetrics
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QLabel,
    QTabBar,
    QToolButton,
    QWidget,
)

DEADLINE_S = 90.0
#: After a tab's click, the texts are measured once this timer has fired this many times and
#: this much time has passed.
TURNS_AFTER_CLICK = 4
SECONDS_AFTER_CLICK = 0.12


def _shown_rect(widget: QWidget) -> QRect:
    """The part of ``widget`` (its own coordinates) not clipped by its parents or by the edge
    of the screen."""
    shown = widget.visibleRegion().boundingRect()
    screen = widget.screen().geometry()
    on_screen = QRect(widget.mapFromGlobal(screen.topLeft()), screen.size())
    return shown.intersected(on_screen)


def _lines_fit(metrics: QFontMetrics, text: str, width: int) -> bool:
    return all(metrics.horizontalAdvance(line) <= width for line in text.split("\n"))


def cut_texts(window: QWidget) -> list[dict[str, Any]]:
    """Every text on screen (labels, buttons, table and tree headers) that its rectangle
    does not show whole."""
    found: list[dict[str, Any]] = []
    for label in window.findChildren(QLabel):
        text = label.text()
        if not label.isVisible() or not text or label.wordWrap() or "<" in text:
            continue
        inner = label.contentsRect().width() - 2 * label.margin() - 2 * max(label.indent(), 0)
        shown = _shown_rect(label)
        width = min(inner, shown.width()) if not shown.isEmpty() else 0
        if shown.isEmpty():  # scrolled out of sight (a tall panel): not cut, just elsewhere
            continue
        if not _lines_fit(label.fontMetrics(), text, width):
            found.append({"kind": "label", "text": text, "width": width})
    for button in window.findChildren(QAbstractButton):
        text = button.text().replace("&", "")
        if not button.isVisible() or not text or isinstance(button, QToolButton):
            continue
        shown = _shown_rect(button)
        if not shown.isEmpty() and shown.width() < button.sizeHint().width() - 2:
            found.append({"kind": "button", "text": text, "width": shown.width()})
    for view in window.findChildren(QAbstractItemView):
        header = getattr(view, "horizontalHeader", None)
        if not view.isVisible() or header is None or not header().isVisible():
            continue
        bar = header()
        if _shown_rect(bar).isEmpty():  # scrolled out of sight (a tall page): not cut
            continue
        model = view.model()
        metrics = bar.fontMetrics()
        for section in range(bar.count()):
            if bar.isSectionHidden(section):
                continue
            text = str(model.headerData(section, Qt.Orientation.Horizontal) or "")
            need = metrics.horizontalAdvance(text) + 8  # the style's margins around it
            have = bar.sectionSize(section)
            left = bar.sectionViewportPosition(section)
            clip = _shown_rect(bar).right() + 1  # where a parent or the screen cuts the bar
            fixed = view.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
            cut_at = clip if clip < bar.width() else (bar.width() if fixed else None)
            if cut_at is not None and left + have > cut_at:
                have = max(0, cut_at - left)  # a table that cannot scroll there: lost
            if text and have < need:
                found.append({"kind": "header", "text": text, "width": have, "need": need})
    return found


def main() -> int:
    dataset, out_json, out_prefix = sys.argv[1:4]
    extra = sys.argv[4:]
    app = QApplication(["wkw-viewer"])
    report: dict[str, Any] = {"platform": app.platformName(), "tabs": [], "cut": {}}
    started = time.monotonic()
    phase = ["up"]
    seen: dict[str, Any] = {"tab": 0, "since": 0.0, "scrolls": 0, "turns": 0}

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

    def picture(name: str) -> None:
        screen = app.primaryScreen()
        screen.grabWindow(0).save(f"{out_prefix}-{name}.png", "PNG")

    def step() -> None:
        if time.monotonic() - started > DEADLINE_S:
            report["error"] = f"phase {phase[0]!r} did not finish within {DEADLINE_S} s"
            finish()
            return
        w = window()
        if w is None:
            return
        if phase[0] == "up":
            if w.planes_complete() and type(w.side_panel).__name__ != "QLabel":
                seen["since"] = time.monotonic()
                phase[0] = "settle"
        elif phase[0] == "settle":
            if time.monotonic() - seen["since"] < 0.5:
                return
            avail = w.screen().availableGeometry()
            frame = w.frameGeometry()
            report["available"] = [avail.x(), avail.y(), avail.width(), avail.height()]
            report["frame"] = [frame.x(), frame.y(), frame.width(), frame.height()]
            report["minimum"] = [w.minimumSizeHint().width(), w.minimumSizeHint().height()]
            w.activateWindow()
            phase[0] = "tab"
            seen["since"] = 0.0
        elif phase[0] == "tab":
            tabs = w.side_panel.tabs
            bar: QTabBar = tabs.tabBar()
            index = seen["tab"]
            if index >= bar.count():
                finish()
                return
            if seen["since"]:  # the tab was clicked: let it lay out, then measure
                # Its layout is posted events, done by the next turns of the event loop (the
                # inspector has no timers): a few turns of this timer's, however loaded the
                # machine, and a little time.
                seen["turns"] += 1
                if seen["turns"] < TURNS_AFTER_CLICK or \
                        time.monotonic() - seen["since"] < SECONDS_AFTER_CLICK:
                    return
                name = bar.tabText(index)
                reached = tabs.currentIndex() == index
                report["tabs"].append({"name": name, "reached": reached,
                                       "scrolls": seen["scrolls"]})
                report["cut"][name] = cut_texts(w)
                picture(str(index))
                seen.update(tab=index + 1, since=0.0, scrolls=0)
                return
            centre = bar.mapToGlobal(bar.tabRect(index).center())
            under = app.widgetAt(centre)
            if under is bar:
                QTest.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.mapFromGlobal(centre))
                seen.update(since=time.monotonic(), turns=0)
                return
            # Not on screen where it is: click the tab bar's right scroll button, if it shows.
            arrows = [b for b in bar.findChildren(QToolButton) if b.isVisible()
                      and b.isEnabled() and b.arrowType() == Qt.ArrowType.RightArrow]
            if not arrows or seen["scrolls"] > 10:
                report["tabs"].append({"name": bar.tabText(index), "reached": False,
                                       "scrolls": seen["scrolls"],
                                       "under": type(under).__name__ if under else None})
                seen.update(tab=index + 1, since=0.0, scrolls=0)
                return
            arrow = arrows[0]
            point = arrow.mapToGlobal(QPoint(arrow.width() // 2, arrow.height() // 2))
            if app.widgetAt(point) is arrow:
                QTest.mouseClick(arrow, Qt.MouseButton.LeftButton)
            seen["scrolls"] += 1

    timer = QTimer()
    timer.setInterval(30)
    timer.timeout.connect(step)
    timer.start()
    from viewer import app as program

    code = program.main([dataset, "--no-settings", *extra])
    report["exit"] = code
    with open(out_json, "w") as out:
        json.dump(report, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
