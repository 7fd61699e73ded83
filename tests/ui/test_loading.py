"""The Qt side of background loading: the bridge delivers on the GUI thread, blocks arriving
late fill a plane without a second request, the status section shows the loader's figures and
its warning, and the window runs on the loader.  Waits are generous and only for completion."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import QThread
from PySide6.QtWidgets import QApplication

from viewer.core.layered import LayeredSource
from viewer.core.loader import Loader
from viewer.core.slicing import XY, XZ, YZ, PlaneRequest, Status
from viewer.format import open_volume, wkw
from viewer.ui.loading import QtLoaderStatus, QtLoadingBridge, merge_boxes, status_text

WAIT_MS = 60_000
SHAPE = (64, 64, 48)


@pytest.fixture(scope="module")
def vol() -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.integers(0, 255, SHAPE, dtype=np.uint8)


@pytest.fixture(scope="module")
def dataset_path(tmp_path_factory: pytest.TempPathFactory, vol: np.ndarray) -> Path:
    path = tmp_path_factory.mktemp("loading") / "ds"
    header = wkw.Header(np.uint8, block_len=8, file_len=4, block_type=wkw.BLOCK_TYPE_LZ4HC)
    ds = wkw.Dataset.create(str(path), header)
    ds.write((0, 0, 0), vol)
    ds.close()
    return path


@pytest.fixture(autouse=True)
def no_threads_left_behind():
    yield
    assert [t for t in threading.enumerate() if t.name.startswith("wkw-loader")] == []


def test_merge_boxes() -> None:
    assert merge_boxes([((0, 8, 16), (8, 8, 8)), ((32, 0, 16), (8, 8, 1))]) == \
        ((0, 0, 16), (40, 16, 8))


def test_bridge_delivers_on_the_gui_thread_and_late_blocks_fill_the_plane(
        qtbot, dataset_path: Path, vol: np.ndarray) -> None:
    loader = Loader(open_volume(dataset_path))
    bridge = QtLoadingBridge(loader)
    req = PlaneRequest(XZ, 21, (0, 0), (64, 48))
    shown: list = []
    threads: list[bool] = []

    def on_data_arrived(box) -> None:  # as the window does: re-fetch the plane, nothing else
        threads.append(QThread.currentThread() is QApplication.instance().thread()
                       and threading.current_thread() is threading.main_thread())
        shown.append(loader.plane(req))

    bridge.data_arrived.connect(on_data_arrived)
    try:
        loader.set_wanted([req], 0, (0, 21, 0))  # the only request ever made
        first = loader.plane(req)
        qtbot.waitUntil(lambda: bool(shown) and shown[-1].complete, timeout=WAIT_MS)
        assert threads and all(threads)
        assert not first.complete or len(shown) >= 1
        np.testing.assert_array_equal(shown[-1].data[0], vol[:, 21, :])
        assert (shown[-1].status == Status.DATA).all()
    finally:
        loader.close()


def test_status_section_shows_figures_and_the_over_budget_warning(
        qtbot, dataset_path: Path) -> None:
    loader = Loader(open_volume(dataset_path), budget_bytes=64 << 20)
    status = QtLoaderStatus()
    qtbot.addWidget(status)
    try:
        status.set_loader(loader)
        assert status.budget.value() == 64
        reqs = [PlaneRequest(XY, 5, (0, 0), (64, 64)), PlaneRequest(YZ, 5, (0, 0), (64, 48))]
        loader.set_wanted(reqs, 0, (5, 0, 5))
        assert loader.wait_idle(60)
        status.refresh()
        assert "cache" in status.label.text() and "MB" in status.label.text()
        assert "\u26a0" not in status.label.text()
        status.budget.setValue(16)  # run-time setting
        assert loader.cache.budget_bytes == 16 << 20
        loader.set_budget(4096)  # far below one screen
        status.refresh()
        assert "\u26a0" in status.label.text()
        assert "WARNING" in status.label.toolTip()
        assert status_text(loader.stats()) == status.label.text()
    finally:
        loader.close()


def test_window_on_the_loader_fills_all_views(qtbot, dataset_path: Path, vol: np.ndarray) -> None:
    main_window = pytest.importorskip("viewer.ui.main_window")

    window = main_window.QtMainWindow()
    qtbot.addWidget(window)
    loading = window.add_background_loading(budget_bytes=32 << 20)
    window.resize(900, 700)
    window.show()
    assert window.open_path(str(dataset_path), pos=(10, 20, 30))
    # one layer, one mag: a single loader behind the window's layered source
    assert isinstance(window.source, LayeredSource)
    qtbot.waitUntil(lambda: bool(window.source.parts), timeout=WAIT_MS)
    assert [type(p) for p in window.source.parts.values()] == [Loader]

    def all_complete() -> bool:
        return all(v.plane is not None and v.plane.complete for v in window.views.values())

    qtbot.waitUntil(all_complete, timeout=WAIT_MS)
    xy = window.views[XY].plane
    (ox, oy, _), (sx, sy, _) = xy.request.box()
    np.testing.assert_array_equal(xy.data[0], vol[ox:ox + sx, oy:oy + sy, 30])
    assert loading.status.isVisibleTo(window)
    first = window.source
    assert window.open_path(str(dataset_path), pos=(40, 40, 40))  # another dataset: old work ends
    assert window.source is not first
    assert not any(t.is_alive() for t in first.threads)
    qtbot.waitUntil(all_complete, timeout=WAIT_MS)
    second = window.source
    window.close()
    assert window.source is None
    assert not any(t.is_alive() for t in second.threads)


def _held_window_open(qtbot: Any, dataset_path: Path, monkeypatch: pytest.MonkeyPatch
                      ) -> tuple[Any, LayeredSource]:
    """A window with background loading whose prefetch hold has no time limit, the dataset
    open and every view's plane complete: the window and its source."""
    main_window = pytest.importorskip("viewer.ui.main_window")
    from viewer.core import loader as loader_module

    monkeypatch.setattr(loader_module, "PREFETCH_HOLD_S", 3600.0)
    window = main_window.QtMainWindow()
    qtbot.addWidget(window)
    window.add_background_loading(budget_bytes=32 << 20)
    window.resize(900, 700)
    window.show()
    assert window.open_path(str(dataset_path), pos=(10, 20, 30))
    source = window.source
    assert isinstance(source, LayeredSource)
    qtbot.waitUntil(lambda: all(v.plane is not None and v.plane.complete
                                for v in window.views.values()), timeout=WAIT_MS)
    return window, source


def test_the_window_releases_prefetch_once_its_views_are_complete(
        qtbot, dataset_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prefetch waits for the screen; the window taking its planes complete lets it start (the
    hold's time limit is set out of reach, so only the window's own fetches can end it)."""
    window, loader = _held_window_open(qtbot, dataset_path, monkeypatch)
    qtbot.waitUntil(lambda: loader.stats().prefetched_blocks > 0, timeout=WAIT_MS)
    assert loader.wait_idle(WAIT_MS / 1000)
    window.close()


def test_the_window_holds_prefetch_until_its_views_painted_the_screen(
        qtbot, dataset_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Views that have their complete planes but have not painted them yet keep prefetch
    held (it would take the interpreter lock and a core from their rendering and painting);
    once they paint, it starts."""
    from viewer.ui.slice_view import QtSliceView

    painting = [False]
    paint = QtSliceView.paintEvent

    def paint_when_let(self: QtSliceView, event: Any) -> None:
        if painting[0]:
            paint(self, event)

    monkeypatch.setattr(QtSliceView, "paintEvent", paint_when_let)
    window, source = _held_window_open(qtbot, dataset_path, monkeypatch)
    assert not source.wait_idle(0.3)  # complete, not painted: prefetch queued and held
    assert source.stats().prefetched_blocks == 0
    painting[0] = True
    for view in window.views.values():
        view.update()
    qtbot.waitUntil(lambda: source.stats().prefetched_blocks > 0, timeout=WAIT_MS)
    assert all(v.picture_painted for v in window.views.values())
    window.close()


def test_a_release_for_a_screen_left_before_it_ran_is_dropped(
        qtbot, dataset_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The views painted a screen and its prefetch's release waits for the event loop; the
    cursor moves to another screen first: the release of the old one must not let the new
    one's prefetch start before its own planes are painted."""
    window, source = _held_window_open(qtbot, dataset_path, monkeypatch)
    qtbot.waitUntil(lambda: all(v.picture_painted for v in window.views.values()),
                    timeout=WAIT_MS)
    drawing = window.drawing
    released_while_pending: list[bool] = []
    release = source.screen_drawn

    def noted() -> None:
        released_while_pending.append(drawing.drawn_pending)
        release()

    monkeypatch.setattr(source, "screen_drawn", noted)
    drawing.drawn_pending = True  # as if the screen were new: the next paint releases
    drawing.on_painted(0)  # ... scheduled for the event loop, not run yet
    assert not drawing.drawn_pending and released_while_pending == []
    window.state.jump_to((40, 50, 60))  # another screen, before the loop ran the release
    assert drawing.drawn_pending
    qtbot.waitUntil(lambda: len(released_while_pending) > 0, timeout=WAIT_MS)
    assert released_while_pending == [False]  # only the new screen's own release, once painted
    assert all(v.picture_painted and v.plane is not None and v.plane.complete
               for v in window.views.values())
    window.close()
