"""The scan's progress bar shows a new count at most every ``PROGRESS_EVERY_MS`` (each showing
repaints it and its parents' backdrop; a large scan sends tens of batches a second): the
first count at once, the latest once its turn comes, none in between, and the bar goes at
the end."""

from __future__ import annotations

from viewer.core.inspect import ScanBatch
from viewer.ui.inspector import QtInspectorPanel


def test_the_progress_bar_shows_the_first_and_the_latest_count(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = QtInspectorPanel()
    qtbot.addWidget(panel)
    shown: list[int] = []
    panel.progress.valueChanged.connect(shown.append)
    try:
        panel.progress.show()
        for done in (100, 200, 300, 400):  # four batches in one turn of the event loop
            panel._on_scan_batch(ScanBatch((), done, 1000))
        assert shown == [100]
        qtbot.waitUntil(lambda: shown[-1] == 400, timeout=5000)
        assert shown == [100, 400]
        assert panel.progress.maximum() == 1000
        panel._on_scan_batch(ScanBatch((), 500, 1000))
        panel._on_scan_batch(ScanBatch((), 1000, 1000, finished=True))
        assert not panel.progress.isVisible()
        qtbot.wait(400)
        assert shown == [100, 400]  # nothing shown after the end
    finally:
        panel.shutdown()
