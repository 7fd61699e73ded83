"""The Qt-free viewer model: cursor, zoom, centres, contrast, layout, focus, notifications."""

from __future__ import annotations

import pytest

from viewer.core import state as st
from viewer.core.state import XY, XZ, YZ, ViewerState, format_position, parse_position


@pytest.fixture
def model() -> tuple[ViewerState, list[frozenset[str]]]:
    s = ViewerState(((0, 0, 0), (100, 200, 50)))
    seen: list[frozenset[str]] = []
    s.subscribe(seen.append)
    return s, seen


def test_starts_in_the_middle_centred(model):
    s, _ = model
    assert s.cursor == (49, 99, 24)
    assert s.centers[XY] == (49.5, 99.5)
    assert s.centers[YZ] == (24.5, 99.5)  # YZ shows z across, y down
    assert s.centers[XZ] == (49.5, 24.5)


def test_cursor_is_clamped_and_notifies_only_on_change(model):
    s, seen = model
    s.set_cursor((500, -3, 10))
    assert s.cursor == (99, 0, 10)
    assert seen == [frozenset({st.CURSOR})]
    s.set_cursor((99, 0, 10))
    assert len(seen) == 1
    s.move_along(2, -100)
    assert s.cursor == (99, 0, 0)
    s.move_cursor((-5, 7, 1))
    assert s.cursor == (94, 7, 1)


def test_zoom_about_a_point_keeps_it_in_place(model):
    s, seen = model
    s.set_center(XY, 50.0, 50.0)
    seen.clear()
    s.set_zoom(2.0, about=(XY, 60.0, 40.0))
    # the point (60, 40) was 10 / -10 voxels from the centre at zoom 1 (10 px); at zoom 2 the
    # centre moves halfway towards it so it stays 10 px away
    assert s.centers[XY] == pytest.approx((55.0, 45.0))
    assert seen == [frozenset({st.ZOOM, st.CENTER})]
    s.set_zoom(1e9)
    assert s.zoom == st.MAX_ZOOM
    s.zoom_by(-1)
    assert s.zoom == pytest.approx(st.MAX_ZOOM / st.ZOOM_STEP)


def test_pan_and_recenter(model):
    s, seen = model
    s.pan(XZ, 3.0, -2.0)
    assert s.centers[XZ] == (52.5, 22.5)
    s.recenter()
    assert s.centers[XZ] == (49.5, 24.5)
    assert seen == [frozenset({st.CENTER})] * 2


def test_new_bounds_move_cursor_and_centres_in_one_notification(model):
    s, seen = model
    s.set_bounds(((0, 0, 0), (10, 10, 10)), cursor=(3, 4, 5), zoom=4.0)
    assert s.cursor == (3, 4, 5) and s.zoom == 4.0 and s.centers[XY] == (3.5, 4.5)
    assert seen == [frozenset({st.DATASET, st.CURSOR, st.CENTER, st.ZOOM})]


def test_contrast_changes_and_rejects_unknown_colormaps(model):
    s, seen = model
    s.set_contrast(lo=10, hi=20, gamma=0.5, colormap="magma", invert=True)
    c = s.contrast
    assert (c.lo, c.hi, c.gamma, c.colormap, c.invert) == (10, 20, 0.5, "magma", True)
    s.set_contrast(lo=30.0)  # hi below lo is lifted just above it
    assert s.contrast.hi > s.contrast.lo == 30.0
    with pytest.raises(ValueError):
        s.set_contrast(colormap="jet")


def test_layout_and_focus(model):
    s, seen = model
    s.set_focused(YZ)
    s.toggle_maximized()
    assert s.layout == YZ
    s.toggle_maximized()
    assert s.layout is None
    assert seen == [frozenset({st.FOCUS}), frozenset({st.LAYOUT}), frozenset({st.LAYOUT})]


@pytest.mark.parametrize("text", ["1,2,3", "1 2 3", "(1, 2, 3)", "[1; 2; 3]", " 1.0, 2, 3 "])
def test_parse_position_accepts_what_people_paste(text):
    assert parse_position(text) == (1, 2, 3)


@pytest.mark.parametrize("text", ["", "1,2", "a,b,c", "1,2,3,4"])
def test_parse_position_refuses_other_text(text):
    with pytest.raises(ValueError, match="three numbers"):
        parse_position(text)


def test_format_position_round_trips():
    assert parse_position(format_position((7, 8, 9))) == (7, 8, 9)
