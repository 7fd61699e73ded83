"""Screenshot test of multi-resolution browsing: zoomed out, the XY view shows the coarse mag's
voxels and the status bar names that mag; zoomed in to 1:1 it reads mag 1; a locked mag is shown
whatever the zoom.

The dataset (webKnossos layout, one color layer, mags 1, 2-2-1 and 4-4-2) holds content of its
own in every mag, not a downsampling, in disjoint value ranges (mag 1: 1..50, 2-2-1: 90..139,
4-4-2: 180..239), so a voxel value or a grey level on screen says which mag it came from.  What
the views show is compared voxel for voxel with the mag read by the reference ``wkw``.  The window
runs on background loading; waits are for completion only, never timed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import wkw as reference

from viewer.core.slicing import XY
from viewer.format.webknossos import BoundingBox
from viewer.format.webknossos.dataset import open_dataset
from viewer.format.webknossos.writer import LayerSpec, create_dataset

WAIT_MS = 60_000
LAYER = "color"
MAG1, MAG2, MAG4 = (1, 1, 1), (2, 2, 1), (4, 4, 2)
MAGS = [MAG1, MAG2, MAG4]
BOX = BoundingBox((0, 0, 0), (256, 256, 32))
#: Value range of each mag's content: (first value, count).
RANGES = {MAG1: (1, 50), MAG2: (90, 50), MAG4: (180, 60)}
#: The cursor the window opens at (the middle of the box).
CURSOR = (128, 128, 16)


def content(mag: tuple[int, int, int]) -> np.ndarray:
    """The voxels written into ``mag`` (its own coordinates): a ramp that changes from every
    voxel to its neighbours, in the mag's own value range."""
    x, y, z = np.indices(BOX.at_mag(mag).size)
    first, count = RANGES[mag]
    step = {MAG1: (1, 2, 3), MAG2: (1, 3, 5), MAG4: (7, 3, 11)}[mag]
    return (first + (step[0] * x + step[1] * y + step[2] * z) % count).astype(np.uint8)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("multires_view") / "ds"
    wk = create_dataset(root, [LayerSpec(LAYER, BOX, "color", "uint8", MAGS, block_len=8,
                                         file_len=4)])
    for mag in MAGS:
        wk.layer(LAYER).mag(mag).write(BOX.at_mag(mag).top_left, content(mag))
    wk.close()
    return root


@pytest.fixture
def window(qtbot, dataset: Path):
    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    w.add_background_loading()
    w.resize(1000, 800)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    assert w.open_path(str(dataset), pos=CURSOR, zoom=1.0), w.errors
    assert [layer.name for layer in w.state.layers] == [LAYER]
    yield w
    w.close()


def wait_shown(qtbot, window) -> None:
    """Until every visible view shows the plane it wants now, complete at its chosen mag."""
    def shown() -> bool:
        views = [v for v in window.views.values() if v.isVisible()]
        return window.planes_complete() and all(
            v.plane is not None and v.request == v.wanted_request() for v in views)

    qtbot.waitUntil(shown, timeout=WAIT_MS)


def reference_plane(dataset: Path, plane) -> np.ndarray:
    """What the reference ``wkw`` reads of the plane's chosen mag, on that mag's grid."""
    with open_dataset(dataset) as wk:
        path = wk.layer(LAYER).mag(plane.mags[0]).path
    ref = reference.Dataset.open(path)
    try:
        offset, shape = plane.mag_request.request.box()
        return ref.read(offset, shape)[0][:, :, 0]  # an XY plane: (X', Y')
    finally:
        ref.close()


def check_xy_plane(dataset: Path, window, mag: tuple[int, int, int]) -> None:
    """The XY view's plane is ``mag``'s voxels, as the reference reads them and as written."""
    plane = window.views[XY].plane
    assert plane.mags[0] == mag and plane.complete
    assert plane.factors == mag[:2]
    got = plane.data[0]
    np.testing.assert_array_equal(got, reference_plane(dataset, plane))
    mreq = plane.mag_request.request
    written = content(mag)[mreq.lo[0]:mreq.hi[0], mreq.lo[1]:mreq.hi[1], mreq.index]
    np.testing.assert_array_equal(got[:written.shape[0], :written.shape[1]], written)
    first, count = RANGES[mag]
    assert first <= int(written.min()) and int(written.max()) < first + count


def grey(argb: int) -> tuple[int, int, int]:
    return ((argb >> 16) & 0xFF, (argb >> 8) & 0xFF, argb & 0xFF)


def screen_pixel(view, h: float, v: float) -> tuple[int, int, int]:
    """The colour the view puts on screen at dataset point (h, v) of its plane."""
    x, y = view.to_widget(h, v)
    image = view.grab().toImage()
    assert 0 <= x < image.width() and 0 <= y < image.height()
    return grey(image.pixel(int(x), int(y)))


def mag_label(window) -> str:
    return window.status.mag_label.text()


def wait_label(qtbot, window, mag: tuple[int, int, int]) -> None:
    """Until the status bar names ``mag`` as the one shown, and no other mag (nothing is
    drawn from a placeholder once the view is complete)."""
    name = "1" if mag == MAG1 else "-".join(map(str, mag))
    others = [m for m in ("2-2-1", "4-4-2") if m != name]

    def named() -> bool:
        text = mag_label(window)
        return bool(re.search(rf"\bmag {name}(?![-\d])", text)) and "loading" not in text \
            and not any(m in text for m in others)

    qtbot.waitUntil(named, timeout=WAIT_MS)


def test_zoomed_out_the_view_shows_the_coarse_mag_and_the_status_bar_names_it(
        qtbot, dataset: Path, window) -> None:
    state = window.state
    state.set_zoom(0.25)  # 4 mag-1 voxels a pixel: 4-4-2 gives one voxel per pixel in XY
    state.recenter()
    wait_shown(qtbot, window)
    check_xy_plane(dataset, window, MAG4)
    wait_label(qtbot, window, MAG4)

    view = window.views[XY]
    plane = view.plane
    pixels = view.pixels()  # the rendered plane: one pixel per 4-4-2 voxel, rows along y
    assert pixels.shape == plane.data[0].T.shape
    lo, count = RANGES[MAG4]
    greys = np.stack([(pixels >> 16) & 0xFF, (pixels >> 8) & 0xFF, pixels & 0xFF])
    assert (greys[0] == greys[1]).all() and (greys[1] == greys[2]).all()  # grey colormap
    np.testing.assert_array_equal(greys[0], plane.data[0].T)  # levels 0..255: grey = value
    # On screen, in the middle of a coarse voxel away from the crosshair: that voxel's grey
    # (a voxel is one screen pixel here, and the view smooths when zoomed out: its grey lies
    # within its neighbours'), in the 4-4-2 range, nowhere near 2-2-1's or mag 1's.
    for cx, cy in ((20, 44), (45, 12), (10, 50)):
        at = plane.pixel_index(4 * cx, 4 * cy)
        assert at is not None
        near = plane.data[0][at[0] - 1:at[0] + 2, at[1] - 1:at[1] + 2]
        r, g, b = screen_pixel(view, 4 * cx + 2, 4 * cy + 2)
        assert r == g == b
        assert int(near.min()) - 1 <= r <= int(near.max()) + 1
        assert lo - 1 <= r <= lo + count


def test_zoomed_in_to_one_to_one_the_view_reads_mag_1(qtbot, dataset: Path, window) -> None:
    state = window.state
    state.set_zoom(0.25)
    wait_shown(qtbot, window)
    assert window.views[XY].plane.mags[0] == MAG4
    state.set_zoom(1.0)
    state.recenter()
    wait_shown(qtbot, window)
    check_xy_plane(dataset, window, MAG1)
    wait_label(qtbot, window, MAG1)
    view = window.views[XY]
    value = int(view.plane.data[0][view.plane.pixel_index(100, 90)])
    assert screen_pixel(view, 100.5, 90.5) == (value, value, value)


def test_a_locked_mag_is_shown_whatever_the_zoom(qtbot, dataset: Path, window) -> None:
    state = window.state
    view = window.views[XY]
    # Zoomed in (2 pixels a mag-1 voxel) with 4-4-2 locked: coarse voxels 8 pixels wide.
    state.set_zoom(2.0)
    state.set_layer(LAYER, mag_lock=MAG4)
    wait_shown(qtbot, window)
    check_xy_plane(dataset, window, MAG4)
    wait_label(qtbot, window, MAG4)
    for cx, cy in ((30, 29), (33, 35)):  # coarse voxels near the cursor, off its crosshair
        value = int(view.plane.data[0][view.plane.pixel_index(4 * cx, 4 * cy)])
        assert RANGES[MAG4][0] <= value
        assert screen_pixel(view, 4 * cx + 2, 4 * cy + 2) == (value, value, value)
    # Zoomed out with 2-2-1 locked: 2-2-1, not the 4-4-2 the zoom would choose.
    state.set_layer(LAYER, mag_lock=MAG2)
    state.set_zoom(0.25)
    state.recenter()
    wait_shown(qtbot, window)
    check_xy_plane(dataset, window, MAG2)
    wait_label(qtbot, window, MAG2)
    # Mag 1 locked at the same zoom.
    state.set_layer(LAYER, mag_lock=MAG1)
    wait_shown(qtbot, window)
    check_xy_plane(dataset, window, MAG1)
    wait_label(qtbot, window, MAG1)
    # Unlocked: the zoom chooses again.
    state.set_layer(LAYER, mag_lock=None)
    wait_shown(qtbot, window)
    check_xy_plane(dataset, window, MAG4)
    wait_label(qtbot, window, MAG4)
