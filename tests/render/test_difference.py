"""The pictures of the compare modes, without a window: A - B through the diverging colormap,
the mismatch mask over a grey A, planes of different voxel types, the ends of the levels.
Planes come from real datasets (the project's writer), read as the window reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from window_fixtures import write_dataset

from viewer.core.slicing import XY, XZ, YZ, Plane, PlaneRequest, Status, read_plane
from viewer.core.state import Contrast
from viewer.format import open_volume
from viewer.render.difference import (
    MASK_COLOR,
    NO_DATA_COLOR,
    as_argb,
    channel_pair,
    difference,
    difference_image,
    diverging_table,
    mask,
    mask_image,
    max_abs,
)
from viewer.render.palette import Palette
from viewer.render.plane import render_plane, to_screen

CHANGED = (5, 9, 3)
DELTA = 40


def _ramp() -> np.ndarray:
    x, y, z = np.indices((16, 16, 16))
    return ((x + 2 * y + 3 * z) % 200).astype(np.uint8)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """A: a 16^3 ramp; B: the same with CHANGED raised by DELTA."""
    a = _ramp()
    b = a.copy()
    b[CHANGED] += DELTA
    return write_dataset(tmp_path / "A", a), write_dataset(tmp_path / "B", b)


def _planes(pair: tuple[Path, Path], axis: int, index: int) -> tuple[Plane, Plane]:
    request = PlaneRequest(axis, index, (0, 0), (16, 16))
    return (read_plane(open_volume(pair[0]), request), read_plane(open_volume(pair[1]), request))


def _rgb(px: int) -> tuple[int, int, int]:
    return ((px >> 16) & 0xFF, (px >> 8) & 0xFF, px & 0xFF)


def test_diverging_table_runs_from_blue_through_black_to_red():
    table = diverging_table()
    assert table.shape == (257,) and table.dtype == np.uint32
    assert (table >> 24 == 0xFF).all()  # opaque
    assert _rgb(int(table[0])) == (70, 150, 255)  # A < B
    assert _rgb(int(table[128])) == (18, 18, 22)  # equal
    assert _rgb(int(table[256])) == (255, 88, 56)  # A > B
    # the ramp is monotonic in red above the middle and in blue below it
    red, blue = ((table >> 16) & 0xFF).astype(np.int64), (table & 0xFF).astype(np.int64)
    assert (np.diff(red[128:]) >= 0).all() and (np.diff(blue[:129]) <= 0).all()


@pytest.mark.parametrize("axis", [XY, XZ, YZ])
def test_difference_is_a_minus_b_and_its_picture_has_the_signs_in_place(pair, axis):
    a, b = _planes(pair, axis, CHANGED[axis])
    diff = difference(a, b, 0)
    u, v = ({XY: (0, 1), XZ: (0, 2), YZ: (1, 2)})[axis]
    assert diff.shape == (16, 16) and diff.dtype == np.float64
    assert diff[CHANGED[u], CHANGED[v]] == -DELTA
    assert max_abs(diff) == DELTA
    picture = difference_image(diff, axis, max_abs(diff))
    assert picture.flags.c_contiguous
    np.testing.assert_array_equal(picture.shape, to_screen(axis, diff).shape)
    screen = to_screen(axis, diff)
    rows, cols = np.nonzero(screen == -DELTA)
    assert _rgb(int(picture[rows[0], cols[0]])) == (70, 150, 255)  # the full blue end
    assert set(picture[screen == 0].tolist()) == {int(diverging_table()[128])}


def test_pixels_without_data_are_no_data_and_infinite_differences_take_the_ends():
    diff = np.array([[np.nan, np.inf], [-np.inf, 0.5]])
    picture = difference_image(diff, XY, 1.0)
    screen = to_screen(XY, diff)
    table = diverging_table()
    assert picture[np.isnan(screen)].tolist() == [NO_DATA_COLOR]
    assert picture[screen == np.inf].tolist() == [int(table[256])]
    assert picture[screen == -np.inf].tolist() == [int(table[0])]
    assert max_abs(diff) == 0.5  # only finite differences set the levels


def test_a_pending_side_is_no_data_in_the_difference_and_never_a_mismatch(pair):
    a, b = _planes(pair, XY, CHANGED[2])
    for pending, changed_flagged in ((slice(8, 16), True), (slice(0, 8), False)):
        status = b.status.copy()
        status[pending, :] = Status.PENDING  # these x of B are not loaded yet
        loading = Plane(b.request, b.data, status, b.errors)
        diff = difference(a, loading, 0)
        assert np.isnan(diff[pending]).all() and np.isnan(diff).sum() == 8 * 16
        found = mask(a, loading, 0, 0.0)
        assert not found[pending].any()
        assert bool(found[CHANGED[0], CHANGED[1]]) is changed_flagged  # x = 5


def test_mask_marks_what_differs_above_the_tolerance_over_a_grey_a(pair):
    a, b = _planes(pair, XY, CHANGED[2])
    shown = as_argb(render_plane(a, Palette(Contrast(0, 255), np.dtype(np.uint8))))
    found = mask(a, b, 0, 0.0)
    assert found.sum() == 1 and found[CHANGED[0], CHANGED[1]]
    picture = mask_image(shown, found, XY)
    marked = picture == MASK_COLOR
    assert marked.sum() == 1 and marked[CHANGED[1], CHANGED[0]]  # rows = y, columns = x
    rest = picture[~marked]
    r, g, bl = (rest >> 16) & 0xFF, (rest >> 8) & 0xFF, rest & 0xFF
    assert (r == g).all() and (g == bl).all()  # grey
    value = int(_ramp()[1, 0, CHANGED[2]])  # row y = 0, column x = 1
    assert _rgb(int(shown[0, 1])) == (value, value, value)
    grey = value * 2 // 5
    assert _rgb(int(picture[0, 1])) == (grey, grey, grey)  # dimmed to two fifths
    assert not mask(a, b, 0, float(DELTA)).any()  # within the tolerance now


def test_planes_of_different_voxel_types_and_channels_compare_as_float(tmp_path):
    a = _ramp()
    b = np.stack([a.astype(np.uint16) * 2, a.astype(np.uint16)])  # two channels, uint16
    pa = read_plane(open_volume(write_dataset(tmp_path / "A", a)),
                    PlaneRequest(XY, 4, (0, 0), (16, 16)))
    pb = read_plane(open_volume(write_dataset(tmp_path / "B", b)),
                    PlaneRequest(XY, 4, (0, 0), (16, 16)))
    ca, cb = channel_pair(pa, pb, 1)
    assert ca.data.dtype == cb.data.dtype == np.float64
    assert ca.data.shape == cb.data.shape == (1, 16, 16)  # A's channel clamped to its one
    np.testing.assert_array_equal(difference(pa, pb, 1), 0.0)
    np.testing.assert_array_equal(difference(pa, pb, 0), -pa.data[0].astype(np.float64))
    assert not mask(pa, pb, 1, 0.0).any()
    assert mask(pa, pb, 0, 0.0).sum() == np.count_nonzero(pa.data[0])


def test_as_argb_of_an_indexed_render_maps_the_table():
    plane = Plane(PlaneRequest(XY, 0, (0, 0), (4, 3)), np.arange(12, dtype=np.uint8)
                  .reshape(1, 4, 3), np.zeros((4, 3), np.uint8))
    rendered = render_plane(plane, Palette(Contrast(0, 11), np.dtype(np.uint8)))
    assert rendered.table is not None  # uint8 with nothing missing: indices and a table
    argb = as_argb(rendered)
    np.testing.assert_array_equal(argb, rendered.table[rendered.pixels])
    assert argb.dtype == np.uint32 and argb.flags.c_contiguous
    np.testing.assert_array_equal(as_argb(argb), argb)
