"""Blending layers: "over" with each pixel's alpha times the layer opacity, onto opaque black;
and one layer's render chosen by its category, with its palette cached until it changes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from window_fixtures import write_dataset

from viewer.core.slicing import XY, Plane, PlaneRequest, Status, read_plane
from viewer.core.state import COLOR, SEGMENTATION, Contrast, LayerDisplay
from viewer.format import Volume, open_volume
from viewer.render.blend import blend, render_layer
from viewer.render.palette import Palette
from viewer.render.plane import render_plane
from viewer.render.segments import SegmentPalette, render_segments


def channels(px: int) -> tuple[int, int, int]:
    return ((px >> 16) & 0xFF, (px >> 8) & 0xFF, px & 0xFF)


def plane_of(value: int, shape: tuple[int, int] = (5, 7)) -> np.ndarray:
    return np.full(shape, value, dtype=np.uint32)


def over(top: tuple[int, int, int], cover: float, below: tuple[int, int, int]) -> list[float]:
    return [t * cover + b * (1 - cover) for t, b in zip(top, below, strict=True)]


def assert_close(px: int, expected: list[float]) -> None:
    got = channels(px)
    assert px >> 24 == 0xFF, hex(px)
    assert all(abs(g - e) <= 1.0 for g, e in zip(got, expected, strict=True)), (got, expected)


def test_single_opaque_layer_at_full_opacity_comes_back_unchanged():
    rng = np.random.default_rng(1)
    pixels = (rng.integers(0, 2 ** 24, (60, 80)).astype(np.uint32) | np.uint32(0xFF000000))
    assert blend([(pixels, 1.0)]) is pixels


def test_opacity_zero_shows_black_and_opacity_one_the_layer():
    pixels = plane_of(0xFF4080C0)
    out = blend([(pixels, 0.0)])
    assert (out == 0xFF000000).all()
    # a layer of opacity 0 above another changes nothing
    np.testing.assert_array_equal(blend([(pixels, 1.0), (plane_of(0xFFFFFFFF), 0.0)]), pixels)


def test_bottom_layer_at_half_opacity_over_black():
    out = blend([(plane_of(0xFF6480C8), 0.5)])
    assert_close(int(out[0, 0]), [50, 64, 100])


def test_two_layers_by_hand():
    bottom, top = 0xFF102030, 0xFF80A0C0
    out = blend([(plane_of(bottom), 1.0), (plane_of(top), 0.5)])
    assert_close(int(out[2, 3]), over(channels(top), 0.5, channels(bottom)))
    # the top pixel's own alpha counts too: alpha 0x40 at opacity 1 covers a quarter
    out = blend([(plane_of(bottom), 1.0), (plane_of(0x4080A0C0), 1.0)])
    assert_close(int(out[0, 0]), over(channels(top), 0x40 / 255, channels(bottom)))
    # alpha times opacity: 0x80 at 0.5 covers about a quarter
    out = blend([(plane_of(bottom), 1.0), (plane_of(0x80FFFFFF), 0.5)])
    assert_close(int(out[0, 0]), over((255, 255, 255), 0x80 / 255 * 0.5, channels(bottom)))


def test_three_layers_and_mixed_pixels():
    a = plane_of(0xFF0000FF, (3, 4))
    b = plane_of(0xFF00FF00, (3, 4))
    b[0, 0] = 0x00FFFFFF  # transparent pixel: a shows
    c = plane_of(0xFFFF0000, (3, 4))
    out = blend([(a, 0.8), (b, 0.5), (c, 0.25)])
    below = over((0, 0, 255), 0.8, (0, 0, 0))
    mid = over((0, 255, 0), 0.5, tuple(below))  # type: ignore[arg-type]
    assert_close(int(out[1, 1]), over((255, 0, 0), 0.25, tuple(mid)))  # type: ignore[arg-type]
    assert_close(int(out[0, 0]), over((255, 0, 0), 0.25, tuple(below)))  # type: ignore[arg-type]


def test_an_opaque_top_layer_hides_everything_below():
    below = plane_of(0xFF123456)
    top = plane_of(0xFF654321)
    out = blend([(below, 1.0), (top, 1.0)])
    assert out is top
    assert (below == 0xFF123456).all()  # inputs never change


def test_result_is_opaque_and_inputs_untouched():
    rng = np.random.default_rng(2)
    layers = [(rng.integers(0, 2 ** 32, (130, 70), dtype=np.uint64).astype(np.uint32), o)
              for o in (0.3, 0.9, 0.6)]
    before = [p.copy() for p, _ in layers]
    out = blend(layers)
    assert out.dtype == np.uint32 and out.shape == (130, 70)
    assert ((out >> 24) == 0xFF).all()
    for (p, _), b in zip(layers, before, strict=True):
        np.testing.assert_array_equal(p, b)


def test_blend_of_a_plane_bigger_than_one_chunk_matches_pixel_by_pixel():
    rng = np.random.default_rng(3)
    shape = (300, 301)  # more than one 65,536-pixel step, not a multiple of it
    bottom = rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32)
    top = rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32)
    out = blend([(bottom, 0.7), (top, 0.4)])
    for r, c in [(0, 0), (150, 200), (299, 300), (217, 73)]:
        b, t = int(bottom[r, c]), int(top[r, c])
        under = over(channels(b), (b >> 24) / 255 * 0.7, (0, 0, 0))
        expected = over(channels(t), (t >> 24) / 255 * 0.4, tuple(under))  # type: ignore
        got = channels(int(out[r, c]))
        assert all(abs(g - e) <= 2.0 for g, e in zip(got, expected, strict=True)), (got, expected)


def test_bad_layers_are_refused():
    with pytest.raises(ValueError):
        blend([])
    with pytest.raises(ValueError):
        blend([(plane_of(0xFF000000, (2, 2)), 1.0), (plane_of(0xFF000000, (3, 2)), 1.0)])
    with pytest.raises(ValueError):
        blend([(np.zeros((2, 2), np.uint8), 1.0)])


# -- layers from real files ----------------------------------------------------------------------

@pytest.fixture
def two_layers(tmp_path: Path) -> tuple[Volume, Volume]:
    """A uint8 color layer (a ramp) and a uint32 segmentation layer, 32^3 each, on disk."""
    x, y, z = np.indices((32, 32, 32))
    color = ((x * 7 + y * 3 + z) % 256).astype(np.uint8)
    seg = ((x // 8) + 4 * (y // 8) + 1).astype(np.uint32)
    seg[x < 8] = 0  # background on the left
    return (open_volume(write_dataset(tmp_path / "color", color)),
            open_volume(write_dataset(tmp_path / "segmentation", seg)))


def test_segmentation_over_color_shows_the_color_where_the_id_is_0(two_layers):
    color_ds, seg_ds = two_layers
    request = PlaneRequest(XY, 4, (0, 0), (32, 32))
    color_display = LayerDisplay("color", COLOR, contrast=Contrast(0, 255))
    seg_display = LayerDisplay("segmentation", SEGMENTATION, opacity=0.6, selected_id=6)
    cache: dict = {}
    color_px = render_layer(read_plane(color_ds, request), color_display, cache).argb()
    seg_plane = read_plane(seg_ds, request)
    seg_px = render_layer(seg_plane, seg_display, cache).argb()
    out = blend([(color_px, color_display.opacity), (seg_px, seg_display.opacity)])
    ids = seg_plane.data[0].T  # rows = y
    background = ids == 0
    assert background.any() and (~background).any()
    np.testing.assert_array_equal(out[background], color_px[background])
    r, c = np.argwhere(ids == 7)[0]
    seg_color, below = int(seg_px[r, c]), int(color_px[r, c])
    assert_close(int(out[r, c]),
                 over(channels(seg_color), (seg_color >> 24) / 255 * 0.6, channels(below)))
    r, c = np.argwhere(ids == 6)[0]  # the selected id: opaque, covers by the layer opacity
    assert_close(int(out[r, c]), over(channels(int(seg_px[r, c])), 0.6,
                                      channels(int(color_px[r, c]))))


def test_render_layer_picks_the_look_and_keeps_palettes_until_they_change(two_layers):
    color_ds, seg_ds = two_layers
    request = PlaneRequest(XY, 9, (0, 0), (32, 32))
    color_plane, seg_plane = read_plane(color_ds, request), read_plane(seg_ds, request)
    cache: dict = {}
    display = LayerDisplay("color", COLOR, contrast=Contrast(10, 200, colormap="magma"))
    first = render_layer(color_plane, display, cache)
    palette = cache["color"]
    assert isinstance(palette, Palette) and palette.contrast == display.contrast
    np.testing.assert_array_equal(first.argb(), render_plane(color_plane, Palette(
        display.contrast, np.dtype(np.uint8))).argb())
    render_layer(color_plane, display, cache)
    assert cache["color"] is palette  # unchanged contrast: the same tables
    changed = LayerDisplay("color", COLOR, contrast=Contrast(0, 100))
    render_layer(color_plane, changed, cache)
    assert cache["color"] is not palette and cache["color"].contrast == changed.contrast

    seg = LayerDisplay("segmentation", SEGMENTATION, selected_id=3)
    out = render_layer(seg_plane, seg, cache)
    seg_palette = cache["segmentation"]
    assert seg_palette == SegmentPalette(3, None)
    np.testing.assert_array_equal(out.pixels, render_segments(seg_plane,
                                                              SegmentPalette(3)).pixels)
    render_layer(seg_plane, seg, cache)
    assert cache["segmentation"] is seg_palette
    hovered = LayerDisplay("segmentation", SEGMENTATION, selected_id=3, hovered_id=7)
    lit = render_layer(seg_plane, hovered, cache, previous=out)
    assert cache["segmentation"] == SegmentPalette(3, 7)
    ids = seg_plane.data[0].T
    assert (ids == 7).any() and (ids == 8).any()
    assert (lit.pixels[ids == 7] != out.pixels[ids == 7]).all()
    np.testing.assert_array_equal(lit.pixels[ids == 8], out.pixels[ids == 8])


def test_render_layer_does_not_patch_a_color_plane_of_another_mag(two_layers):
    color_ds, _ = two_layers
    request = PlaneRequest(XY, 2, (0, 0), (32, 32))
    full = read_plane(color_ds, request)
    display = LayerDisplay("color", COLOR, contrast=Contrast(0, 255, colormap="viridis"))
    cache: dict = {}
    pending = Plane(request, np.zeros_like(full.data), np.ones_like(full.status))
    first = render_layer(pending, display, cache)
    coarse = Plane(request, np.ascontiguousarray(full.data[:, ::2, ::2]),
                   np.zeros((16, 16), np.uint8), factors=(2, 2))
    coarse.status[3, 4] = Status.PENDING  # still loading somewhere: the patch path is asked
    out = render_layer(coarse, display, cache, previous=first)
    assert out.argb().shape == (16, 16)
    np.testing.assert_array_equal(out.argb(), render_plane(coarse, cache["color"]).argb())
    # render_plane itself re-renders whole when the previous plane is of another grid
    direct = render_plane(coarse, cache["color"], previous=first)
    np.testing.assert_array_equal(direct.argb(), out.argb())
