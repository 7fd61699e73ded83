"""The window on the true extent: a 96 x 80 x 64 zarr v3 array in 128^3 shards (written by
zarr-python) fills exactly 96 x 80 voxels of the fitted XY view, as its WKW twin does, and
past its last voxel the view looks like outside, not like data or padding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.core.slicing import XY

SHAPE = (96, 80, 64)
VALUE = 200  # grey 200 on screen (uint8, contrast 0..255)
pytest.importorskip("zarr")


def _zarr(path: Path) -> Path:
    import zarr

    arr = zarr.create_array(str(path), shape=SHAPE[::-1], dtype="uint8", chunks=(32, 32, 32),
                            shards=(128, 128, 128), zarr_format=3, fill_value=0,
                            dimension_names=["z", "y", "x"])
    arr[...] = VALUE
    return path


def _wkw(path: Path) -> Path:
    from window_fixtures import write_dataset

    return write_dataset(path, np.full(SHAPE, VALUE, np.uint8))  # files of 16^3 voxels


def _shown(window: Any, qtbot: Any, path: Path) -> dict[str, Any]:
    """What the fitted XY view shows of ``path``: the extent, the data's box on screen in
    voxels, and the colours just past the data and well outside it."""
    assert window.open_path(path)
    view = window.views[XY]
    qtbot.waitUntil(lambda: view.plane is not None and view.plane.complete, timeout=20000)
    qtbot.wait(50)
    image = view.grab().toImage()
    ratio = image.devicePixelRatio()
    w, h = image.width(), image.height()
    ptr = image.constBits()
    argb = np.frombuffer(ptr, dtype=np.uint32, count=w * h).reshape(h, w) & 0xFFFFFF
    grey = (VALUE << 16) | (VALUE << 8) | VALUE
    rows, cols = np.nonzero(argb == grey)
    x0, y0 = view.to_dataset(cols.min() / ratio, rows.min() / ratio)
    x1, y1 = view.to_dataset((cols.max() + 1) / ratio, (rows.max() + 1) / ratio)

    def colour(hx: float, vy: float) -> int | None:
        """The colour at dataset (hx, vy), None when the view does not show it."""
        px, py = (int(c * ratio) for c in view.to_widget(hx, vy))
        return int(argb[py, px]) if 0 <= px < w and 0 <= py < h else None

    # Half a voxel past the last one on each axis (the fit leaves room on one of them).
    past = [colour(SHAPE[0] + 0.5, 40.5), colour(48.5, SHAPE[1] + 0.5)]
    outside = colour(-0.5, 40.5) if colour(-0.5, 40.5) is not None else colour(48.5, -0.5)
    return {"bounds": window.state.bounds, "box": (x0, y0, x1, y1), "zoom": view.scales(),
            "past": [c for c in past if c is not None], "outside": outside,
            "info": window.status.info_label.text()}


@pytest.fixture
def window(qtbot: Any) -> Any:
    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    w.resize(1000, 800)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_a_sharded_zarr_array_fills_its_shape_like_its_wkw_twin(window: Any, qtbot: Any,
                                                                 tmp_path: Path) -> None:
    zarr_shown = _shown(window, qtbot, _zarr(tmp_path / "a.zarr"))
    wkw_shown = _shown(window, qtbot, _wkw(tmp_path / "twin"))
    for shown in (zarr_shown, wkw_shown):
        assert shown["bounds"] == ((0, 0, 0), SHAPE)
        assert "96 \u00d7 80 \u00d7 64" in shown["info"]
        x0, y0, x1, y1 = shown["box"]
        tolerance = 1.0 / min(shown["zoom"])  # a screen pixel, in voxels
        assert abs(x0) <= tolerance and abs(y0) <= tolerance, shown["box"]
        assert abs(x1 - SHAPE[0]) <= tolerance and abs(y1 - SHAPE[1]) <= tolerance, shown["box"]
        # past the last voxel the view looks like outside, not like data or padding
        assert shown["past"] and shown["outside"] is not None
        assert all(c == shown["outside"] for c in shown["past"]), shown
    assert zarr_shown["zoom"] == wkw_shown["zoom"]
    assert zarr_shown["outside"] == wkw_shown["outside"]
