"""Geometry and policy of the loader: which blocks a plane crosses, what is read ahead."""

from __future__ import annotations

import numpy as np

from viewer.core import prefetch
from viewer.core.slicing import XY, XZ, YZ, PlaneRequest


def test_layout_tiles_the_plane_exactly() -> None:
    req = PlaneRequest(XZ, 45, (5, 30), (70, 97))
    lay = prefetch.plane_layout(req, 32)
    cover = np.zeros(req.shape, dtype=int)
    for k in range(len(lay)):
        cover[lay.u0[k]:lay.u1[k], lay.v0[k]:lay.v1[k]] += 1
        gx, gy, gz = lay.blocks[k]
        assert gy == 45 // 32 and lay.depth == 45 - 32
        # the rectangle lies inside its block
        assert gx * 32 <= req.lo[0] + lay.u0[k] < req.lo[0] + lay.u1[k] <= gx * 32 + 32
        assert gz * 32 <= req.lo[1] + lay.v0[k] < req.lo[1] + lay.v1[k] <= gz * 32 + 32
        assert lay.bu0[k] == req.lo[0] + lay.u0[k] - gx * 32
        assert lay.bv0[k] == req.lo[1] + lay.v0[k] - gz * 32
    assert (cover == 1).all()
    assert lay.u_blocks == (0, 3) and lay.v_blocks == (0, 4) and len(lay) == 12


def test_layout_of_negative_parts_is_empty_there() -> None:
    lay = prefetch.plane_layout(PlaneRequest(XY, 3, (-40, -8), (10, 8)), 8)
    assert lay.blocks[:, 0].min() == 0 and lay.blocks[:, 1].min() == 0
    assert int(lay.u0.min()) == 40 and int(lay.v0.min()) == 8
    assert len(prefetch.plane_layout(PlaneRequest(YZ, -1, (0, 0), (8, 8)), 8)) == 0


def test_layers_ahead_follow_the_motion() -> None:
    lay = prefetch.plane_layout(PlaneRequest(XY, 70, (0, 0), (64, 32)), 32)
    up = prefetch.layers_ahead(lay, +1)
    assert [int(g[0, 2]) for g in up] == [3, 4]
    assert all(len(g) == len(lay) for g in up)
    down = prefetch.layers_ahead(lay, -1, 5)
    assert [int(g[0, 2]) for g in down] == [1, 0]  # never below zero


def test_pan_band_lies_beyond_the_edge() -> None:
    lay = prefetch.plane_layout(PlaneRequest(XY, 0, (64, 0), (128, 64)), 32)
    right = prefetch.pan_band(lay, +1, 0, width=2)
    assert [sorted(set(g[:, 0].tolist())) for g in right] == [[4], [5]]
    left = prefetch.pan_band(lay, -1, 0, width=3)
    assert [sorted(set(g[:, 0].tolist())) for g in left] == [[1], [0]]
    assert all(sorted(set(g[:, 1].tolist())) == [0, 1] for g in right + left)


def test_neighbourhood_is_nearest_first_and_never_negative() -> None:
    near = prefetch.neighbourhood((40, 5, 100), 32, radius=1)
    assert tuple(near[0]) == (1, 0, 3)
    assert (near >= 0).all()
    dist = np.abs(near - near[0]).max(axis=1)
    assert (np.diff(dist) >= 0).all()
    assert len(near) == 3 * 2 * 3  # y = -1 is cut
