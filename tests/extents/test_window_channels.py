"""The window on a multi-channel OME-Zarr image (zarr-python, one channel per chunk, ``omero``
colours by hand): the channels are layers of their own, each in its colour, added together,
so that where both are bright the view shows both colours mixed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.core.slicing import XY

SHAPE = (64, 48, 16)  # x, y, z
BRIGHT = 200
pytest.importorskip("zarr")


def _two_channels(path: Path) -> Path:
    """Channel 0 bright where x < 32, channel 1 where y < 24 (uint8, axes c, z, y, x)."""
    import zarr

    data = np.zeros((2, *SHAPE), np.uint8)
    data[0, :32] = BRIGHT
    data[1, :, :24] = BRIGHT
    group = zarr.open_group(str(path), mode="w", zarr_format=2)
    arr = group.create_array("0", shape=(2, *SHAPE[::-1]), dtype="uint8",
                             chunks=(1, 16, 16, 16), fill_value=255)  # every chunk stored
    arr[...] = np.ascontiguousarray(data.transpose(0, 3, 2, 1))
    group.attrs["multiscales"] = [{
        "version": "0.4", "axes": [{"name": "c", "type": "channel"},
                                   *({"name": n, "type": "space"} for n in "zyx")],
        "datasets": [{"path": "0", "coordinateTransformations": [
            {"type": "scale", "scale": [1.0, 1.0, 1.0, 1.0]}]}]}]
    window = {"start": 0, "end": 255, "min": 0, "max": 255}
    group.attrs["omero"] = {"channels": [
        {"label": "red one", "color": "FF0000", "window": window, "active": True},
        {"label": "green one", "color": "00FF00", "window": window, "active": True}]}
    assert json.loads((path / ".zattrs").read_text())["omero"]
    return path


@pytest.fixture
def window(qtbot: Any) -> Any:
    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    w.resize(1000, 800)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w


def _colour_at(view: Any, x: float, y: float) -> tuple[int, int, int]:
    image = view.grab().toImage()
    ratio = image.devicePixelRatio()
    w, h = image.width(), image.height()
    argb = np.frombuffer(image.constBits(), dtype=np.uint32, count=w * h).reshape(h, w)
    px, py = (int(c * ratio) for c in view.to_widget(x, y))
    v = int(argb[py, px])
    return ((v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF)


def test_two_channel_composite_shows_both_colours(window: Any, qtbot: Any,
                                                  tmp_path: Path) -> None:
    assert window.open_path(_two_channels(tmp_path / "cells.zarr"), pos=(20, 20, 8))
    names = [la.name for la in window.state.layers]
    assert names == ["cells.zarr/red one", "cells.zarr/green one"] or \
        [n.split("/", 1)[1] for n in names] == ["red one", "green one"]
    assert all(la.additive for la in window.state.layers)
    view = window.views[XY]
    qtbot.waitUntil(lambda: all(p.complete for p in view.layer_planes.values())
                    and len(view.layer_planes) == 2, timeout=20000)
    qtbot.wait(50)
    assert _colour_at(view, 10.5, 10.5) == (BRIGHT, BRIGHT, 0)  # both: red + green
    assert _colour_at(view, 40.5, 10.5) == (0, BRIGHT, 0)  # green only
    assert _colour_at(view, 10.5, 40.5) == (BRIGHT, 0, 0)  # red only
    assert _colour_at(view, 40.5, 40.5) == (0, 0, 0)
    # hiding a channel takes its colour away
    window.state.set_layer(names[1], visible=False)
    qtbot.waitUntil(lambda: _colour_at(view, 10.5, 10.5) == (BRIGHT, 0, 0), timeout=10000)


def _time_series(path: Path) -> Path:
    """Two time points of one channel (axes t, c, z, y, x, zarr v3 names): 50 then 200."""
    import zarr

    arr = zarr.create_array(str(path), shape=(2, 1, *SHAPE[::-1]), dtype="uint8",
                            chunks=(1, 1, 16, 16, 16), zarr_format=3, fill_value=0,
                            dimension_names=["t", "c", "z", "y", "x"])
    arr[0] = 50
    arr[1] = 200
    return path


def test_time_slider_changes_the_image_and_the_status_bar(window: Any, qtbot: Any,
                                                          tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    assert window.open_path(_time_series(tmp_path / "movie.zarr"), pos=(20, 20, 8))
    assert window.state.extra_axes == {"t": 2} and window.state.index == {"t": 0}
    view = window.views[XY]
    slider = window.extra_axes.sliders["t"]
    assert slider.isVisibleTo(window) and slider.maximum() == 1
    qtbot.waitUntil(lambda: view.plane is not None and view.plane.complete, timeout=20000)
    qtbot.waitUntil(lambda: _colour_at(view, 10.5, 10.5) == (50, 50, 50), timeout=10000)
    assert "t 0 of 0\u20131" in window.status.info_label.text()
    slider.setValue(1)
    assert window.state.index == {"t": 1}
    qtbot.waitUntil(lambda: _colour_at(view, 10.5, 10.5) == (200, 200, 200), timeout=20000)
    assert "t 1 of 0\u20131" in window.status.info_label.text()
    assert window.extra_axes.labels["t"].text() == "t 1/1"
    view.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_BracketLeft)  # [ : the previous time point
    qtbot.waitUntil(lambda: window.state.index == {"t": 0}, timeout=5000)
    qtbot.waitUntil(lambda: _colour_at(view, 10.5, 10.5) == (50, 50, 50), timeout=20000)
    assert slider.value() == 0


def _random_series(path: Path) -> np.ndarray:
    """Three time points of one channel, every voxel its own (uint8, axes t, z, y, x); the
    data as (t, x, y, z)."""
    import zarr

    data = np.random.default_rng(3).integers(1, 255, size=(3, *SHAPE), dtype=np.uint8)
    arr = zarr.create_array(str(path), shape=(3, *SHAPE[::-1]), dtype="uint8",
                            chunks=(1, 8, 16, 16), zarr_format=3, fill_value=0,
                            dimension_names=["t", "z", "y", "x"])
    arr[...] = data.transpose(0, 3, 2, 1)
    return data


def test_the_next_time_point_is_read_ahead_and_shown_at_once(qtbot: Any,
                                                             tmp_path: Path) -> None:
    from PySide6.QtGui import QAction

    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    w.add_background_loading(32 << 20)
    w.resize(1000, 800)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    data = _random_series(tmp_path / "movie.zarr")
    assert w.open_path(tmp_path / "movie.zarr", pos=(20, 20, 8))
    assert w.state.extra_axes == {"t": 3}

    def shown_complete() -> bool:
        return all(v.plane is not None and v.plane.complete for v in w.views.values())

    def time_points_cached() -> set[int]:
        cached = w.source.cache.keys()
        return {dict(k[0][1])["t"] for k in cached if isinstance(k[0], tuple)}

    qtbot.waitUntil(shown_complete, timeout=20000)
    assert w.source.wait_idle(30)
    assert time_points_cached() == {0, 1}  # the next time point is in the cache before ]
    misses = w.source.stats().misses
    step = {a.shortcut().toString(): a for a in w.findChildren(QAction)}
    step["]"].trigger()  # what ] does
    assert w.state.index == {"t": 1}
    assert shown_complete()  # at once, from the cache: nothing read for it
    assert w.source.stats().misses == misses
    for axis, view in w.views.items():
        (ox, oy, oz), (sx, sy, sz) = view.plane.request.box()
        want = np.moveaxis(data[1, ox:ox + sx, oy:oy + sy, oz:oz + sz], axis, -1)[..., 0]
        np.testing.assert_array_equal(view.plane.data[0], want)
    qtbot.waitUntil(lambda: time_points_cached() == {0, 1, 2}, timeout=20000)
    step["["].trigger()  # back: t=0 was kept
    assert w.state.index == {"t": 0} and shown_complete()
    assert w.source.stats().misses == misses
    w.close()
