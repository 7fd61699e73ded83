"""Datasets the inspector tests look into: real files on disk, written by the project's writer
and by the reference ``wkw``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from inspector_data import BLOCK_LEN, FILE_LEN, known_volume

from viewer.format import wkw


@pytest.fixture()
def known_dataset(tmp_path: Path) -> Path:
    root = tmp_path / "known"
    header = wkw.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN,
                        block_type=wkw.BLOCK_TYPE_LZ4HC)
    ds = wkw.Dataset.create(str(root), header)
    ds.write((0, 0, 0), known_volume())
    ds.close()
    return root


@pytest.fixture()
def reference_dataset(tmp_path: Path) -> Path:
    """The same volume written by the reference implementation (PyPI ``wkw``)."""
    import wkw as ref

    root = tmp_path / "reference"
    with ref.Dataset.create(str(root), ref.Header(np.uint8, block_len=BLOCK_LEN,
                                                 file_len=FILE_LEN,
                                                 block_type=ref.Header.BLOCK_TYPE_LZ4HC)) as ds:
        ds.write((0, 0, 0), known_volume())
    return root


@pytest.fixture()
def slice_view(qtbot):  # type: ignore[no-untyped-def]
    """Make a window's slice view (``QtSliceView``, 400 x 400 pixels, shown) with normal
    ``axis`` over ``bounds``, centred on ``cursor`` at ``zoom``: what the inspector's overlay
    is drawn over in the program."""
    from viewer.core.state import ViewerState
    from viewer.ui.slice_view import QtSliceView

    def make(axis: int, bounds: tuple[tuple[int, int, int], tuple[int, int, int]],
             cursor: tuple[int, int, int], zoom: float = 1.0) -> QtSliceView:
        state = ViewerState()
        state.set_bounds(bounds, cursor, zoom)
        view = QtSliceView(axis, state)
        qtbot.addWidget(view)
        view.resize(400, 400)
        view.show()
        qtbot.waitExposed(view)
        return view

    return make
