"""Levels and colours without a window: the histogram and the robust range that set the
contrast, and the palette's lookup tables (levels, gamma, invert, colormap, NaN)."""

from __future__ import annotations

import numpy as np
import pytest

from viewer.core.state import COLORMAPS, Contrast
from viewer.render.levels import histogram, robust_range
from viewer.render.palette import NAN_COLOR, Palette, colormap_table, index_table, scale_to_index


def grey_of(px: int) -> int:
    r, g, b = (px >> 16) & 0xFF, (px >> 8) & 0xFF, px & 0xFF
    assert r == g == b, hex(px)
    return r


def test_uint8_histogram_has_one_bin_per_value():
    values = np.array([[0, 0, 5], [255, 5, 5]], dtype=np.uint8)
    counts, edges = histogram(values)
    assert counts.shape == (256,) and edges.shape == (257,)
    assert counts[0] == 2 and counts[5] == 3 and counts[255] == 1 and counts.sum() == 6


def test_histogram_of_floats_counts_only_finite_values():
    values = np.array([1.0, 2.0, np.nan, np.inf, -np.inf, 3.0], dtype=np.float32)
    counts, edges = histogram(values, bins=4)
    assert counts.sum() == 3
    assert edges[0] == 1.0 and edges[-1] == 3.0


def test_histogram_of_a_narrow_integer_range_has_a_bin_per_integer():
    values = np.array([1000, 1001, 1001, 1004], dtype=np.uint16)
    counts, edges = histogram(values)
    assert counts.tolist() == [1, 2, 0, 0, 1]
    np.testing.assert_array_equal(edges, [1000, 1001, 1002, 1003, 1004, 1005])


def test_robust_range_ignores_outliers_and_says_none_without_data():
    rng = np.random.default_rng(7)
    values = rng.normal(100.0, 5.0, 100_000).astype(np.float32)
    values[:10] = 1e9  # a few wild values
    lo, hi = robust_range(values)
    assert 80 < lo < 100 < hi < 120
    assert robust_range(np.full(10, np.nan)) is None
    assert robust_range(np.full(10, 7, dtype=np.uint8)) == (7.0, 8.0)


def test_scale_to_index_maps_the_levels_to_0_and_255_and_clips():
    values = np.array([-10.0, 0.0, 100.4, 100.6, 255.0, 300.0, np.nan])
    assert scale_to_index(values, 0.0, 255.0).tolist() == [0, 0, 100, 101, 255, 255, 0]


@pytest.mark.parametrize("name", sorted(COLORMAPS))
def test_every_colormap_is_a_256_entry_table(name):
    table = colormap_table(name)
    assert table.shape == (256, 3) and table.dtype == np.uint8
    brightness = table.astype(np.int64).sum(axis=1)
    assert brightness[-1] > brightness[0]  # dark to bright, like the grey ramp
    if name == "grey":
        np.testing.assert_array_equal(table, np.repeat(np.arange(256)[:, None], 3, axis=1))


def test_grey_palette_of_uint16_levels_invert_and_gamma():
    palette = Palette(Contrast(100, 355), np.dtype(np.uint16))
    assert palette.direct is not None and palette.direct.shape == (65536,)
    px = palette.colors(np.array([[0, 100, 200, 355, 60000]], dtype=np.uint16))[0]
    assert [grey_of(int(p)) for p in px] == [0, 0, 100, 255, 255]
    inverted = Palette(Contrast(100, 355, invert=True), np.dtype(np.uint16))
    px = inverted.colors(np.array([[100, 355]], dtype=np.uint16))[0]
    assert [grey_of(int(p)) for p in px] == [255, 0]
    brighter = Palette(Contrast(100, 355, gamma=2.0), np.dtype(np.uint16))
    mid = grey_of(int(brighter.colors(np.array([[228]], dtype=np.uint16))[0, 0]))
    assert mid > 140  # gamma above 1 lifts the middle (128 without it)


def test_float_palette_gives_nan_its_own_colour():
    palette = Palette(Contrast(0.0, 1.0), np.dtype(np.float32))
    assert palette.direct is None
    px = palette.colors(np.array([[0.0, 1.0, np.nan]], dtype=np.float32))[0]
    assert grey_of(int(px[0])) == 0 and grey_of(int(px[1])) == 255 and int(px[2]) == NAN_COLOR


def test_colormap_tables_follow_the_contrast():
    table = index_table(Contrast(colormap="viridis"))
    rgb = colormap_table("viridis").astype(np.uint32)
    expected = 0xFF000000 | (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    np.testing.assert_array_equal(table, expected)


def test_rgb_channels_are_shown_as_red_green_and_blue():
    palette = Palette(Contrast(0, 255, rgb=True), np.dtype(np.uint8))
    channels = np.array([[[255]], [[0]], [[128]]], dtype=np.uint8)
    px = int(palette.rgb_colors(channels)[0, 0])
    assert ((px >> 16) & 0xFF, (px >> 8) & 0xFF, px & 0xFF) == (255, 0, 128)
