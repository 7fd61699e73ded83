"""Opening through the background loader, drag and drop, recent datasets, and the looks of
pixels that are not data."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDropEvent
from window_fixtures import write_dataset

from viewer.core.slicing import XY, Status
from viewer.format import open_volume


def test_window_with_the_background_loader_shows_the_data(window, tmp_path, qtbot):

    data = np.zeros((32, 32, 32), dtype=np.float32)
    data[:, :16] = 1.5
    data[:, 16:] = 4.0
    data[7, 9, 11] = 100.0
    window.add_background_loading(64 << 20)
    assert window.open_path(write_dataset(tmp_path / "f32", data), pos=(7, 9, 11), zoom=6)
    qtbot.waitUntil(window.planes_complete, timeout=20000)
    for _axis, view in window.views.items():
        assert view.value_at((7, 9, 11))[0] == 100.0
        np.testing.assert_array_equal(view.plane.status, Status.DATA)
    # auto-contrast ran once the planes were in: 1.5 .. 4.0 (the one outlier ignored)
    c = window.state.contrast
    assert c.lo == pytest.approx(1.5) and c.hi == pytest.approx(4.0)
    window.state.set_cursor((20, 20, 20))
    qtbot.waitUntil(window.planes_complete, timeout=20000)
    assert window.views[XY].request.index == 20
    assert window.views[XY].value_at((20, 20, 20))[0] == 4.0


def test_dropping_a_folder_opens_it(window, ramp_dataset):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(ramp_dataset))])
    event = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    assert window.dataset_path == str(ramp_dataset)
    assert window.views[XY].plane is not None


def test_recent_datasets_are_remembered_newest_first(window, tmp_path, monkeypatch,
                                                     ramp_dataset):
    monkeypatch.delenv("WKW_VIEWER_NO_SETTINGS")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope,
                      str(tmp_path / "settings"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                      str(tmp_path / "settings"))
    other = write_dataset(tmp_path / "other", np.ones((16, 16, 16), np.uint8))
    window.open_path(ramp_dataset)
    window.open_path(other)
    window.open_path(ramp_dataset)
    assert window.menus.recent.paths() == [str(ramp_dataset), str(other)]
    actions = [a.text() for a in window.menus.recent.menu.actions()]
    assert actions == [str(ramp_dataset), str(other)]
    window.menus.recent.menu.actions()[1].trigger()
    assert window.dataset_path == str(other)
    assert (tmp_path / "settings").exists()


def test_histogram_handle_drag_sets_the_levels(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset)
    hist = window.contrast_panel.histogram
    window.contrast_dock.show()
    qtbot.waitUntil(lambda: hist.isVisible() and hist.width() > 100)
    x_hi = int(hist._x(255))
    qtbot.mousePress(hist, Qt.MouseButton.LeftButton, pos=QPointF(x_hi, 30).toPoint())
    qtbot.mouseMove(hist, QPointF(hist._x(200), 30).toPoint())
    qtbot.mouseRelease(hist, Qt.MouseButton.LeftButton, pos=QPointF(hist._x(200), 30).toPoint())
    assert window.state.contrast.lo == 0
    assert abs(window.state.contrast.hi - 200) <= 2


def test_a_webknossos_dataset_opens_with_all_its_layers(window, tmp_path):
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos.writer import write_synthetic_dataset

    root = tmp_path / "wk"
    write_synthetic_dataset(root, EMVolume(2), shape=(128, 128, 128), mags=[(1, 1, 1)],
                            workers=1)
    assert window.open_path(root, pos=(10, 20, 30), zoom=2)
    assert "wk" in window.windowTitle()
    assert [(la.name, la.category) for la in window.state.layers] == [
        ("color", "color"), ("segmentation", "segmentation")]
    assert window.state.active_layer == "color"
    view = window.views[XY]
    assert set(view.layer_planes) == {"color", "segmentation"}
    plane = view.layer_planes["color"]
    (x0, y0), (x1, y1) = plane.request.lo, plane.request.hi
    volume = EMVolume(2)
    em = volume.em((0, 0, 0), (128, 128, 128))  # generated on the writer's grid
    seg = volume.segmentation((0, 0, 0), (128, 128, 128))
    np.testing.assert_array_equal(plane.data[0], em[x0:x1, y0:y1, 30])
    np.testing.assert_array_equal(view.layer_planes["segmentation"].data[0],
                                  seg[x0:x1, y0:y1, 30])
    # the status bar gives both layers' values under the mouse
    hx, hy = (int(v) + 32 for v in np.argwhere(seg[32:96, 32:96, 30] > 0)[0])
    window.status.on_hovered((hx, hy, 30))
    text = window.status.value_label.text()
    em, seg = int(em[hx, hy, 30]), int(seg[hx, hy, 30])
    assert seg > 0
    assert f"color {em}" in text and f"segmentation {seg}" in text
    # the segment under the mouse is highlighted; S selects it, S again selects none
    assert window.state.layer("segmentation").hovered_id == seg
    window.status.select_hovered_segment()
    assert window.state.layer("segmentation").selected_id == seg
    window.status.select_hovered_segment()
    assert window.state.layer("segmentation").selected_id is None
    # hiding the segmentation layer: the views show the color layer alone
    window.state.set_layer("segmentation", visible=False)
    assert set(view.layer_planes) == {"color"}


def test_the_extent_is_that_of_the_files_present(window, tmp_path):
    from viewer.core.extent import scan_bounds

    root = write_dataset(tmp_path / "sparse", np.ones((48, 32, 16), np.uint8))  # files 16^3
    for name in ("z0/y0/x0.wkw", "z0/y1/x0.wkw", "z0/y1/x2.wkw"):
        (root / name).unlink()
    assert scan_bounds(open_volume(root)) == ((16, 0, 0), (48, 32, 16))
    window.open_path(root)
    assert window.state.bounds == ((16, 0, 0), (48, 32, 16))
    assert window.state.cursor == (31, 15, 7)


def test_layers_read_at_different_mags_are_blended_on_the_finest_grid(window, tmp_path):
    """The color layer has a coarse mag, the segmentation layer only mag 1: zoomed out they
    are read at different mags and drawn on one grid (the finer one)."""
    from viewer.format.webknossos import BoundingBox
    from viewer.format.webknossos.writer import LayerSpec, create_dataset

    box = BoundingBox((0, 0, 0), (64, 64, 64))
    ds = create_dataset(tmp_path / "wk", [
        LayerSpec("em", box, mags=[(1, 1, 1), (2, 2, 2)], block_len=8, file_len=4),
        LayerSpec("seg", box, "segmentation", "uint32", mags=[(1, 1, 1)], block_len=8,
                  file_len=4)])
    em = (np.indices((64, 64, 64)).sum(axis=0) % 250).astype(np.uint8)
    ds.layer("em").mag((1, 1, 1)).write((0, 0, 0), em)
    ds.layer("em").mag((2, 2, 2)).write((0, 0, 0), em[::2, ::2, ::2])
    seg = (np.indices((64, 64, 64))[0] // 16 + 1).astype(np.uint32)
    ds.layer("seg").mag((1, 1, 1)).write((0, 0, 0), seg)
    ds.close()
    assert window.open_path(tmp_path / "wk", pos=(32, 32, 32), zoom=0.4)
    view = window.views[XY]
    assert view.layer_planes["em"].factors == (2, 2)
    assert view.layer_planes["seg"].factors == (1, 1)
    assert view.plane is view.layer_planes["seg"]  # the finer grid
    u, v = view.plane.status.shape
    assert view.pixels().shape == (v, u)
    # the color layer alone again: its own (coarse) grid
    window.state.set_layer("seg", visible=False)
    assert view.plane is view.layer_planes["em"] and view.pixels().shape == (v // 2, u // 2)
    assert not window.errors


def test_a_half_written_webknossos_dataset_opens_what_it_can_and_says_what_not(window, tmp_path):
    """As webKnossos 4.x lays it out (legacy ``wkwResolutions`` for one layer, ``mags`` for
    another, a uint24 RGB layer, a segmentation layer with no mags yet, a zarr layer): the
    readable layers open, the banner names the others."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "webknossos"))
    import wk4_layout as wk4

    box = wk4.bbox((8, 0, 0), (24, 16, 16))
    em = wk4.model(np.uint8, (24, 16, 16), 1)
    rgb = wk4.model(np.uint8, (3, 24, 16, 16), 2)
    wk4.write_mag(tmp_path / "ds" / "color" / "1", em, offset=(8, 0, 0))
    wk4.write_mag(tmp_path / "ds" / "rgb" / "1", rgb, offset=(8, 0, 0))
    wk4.write_properties(tmp_path / "ds", [
        wk4.layer("color", "color", "uint8", box, wk4.resolutions_entry([(1, 1, 1)]),
                  key="wkwResolutions"),
        wk4.layer("rgb", "color", "uint24", box, wk4.mags_entry("rgb", [(1, 1, 1)])),
        wk4.layer("segmentation", "segmentation", "uint32", box, [], largestSegmentId=0),
        wk4.layer("zarrish", "color", "uint8", box, wk4.mags_entry("zarrish", [(1, 1, 1)]),
                  data_format="zarr3"),
    ], scale=[11.24, 11.24, 28.0])
    assert window.open_path(tmp_path / "ds", pos=(20, 8, 8), zoom=4)
    assert [la.name for la in window.state.layers] == ["color", "rgb"]
    text = window.banner.text()
    assert "segmentation" in text and "zarrish" in text
    assert window.state.bounds == ((8, 0, 0), (32, 16, 16))
    assert window.state.voxel_size_nm == (11.24, 11.24, 28.0)
    view = window.views[XY]
    rgb_plane = view.layer_planes["rgb"]
    (x0, y0), (x1, y1) = rgb_plane.request.lo, rgb_plane.request.hi
    np.testing.assert_array_equal(rgb_plane.data, rgb[:, x0 - 8:x1 - 8, y0:y1, 8])
    np.testing.assert_array_equal(view.layer_planes["color"].data[0], em[x0 - 8:x1 - 8, y0:y1, 8])
    assert window.state.layer("rgb").contrast.rgb  # three uint8 channels shown as colour


def test_the_contrast_controls_follow_the_active_layer(window, tmp_path):
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos.writer import write_synthetic_dataset

    write_synthetic_dataset(tmp_path / "wk", EMVolume(2), shape=(64, 64, 64), mags=[(1, 1, 1)],
                            workers=1)
    assert window.open_path(tmp_path / "wk")
    assert window.contrast_panel.isEnabled()
    window.state.set_contrast(lo=20, hi=90)
    assert window.state.layer("color").contrast.lo == 20
    window.state.set_active_layer("segmentation")
    assert not window.contrast_panel.isEnabled()  # ids have colours of their own
    window.state.set_active_layer("color")
    assert window.contrast_panel.isEnabled() and window.state.contrast.lo == 20


def test_extent_reports_that_pile_up_arrive_as_the_last_one(qtbot) -> None:  # type: ignore[no-untyped-def]
    """Reports of the extent scan made while the GUI thread is busy reach it as one, the
    last (each report is the box of every file found so far)."""
    import threading

    from viewer.ui.opening import QtExtentBridge

    bridge = QtExtentBridge()
    got: list[tuple[object, object, bool]] = []
    bridge.extent_found.connect(lambda scan, bounds, done: got.append((scan, bounds, done)))
    boxes = [((0, 0, 0), (8 * k, 8, 8)) for k in range(1, 6)]

    def scan_thread() -> None:
        for k, box in enumerate(boxes):
            bridge.report("scan", box, k == len(boxes) - 1)  # type: ignore[arg-type]

    worker = threading.Thread(target=scan_thread)
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    qtbot.wait(20)
    assert got == [("scan", boxes[-1], True)]
    bridge.report("scan", boxes[0], False)  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: len(got) == 2, timeout=5000)
    assert got[1] == ("scan", boxes[0], False)


def test_growths_of_the_extent_are_spaced_and_the_last_comes_at_once(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A growth is delivered at most once every ``min_gap_s`` (each one refreshes and repaints
    every view): reports made meanwhile wait, the latest replacing the others, and the scan's
    last report (``done``) is delivered at once, in a later turn of the event loop than the
    one that posted it."""
    from viewer.ui.opening import QtExtentBridge

    bridge = QtExtentBridge(min_gap_s=600)
    got: list[tuple[object, object, bool]] = []
    bridge.extent_found.connect(lambda scan, bounds, done: got.append((scan, bounds, done)))
    boxes = [((0, 0, 0), (8 * k, 8, 8)) for k in range(1, 6)]
    bridge.report("scan", boxes[0], False)  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    assert got == [("scan", boxes[0], False)]
    bridge.report("scan", boxes[1], False)  # type: ignore[arg-type]
    bridge.report("scan", boxes[2], False)  # type: ignore[arg-type]
    qtbot.wait(50)
    assert got == [("scan", boxes[0], False)]  # held: the gap has not passed
    assert bridge.holding
    bridge.report("scan", boxes[3], True)  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: len(got) == 2, timeout=5000)
    assert got[1] == ("scan", boxes[3], True)
    assert not bridge.holding
    bridge.min_gap_s = 0.05  # a held growth arrives by itself once the gap has passed
    bridge.report("scan", boxes[1], False)  # type: ignore[arg-type]
    bridge.report("scan", boxes[4], False)  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: len(got) == 3, timeout=5000)
    assert got[2] == ("scan", boxes[4], False)
    qtbot.wait(100)
    assert len(got) == 3


def test_a_growth_of_the_extent_is_not_delivered_in_the_pass_that_posted_it(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The posted events of one pass (a dataset's arrival, its first paint) do not include
    the extent's growth: it comes on a timer, after that pass."""
    from PySide6.QtCore import QCoreApplication

    from viewer.ui.opening import QtExtentBridge

    bridge = QtExtentBridge(min_gap_s=0)
    got: list[object] = []
    bridge.extent_found.connect(lambda scan, bounds, done: got.append(bounds))
    bridge.report("scan", ((0, 0, 0), (8, 8, 8)), False)  # type: ignore[arg-type]
    QCoreApplication.sendPostedEvents()
    assert got == [] and bridge.holding
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    assert got == [((0, 0, 0), (8, 8, 8))]


def test_the_first_growth_comes_a_gap_after_the_dataset_is_shown(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A dataset shown with its extent scan still running: the scan's reports wait
    ``min_gap_s`` from then (the window's first paint, the inspector's start and its first
    unit come first), but for the last one (``done``), which comes at once."""
    from viewer.core.extent import ExtentScan
    from viewer.ui.opening import QtDatasetOpener

    root = write_dataset(tmp_path / "d", np.ones((32, 16, 16), np.uint8))
    volume = open_volume(root)
    opener = QtDatasetOpener()
    grown: list[object] = []
    opener.extent_grown.connect(grown.append)
    bridge = opener._bridge
    bridge.min_gap_s = 600
    scan = ExtentScan(volume, lambda b, done: bridge.report(scan, b, done))  # not started
    opener.adopt(scan)
    bridge.report(scan, ((0, 0, 0), (16, 16, 16)), False)
    qtbot.wait(50)
    assert grown == [] and bridge.holding
    bridge.report(scan, ((0, 0, 0), (32, 16, 16)), True)
    qtbot.waitUntil(lambda: bool(grown), timeout=5000)
    assert grown == [((0, 0, 0), (32, 16, 16))]
    assert opener.scan is None
    volume.close()
