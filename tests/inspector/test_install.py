"""The inspector mounted in the real main window: cursor linked both ways, overlays drawn over
the QPainter slice views."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspector_data import BLOCK_LEN, SIDE
from PySide6.QtCore import Qt

main_window = pytest.importorskip("viewer.ui.main_window")

from viewer.ui.inspector import QtInspectorPanel, install_inspector  # noqa: E402

WAIT = 20000


@pytest.fixture()
def window(qtbot):  # type: ignore[no-untyped-def]
    w = main_window.QtMainWindow()
    qtbot.addWidget(w)
    w.resize(1100, 800)
    yield w
    w.side_panel.shutdown()


def test_install_links_cursor_both_ways_and_draws_the_map(window, qtbot,
                                                          known_dataset: Path) -> None:
    panel = install_inspector(window)
    assert isinstance(window.side_panel, QtInspectorPanel) and window.side_panel is panel
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
        assert window.open_path(str(known_dataset), pos=(1, 1, 3))
    qtbot.waitUntil(lambda: panel.current_path is not None, timeout=WAIT)
    # A row of the jump table moves the window's cursor to that block.
    panel.tabs.setCurrentIndex(2)
    jump = panel.jump_tab
    rect = jump.jump_view.visualRect(jump.jump_model.index(1, 0))
    qtbot.mouseClick(jump.jump_view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.state.cursor == (BLOCK_LEN + BLOCK_LEN // 2, BLOCK_LEN // 2, BLOCK_LEN // 2)
    # The window's cursor moves the panel to the other file.
    with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
        window.state.set_cursor((SIDE + 1, 1, 3))
    assert panel.current_path == str(known_dataset / "z0" / "y0" / "x1.wkw")
    # The compression map over the XY view (off by default): the random block and a zero
    # block differ.
    panel.map_tab.map_toggle.setChecked(True)
    with qtbot.waitSignal(panel.overlays_updated, timeout=WAIT):
        window.state.set_cursor((1, 1, 3))
    view = window.views[2]
    image = view.grab().toImage()
    ratio = image.devicePixelRatio()

    def colour(h: float, v: float) -> tuple[int, int, int]:
        x, y = view.to_widget(h, v)
        c = image.pixelColor(int(x * ratio), int(y * ratio))
        return (c.red(), c.green(), c.blue())

    random_px = colour(BLOCK_LEN * 1.5, BLOCK_LEN * 0.5)
    zero_px = colour(BLOCK_LEN * 2.5, BLOCK_LEN * 0.5)
    assert sum(abs(a - b) for a, b in zip(random_px, zero_px, strict=True)) > 100, \
        (random_px, zero_px)


def test_the_panel_takes_the_dataset_after_opening_returns(window, qtbot,
                                                           known_dataset: Path) -> None:
    """Opening returns before the panel starts on the dataset (its scan, its first unit: a
    turn of the event loop later); news of datasets opened within one turn start it once."""
    panel = install_inspector(window)
    started = []
    panel.mag_selected.connect(lambda layer, mag: started.append(panel.volume.path))
    assert window.open_path(str(known_dataset), pos=(1, 1, 3))
    assert panel.volume is None and not started  # not yet
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        pass
    assert started == [str(known_dataset)] and panel.dataset is window.opened
    window.dataset_opened.emit(str(known_dataset))
    window.dataset_opened.emit(str(known_dataset))
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        pass
    qtbot.wait(50)
    assert started == [str(known_dataset)] * 2


def test_a_panel_shut_down_takes_no_dataset(window, qtbot, known_dataset: Path) -> None:
    panel = install_inspector(window)
    assert window.open_path(str(known_dataset))
    panel.shutdown()
    qtbot.wait(50)
    assert panel.volume is None and panel.is_shut_down
