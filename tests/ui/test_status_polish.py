"""Status texts refreshed with nothing new do not polish their labels anew (a style sheet
set, even the same one, restyles the label and lays the status bar out again: a relayout of
the window's bottom every refresh while a dataset opens)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget

from viewer.core.loader import Loader
from viewer.core.slicing import XY, PlaneRequest
from viewer.format import open_volume, wkw
from viewer.ui.loading import QtLoaderStatus


class _StyleChanges(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.StyleChange:
            self.count += 1
        return False


def test_a_loader_status_refresh_restyles_only_when_the_warning_changes(
        qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "ds"
    header = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(path), header)
    ds.write((0, 0, 0), np.arange(16 ** 3, dtype=np.uint8).reshape(16, 16, 16))
    ds.close()
    host = QWidget()
    host.setStyleSheet("QLabel { color: #ccc; }")  # as the window's own sheet
    qtbot.addWidget(host)
    status = QtLoaderStatus(host)
    loader = Loader(open_volume(str(path)), budget_bytes=64 << 20)
    changes = _StyleChanges()
    try:
        status.set_loader(loader)
        loader.set_wanted([PlaneRequest(XY, 5, (0, 0), (16, 16))], 0, (5, 5, 5))
        assert loader.wait_idle(60)
        status.label.installEventFilter(changes)
        for _ in range(3):
            status.refresh()
        assert changes.count == 0
        loader.set_budget(256)  # the warning comes: restyled once
        status.refresh()
        status.refresh()
        assert changes.count == 1 and status.label.styleSheet()
        loader.set_budget(64 << 20)  # and goes
        status.refresh()
        assert changes.count == 2 and not status.label.styleSheet()
    finally:
        loader.close()
