"""The inspector's What if tab offscreen: a run in the background with progress, the table,
the plot with its front and recommendation, and the Map coloured by a candidate's savings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import wkw

from viewer.format import open_dataset
from viewer.ui.advise_plot import FRONT, RECOMMENDED
from viewer.ui.inspector import QtInspectorPanel

WAIT = 120_000


@pytest.fixture()
def small_dataset(tmp_path: Path) -> Path:
    """64 x 64 x 32 uint8 in 16^3 chunks: zeros for x < 32, noise beyond."""
    data = np.zeros((64, 64, 32), np.uint8)
    data[32:] = np.random.default_rng(5).integers(0, 256, (32, 64, 32))
    ds = wkw.Dataset.create(str(tmp_path / "ds"), wkw.Header(
        np.uint8, block_len=16, file_len=4, block_type=wkw.Header.BLOCK_TYPE_LZ4HC))
    big = np.zeros((64, 64, 64), np.uint8)
    big[:, :, :32] = data
    ds.write((0, 0, 0), big)
    ds.close()
    return tmp_path / "ds"


@pytest.fixture()
def panel(qtbot: Any) -> Iterator[QtInspectorPanel]:
    p = QtInspectorPanel()
    qtbot.addWidget(p)
    p.resize(1000, 800)
    p.show()
    yield p
    p.shutdown()


def _view(qtbot: Any, bounds: tuple[tuple[int, int, int], tuple[int, int, int]],
          cursor: tuple[int, int, int]) -> Any:
    from viewer.core.state import ViewerState
    from viewer.ui.slice_view import QtSliceView

    state = ViewerState()
    state.set_bounds(bounds, cursor, 4.0)
    view = QtSliceView(2, state)
    qtbot.addWidget(view)
    view.resize(400, 400)
    view.show()
    qtbot.waitExposed(view)
    return view


def _pixel_at(view: Any, image: Any, h: float, v: float) -> tuple[int, int, int]:
    """The colour the grabbed ``image`` of ``view`` shows at data (h, v)."""
    x, y = view.to_widget(h, v)
    ratio = image.devicePixelRatio()
    c = image.pixelColor(int(x * ratio), int(y * ratio))
    return (c.red(), c.green(), c.blue())


def _has_colour(image: Any, rgb: tuple[int, int, int], tolerance: int = 40) -> bool:
    ptr = image.convertToFormat(image.Format.Format_RGB32)
    arr = np.frombuffer(ptr.constBits(), np.uint8).reshape(ptr.height(), ptr.width(), 4)
    bgr = np.asarray(rgb[::-1], np.int32)
    return bool((np.abs(arr[..., :3].astype(np.int32) - bgr).sum(axis=2) < tolerance).any())


def test_what_if_tab_runs_and_colours_the_map(panel: QtInspectorPanel, qtbot: Any,
                                              small_dataset: Path, tmp_path: Path) -> None:
    with qtbot.waitSignals([panel.file_shown, panel.scan_finished], timeout=WAIT):
        panel.set_dataset(open_dataset(str(small_dataset)), own=True)
    tab = panel.what_if_tab
    panel.tabs.setCurrentWidget(tab)
    kinds: list[str] = []
    tab._bridge.result_arrived.connect(lambda kind, _t, _p: kinds.append(kind))
    tab.all_box.setChecked(True)
    with qtbot.waitSignal(tab.finished, timeout=WAIT) as blocker:
        tab.run()
        assert tab.running and not tab.run_button.isEnabled()
        assert tab.progress.isVisible()
    report = blocker.args[0]
    assert report is not None and report.exhaustive
    assert kinds.count("message") >= 2 and kinds[-1] == "done"  # progress, then the result
    assert tab.table.rowCount() == len(report.projections) >= 5
    labels = {tab.table.item(r, 0).text() for r in range(tab.table.rowCount())}
    assert any(text.startswith("\u2605") for text in labels)  # the recommendation
    assert "recommended" in tab.summary.text()
    assert len(tab.plot.points.data) == len(report.projections)
    assert tab.plot.front is not None and report.pareto
    # The plot as drawn: the front's green and the recommendation's red ring are there.
    shot = tab.plot.grab().toImage()
    assert _has_colour(shot, FRONT) and _has_colour(shot, RECOMMENDED)
    shot.save(str(tmp_path / "plot.png"))
    # The Map coloured by zarr3 zstd's savings: chunks of zeros (x < 32) are not stored at
    # all (all saved), noise (x >= 32) saves about nothing, so the two halves differ.
    row = next(r for r in range(tab.table.rowCount())
               if "zarr3 sharded zstd 3" in tab.table.item(r, 0).text())
    tab.table.selectRow(row)
    view = _view(qtbot, ((0, 0, 0), (64, 64, 64)), (40, 40, 8))
    overlay = panel.attach_to_view(view)
    panel.show_cursor((40, 40, 8))
    with qtbot.waitSignal(panel.overlays_updated, timeout=WAIT):
        tab.map_button.click()
    assert panel.state.metric == "savings" and panel.map_tab.map_toggle.isChecked()
    pixels = np.array(overlay.pixels)  # rows along y, columns along x: chunk (x, y) is [y, x]
    assert pixels.shape[:2] == (4, 4)
    zeros, noise = pixels[:, :2].reshape(-1, 4), pixels[:, 2:].reshape(-1, 4)
    assert (zeros == zeros[0]).all() and (noise[:, 3] > 0).all()
    assert np.abs(zeros[0, :3].astype(int) - noise[0, :3].astype(int)).sum() > 100
    # The screenshot of the view: the map drawn over it, zeros and noise apart.
    image = view.grab().toImage()
    image.save(str(tmp_path / "map.png"))
    zero_px, noise_px = _pixel_at(view, image, 8, 24), _pixel_at(view, image, 56, 24)
    assert sum(abs(a - b) for a, b in zip(zero_px, noise_px, strict=True)) > 100
    assert zero_px == _pixel_at(view, image, 24, 56)  # another chunk of zeros


def test_cancel_stops_the_run(panel: QtInspectorPanel, qtbot: Any,
                              small_dataset: Path) -> None:
    with qtbot.waitSignals([panel.file_shown, panel.scan_finished], timeout=WAIT):
        panel.set_dataset(open_dataset(str(small_dataset)), own=True)
    tab = panel.what_if_tab
    tab.all_box.setChecked(True)
    with qtbot.waitSignal(tab.finished, timeout=WAIT) as blocker:
        tab.run()
        tab.cancel()
    assert blocker.args[0] is None and tab.summary.text() == "cancelled"
    assert tab.run_button.isEnabled() and not tab.running
