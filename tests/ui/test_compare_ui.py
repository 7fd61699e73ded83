"""The window side of conversion QA: dataset B next to A, the compare modes, the
background comparison with its list, keys and cancel.  Real datasets on disk, written with the
project's writer (block_len 8, file_len 4: 32^3-voxel files); B differs from A in known voxels.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from program_main import run_main
from PySide6.QtCore import Qt
from window_fixtures import write_dataset

from viewer.core.state import XY
from viewer.format import wkw

CHANGED = (37, 21, 45)
CHANGED_2 = (6, 50, 12)
DELTA = 50


def _ramp(n: int = 64) -> np.ndarray:
    x, y, z = np.indices((n, n, n))
    return ((x + 2 * y + 3 * z) % 200).astype(np.uint8)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A (LZ4HC) and B (raw) of a 64^3 ramp; B has CHANGED raised by DELTA (written once for
    the module: the tests only read them)."""
    root = tmp_path_factory.mktemp("pair")
    data = _ramp()
    b = data.copy()
    b[CHANGED] += DELTA
    a_path = write_dataset(root / "A", data, block_len=8, file_len=4)
    b_path = write_dataset(root / "B", b, block_len=8, file_len=4,
                           block_type=wkw.BLOCK_TYPE_RAW)
    return a_path, b_path


@pytest.fixture(scope="module")
def ramp_128(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 128^3 ramp (LZ4HC), the A of the cancel and screen-box tests (read only)."""
    return write_dataset(tmp_path_factory.mktemp("ramp128") / "A", _ramp(128), block_len=8,
                         file_len=4)


def _compare(window, a_path, b_path, pos=None, zoom=None, start=True):

    assert window.open_path(a_path, pos=pos, zoom=zoom)
    controller = window.add_compare()
    assert controller.open_b(b_path, start=start)
    return controller


def _settled(qtbot, window, controller) -> None:
    qtbot.waitUntil(lambda: window.planes_complete() and controller.planes_complete()
                    and not controller.run.running, timeout=30000)
    qtbot.wait(20)


def _pixel(view, voxel) -> tuple[int, int, int]:
    """The colour a view shows at the centre of ``voxel`` (grabbed, overlays included)."""
    x, y = view.to_widget(voxel[view.h_axis] + 0.5, voxel[view.v_axis] + 0.5)
    assert 0 <= x < view.width() and 0 <= y < view.height(), "the voxel is off screen"
    colour = view.grab().toImage().pixelColor(int(x), int(y))
    return colour.red(), colour.green(), colour.blue()


def test_compare_opens_b_with_the_same_cursor_and_zoom(qtbot, window, pair):
    a_path, b_path = pair
    c = _compare(window, a_path, b_path, pos=(10, 20, 30), zoom=3.0)
    _settled(qtbot, window, c)
    assert window.state.cursor == (10, 20, 30) and window.state.zoom == 3.0
    expected = _ramp()
    expected[CHANGED] += DELTA
    for axis, view in window.views.items():
        plane = c.b.planes[axis]
        assert plane.request == view.request
        assert plane.request.index == window.state.cursor[axis]
        off, shape = plane.request.box()
        box = expected[off[0]:off[0] + shape[0], off[1]:off[1] + shape[1],
                       off[2]:off[2] + shape[2]]
        assert np.array_equal(np.moveaxis(box, axis, -1)[..., 0], plane.data[0])
    # Side by side (the mode B opens in): B's views on the same state, showing B's planes.
    assert c.mode == c.SIDE
    for axis, b_view in c.b.views.items():
        assert b_view.isVisible() and b_view.state is window.state
        assert b_view.plane is not None and b_view.plane.request.index == (10, 20, 30)[axis]
    window.state.set_cursor((11, 22, 33))
    qtbot.waitUntil(lambda: all(c.b.planes[a].request.index == (11, 22, 33)[a]
                                for a in c.b.planes), timeout=10000)


def test_compare_option_renders_both(qapp, tmp_path, pair):
    a_path, b_path = pair
    out = tmp_path / "compare.png"
    # the program's main in this process: the option, not the process, is what is tested
    code, err = run_main(str(a_path), "--compare", str(b_path), "--pos",
                         ",".join(map(str, CHANGED)), "--screenshot", str(out))
    assert code == 0, err
    assert out.stat().st_size > 10_000


def test_flicker_key_toggles_what_a_view_shows(qtbot, window, pair):
    a_path, b_path = pair
    c = _compare(window, a_path, b_path, pos=CHANGED, zoom=8.0, start=False)
    c.set_mode(c.FLICKER)
    c.toggle_flicker()  # entering flicker shows B; back to A
    _settled(qtbot, window, c)
    view = window.views[XY]
    shown_a = _pixel(view, CHANGED)
    value_a = int(_ramp()[CHANGED])
    assert shown_a == (value_a, value_a, value_a)
    window.activateWindow()
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_B)
    assert c.showing_b
    qtbot.waitUntil(lambda: _pixel(view, CHANGED) != shown_a, timeout=10000)
    value_b = value_a + DELTA
    assert _pixel(view, CHANGED) == (value_b, value_b, value_b)
    neighbour = (CHANGED[0] + 2, CHANGED[1] + 2, CHANGED[2])  # equal in A and B
    value_n = int(_ramp()[neighbour])
    assert _pixel(view, neighbour) == (value_n, value_n, value_n)
    qtbot.keyClick(view, Qt.Key.Key_B)
    assert not c.showing_b and _pixel(view, CHANGED) == shown_a


def test_swipe_shows_a_left_and_b_right_of_the_divider(qtbot, window, pair):
    a_path, b_path = pair
    c = _compare(window, a_path, b_path, pos=CHANGED, zoom=8.0, start=False)
    c.set_mode(c.SWIPE)
    _settled(qtbot, window, c)
    view = window.views[XY]
    handle = c.overlays_a[XY].handle
    assert handle is not None and handle.isVisible()
    value_a = int(_ramp()[CHANGED])
    handle.set_fraction(0.0)  # everything right of the divider: B
    assert _pixel(view, CHANGED) == (value_a + DELTA,) * 3
    handle.set_fraction(1.0)  # everything left of it: A
    assert _pixel(view, CHANGED) == (value_a,) * 3


def test_difference_and_mask_show_the_changed_voxel_in_place(qtbot, window, pair):
    a_path, b_path = pair
    elsewhere = (CHANGED[0] - 6, CHANGED[1] - 5, CHANGED[2])
    c = _compare(window, a_path, b_path, pos=elsewhere, zoom=4.0, start=False)
    c.set_mode(c.DIFFERENCE)
    _settled(qtbot, window, c)
    view = window.views[XY]
    assert c.difference_level() == DELTA
    r, _, b = _pixel(view, CHANGED)  # A - B = -DELTA, the full blue end
    assert b > 200 and r < 100
    for neighbour in ((CHANGED[0] + 1, CHANGED[1], CHANGED[2]),
                      (CHANGED[0], CHANGED[1] - 1, CHANGED[2])):
        assert max(_pixel(view, neighbour)) < 40  # equal: near black
    c.set_mode(c.MASK)
    assert _pixel(view, CHANGED) == (255, 210, 31)
    assert _pixel(view, (CHANGED[0] + 1, CHANGED[1], CHANGED[2])) != (255, 210, 31)
    c.panel.tolerance.setValue(DELTA)  # |A - B| = DELTA is within the tolerance now
    assert c.tolerance == DELTA
    assert _pixel(view, CHANGED) != (255, 210, 31)


def test_hover_shows_a_and_b_values(qtbot, window, pair):
    a_path, b_path = pair
    c = _compare(window, a_path, b_path, pos=CHANGED, start=False)
    _settled(qtbot, window, c)
    c.hover.show(CHANGED)
    text = c.hover.label.text()
    value_a = int(_ramp()[CHANGED])
    assert f"A</span> {value_a}" in text and f"B</span> {value_a + DELTA}" in text
    assert f"A\u2212B {-DELTA}" in text


def test_background_comparison_finds_the_voxel_and_the_list_moves_the_cursor(
        qtbot, window, pair):
    a_path, b_path = pair
    c = _compare(window, a_path, b_path, pos=(1, 1, 1))
    qtbot.waitUntil(lambda: c.run.summary is not None, timeout=30000)
    s = c.run.summary
    assert not s.equal and s.blocks_compared == s.blocks_total == 512
    assert len(c.run.results) == 1
    block = c.run.results[0]
    assert block.position == tuple(v // 8 * 8 for v in CHANGED)
    assert block.voxels_different == 1 and block.max_abs_diff == DELTA
    assert any(f.kind == "block_type" for f in c.run.findings)  # LZ4HC vs raw: information
    table = c.panel.table
    assert table.model().rowCount() == 1
    assert "Different" in c.panel.summary.text()
    # The block's outline is on the views that cut it.
    rects, _, _ = c.block_rects(XY, window.views[XY].request)
    assert len(rects) == 0  # z = 1 does not cut the block at z 40..47
    rect = table.visualRect(table.model().index(0, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: window.state.cursor == CHANGED, timeout=10000)
    assert c.run.selected == 0
    rects, _, selected = c.block_rects(XY, window.views[XY].request)
    assert len(rects) == 1 and selected is not None


def test_next_and_previous_mismatch_keys_move_the_cursor(qtbot, window, tmp_path):
    data = _ramp()
    b = data.copy()
    b[CHANGED_2] += 3
    b[CHANGED] += DELTA
    a_path = write_dataset(tmp_path / "A", data, block_len=8, file_len=4)
    b_path = write_dataset(tmp_path / "B", b, block_len=8, file_len=4)
    c = _compare(window, a_path, b_path, pos=(0, 0, 0), start=False)
    c.run.use_process = True  # as for a large dataset: the job in a child process
    assert c.start_comparison()
    qtbot.waitUntil(lambda: c.run.summary is not None, timeout=60000)
    assert c.run.job.used_process
    assert len(c.run.results) == 2
    order = [c.run.results[0].position, c.run.results[1].position]
    targets = {tuple(v // 8 * 8 for v in p): p for p in (CHANGED, CHANGED_2)}
    window.activateWindow()
    view = window.views[XY]
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_N)
    qtbot.waitUntil(lambda: window.state.cursor == targets[order[0]], timeout=10000)
    qtbot.keyClick(view, Qt.Key.Key_N)
    qtbot.waitUntil(lambda: window.state.cursor == targets[order[1]], timeout=10000)
    qtbot.keyClick(view, Qt.Key.Key_P)
    qtbot.waitUntil(lambda: window.state.cursor == targets[order[0]], timeout=10000)
    assert c.panel.table.currentIndex().row() == 0


def _compare_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t.name.startswith(("wkw-compare", "wkw-loader"))]


def test_cancel_stops_the_comparison_and_closing_joins_every_thread(qtbot, window, tmp_path,
                                                                     ramp_128):
    data = _ramp(128)
    a_path = ramp_128
    b_path = write_dataset(tmp_path / "B", data, block_len=8, file_len=4,
                           block_type=wkw.BLOCK_TYPE_RAW)
    c = _compare(window, a_path, b_path, start=False)
    assert c.start_comparison()
    c.panel.cancel_button.click()
    qtbot.waitUntil(lambda: c.run.summary is not None, timeout=30000)
    assert c.run.summary.cancelled and not c.run.running
    assert "cancelled" in c.panel.progress.format()
    qtbot.waitUntil(lambda: c.run.threads() == [], timeout=30000)
    c.run.use_process = True
    c.start_comparison()  # another one, in a child process, running when the window closes
    job = c.run.job
    window.close()
    assert c.b.source is None and c.run.threads() == []
    assert job._proc is None  # the child was waited for
    assert _compare_threads() == []


def test_opening_another_dataset_cancels_and_compares_again(qtbot, window, pair, tmp_path):
    a_path, b_path = pair
    c = _compare(window, a_path, b_path)
    first = c.run.job_id
    other = write_dataset(tmp_path / "A2", _ramp(), block_len=8, file_len=4)
    assert window.open_path(other)
    assert c.run.job_id > first
    qtbot.waitUntil(lambda: c.run.summary is not None, timeout=30000)
    assert c.run.summary.a == str(other) and len(c.run.results) == 1


def test_a_b_that_cannot_be_opened_is_a_message(qtbot, window, pair, tmp_path):

    a_path, _ = pair
    assert window.open_path(a_path)
    c = window.add_compare()
    assert not c.open_b(tmp_path / "no-such-dataset")
    assert not c.active and c.mode == c.A_ONLY
    assert any("no-such-dataset" in e for e in window.errors)
    c.set_mode(c.DIFFERENCE)  # without B: a hint, no mode
    assert c.mode == c.A_ONLY


def test_compare_only_the_box_on_screen(qtbot, window, tmp_path, ramp_128):
    a_path = ramp_128
    b_path = write_dataset(tmp_path / "B", _ramp(128)[:, :, ::-1].copy(), block_len=8,
                           file_len=4)
    c = _compare(window, a_path, b_path, pos=(4, 4, 4), zoom=16.0, start=False)
    _settled(qtbot, window, c)
    c.panel.screen_action.trigger()
    box = c.screen_box()
    assert box is not None and c.panel.box.text() == ", ".join(map(str, (*box[0], *box[1])))
    assert all(o <= p < o + s for p, o, s in zip((4, 4, 4), *box, strict=True))
    c.panel.start_button.click()
    qtbot.waitUntil(lambda: c.run.summary is not None, timeout=30000)
    (_, shape) = box
    assert c.run.summary.box == box
    assert c.run.summary.blocks_compared == shape[0] * shape[1] * shape[2] // 8 ** 3 < 16 ** 3
    c.panel.common_action.trigger()
    assert c.panel.box.text() == "0, 0, 0, 128, 128, 128"


def test_child_process_reports_what_stopped_it(pair, tmp_path):
    from viewer.ui.compare.remote import CompareProcess

    a_path, b_path = pair
    job = CompareProcess(str(a_path), str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="missing"):
        job.run()
    assert job.used_process
    blocks = []
    summary = CompareProcess(str(a_path), str(b_path), on_block=blocks.append).run()
    assert [b.position for b in blocks] == [r.position for r in summary.mismatching_blocks]
    assert summary.voxels_different == 1 and summary.max_abs_diff == DELTA


def test_two_webknossos_datasets_compare_their_first_layer_voxel_for_voxel(
        qtbot, window, tmp_path):
    """A and B webKnossos datasets (two mags each): B is A's first layer with one voxel
    changed; A's views read mag 1 while B is open, even zoomed out, and go back after."""
    from viewer.format.webknossos import BoundingBox
    from viewer.format.webknossos.writer import LayerSpec, create_dataset

    data = _ramp()
    roots = {}
    for name, values in (("A", data), ("B", data.copy())):
        if name == "B":
            values[CHANGED] += DELTA
        ds = create_dataset(tmp_path / name, [LayerSpec("em", BoundingBox((0, 0, 0), (64,) * 3),
                                                        mags=[(1, 1, 1), (2, 2, 2)],
                                                        block_len=8, file_len=4)])
        ds.layer("em").mag((1, 1, 1)).write((0, 0, 0), values)
        ds.layer("em").mag((2, 2, 2)).write((0, 0, 0), values[::2, ::2, ::2])
        ds.close()
        roots[name] = tmp_path / name
    c = _compare(window, roots["A"], roots["B"], pos=(1, 1, 1), zoom=0.25)
    qtbot.waitUntil(lambda: c.run.summary is not None, timeout=30000)
    assert not c.run.summary.equal and len(c.run.results) == 1
    assert c.run.results[0].position == tuple(v // 8 * 8 for v in CHANGED)
    _settled(qtbot, window, c)
    assert window.views[XY].plane.factors == (1, 1)  # zoomed out, but mag 1 while comparing
    c.close_b()
    qtbot.waitUntil(window.planes_complete, timeout=30000)
    assert window.views[XY].plane.mags[0] == (2, 2, 2)


def test_b_of_another_format_is_shown_and_compared(qtbot, window, tmp_path):
    """B in the tests' toy format (one .npy file per chunk, non-cubic chunks) next to a WKW
    A: opened through the registry, drawn, compared (in the window's process and in a child
    process), and the mismatch list leads to the changed voxel."""
    import toyformat

    data = _ramp()
    b = data.copy()
    b[CHANGED] += DELTA
    a_path = write_dataset(tmp_path / "A", data, block_len=8, file_len=4)
    b_path = toyformat.write_toy(tmp_path / "B", b[np.newaxis], (16, 8, 4))
    c = _compare(window, a_path, b_path, pos=CHANGED, zoom=4.0, start=False)
    assert c.b.spec is not None and c.b.spec.path == str(b_path)
    _settled(qtbot, window, c)
    c.hover.show(CHANGED)
    value_a = int(data[CHANGED])
    assert f"B</span> {value_a + DELTA}" in c.hover.label.text()
    for use_process in (False, True):
        c.run.use_process = use_process
        assert c.start_comparison()
        qtbot.waitUntil(lambda: c.run.summary is not None, timeout=60000)
        assert [r.position for r in c.run.results] == [tuple(v // 8 * 8 for v in CHANGED)]
        assert {f.kind for f in c.run.findings} >= {"format", "chunk_shape"}
    window.state.set_cursor((0, 0, 0))
    c.run.go_to_mismatch(0)
    qtbot.waitUntil(lambda: window.state.cursor == CHANGED, timeout=10000)


@pytest.mark.parametrize("mode", ["DIFFERENCE", "MASK", "FLICKER"])
def test_scale_bar_stays_in_the_picture_modes(qtbot, window, tmp_path, mode):
    """The pictures of the compare modes cover the view: the scale bar is drawn again on top
    (it disappeared in Difference mode)."""
    from viewer.format.webknossos import BoundingBox
    from viewer.format.webknossos.writer import LayerSpec, create_dataset

    data = _ramp()
    roots = {}
    for name in ("A", "B"):
        ds = create_dataset(tmp_path / name, [LayerSpec("em", BoundingBox((0, 0, 0), (64,) * 3),
                                                        mags=[(1, 1, 1)], block_len=8,
                                                        file_len=4)],
                            voxel_size=(10.0, 10.0, 25.0))
        ds.layer("em").mag((1, 1, 1)).write((0, 0, 0), data)
        ds.close()
        roots[name] = tmp_path / name
    c = _compare(window, roots["A"], roots["B"], pos=(32, 32, 32), zoom=4.0, start=False)
    c.set_mode(getattr(c, mode))  # flicker starts by showing B
    _settled(qtbot, window, c)
    view = window.views[XY]
    bar = view.scale_bar_now()
    assert bar is not None
    _, pixels, _ = bar
    image = view.grab().toImage()
    y = view.height() - 44 + 38 - 10  # the bar's line, as QtSliceView.paint_scale_bar draws it
    row = [image.pixelColor(int(13 + pixels * f), y) for f in (0.2, 0.5, 0.8)]
    assert all(min(p.red(), p.green(), p.blue()) >= 230 for p in row), \
        [(p.red(), p.green(), p.blue()) for p in row]


def test_b_shares_the_windows_block_cache(qtbot, tmp_path):
    """B's blocks go into A's block cache: one budget for both, not a second cache."""
    from viewer.ui.main_window import QtMainWindow

    data = (np.arange(32 * 32 * 32, dtype=np.uint32).reshape(32, 32, 32) % 251).astype(np.uint8)
    a = write_dataset(tmp_path / "a", data)
    b = write_dataset(tmp_path / "b", data)
    window = QtMainWindow()
    qtbot.addWidget(window)
    window.add_background_loading(64 << 20)
    compare = window.add_compare()
    window.show()
    assert window.open_path(a, pos=(5, 5, 5), zoom=4)
    assert compare.open_b(b, start=False)
    qtbot.waitUntil(lambda: window.planes_complete() and compare.planes_complete(),
                    timeout=30000)
    assert compare.b.source.cache is window.source.cache
    layers = {key[0] for key in list(window.source.cache.keys())}
    assert any(isinstance(k, tuple) and k[0] == "compare B" for k in layers)
    assert any(not isinstance(k, tuple) for k in layers)  # A's blocks, in the same cache
    compare.close_b()
    assert not any(isinstance(key[0], tuple) for key in list(window.source.cache.keys()))
