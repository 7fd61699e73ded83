"""The viewer window, driven as a person would: clicks, wheel, keys, the position field."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QGuiApplication
from window_fixtures import write_dataset

from viewer.core.slicing import XY, XZ, YZ
from viewer.core.state import SCREEN_AXES


def widget_point(view, pos) -> QPoint:
    """Widget pixel at the centre of voxel ``pos`` in ``view``."""
    x, y = view.to_widget(pos[view.h_axis] + 0.5, pos[view.v_axis] + 0.5)
    return QPoint(int(x), int(y))


def test_click_moves_cursor_and_other_views_follow(window, ramp_dataset, qtbot):
    assert window.open_path(ramp_dataset, pos=(16, 16, 16), zoom=8)
    xy = window.views[XY]
    qtbot.mouseClick(xy, Qt.MouseButton.LeftButton, pos=widget_point(xy, (20, 11, 16)))
    assert window.state.cursor == (20, 11, 16)
    # the other two views now show the planes through the new cursor
    assert window.views[XZ].request.index == 11
    assert window.views[YZ].request.index == 20
    assert window.views[XY].request.index == 16
    # ... and their data is that plane's: XZ at y = 11
    plane = window.views[XZ].plane
    x0, z0 = plane.request.lo
    expected = (np.arange(x0, x0 + plane.data.shape[1])[:, None] + 2 * 11
                + 3 * np.arange(z0, z0 + plane.data.shape[2])[None, :]) % 251
    np.testing.assert_array_equal(plane.data[0], expected)
    # a click in YZ moves z and y; XY follows to the new z
    yz = window.views[YZ]
    qtbot.mouseClick(yz, Qt.MouseButton.LeftButton, pos=widget_point(yz, (20, 5, 27)))
    assert window.state.cursor == (20, 5, 27)
    assert window.views[XY].request.index == 27
    assert window.state.focused == YZ


def test_wheel_moves_slice_and_shift_moves_ten(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    xy = window.views[XY]
    center = QPointF(xy.width() / 2, xy.height() / 2)

    def wheel(view, dy, mods=Qt.KeyboardModifier.NoModifier, at=center):
        from PySide6.QtGui import QWheelEvent

        event = QWheelEvent(at, view.mapToGlobal(at), QPoint(0, 0), QPoint(0, dy),
                            Qt.MouseButton.NoButton, mods, Qt.ScrollPhase.NoScrollPhase, False)
        QGuiApplication.sendEvent(view, event)

    wheel(xy, -120)  # towards oneself: forward, as Page Down
    assert window.state.cursor == (10, 10, 11)
    wheel(xy, 240)
    assert window.state.cursor == (10, 10, 9)
    wheel(xy, -120, Qt.KeyboardModifier.ShiftModifier)
    assert window.state.cursor == (10, 10, 19)
    wheel(window.views[YZ], -120)
    assert window.state.cursor == (11, 10, 19)
    # Ctrl+wheel zooms about the mouse: the dataset point under the mouse stays put
    at = QPointF(xy.width() * 0.25, xy.height() * 0.3)
    before = xy.to_dataset(at.x(), at.y())
    wheel(xy, 120, Qt.KeyboardModifier.ControlModifier, at)
    assert window.state.zoom == pytest.approx(4 * 1.25)
    after = xy.to_dataset(at.x(), at.y())
    assert after == pytest.approx(before)


def test_keys_move_zoom_recentre_and_maximise(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    xy = window.views[XY]
    qtbot.mouseClick(xy, Qt.MouseButton.LeftButton, pos=widget_point(xy, (10, 10, 10)))
    assert window.state.focused == XY
    qtbot.keyClick(xy, Qt.Key.Key_Right)
    qtbot.keyClick(xy, Qt.Key.Key_Down)
    assert window.state.cursor == (11, 11, 10)
    qtbot.keyClick(xy, Qt.Key.Key_Left, Qt.KeyboardModifier.ShiftModifier)
    assert window.state.cursor == (1, 11, 10)
    qtbot.keyClick(xy, Qt.Key.Key_PageDown)
    assert window.state.cursor == (1, 11, 11)
    qtbot.keyClick(xy, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ShiftModifier)
    assert window.state.cursor == (1, 11, 1)
    # in the YZ view, right is +z and PgDn is +x
    window.state.set_focused(YZ)
    qtbot.keyClick(xy, Qt.Key.Key_Right)
    qtbot.keyClick(xy, Qt.Key.Key_PageDown)
    assert window.state.cursor == (2, 11, 2)
    zoom = window.state.zoom
    qtbot.keyClick(xy, Qt.Key.Key_Plus)
    assert window.state.zoom == pytest.approx(zoom * 1.25)
    qtbot.keyClick(xy, Qt.Key.Key_Minus)
    qtbot.keyClick(xy, Qt.Key.Key_Minus)
    assert window.state.zoom == pytest.approx(zoom / 1.25)
    window.state.pan(XY, 7.0, -3.0)
    qtbot.keyClick(xy, Qt.Key.Key_C)
    assert window.state.centers[XY] == (2.5, 11.5)
    window.state.set_focused(XY)
    qtbot.keyClick(xy, Qt.Key.Key_M)
    assert window.state.layout == XY
    assert not window.views[YZ].isVisible() and not window.side_panel.isVisible()
    assert not window._side_holder.isVisible()
    assert xy.width() > window.views[YZ].width()
    qtbot.keyClick(xy, Qt.Key.Key_M)
    assert window.state.layout is None and window.views[YZ].isVisible()
    qtbot.mouseDClick(window.views[XZ], Qt.MouseButton.LeftButton)
    assert window.state.layout == XZ and not xy.isVisible()
    qtbot.mouseDClick(window.views[XZ], Qt.MouseButton.LeftButton)
    assert window.state.layout is None and xy.isVisible()


def test_drag_pans_without_moving_the_cursor(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset, pos=(16, 16, 16), zoom=4)
    xy = window.views[XY]
    start = QPoint(xy.width() // 2, xy.height() // 2)
    center = window.state.centers[XY]
    qtbot.mousePress(xy, Qt.MouseButton.LeftButton, pos=start)
    for step in range(1, 5):
        qtbot.mouseMove(xy, start + QPoint(10 * step, 5 * step))
    qtbot.mouseRelease(xy, Qt.MouseButton.LeftButton, pos=start + QPoint(40, 20))
    assert window.state.cursor == (16, 16, 16)
    assert window.state.centers[XY] == pytest.approx((center[0] - 10, center[1] - 5))


def test_position_field_and_copy(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset)
    field = window.menus.position_field
    field.setFocus()
    field.setText("(3; 4; 5)")
    qtbot.keyClick(field, Qt.Key.Key_Return)
    assert window.state.cursor == (3, 4, 5)
    field.setText("not a position")
    qtbot.keyClick(field, Qt.Key.Key_Return)
    assert window.state.cursor == (3, 4, 5)
    window.menus.copy_position()
    assert QGuiApplication.clipboard().text() == "3, 4, 5"
    field.setText("999, -4, 7")  # clamped into the dataset
    qtbot.keyClick(field, Qt.Key.Key_Return)
    assert window.state.cursor == (31, 0, 7)


def test_status_bar_shows_positions_value_file_and_block(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset, pos=(16, 16, 16), zoom=8)
    xy = window.views[XY]
    qtbot.mouseMove(xy, widget_point(xy, (21, 9, 16)))
    assert window.status.mouse_label.text() == "mouse  21, 9, 16"
    assert window.status.value_label.text() == f"value  {(21 + 18 + 48) % 251}"
    # file side 16: voxel (21, 9, 16) is in file x1 y0 z1; block (8^3) (0, 1, 0) inside it -> 2
    assert window.status.block_label.text() == "file  z1/y0/x1.wkw   block  2"
    assert window.status.cursor_label.text() == "cursor  16, 16, 16"


def test_bright_voxel_appears_under_each_crosshair(window, tmp_path, qtbot):
    data = np.full((48, 48, 48), 20, dtype=np.uint8)
    cursor = (30, 12, 21)
    data[cursor] = 255
    root = write_dataset(tmp_path / "bright", data)
    window.open_path(root, pos=cursor, zoom=6)
    qtbot.wait(10)
    shot = window.grab().toImage()
    for _axis, view in window.views.items():
        corner = view.mapTo(window, QPoint(0, 0))
        x, y = view.to_widget(cursor[view.h_axis] + 0.5, cursor[view.v_axis] + 0.5)
        centre = QPoint(corner.x() + int(x), corner.y() + int(y))
        assert shot.pixelColor(centre).value() == 255, view.name
        # one voxel away (6 pixels) in each direction the data is dark again
        for dx, dy in ((8, 0), (-8, 0), (0, 8), (0, -8)):
            assert shot.pixelColor(centre + QPoint(dx, dy)).value() < 40, (view.name, dx, dy)
        # and the crosshair lines run through that point (outside the gap around it)
        assert shot.pixelColor(centre + QPoint(0, 30)).value() > 100
        assert shot.pixelColor(centre + QPoint(30, 0)).value() > 100


def test_reference_written_dataset_shows_its_voxels(window, tmp_path):
    wkw_ref = pytest.importorskip("wkw")
    data = np.random.default_rng(5).integers(0, 60000, (64, 64, 64), dtype=np.uint16)
    root = tmp_path / "ref"
    with wkw_ref.Dataset.create(str(root), wkw_ref.Header(np.uint16, block_len=16, file_len=2,
                                                         block_type=3)) as ds:
        ds.write((0, 0, 0), data)
    assert window.open_path(root, pos=(5, 6, 7), zoom=4)
    for axis, view in window.views.items():
        plane = view.plane
        (u0, v0), (u1, v1) = plane.request.lo, plane.request.hi
        index = [slice(None)] * 3
        index[axis] = 7 if axis == 2 else (6 if axis == 1 else 5)
        u, v = [a for a in range(3) if a != axis]
        sl = [slice(None)] * 3
        sl[u], sl[v], sl[axis] = slice(u0, u1), slice(v0, v1), index[axis]
        np.testing.assert_array_equal(plane.data[0], data[tuple(sl)])


def test_bad_path_shows_a_message_and_the_window_stays_usable(window, tmp_path, ramp_dataset,
                                                              qtbot):
    missing = tmp_path / "nope"
    assert not window.open_path(missing)
    assert window.banner.isVisible()
    assert str(missing) in window.banner.text()
    assert window.isVisible()
    not_wkw = tmp_path / "junk.wkw"
    not_wkw.write_bytes(b"this is not a wkw file at all")
    assert not window.open_path(not_wkw)
    assert "junk.wkw" in window.banner.text()
    assert window.open_path(ramp_dataset)
    assert not window.banner.isVisible()
    assert window.views[XY].plane is not None


def test_damaged_block_is_shown_failed_and_the_window_stays_usable(window, tmp_path, qtbot):
    data = np.full((32, 32, 32), 100, dtype=np.uint8)
    root = write_dataset(tmp_path / "damaged", data)
    victim = root / "z0" / "y0" / "x0.wkw"
    raw = bytearray(victim.read_bytes())
    from viewer.format import wkw

    with wkw.File.open(victim) as f:
        starts, ends = f.block_ranges()
    for b in range(len(starts)):  # garble every block's bytes: none decodes to its size
        raw[int(starts[b]):int(ends[b])] = b"\xff" * int(ends[b] - starts[b])
    victim.write_bytes(bytes(raw))
    assert window.open_path(root, pos=(4, 4, 4), zoom=6)
    assert window.banner.isVisible()
    assert "x0.wkw" in window.banner.text()
    xy = window.views[XY]
    status = xy.plane.status
    assert status[0, 0] == 3 and status[20, 20] == 0  # FAILED in file x0, data in x1
    # the failed part looks red, the readable part grey
    x, y = xy.to_widget(4.5, 4.5)
    failed_px = int(xy.pixels()[4, 4])
    assert (failed_px >> 16) & 0xFF > 2 * ((failed_px >> 8) & 0xFF)
    ok_px = int(xy.pixels()[20, 20])
    assert (ok_px >> 16) & 0xFF == (ok_px >> 8) & 0xFF == ok_px & 0xFF == 100
    # still usable: a click in the readable part moves the cursor
    qtbot.mouseClick(xy, Qt.MouseButton.LeftButton, pos=widget_point(xy, (20, 20, 4)))
    assert window.state.cursor == (20, 20, 4)
    assert window.isVisible()


def test_absent_file_has_its_own_look(window, tmp_path):
    data = np.zeros((32, 32, 32), dtype=np.uint8)
    root = write_dataset(tmp_path / "sparse", data)
    (root / "z0" / "y0" / "x0.wkw").unlink()
    assert window.open_path(root, pos=(20, 4, 4), zoom=6)
    px = window.views[XY].pixels()
    absent, zero = int(px[4, 4]), int(px[4, 20])
    assert zero == 0xFF000000  # real zeros are black, like data
    assert absent != zero and (absent & 0xFF) > ((absent >> 16) & 0xFF)  # a blue tint


def test_recent_datasets_are_not_kept_when_settings_are_disabled(window, ramp_dataset):
    window.open_path(ramp_dataset)
    assert window.menus.recent.paths() == []
    assert not window.menus.recent.menu.isEnabled()


def test_side_panel_can_be_replaced(window, qtbot):
    from PySide6.QtWidgets import QLabel

    panel = QLabel("inspector")
    panel.setMinimumSize(300, 900)  # a big panel must not squeeze the views
    window.set_side_panel(panel)
    assert window.side_panel is panel
    qtbot.waitUntil(lambda: panel.isVisible())
    assert window.views[XY].isVisible()
    assert abs(window.views[XZ].height() - window.views[XY].height()) <= 2


def test_an_unexpected_error_becomes_a_message(window, ramp_dataset, qtbot, monkeypatch):
    window.open_path(ramp_dataset)

    def broken(request, layer=None):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(window.source, "plane", broken)
    window.state.set_cursor((1, 2, 3))
    assert "disk on fire" in window.banner.text()
    window.report_exception(ValueError("a slot failed"))
    assert "a slot failed" in window.banner.text()
    monkeypatch.undo()
    window.state.set_cursor((4, 5, 6))  # still usable
    assert window.views[XY].request.index == 6


def test_partial_repaints_leave_no_stale_crosshair(window, ramp_dataset, qtbot):
    """What is on screen after many cursor moves (repainted piecewise) equals a full render."""
    window.open_path(ramp_dataset, pos=(16, 16, 16), zoom=8)
    xy = window.views[XY]
    xy.setFocus()
    qtbot.wait(20)  # the full paint after opening happens first
    for key in [Qt.Key.Key_Right] * 3 + [Qt.Key.Key_Down] * 2 + [Qt.Key.Key_Left] * 4:
        qtbot.keyClick(xy, key)
        qtbot.wait(5)  # each move painted on its own
    screen = window.screen().grabWindow(window.winId()).toImage()
    if screen.isNull() or screen.width() < window.width():
        pytest.skip("this platform cannot grab the window's backing store")
    full = window.grab().toImage().convertToFormat(screen.format())
    for view in window.views.values():
        corner = view.mapTo(window, QPoint(0, 0))
        rect = view.rect().translated(corner)
        a = screen.copy(rect)
        b = full.copy(rect)
        assert a == b, view.name


def test_a_position_jump_fetches_each_plane_once(window, ramp_dataset, qtbot):
    """Entering a position moves the cursor and centres the views in one notification, so each
    view's new plane is fetched and drawn once (not for the cursor, then again for the centres)."""
    window.open_path(ramp_dataset, zoom=8)
    seen: list[frozenset] = []
    window.state.subscribe(seen.append)
    fetched: list[int] = []
    fetch = window.drawing.fetch
    window.drawing.fetch = lambda view, req, **kw: (fetched.append(view.axis),  # type: ignore
                                             fetch(view, req, **kw))
    field = window.menus.position_field
    field.setFocus()
    field.setText("2, 29, 30")
    qtbot.keyClick(field, Qt.Key.Key_Return)
    assert window.state.cursor == (2, 29, 30)
    assert seen == [frozenset({"cursor", "center"})]
    assert sorted(fetched) == sorted(set(fetched)) and set(fetched) == {XY, XZ, YZ}
    for axis in (XY, XZ, YZ):
        h, v = SCREEN_AXES[axis]
        assert window.state.centers[axis] == ((2, 29, 30)[h] + 0.5, (2, 29, 30)[v] + 0.5)


def test_a_dataset_of_many_files_opens_and_paints_before_its_files_are_listed(
        window, tmp_path, qtbot):
    """2,048 files of 8^3 voxels: the window opens with the extent of the file at --pos and
    paints while the file listing (held back here) is still running; the listing then grows
    the extent to the whole dataset without moving the cursor or the views."""
    import threading

    data = (np.arange(128 * 128 * 64, dtype=np.uint32).reshape(128, 128, 64) % 253
            ).astype(np.uint8)
    root = write_dataset(tmp_path / "many", data, block_len=8, file_len=1,
                         block_type=wkw_raw())
    gate = threading.Event()
    events: list[str] = []

    def held(ds):
        for k, path in enumerate(ds.iter_units()):
            if k == 10:
                gate.wait(120)
                events.append("listing resumed")
            yield path

    window.opening.extent_listing = held
    view = window.views[XY]
    try:
        assert window.open_path(root, pos=(60, 70, 30), zoom=4)
        assert window.state.bounds == ((56, 64, 24), (64, 72, 32))
        assert window.state.cursor == (60, 70, 30)
        painted = view.paint_count
        qtbot.waitUntil(lambda: view.paint_count > painted and view.plane is not None)
        events.append("painted")
        assert window.opening.scan is not None and not window.opening.scan.done
        assert "listing files" in window.status.info_label.text()
        centers = dict(window.state.centers)
    finally:
        gate.set()
    qtbot.waitUntil(lambda: window.state.bounds == ((0, 0, 0), (128, 128, 64)), timeout=60_000)
    assert events == ["painted", "listing resumed"]
    assert window.state.cursor == (60, 70, 30)
    assert window.state.centers == centers
    assert window.state.zoom == 4
    qtbot.waitUntil(lambda: window.opening.scan is None, timeout=60_000)
    assert "listing files" not in window.status.info_label.text()
    assert "128 \u00d7 128 \u00d7 64" in window.status.info_label.text()
    # The views now reach the whole dataset: a click far from the first file lands there.
    window.state.jump_to((120, 3, 60))
    assert window.state.cursor == (120, 3, 60)
    assert view.plane is not None and view.plane.request.index == 60
    assert view.value_at((120, 3, 60))[0] == data[120, 3, 60]


def wkw_raw() -> int:
    from viewer.format import wkw

    return wkw.BLOCK_TYPE_RAW


def test_the_inspector_fits_its_quadrant_at_the_default_size(qtbot, ramp_dataset):
    """At 1280 x 860 the fourth quadrant needs no horizontal scroll bar on any inspector tab,
    and the header tab shows its tables whole (one line per row, no scroll bars of their own)."""
    from PySide6.QtWidgets import QApplication

    from viewer.ui.inspector.install import install_inspector
    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 860)
    w.show()
    qtbot.waitExposed(w)
    panel = install_inspector(w)
    try:
        w.open_path(ramp_dataset)
        qtbot.waitUntil(lambda: panel.header_tab.header_fields.rowCount() > 0, timeout=60_000)
        holder = w._side_holder
        for i in range(panel.tabs.count()):
            panel.tabs.setCurrentIndex(i)
            QApplication.processEvents()
            assert panel.minimumSizeHint().width() <= holder.viewport().width(), \
                panel.tabs.tabText(i)
            assert panel.width() <= holder.viewport().width()
            page = panel.tabs.currentWidget()
            assert page.height() <= panel.tabs.height(), panel.tabs.tabText(i)
        for table in (panel.header_tab.header_fields, panel.header_tab.geometry_table):
            rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
            assert table.height() >= rows + table.horizontalHeader().height()
            assert not table.verticalScrollBar().isVisible()
            assert not table.horizontalScrollBar().isVisible()
    finally:
        panel.shutdown()
