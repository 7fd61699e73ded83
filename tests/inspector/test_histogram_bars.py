"""The Sizes tab's painted histogram: a click on a bar names that bar's bin, and the tab lists
what the bin holds."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, Qt

from viewer.core.advise import human_bytes
from viewer.ui.inspector.histogram_bars import QtHistogramBars


def test_a_click_names_the_bin_under_it(qtbot) -> None:
    bars = QtHistogramBars("size", "count", human_bytes)
    qtbot.addWidget(bars)
    bars.resize(448, 200)
    bars.set_bars(np.linspace(0.0, 400.0, 5), np.asarray([3, 0, 7, 1], np.int64))
    bars.show()
    qtbot.waitExposed(bars)
    bars.grab()  # paints without error
    area = bars.plot_rect()
    assert area.width() == 448 - 48 - 12
    for k in range(4):
        x = int(area.left() + (k + 0.5) * area.width() / 4)
        assert bars.bin_at(x) == k
        with qtbot.waitSignal(bars.bin_clicked, timeout=2000) as blocker:
            qtbot.mouseClick(bars, Qt.MouseButton.LeftButton, pos=QPoint(x, 100))
        assert blocker.args == [k]
    with qtbot.assertNotEmitted(bars.bin_clicked):
        qtbot.mouseClick(bars, Qt.MouseButton.LeftButton, pos=QPoint(5, 100))  # the labels


def test_no_bars_paints_and_names_no_bin(qtbot) -> None:
    bars = QtHistogramBars()
    qtbot.addWidget(bars)
    bars.resize(200, 200)
    bars.grab()
    assert bars.bin_at(100) == -1
