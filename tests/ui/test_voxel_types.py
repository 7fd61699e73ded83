"""Every voxel type renders: levels map to the ends of the colormap, NaN has its own colour,
+-Inf go to the ends, 3 x uint8 is RGB, other multi-channel data one channel at a time."""

from __future__ import annotations

import numpy as np
import pytest
from window_fixtures import write_dataset

from viewer.core.slicing import XY
from viewer.render.palette import NAN_COLOR

TYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
         "float32", "float64"]


def grey(px: int) -> int:
    r, g, b = (px >> 16) & 0xFF, (px >> 8) & 0xFF, px & 0xFF
    assert r == g == b, hex(px)
    return r


def extreme_volume(dtype: np.dtype) -> tuple[np.ndarray, float, float]:
    """16^3 of the type's small values, with the x = 1 column at a low level and x = 2 at a
    high one (near the type's limits for integers)."""
    data = np.zeros((16, 16, 16), dtype=dtype)
    if dtype.kind == "f":
        data[1], data[2] = -1.5e6, 3.25e6
    else:
        info = np.iinfo(dtype)
        data[1], data[2] = info.min, info.max
    return data, float(data[1, 0, 0]), float(data[2, 0, 0])


@pytest.mark.parametrize("name", TYPES)
def test_every_voxel_type_renders(window, tmp_path, name):
    dtype = np.dtype(name)
    data, lo, hi = extreme_volume(dtype)
    if dtype.kind == "f":
        data[3] = np.nan
        data[4] = np.inf
        data[5] = -np.inf
    root = write_dataset(tmp_path / name, data, block_len=8, file_len=2)
    assert window.open_path(root, pos=(0, 0, 0), zoom=8)
    window.state.set_contrast(lo=lo, hi=hi)
    view = window.views[XY]
    plane = view.plane
    np.testing.assert_array_equal(plane.data[0], data[:, :, 0], strict=True)
    px = view.pixels()  # rows = y, columns = x
    assert grey(int(px[0, 1])) == 0
    assert grey(int(px[0, 2])) == 255
    zero = grey(int(px[0, 0]))
    assert zero == round((0 - lo) / (hi - lo) * 255)
    if dtype.kind == "f":
        assert int(px[0, 3]) == NAN_COLOR
        assert grey(int(px[0, 4])) == 255 and grey(int(px[0, 5])) == 0
    # inverted: the ends swap
    window.state.set_contrast(invert=True)
    px = view.pixels()
    assert grey(int(px[0, 1])) == 255 and grey(int(px[0, 2])) == 0


@pytest.mark.parametrize("name", ["uint16", "int32", "float32", "float64"])
def test_opening_sets_levels_from_the_data(window, tmp_path, name):
    dtype = np.dtype(name)
    x = np.indices((16, 16, 16))[0]
    data = (1000 + 10 * x).astype(dtype)
    root = write_dataset(tmp_path / name, data)
    window.open_path(root, pos=(0, 0, 0), zoom=8)
    c = window.state.contrast
    assert 1000 <= c.lo < 1010 and 1140 < c.hi <= 1150


def test_three_uint8_channels_show_as_rgb(window, tmp_path):
    data = np.zeros((3, 16, 16, 16), dtype=np.uint8)
    data[0, 1], data[1, 2], data[2, 3] = 255, 255, 255
    data[:, 4] = [[[10]], [[128]], [[200]]]
    root = write_dataset(tmp_path / "rgb", data)
    window.open_path(root, pos=(0, 0, 0), zoom=8)
    assert window.state.contrast.rgb
    px = window.views[XY].pixels()
    assert int(px[0, 1]) & 0xFFFFFF == 0xFF0000
    assert int(px[0, 2]) & 0xFFFFFF == 0x00FF00
    assert int(px[0, 3]) & 0xFFFFFF == 0x0000FF
    assert int(px[0, 4]) & 0xFFFFFF == (10 << 16) | (128 << 8) | 200


def test_other_multichannel_data_shows_as_a_composite(window, tmp_path, qtbot):
    """Two uint16 channels of a WKW layer: a layer per channel, magenta and green added
    together, and hiding one takes its colour away."""
    data = np.zeros((2, 16, 16, 16), dtype=np.uint16)
    data[0, 1] = 1000
    data[1, 2] = 1000
    data[:, 3] = 1000
    root = write_dataset(tmp_path / "two", data)
    window.open_path(root, pos=(0, 0, 0), zoom=8)
    layers = window.state.layers
    assert len(layers) == 2 and all(la.additive for la in layers)
    # the contrast panel names the channel's colour, not its "#RRGGBB"
    assert window.contrast_panel.colormap.currentText() in ("magenta", "green")
    view = window.views[XY]
    qtbot.waitUntil(lambda: len(view.layer_planes) == 2
                    and all(p.complete for p in view.layer_planes.values()), timeout=20000)

    def rgb(x: int) -> tuple[int, int, int]:
        v = int(view.pixels()[0, x])
        return (v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF

    r, g, b = rgb(1)
    assert r > 0 and b > 0 and g == 0  # channel 0 alone: magenta
    r, g, b = rgb(2)
    assert g > 0 and r == 0 and b == 0  # channel 1 alone: green
    assert all(c > 0 for c in rgb(3))  # both: magenta + green
    assert rgb(4) == (0, 0, 0)
    window.state.set_layer(layers[0].name, visible=False)
    qtbot.waitUntil(lambda: rgb(1) == (0, 0, 0), timeout=10000)
    assert rgb(2)[1] > 0


def test_colormap_and_gamma_change_the_pixels_not_the_data(window, ramp_dataset):
    window.open_path(ramp_dataset, pos=(0, 0, 0), zoom=8)
    view = window.views[XY]
    before = view.pixels().copy()
    window.contrast_panel.colormap.setCurrentText("viridis")
    assert window.state.contrast.colormap == "viridis"
    low = int(view.pixels()[0, 0])  # value 0: viridis starts dark purple
    assert ((low >> 16) & 0xFF, (low >> 8) & 0xFF, low & 0xFF) == (0x44, 0x01, 0x54)
    window.contrast_panel.colormap.setCurrentText("grey")
    np.testing.assert_array_equal(view.pixels(), before)
    window.contrast_panel.gamma.setValue(2.0)
    mid = grey(int(view.pixels()[0, 10]))  # value 10 of 255, brightened by gamma 2
    assert mid == round((10 / 255) ** 0.5 * 255)


def test_auto_contrast_uses_robust_percentiles_of_the_screen(window, tmp_path):
    data = np.full((32, 32, 32), 100, dtype=np.uint8)
    data[:, :16] = 140
    data[5, 5, :] = 255  # a few outliers must not set the top level
    root = write_dataset(tmp_path / "auto", data)
    window.open_path(root, zoom=4)
    window.drawing.auto_contrast()
    c = window.state.contrast
    assert (c.lo, c.hi) == (100, 140)


def test_the_histogram_waits_for_loading_views(window, ramp_dataset, qtbot, monkeypatch):
    """While the views are still loading (a jump's blocks arriving), the histogram is put
    off and its timer started again (the fetch that completes them would make it anew);
    once they are complete, or after ``HISTOGRAM_MAX_DEFER_MS``, it is made."""
    from viewer.ui import layer_drawing

    window.open_path(ramp_dataset, zoom=8)
    drawing = window.drawing
    drawing.histogram_timer.stop()
    histogram = window.contrast_panel.histogram
    before = histogram.counts
    loading = [True]
    monkeypatch.setattr(drawing, "planes_complete", lambda: not loading[0])
    drawing.on_histogram_due()
    assert histogram.counts is before and drawing.histogram_timer.isActive()
    assert drawing.histogram_deferred_since is not None
    drawing.histogram_deferred_since -= layer_drawing.HISTOGRAM_MAX_DEFER_MS / 1000
    drawing.on_histogram_due()  # waited long enough: the partial screen's histogram
    assert histogram.counts is not before and drawing.histogram_deferred_since is None
    drawing.histogram_timer.stop()
    shown = histogram.counts
    drawing.on_histogram_due()  # loading again: put off anew
    assert histogram.counts is shown
    loading[0] = False
    drawing.on_histogram_due()
    total = sum(v.plane.data.size for v in window.views.values())
    assert histogram.counts is not shown and histogram.counts.sum() == total


def test_histogram_counts_what_is_on_screen(window, ramp_dataset, qtbot):
    window.open_path(ramp_dataset, zoom=8)
    window.drawing.on_histogram_due()
    counts = window.contrast_panel.histogram.counts
    total = sum(v.plane.data.size for v in window.views.values())
    assert counts.sum() == total  # zoomed out, all of each plane is on screen
    window.state.set_zoom(40)  # zoomed in: only what the views show counts
    window.drawing.on_histogram_due()
    counts = window.contrast_panel.histogram.counts
    shown = 0
    for v in window.views.values():
        (h0, h1), (v0, v1) = v.visible_range()
        shown += (min(32, np.ceil(h1)) - max(0, np.floor(h0))) * \
            (min(32, np.ceil(v1)) - max(0, np.floor(v0)))
    assert counts.sum() == shown < total
