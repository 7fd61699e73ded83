"""Fixtures for the window tests: real datasets on disk and a shown main window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from window_fixtures import write_dataset


@pytest.fixture
def window(qtbot):
    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    w.resize(1000, 800)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


@pytest.fixture
def ramp_dataset(tmp_path: Path) -> Path:
    """32^3 uint8, value = (x + 2y + 3z) % 251, eight 16^3 LZ4HC files."""
    x, y, z = np.indices((32, 32, 32))
    return write_dataset(tmp_path / "ramp", ((x + 2 * y + 3 * z) % 251).astype(np.uint8))
