"""A plane as the screen shows it, without a window: the looks of pixels that are not data, and
a plane filling in block by block re-rendered piecewise to exactly the pixels of a full render."""

from __future__ import annotations

import numpy as np
import pytest

from viewer.core.slicing import XY, XZ, YZ, Plane, PlaneRequest, Status
from viewer.core.state import Contrast
from viewer.render.palette import Palette
from viewer.render.plane import FAILED_COLORS, PENDING_COLORS, render_plane

SHAPE = (64, 64, 48)


@pytest.fixture(scope="module")
def vol() -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.integers(0, 255, SHAPE, dtype=np.uint8)


def test_pending_and_failed_pixels_have_their_own_looks():
    request = PlaneRequest(XY, 0, (0, 0), (12, 12))
    status = np.zeros((12, 12), np.uint8)
    status[:6, :] = Status.PENDING
    status[6:, :6] = Status.FAILED
    plane = Plane(request, np.zeros((1, 12, 12), np.uint8), status)
    px = render_plane(plane, Palette(Contrast(), np.dtype(np.uint8))).argb()
    # XY is shown with x across: pixel [row=y, col=x]
    assert set(np.unique(px[:, :6])) == set(np.array(PENDING_COLORS, np.uint32))
    assert set(np.unique(px[:6, 6:])) == set(np.array(FAILED_COLORS, np.uint32))
    assert set(np.unique(px[6:, 6:])) == {0xFF000000}


def test_a_plane_filling_in_renders_the_same_piecewise_as_whole(vol: np.ndarray) -> None:
    """Re-rendering only what changed since the last version of a plane (blocks arrived) gives
    exactly the pixels of a full render, at every step, for each of the four looks."""
    palette = Palette(Contrast(lo=10, hi=200, gamma=0.8), np.dtype(np.uint8))
    for axis, req in ((XY, PlaneRequest(XY, 13, (0, 0), (64, 64))),
                      (XZ, PlaneRequest(XZ, 40, (-8, 0), (64, 48))),
                      (YZ, PlaneRequest(YZ, 5, (8, 4), (60, 48)))):
        (ox, oy, oz), (sx, sy, sz) = req.box()
        full = np.zeros((1, *req.shape), np.uint8)
        lo = [max(o, 0) for o in (ox, oy, oz)]
        got = vol[lo[0]:ox + sx, lo[1]:oy + sy, lo[2]:oz + sz].squeeze(axis=axis)
        full[0, full.shape[1] - got.shape[0]:, full.shape[2] - got.shape[1]:] = got
        status = np.full(req.shape, Status.PENDING, np.uint8)
        status[:2, :] = Status.ABSENT
        previous = None
        rng = np.random.default_rng(axis)
        for step in range(6):
            if step:  # a few 8x8 "blocks" arrive: data, a failure, an absent file
                for _ in range(3):
                    u = rng.integers(0, req.shape[0] // 8) * 8
                    v = rng.integers(0, req.shape[1] // 8) * 8
                    status[u:u + 8, v:v + 8] = rng.choice([Status.DATA, Status.DATA, Status.FAILED])
            if step == 5:
                status[status == Status.PENDING] = Status.DATA
            data = np.where(status == Status.DATA, full[0], 0)[None]
            plane = Plane(req, data.copy(), status.copy(), {})
            whole = render_plane(plane, palette)
            piecewise = render_plane(plane, palette, previous)
            np.testing.assert_array_equal(piecewise.argb(), whole.argb())
            previous = piecewise
        assert (previous.argb() == render_plane(plane, palette).argb()).all()
