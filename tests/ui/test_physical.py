"""Physical space in the window: a webKnossos dataset's voxel size gives physical positions in
the status bar, a scale bar in each view and the right aspect for anisotropic voxels; a plain
WKW dataset (no voxel size) stays in voxels, isotropic, without a scale bar."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QGuiApplication, QWheelEvent
from window_fixtures import write_dataset

from viewer.core.multires import format_physical
from viewer.core.slicing import XY, XZ, YZ
from viewer.format.webknossos.properties import BoundingBox
from viewer.format.webknossos.writer import LayerSpec, create_dataset

VOXEL = (10.0, 10.0, 25.0)  # nm: z voxels 2.5 times as long as x and y
SIDE = 64


def ramp() -> np.ndarray:
    x, y, z = np.indices((SIDE, SIDE, SIDE))
    return ((x + 2 * y + 3 * z) % 251).astype(np.uint8)


def write_wk(root: Path, data: np.ndarray, mag: tuple[int, int, int] = (1, 1, 1),
             voxel_size: tuple[float, float, float] = VOXEL) -> Path:
    """A one-layer webKnossos dataset holding ``data`` at ``mag`` (block_len 8, file_len 4)."""
    extent = tuple(s * m for s, m in zip(data.shape, mag, strict=True))
    spec = LayerSpec("color", BoundingBox((0, 0, 0), extent), mags=[mag], block_len=8,
                     file_len=4)
    ds = create_dataset(root, [spec], voxel_size=voxel_size)
    ds.layer("color").mag(mag).write((0, 0, 0), data)
    ds.close()
    return root


def centre_of(view, pos) -> QPoint:
    x, y = view.to_widget(pos[view.h_axis] + 0.5, pos[view.v_axis] + 0.5)
    return QPoint(int(x), int(y))


def wheel(view, dy: int, at: QPointF, mods=Qt.KeyboardModifier.NoModifier) -> None:
    event = QWheelEvent(at, view.mapToGlobal(at), QPoint(0, 0), QPoint(0, dy),
                        Qt.MouseButton.NoButton, mods, Qt.ScrollPhase.NoScrollPhase, False)
    QGuiApplication.sendEvent(view, event)


def is_round(length_nm: float) -> bool:
    exponent = math.floor(math.log10(length_nm))
    return any(math.isclose(length_nm, m * 10.0 ** exponent) for m in (1, 2, 5))


def test_a_layer_without_mag_1_is_shown_in_mag1_voxels_from_its_finest_mag(window, tmp_path):
    small = np.arange(32 * 32 * 64, dtype=np.uint32).reshape(32, 32, 64).astype(np.uint8)
    root = write_wk(tmp_path / "wk221", small, mag=(2, 2, 1))
    assert window.open_path(root)
    assert window.opened is not None and window.opened.voxel_size == VOXEL
    # positions and sizes are in mag-1 voxels: a voxel of mag 2-2-1 spans 2 x 2 x 1 of them
    assert window.state.voxel_size_nm == VOXEL
    assert window.state.bounds == ((0, 0, 0), (64, 64, 64))
    assert "10 \u00d7 10 \u00d7 25 nm" in window.status.info_label.text()
    plane = window.views[XY].plane
    assert plane.mags[0] == (2, 2, 1) and plane.factors == (2, 2)
    (x0, y0) = plane.mag_request.request.lo
    (x1, y1) = plane.mag_request.request.hi
    np.testing.assert_array_equal(plane.data[0], small[x0:x1, y0:y1, plane.request.index])
    # a plain WKW dataset after it: no voxel size declared
    assert window.open_path(write_dataset(tmp_path / "plain", ramp()[:32, :32, :32]))
    assert window.opened is not None and not window.opened.voxel_size_declared
    assert window.state.voxel_size_nm is None
    assert window.state.stretch(XZ) == (1.0, 1.0)


def test_status_bar_shows_positions_in_physical_units(window, tmp_path, qtbot):
    assert window.open_path(write_wk(tmp_path / "wk", ramp()), pos=(40, 20, 50), zoom=4)
    # 40 x 10, 20 x 10, 50 x 25 nm
    assert window.status.cursor_label.text() == "cursor  40, 20, 50  \u00b7  0.4, 0.2, 1.25 \u00b5m"
    xz = window.views[XZ]
    qtbot.mouseMove(xz, centre_of(xz, (36, 20, 47)))
    assert window.status.mouse_label.text() == \
        f"mouse  36, 20, 47  \u00b7  {format_physical((36, 20, 47), VOXEL)}"
    assert window.status.mouse_label.text().endswith("0.36, 0.2, 1.175 \u00b5m")
    assert window.status.value_label.text() == f"value  {(36 + 40 + 141) % 251}"


def test_each_view_draws_a_round_scale_bar(window, tmp_path, qtbot):
    assert window.open_path(write_wk(tmp_path / "wk", ramp()), pos=(32, 32, 32), zoom=3)
    qtbot.wait(10)
    shot = window.grab().toImage()
    for _axis, view in window.views.items():
        bar = view.scale_bar_shown
        assert bar is not None, view.name
        length_nm, pixels, label = bar
        assert is_round(length_nm), label
        # zoom 3 counts pixels per smallest voxel side (10 nm): 10/3 nm per pixel in every view
        assert pixels == pytest.approx(length_nm / (10.0 / 3.0))
        assert 0.3 * view.width() / 2.5 <= pixels <= min(160, 0.3 * view.width())
        assert label == (f"{length_nm:g} nm" if length_nm < 1000 else
                         f"{length_nm / 1000:g} \u00b5m")
        # the bar itself: bright pixels along its row, from its left end to its right end
        corner = view.mapTo(window, QPoint(0, 0))
        y = corner.y() + view.height() - 44 + 38 - 10
        x0 = corner.x() + 6 + 7
        row = [shot.pixelColor(QPoint(x, y)).value() for x in range(x0, x0 + int(pixels))]
        assert min(row) >= 230, view.name
        assert shot.pixelColor(QPoint(x0 + int(pixels) + 3, y)).value() < 200, view.name


def test_anisotropic_voxels_keep_their_shape_in_the_xz_and_yz_views(window, tmp_path, qtbot):
    data = np.full((SIDE, SIDE, SIDE), 20, np.uint8)
    data[20, 32, 20] = 255
    data[32, 20, 20] = 255
    root = write_wk(tmp_path / "wk", data)
    assert window.open_path(root, pos=(40, 32, 26), zoom=4)
    assert window.state.stretch(XZ) == (1.0, 2.5)
    assert window.state.stretch(YZ) == (2.5, 1.0)  # YZ shows z across
    assert window.state.stretch(XY) == (1.0, 1.0)
    qtbot.wait(10)
    shot = window.grab().toImage()

    def bright_run(view, voxel, dx: int, dy: int) -> int:
        corner = view.mapTo(window, QPoint(0, 0))
        c = centre_of(view, voxel)
        assert view.rect().adjusted(30, 30, -30, -30).contains(c), view.name
        c += corner
        count = 0
        for k in range(-30, 31):
            if shot.pixelColor(c + QPoint(k * dx, k * dy)).value() > 200:
                count += 1
        return count

    xz = window.views[XZ]  # voxel 20, 32, 20: 4 pixels wide, 10 pixels tall
    assert bright_run(xz, (20, 32, 20), 1, 0) == pytest.approx(4, abs=1)
    assert bright_run(xz, (20, 32, 20), 0, 1) == pytest.approx(10, abs=1)
    window.state.set_cursor((32, 40, 26))
    shot = window.grab().toImage()
    yz = window.views[YZ]  # voxel 32, 20, 20: z across (10 pixels), y down (4 pixels)
    assert bright_run(yz, (32, 20, 20), 1, 0) == pytest.approx(10, abs=1)
    assert bright_run(yz, (32, 20, 20), 0, 1) == pytest.approx(4, abs=1)


def test_clicks_drags_and_wheel_zoom_map_through_the_stretch(window, tmp_path, qtbot):
    assert window.open_path(write_wk(tmp_path / "wk", ramp()), pos=(32, 32, 32), zoom=3)
    xz = window.views[XZ]
    # a click anywhere inside a voxel's (3 x 7.5 pixel) rectangle lands on exactly that voxel
    for target in ((25, 32, 40), (41, 32, 21), (30, 32, 33)):
        x, y = xz.to_widget(target[0], target[2])
        for fx, fy in ((0.5, 0.5), (0.2, 0.1), (0.8, 0.9)):
            point = QPoint(math.floor(x + fx * 3), math.floor(y + fy * 7.5))
            qtbot.mouseClick(xz, Qt.MouseButton.LeftButton, pos=point)
            assert window.state.cursor == target, (target, fx, fy)
    # the crosshair goes through the centre of the cursor voxel
    cx, cy = xz._cross_point()
    x, y = xz.to_widget(30, 33)
    assert (cx, cy) == pytest.approx((x + 1.5, y + 3.75))
    # the YZ view: z across, stretched
    yz = window.views[YZ]
    qtbot.mouseClick(yz, Qt.MouseButton.LeftButton, pos=centre_of(yz, (30, 20, 45)))
    assert window.state.cursor == (30, 20, 45)
    # a drag moves the view by pixels / (zoom x stretch) voxels along each screen axis
    start = QPoint(xz.width() // 2, xz.height() // 2)
    center = window.state.centers[XZ]
    qtbot.mousePress(xz, Qt.MouseButton.LeftButton, pos=start)
    for step in range(1, 5):
        qtbot.mouseMove(xz, start + QPoint(6 * step, 15 * step))
    qtbot.mouseRelease(xz, Qt.MouseButton.LeftButton, pos=start + QPoint(24, 60))
    assert window.state.cursor == (30, 20, 45)
    assert window.state.centers[XZ] == pytest.approx((center[0] - 8, center[1] - 8))
    # Ctrl+wheel zooms about the mouse: the dataset point under it stays put
    at = QPointF(xz.width() * 0.3, xz.height() * 0.7)
    before = xz.to_dataset(at.x(), at.y())
    wheel(xz, 120, at, Qt.KeyboardModifier.ControlModifier)
    assert window.state.zoom == pytest.approx(3 * 1.25)
    assert xz.to_dataset(at.x(), at.y()) == pytest.approx(before)


def test_the_whole_anisotropic_dataset_fits_when_opened(window, tmp_path):
    assert window.open_path(write_wk(tmp_path / "wk", ramp()))
    lo, hi = window.state.bounds
    for _axis, view in window.views.items():
        x0, y0 = view.to_widget(lo[view.h_axis], lo[view.v_axis])
        x1, y1 = view.to_widget(hi[view.h_axis], hi[view.v_axis])
        assert 0 <= x0 < x1 <= view.width() and 0 <= y0 < y1 <= view.height(), view.name
    xz = window.views[XZ]
    x0, y0 = xz.to_widget(0, 0)
    x1, y1 = xz.to_widget(SIDE, SIDE)
    assert (y1 - y0) / (x1 - x0) == pytest.approx(2.5)  # 64 x 25 nm against 64 x 10 nm


def test_a_plain_wkw_dataset_has_no_scale_bar_and_stays_isotropic(window, tmp_path, qtbot):
    root = write_dataset(tmp_path / "plain", ramp(), file_len=4)
    assert window.open_path(root, pos=(32, 32, 32), zoom=3)
    qtbot.wait(10)
    window.grab()
    for view in window.views.values():
        assert view.scale_bar_shown is None and view.scale_bar_now() is None
        assert view.scales() == (3.0, 3.0)
    assert window.status.cursor_label.text() == "cursor  32, 32, 32"
    xz = window.views[XZ]
    qtbot.mouseClick(xz, Qt.MouseButton.LeftButton, pos=centre_of(xz, (25, 32, 40)))
    assert window.state.cursor == (25, 32, 40)
    qtbot.mouseMove(xz, centre_of(xz, (26, 32, 41)))
    assert window.status.mouse_label.text() == "mouse  26, 32, 41"
