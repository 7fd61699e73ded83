"""The Map tab's compression map and block grid over the slice views of a dataset with
anisotropic voxels: the XZ and YZ views draw z stretched, and the overlays must follow
(grid cells were ~29 px along z where the blocks were ~72 px)."""

from __future__ import annotations

import numpy as np
import pytest

main_window = pytest.importorskip("viewer.ui.main_window")

from viewer.core.state import XY, XZ, YZ  # noqa: E402
from viewer.format.webknossos import BoundingBox  # noqa: E402
from viewer.format.webknossos.writer import LayerSpec, create_dataset  # noqa: E402
from viewer.ui.inspector import install_inspector  # noqa: E402

BLOCK = 8
WAIT = 20000


@pytest.fixture()
def window(qtbot):  # type: ignore[no-untyped-def]
    w = main_window.QtMainWindow()
    qtbot.addWidget(w)
    w.resize(1100, 800)
    yield w
    w.side_panel.shutdown()


def _pixels(view) -> np.ndarray:
    image = view.grab().toImage().convertToFormat(view.grab().toImage().Format.Format_RGB32)
    return np.frombuffer(image.constBits(), np.uint8).reshape(
        image.height(), image.width(), 4)[..., :3].astype(np.int32).copy()


def _edges(drawn: np.ndarray, axis: int) -> np.ndarray:
    """Columns (axis 1) or rows (axis 0) where the overlay changed a long run of pixels."""
    share = drawn.mean(axis=1 - axis)
    return np.flatnonzero(share > 0.5 * share.max())


@pytest.mark.parametrize("voxel_size", [(10.0, 10.0, 10.0), (11.24, 11.24, 28.0),
                                        (30.0, 10.0, 20.0)])
def test_grid_lines_and_map_fall_on_block_edges_at_every_stretch(window, qtbot, tmp_path,
                                                                 voxel_size):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 255, (64, 64, 64), dtype=np.uint8)
    data[:, :, 32:] = 0  # blocks that compress differently: the map has edges to find
    ds = create_dataset(tmp_path / "wk", [LayerSpec("em", BoundingBox((0, 0, 0), (64,) * 3),
                                                    mags=[(1, 1, 1)], block_len=BLOCK,
                                                    file_len=8)], voxel_size=voxel_size)
    ds.layer("em").mag((1, 1, 1)).write((0, 0, 0), data)
    ds.close()
    panel = install_inspector(window)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
        assert window.open_path(str(tmp_path / "wk"), pos=(20, 20, 20), zoom=1.5)
    qtbot.waitUntil(window.planes_complete, timeout=WAIT)
    before = {a: _pixels(v) for a, v in window.views.items()}
    panel.map_tab.block_grid_toggle.setChecked(True)
    qtbot.wait(50)
    for axis in (XY, XZ, YZ):
        view = window.views[axis]
        sh, sv = view.scales()
        drawn = np.abs(_pixels(view) - before[axis]).sum(-1) > 0
        for screen_axis, scale in ((1, sh), (0, sv)):
            found = _edges(drawn, screen_axis)
            assert len(found) >= 3, (axis, screen_axis)
            # every line lies on a block edge, one block (BLOCK * scale pixels) apart
            for px in found:
                h, v = view.to_dataset(px + 0.5, px + 0.5)
                at = h if screen_axis == 1 else v
                nearest = round(at / BLOCK) * BLOCK
                assert abs(at - nearest) * scale <= 1.5, (axis, screen_axis, px, at)
            assert np.diff(found).min() >= BLOCK * scale - 2
    panel.map_tab.block_grid_toggle.setChecked(False)
    qtbot.wait(50)
    before = {a: _pixels(v) for a, v in window.views.items()}
    # The compression map: the blocks' colours cover exactly the blocks on screen (the file
    # holds the whole 64^3 dataset, so the map spans 0..64 along every axis).
    panel.map_tab.map_toggle.setChecked(True)
    qtbot.waitUntil(lambda: all(w.plane is not None for w in panel.overlays.overlays()),
                    timeout=WAIT)
    qtbot.wait(50)
    for axis in (XY, XZ, YZ):
        view = window.views[axis]
        drawn = np.abs(_pixels(view) - before[axis]).sum(-1) > 0
        rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
        x0, y0 = view.to_widget(0, 0)
        x1, y1 = view.to_widget(64, 64)
        assert abs(cols[0] - x0) <= 2 and abs(cols[-1] + 1 - x1) <= 2, (axis, cols[[0, -1]],
                                                                       (x0, x1))
        assert abs(rows[0] - y0) <= 2 and abs(rows[-1] + 1 - y1) <= 2, (axis, rows[[0, -1]],
                                                                       (y0, y1))


def test_the_compression_map_leaves_the_views_labels_readable(window, qtbot, tmp_path):
    """The map is drawn over the view: the view's axes-and-zoom label (bottom right) and its
    name (top left) are drawn again on top of it, as they look without the map."""
    data = np.random.default_rng(5).integers(0, 255, (64, 64, 64), dtype=np.uint8)
    ds = create_dataset(tmp_path / "wk", [LayerSpec("em", BoundingBox((0, 0, 0), (64,) * 3),
                                                    mags=[(1, 1, 1)], block_len=BLOCK,
                                                    file_len=8)])
    ds.layer("em").mag((1, 1, 1)).write((0, 0, 0), data)
    ds.close()
    panel = install_inspector(window)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
        assert window.open_path(str(tmp_path / "wk"), pos=(32, 32, 32), zoom=12.0)
    qtbot.waitUntil(window.planes_complete, timeout=WAIT)
    view = window.views[XY]  # zoomed in: the data, and so the map, fill the whole view
    panel.map_tab.map_toggle.setChecked(True)
    qtbot.waitUntil(lambda: all(w.plane is not None for w in panel.overlays.overlays()),
                    timeout=WAIT)
    qtbot.wait(50)
    pixels = _pixels(view)
    h, w = pixels.shape[:2]
    label = pixels[h - 26:h - 8, w - 120:w - 8]  # the axes label's box, bottom right
    text = (np.abs(label - np.array([200, 200, 205])).max(axis=-1) <= 12).sum()
    assert text >= 20, text  # its grey text shows over the map
