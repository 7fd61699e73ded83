"""Regressions of the first hour with the program (issue 18): what a new user ran into."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QGuiApplication, QMouseEvent, QWheelEvent

from viewer.core.slicing import XY, XZ, YZ


def _views_area(window):
    """The rectangle the 2x2 grid lays its cells in (window coordinates)."""
    rect = window.grid.geometry()
    m = window.grid.contentsMargins()
    return rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())


@pytest.mark.parametrize("axis", [XY, YZ, XZ])
def test_maximise_fills_the_views_area_not_a_quarter(window, ramp_dataset, qtbot, axis):
    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    view = window.views[axis]
    window.centralWidget().layout().activate()
    quarter = view.size()
    window.state.set_focused(axis)
    qtbot.keyClick(view, Qt.Key.Key_M)
    assert window.state.layout == axis
    window.centralWidget().layout().activate()
    area = _views_area(window)
    assert view.width() >= area.width() - 1 and view.height() >= area.height() - 1
    assert view.width() > 1.8 * quarter.width() and view.height() > 1.8 * quarter.height()
    qtbot.keyClick(view, Qt.Key.Key_M)
    window.centralWidget().layout().activate()
    assert abs(view.width() - quarter.width()) <= 1
    assert abs(view.height() - quarter.height()) <= 1


def _wheel(view, dy: int) -> None:
    at = QPointF(view.width() / 2, view.height() / 2)
    event = QWheelEvent(at, view.mapToGlobal(at), QPoint(0, 0), QPoint(0, dy),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QGuiApplication.sendEvent(view, event)


@pytest.mark.parametrize("axis", [XY, YZ, XZ])
def test_wheel_down_and_page_down_step_the_same_way(window, ramp_dataset, qtbot, axis):
    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    view = window.views[axis]
    window.state.set_focused(axis)
    start = window.state.cursor[axis]
    qtbot.keyClick(view, Qt.Key.Key_PageDown)
    by_key = window.state.cursor[axis] - start
    _wheel(view, -120)  # one notch down, towards oneself
    by_wheel = window.state.cursor[axis] - start - by_key
    assert by_key == by_wheel == 1
    qtbot.keyClick(view, Qt.Key.Key_PageUp)
    _wheel(view, 120)
    assert window.state.cursor[axis] == start


def test_mouse_position_follows_the_slice_under_a_still_mouse(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    xy = window.views[XY]
    x, y = xy.to_widget(5.5, 7.5)
    at = QPointF(x, y)
    move = QMouseEvent(QMouseEvent.Type.MouseMove, at, xy.mapToGlobal(at),
                       Qt.MouseButton.NoButton, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    QGuiApplication.sendEvent(xy, move)
    assert window.mouse_label.text().startswith("mouse  5, 7, 10")
    value_before = window.value_label.text()
    window.state.set_focused(XY)
    qtbot.keyClick(xy, Qt.Key.Key_PageDown)
    assert window.state.cursor[2] == 11
    assert window.mouse_label.text().startswith("mouse  5, 7, 11")
    # ramp value x + 2y + 3z: one slice on is 3 more
    assert window.value_label.text() != value_before
    assert window.value_label.text().endswith(str(5 + 2 * 7 + 3 * 11))


def _luminance(c) -> float:
    def lin(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(c.red()) + 0.7152 * lin(c.green()) + 0.0722 * lin(c.blue())


def _contrast(a, b) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_checkboxes_stand_out_on_the_dark_theme(window, qtbot):
    """The indicator's outline has at least 3:1 contrast with the panel (WCAG's figure for
    controls), and a checked box looks clearly unlike an unchecked one."""
    from PySide6.QtWidgets import QCheckBox, QStyle, QStyleOptionButton

    window.contrast_dock.show()
    box = window.contrast_panel.findChild(QCheckBox)
    assert box is not None
    qtbot.waitUntil(box.isVisible)
    option = QStyleOptionButton()
    box.initStyleOption(option)
    rect = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
    assert rect.width() >= 10

    def best_contrast(image) -> float:
        panel = image.pixelColor(max(rect.left() - 3, 0), rect.center().y())
        return max(_contrast(image.pixelColor(x, y), panel)
                   for x in range(rect.left(), rect.right() + 1)
                   for y in range(rect.top(), rect.bottom() + 1))

    box.setChecked(False)
    off = box.grab().toImage()
    assert best_contrast(off) >= 3.0
    box.setChecked(True)
    on = box.grab().toImage()
    assert best_contrast(on) >= 3.0
    changed = sum(_contrast(off.pixelColor(x, y), on.pixelColor(x, y)) > 1.5
                  for x in range(rect.left() + 2, rect.right() - 1)
                  for y in range(rect.top() + 2, rect.bottom() - 1))
    assert changed >= (rect.width() - 3) * (rect.height() - 3) // 2
