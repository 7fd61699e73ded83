"""Regressions of the first hour with the program: what a new user ran into."""

from __future__ import annotations

import contextlib

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
    assert window.status.mouse_label.text().startswith("mouse  5, 7, 10")
    value_before = window.status.value_label.text()
    window.state.set_focused(XY)
    qtbot.keyClick(xy, Qt.Key.Key_PageDown)
    assert window.state.cursor[2] == 11
    assert window.status.mouse_label.text().startswith("mouse  5, 7, 11")
    # ramp value x + 2y + 3z: one slice on is 3 more
    assert window.status.value_label.text() != value_before
    assert window.status.value_label.text().endswith(str(5 + 2 * 7 + 3 * 11))


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


@pytest.fixture(scope="module")
def wk_dataset(tmp_path_factory):
    """A webKnossos dataset with a color and a segmentation layer and a voxel size: the
    longest status bar there is (physical positions, two layers' values)."""
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos.writer import write_synthetic_dataset

    root = str(tmp_path_factory.mktemp("wk") / "dataset-with-a-long-name")
    write_synthetic_dataset(root, EMVolume(5), shape=(256, 256, 64),
                            mags=[(1, 1, 1), (2, 2, 1)], block_len=16, file_len=8, workers=1)
    return root


def _clipped(widget) -> bool:
    """Whether part of ``widget`` is hidden by a parent that is too small (scrolling a panel
    vertically is fine: only a cut on the left or right counts, or any cut in the status
    bar)."""
    region = widget.visibleRegion().boundingRect()
    if region.isEmpty():
        return False  # scrolled out of sight: nothing cut off
    return region.width() < widget.width()


def _cut_text(widget) -> bool:
    """Whether ``widget`` is narrower than its text needs."""
    from PySide6.QtWidgets import QAbstractButton, QLabel

    if isinstance(widget, QLabel):
        if widget.wordWrap() or not widget.text():
            return False
        return widget.width() < widget.sizeHint().width()
    if isinstance(widget, QAbstractButton) and widget.text():
        return widget.width() < widget.minimumSizeHint().width()
    return False


def _children(parent, kinds):
    for kind in kinds:
        yield from parent.findChildren(kind)


@pytest.mark.parametrize("size", [(1280, 800), (1024, 700)])
def test_status_bar_and_docks_show_their_whole_text(qtbot, wk_dataset, size):
    from PySide6.QtWidgets import QAbstractButton, QDockWidget, QLabel, QLineEdit

    from viewer.ui.main_window import QtMainWindow

    window = QtMainWindow()
    qtbot.addWidget(window)
    window.add_background_loading()
    compare = window.add_compare()
    from viewer.ui.layers_panel import install_layers_panel

    install_layers_panel(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    assert window.open_path(wk_dataset, pos=(200, 200, 50))
    assert compare.open_b(wk_dataset, start=False)
    qtbot.waitUntil(lambda: window.planes_complete() and compare.planes_complete(),
                    timeout=30000)
    xy = window.views[XY]
    at = QPointF(xy.width() * 0.6, xy.height() * 0.6)
    QGuiApplication.sendEvent(xy, QMouseEvent(QMouseEvent.Type.MouseMove, at,
                                              xy.mapToGlobal(at), Qt.MouseButton.NoButton,
                                              Qt.MouseButton.NoButton,
                                              Qt.KeyboardModifier.NoModifier))
    assert "segmentation" in window.status.value_label.text()
    assert "\u00b5m" in window.status.mouse_label.text() or "nm" in window.status.mouse_label.text()
    qtbot.wait(50)  # the labels' new texts are laid out
    assert window.size().width() == size[0] and window.size().height() == size[1]
    kinds = (QLabel, QAbstractButton, QLineEdit)
    bar = window.statusBar()

    def status_bar_problems() -> list[tuple[object, ...]]:
        found = []
        for widget in _children(bar, kinds):
            if widget.isVisible() and widget.width() > 0:
                region = widget.visibleRegion().boundingRect()
                if region.size() != widget.size() or _cut_text(widget):
                    found.append(("status bar", type(widget).__name__,
                                  getattr(widget, "text", lambda: "")()[:40],
                                  widget.geometry(), region, widget.sizeHint()))
        return found

    # The loader's figures change as blocks arrive, and the bar lays itself out anew each
    # time: wait for the layout to catch up, then nothing may be cut.
    with contextlib.suppress(Exception):
        qtbot.waitUntil(lambda: not status_bar_problems(), timeout=5000)
    problems = status_bar_problems()
    docks = [d for d in window.findChildren(QDockWidget) if d.isVisible()]
    seen: set[int] = set()
    assert {d.objectName() for d in docks} >= {"contrastDock", "layersDock", "compareDock"}
    for dock in docks:
        for tab in ([dock] if not window.tabifiedDockWidgets(dock) else
                    [dock, *window.tabifiedDockWidgets(dock)]):
            tab.raise_()
            qtbot.wait(10)
            for widget in _children(tab, kinds):
                if id(widget) in seen:
                    continue
                seen.add(id(widget))
                if widget.isVisible() and (_clipped(widget) or _cut_text(widget)):
                    problems.append((tab.objectName(), type(widget).__name__,
                                     getattr(widget, "text", lambda: "")()[:40],
                                     widget.geometry(), widget.visibleRegion().boundingRect(),
                                     widget.sizeHint()))
    assert problems == [], "\n".join(map(str, problems))


def test_an_empty_folder_says_what_the_program_reads_once(window, tmp_path):
    """The long list of what the program reads is in the banner, not again in each view."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not window.open_path(empty)
    assert window.banner.text().count("it reads:") == 1
    for view in window.views.values():
        assert "it reads:" not in view.message and "Cannot open" in view.message
