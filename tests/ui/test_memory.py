"""What the window remembers between sessions (window layout, each dataset's view), in a
settings file of the test's own (never the user's), and what runs that must leave no trace
do not write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QSettings
from window_fixtures import write_dataset

from viewer.core import view_memory


@pytest.fixture
def settings_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "settings"
    folder.mkdir()
    monkeypatch.delenv("WKW_VIEWER_NO_SETTINGS", raising=False)
    monkeypatch.setenv("WKW_VIEWER_SETTINGS_DIR", str(folder))
    return folder


def _stored(folder: Path) -> QSettings:
    return QSettings(str(folder / "wkw-viewer.ini"), QSettings.Format.IniFormat)


def _new_window(qtbot):
    from viewer.ui.main_window import QtMainWindow
    from viewer.ui.memory import install_memory

    window = QtMainWindow()
    window.resize(1000, 800)
    qtbot.addWidget(window)
    install_memory(window)
    window.show()
    qtbot.waitExposed(window)
    return window


@pytest.fixture
def two_datasets(tmp_path) -> tuple[Path, Path]:
    x, y, z = np.indices((32, 32, 32))
    a = write_dataset(tmp_path / "a", ((x + 2 * y + 3 * z) % 251).astype(np.uint8))
    b = write_dataset(tmp_path / "b", np.full((16, 16, 16), 7, np.uint8))
    return a, b


def test_each_dataset_gets_back_its_view(settings_dir, two_datasets, qtbot):
    a, b = two_datasets
    window = _new_window(qtbot)
    window.open_path(a)
    window.state.set_zoom(3.0)
    window.state.jump_to((5, 6, 7))
    window.state.set_contrast(lo=10, hi=90, gamma=1.5, colormap="magma", invert=True)
    window.open_path(b)  # a's view is kept when another dataset opens
    window.state.jump_to((1, 2, 3))
    window.close()

    again = _new_window(qtbot)
    again.open_path(b)
    assert again.state.cursor == (1, 2, 3)
    again.open_path(a)
    assert again.state.cursor == (5, 6, 7)
    assert again.state.zoom == pytest.approx(3.0)
    c = again.state.contrast
    assert (c.lo, c.hi, c.gamma, c.colormap, c.invert) == (10, 90, 1.5, "magma", True)
    # --pos wins over the remembered position, the rest is restored
    again.open_path(a, pos=(20, 20, 20))
    assert again.state.cursor == (20, 20, 20) and again.state.zoom == pytest.approx(3.0)


def test_remembering_turned_off_restores_nothing_and_reset_forgets(settings_dir, two_datasets,
                                                                  qtbot):
    a, _ = two_datasets
    window = _new_window(qtbot)
    window.open_path(a)
    window.state.jump_to((5, 6, 7))
    window.close()
    assert json.loads(_stored(settings_dir).value("views"))  # written
    off = _new_window(qtbot)
    assert off.memory.remember_action.isChecked()
    off.memory.remember_action.trigger()  # View > Remember Each Dataset's View: off
    off.open_path(a)
    assert off.state.cursor != (5, 6, 7)
    off.close()
    on = _new_window(qtbot)
    assert not on.memory.remember_action.isChecked()  # the choice itself is remembered
    on.memory.remember_action.trigger()
    on.memory.reset()
    assert _stored(settings_dir).value("views") is None
    on.open_path(a)
    assert on.state.cursor != (5, 6, 7)


def test_window_geometry_and_docks_come_back(settings_dir, qtbot):
    window = _new_window(qtbot)
    window.resize(700, 520)  # inside the offscreen screen (800 x 600): restoring clamps to it
    window.contrast_dock.hide()
    window.close()
    again = _new_window(qtbot)
    assert again.size().width() == 700 and again.size().height() == 520
    assert not again.contrast_dock.isVisible()
    again.memory.reset()
    assert again.contrast_dock.isVisible()


def test_the_layer_mag_and_active_layer_come_back_on_a_webknossos_dataset(settings_dir, tmp_path,
                                                                         qtbot):
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos.writer import write_synthetic_dataset

    root = str(tmp_path / "wk")
    write_synthetic_dataset(root, EMVolume(3), shape=(64, 64, 32),
                            mags=[(1, 1, 1), (2, 2, 1)], block_len=8, file_len=4, workers=1)
    window = _new_window(qtbot)
    window.open_path(root)
    window.state.set_layer("color", mag_lock=(2, 2, 1))
    window.state.set_active_layer("segmentation")
    window.state.set_layer("segmentation", opacity=0.25)
    window.close()
    again = _new_window(qtbot)
    again.open_path(root)
    assert again.state.layer("color").mag_lock == (2, 2, 1)
    assert again.state.active_layer == "segmentation"
    assert again.state.layer("segmentation").opacity == pytest.approx(0.25)


def test_a_damaged_memory_is_ignored():
    from viewer.core.state import LayerDisplay, ViewerState

    state = ViewerState()
    state.set_layers([LayerDisplay("data")], notify=False)
    state.set_bounds(((0, 0, 0), (10, 10, 10)))
    before = view_memory.snapshot(state)
    assert not view_memory.apply(state, {"version": 99, "cursor": [1, 1, 1]}, {})
    assert view_memory.apply(state, {"version": 1, "cursor": [50, -3, "x"], "zoom": "big",
                                     "layers": {"data": {"contrast": {"colormap": "nope",
                                                                      "lo": 5, "hi": 1}},
                                                "gone": {"visible": False}}}, {})
    assert view_memory.snapshot(state) == before
    assert view_memory.apply(state, {"version": 1, "cursor": [50, -3, 4]}, {})
    assert state.cursor == (9, 0, 4)  # clamped into the bounds


def _run_viewer(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The program with the settings it would use for a person (``XDG_CONFIG_HOME`` points
    at a folder of the test's)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("WKW_VIEWER_NO_SETTINGS", "WKW_VIEWER_SETTINGS_DIR")}
    env.update(QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    return subprocess.run([sys.executable, "-m", "viewer", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_screenshot_run_leaves_no_trace_and_no_qt_noise(tmp_path, two_datasets):
    """A --screenshot run (even of a damaged dataset) is not added to Open Recent, writes no
    settings at all, and stderr stays free of "propagateSizeHints" warnings."""
    a, _ = two_datasets
    (tmp_path / "config").mkdir()
    for path in (a, tmp_path / "no-such"):
        run = _run_viewer(tmp_path, str(path), "--screenshot", str(tmp_path / "shot.png"))
        assert run.returncode in (0, 2)
        assert "propagateSizeHints" not in run.stderr
    assert list((tmp_path / "config").rglob("*")) == []


def test_no_settings_flag_is_understood(tmp_path, two_datasets):
    a, _ = two_datasets
    (tmp_path / "config").mkdir()
    run = _run_viewer(tmp_path, str(a), "--no-settings", "--screenshot",
                      str(tmp_path / "shot.png"))
    assert run.returncode == 0, run.stderr
    assert list((tmp_path / "config").rglob("*")) == []


def test_settings_are_written_where_the_test_says(settings_dir, two_datasets, qtbot):
    a, _ = two_datasets
    window = _new_window(qtbot)
    window.open_path(a)
    window.close()
    assert _stored(settings_dir).value("recent") in ([str(a)], str(a))
    assert _stored(settings_dir).value("window/geometry") is not None


def test_a_time_series_gets_back_its_time_point(settings_dir, tmp_path, qtbot):
    """The index of the extra axes is remembered per dataset (a zarr-python time series), and
    the view shows that time point's voxels when the dataset opens again."""
    zarr = pytest.importorskip("zarr")
    from viewer.core.slicing import XY

    path = tmp_path / "movie.zarr"
    arr = zarr.create_array(str(path), shape=(3, 16, 16, 16), dtype="uint8",
                            chunks=(1, 16, 16, 16), zarr_format=3, fill_value=0,
                            dimension_names=["t", "z", "y", "x"])
    for t in range(3):
        arr[t] = 10 * (t + 1)
    window = _new_window(qtbot)
    window.open_path(path)
    assert window.state.index == {"t": 0}
    window.state.step_index(1)
    window.state.step_index(1)
    assert window.state.index == {"t": 2}
    window.close()

    again = _new_window(qtbot)
    again.open_path(path)
    assert again.state.index == {"t": 2}
    plane = again.views[XY].plane
    assert plane is not None and plane.complete and (plane.data == 30).all()
