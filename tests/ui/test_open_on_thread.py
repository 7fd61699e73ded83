"""Opening a local dataset in the window: detection and the metadata are read on a thread
while the window's event loop keeps running (a timer of the GUI thread fires meanwhile)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.format import registry, wkw


@pytest.fixture
def window(qtbot):  # type: ignore[no-untyped-def]
    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    qtbot.addWidget(w)
    yield w
    w.close()


def test_a_local_path_opens_on_a_thread_while_the_loop_runs(
        qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from PySide6.QtCore import QTimer

    root = tmp_path / "ds"
    ds = wkw.Dataset.create(str(root), wkw.Header(np.uint8, block_len=8, file_len=1))
    ds.write((0, 0, 0), np.full((1, 8, 8, 8), 7, np.uint8))
    ds.close()
    ticked = threading.Event()
    seen: list[threading.Thread] = []
    real = registry.open_dataset

    def opening(path: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread())
        ticked.wait(10)  # a GUI-thread timer must fire while this waits
        return real(path, *args, **kwargs)

    monkeypatch.setattr(registry, "open_dataset", opening)
    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(ticked.set)
    timer.start(0)
    assert window.open_path(str(root))
    assert ticked.is_set() and seen and seen[0] is not threading.main_thread()
    assert window.dataset is not None and window.dataset_path == str(root)


def test_a_local_path_that_does_not_open_says_why(qtbot: Any, window: Any,
                                                  tmp_path: Path) -> None:
    assert not window.open_path(str(tmp_path / "nothing here"))
    assert window.dataset is None
