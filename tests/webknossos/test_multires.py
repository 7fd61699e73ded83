"""Mag selection and the mapping of planes onto mags (viewer.core.multires), including reading
a plane at a coarse mag from real files and scaling it up onto the mag-1 request."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from viewer.core.multires import (
    NO_SOURCE,
    choose_mag,
    choose_mag_xyz,
    compose,
    format_length,
    format_physical,
    in_plane_factors,
    physical_position,
    pixel_aspect,
    placeholder_mags,
    placeholder_requests,
    scale_bar,
    to_mag,
    upscale,
    voxels_per_pixel,
)
from viewer.core.slicing import XY, XZ, YZ, PlaneRequest, Status, read_plane
from viewer.format.webknossos import BoundingBox
from viewer.format.webknossos.writer import LayerSpec, create_dataset

ISO = [(1, 1, 1), (2, 2, 2), (4, 4, 4)]
ANISO = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]


@pytest.mark.parametrize("vpp, expected", [
    (0.25, (1, 1, 1)), (1.0, (1, 1, 1)), (1.5, (1, 1, 1)), (1.9999999999, (2, 2, 2)),
    (2.0, (2, 2, 2)), (3.9, (2, 2, 2)), (4.0, (4, 4, 4)), (100.0, (4, 4, 4)),
])
def test_isotropic_mags_by_zoom(vpp: float, expected: tuple[int, int, int]) -> None:
    for axis in (XY, XZ, YZ):
        assert choose_mag(ISO, axis, (vpp, vpp)) == expected


@pytest.mark.parametrize("axis, vpp, expected", [
    (XY, (2, 2), (2, 2, 1)), (XY, (4, 4), (4, 4, 2)), (XY, (4, 3), (2, 2, 1)),
    (XY, (3.5, 8), (2, 2, 1)),
    # XZ shows x and z: 4-4-2 needs 2 voxels per pixel along z
    (XZ, (2, 1), (2, 2, 1)), (XZ, (8, 1.9), (2, 2, 1)), (XZ, (8, 2), (4, 4, 2)),
    (XZ, (1.5, 8), (1, 1, 1)),
    # YZ shows y and z
    (YZ, (2, 1), (2, 2, 1)), (YZ, (4, 2), (4, 4, 2)), (YZ, (1, 4), (1, 1, 1)),
])
def test_anisotropic_mags_consider_only_the_in_plane_axes(
        axis: int, vpp: tuple[float, float], expected: tuple[int, int, int]) -> None:
    assert choose_mag(ANISO, axis, vpp) == expected


def test_voxels_per_pixel_from_the_physical_zoom() -> None:
    size = (11.24, 11.24, 28.0)
    assert voxels_per_pixel(XY, 22.48, size) == pytest.approx((2.0, 2.0))
    u, v = voxels_per_pixel(XZ, 56.2, size)
    assert (u, v) == pytest.approx((5.0, 56.2 / 28.0))
    assert choose_mag(ANISO, XY, voxels_per_pixel(XY, 45.0, size)) == (4, 4, 2)
    assert choose_mag(ANISO, XZ, voxels_per_pixel(XZ, 45.0, size)) == (2, 2, 1)  # z: 1.6 vx/px
    assert choose_mag(ANISO, XZ, voxels_per_pixel(XZ, 56.0, size)) == (4, 4, 2)  # z: 2.0 vx/px


def test_lock_overrides_the_zoom_and_an_absent_lock_is_ignored() -> None:
    assert choose_mag(ANISO, XY, (100, 100), locked=(1, 1, 1)) == (1, 1, 1)
    assert choose_mag(ANISO, XY, (0.5, 0.5), locked=[4, 4, 2]) == (4, 4, 2)
    assert choose_mag(ANISO, XY, (100, 100), locked=(8, 8, 8)) == (4, 4, 2)


def test_without_a_fitting_mag_the_finest_is_read() -> None:
    assert choose_mag([(4, 4, 2), (2, 2, 1)], XY, (1, 1)) == (2, 2, 1)
    assert choose_mag([(1, 1, 1)], XZ, (64, 64)) == (1, 1, 1)
    with pytest.raises(ValueError):
        choose_mag([], XY, (1, 1))


def test_equal_in_plane_the_finer_normal_wins() -> None:
    mags = [(1, 1, 1), (2, 2, 2), (2, 2, 1)]
    assert choose_mag(mags, XY, (2, 2)) == (2, 2, 1)
    assert choose_mag(mags, XZ, (2, 2)) == (2, 2, 2)  # in-plane x, z: 2-2-2 is coarser
    assert choose_mag(mags, XZ, (2, 1)) == (2, 2, 1)


@given(st.lists(st.tuples(*[st.sampled_from([1, 2, 4, 8])] * 3), min_size=1, max_size=5),
       st.sampled_from([XY, XZ, YZ]),
       st.tuples(st.floats(0.1, 20), st.floats(0.1, 20)))
def test_choice_fits_and_nothing_coarser_fits(mags: list[tuple[int, int, int]], axis: int,
                                              vpp: tuple[float, float]) -> None:
    chosen = choose_mag(mags, axis, vpp)
    assert chosen in mags

    def fits(m: tuple[int, int, int]) -> bool:
        fu, fv = in_plane_factors(m, axis)
        return fu <= vpp[0] * (1 + 1e-6) and fv <= vpp[1] * (1 + 1e-6)

    def area(m: tuple[int, int, int]) -> int:
        fu, fv = in_plane_factors(m, axis)
        return fu * fv

    if any(fits(m) for m in mags):
        assert fits(chosen)
        assert all(area(m) <= area(chosen) for m in mags if fits(m))
    else:
        assert chosen[0] * chosen[1] * chosen[2] == min(m[0] * m[1] * m[2] for m in mags)


def test_placeholders_are_the_coarser_mags_finest_first() -> None:
    assert placeholder_mags(ANISO, (1, 1, 1)) == [(2, 2, 1), (4, 4, 2)]
    assert placeholder_mags(ANISO, (2, 2, 1)) == [(4, 4, 2)]
    assert placeholder_mags(ANISO, (4, 4, 2)) == []
    # not coarser on every axis: no placeholder
    assert placeholder_mags([(1, 1, 1), (2, 2, 1), (1, 1, 2), (4, 4, 4)], (2, 2, 1)) == [(4, 4, 4)]
    reqs = placeholder_requests(PlaneRequest(XY, 9, (0, 0), (64, 32)), ANISO, (1, 1, 1))
    assert [(r.mag, r.request) for r in reqs] == [
        ((2, 2, 1), PlaneRequest(XY, 9, (0, 0), (32, 16))),
        ((4, 4, 2), PlaneRequest(XY, 4, (0, 0), (16, 8)))]


def test_plane_request_mapping_rounds_outward_and_floors_the_index() -> None:
    req = PlaneRequest(XY, 5, (3, 7), (10, 13))
    m = to_mag(req, (2, 2, 1))
    assert m.request == PlaneRequest(XY, 5, (1, 3), (5, 7))
    assert (m.covered_lo, m.covered_hi, m.label) == ((2, 6), (10, 14), "2-2-1")
    m = to_mag(req, (4, 4, 2))
    assert m.request == PlaneRequest(XY, 2, (0, 1), (3, 4))
    assert (m.covered_lo, m.covered_hi) == ((0, 4), (12, 16))
    # XZ: normal y, in-plane (x, z)
    m = to_mag(PlaneRequest(XZ, 7, (4, 3), (9, 5)), (4, 4, 2))
    assert m.request == PlaneRequest(XZ, 1, (1, 1), (3, 3))
    # YZ: normal x, in-plane (y, z)
    m = to_mag(PlaneRequest(YZ, 7, (0, 0), (8, 8)), (2, 2, 1))
    assert m.request == PlaneRequest(YZ, 3, (0, 0), (4, 8))
    assert to_mag(req, (1, 1, 1)).request == req


def test_upscale_rejects_a_plane_of_the_wrong_shape() -> None:
    m = to_mag(PlaneRequest(XY, 0, (0, 0), (8, 8)), (2, 2, 1))
    with pytest.raises(ValueError):
        upscale(np.zeros((1, 3, 4)), m)


def test_coarse_plane_read_from_disk_scales_onto_the_mag1_request(tmp_path: Path) -> None:
    """Each mag holds data of its own; a plane read at the mag through ``read_plane`` and scaled
    up must show, at every mag-1 pixel, the mag voxel that contains that pixel."""
    box = BoundingBox((0, 0, 0), (64, 48, 16))
    ds = create_dataset(tmp_path, [LayerSpec("color", box, "color", "uint16", ANISO,
                                             block_len=8, file_len=2)])
    layer = ds.layer("color")
    rng = np.random.default_rng(1)
    full = {}
    for mag in ANISO:
        cb = box.at_mag(mag)
        full[mag] = rng.integers(0, 60000, size=cb.size).astype(np.uint16)
        layer.mag(mag).write(cb.top_left, full[mag])
    requests = [PlaneRequest(XY, 5, (3, 7), (61, 45)), PlaneRequest(XZ, 30, (1, 2), (63, 15)),
                PlaneRequest(YZ, 17, (5, 0), (40, 13))]
    for req in requests:
        for mag in ANISO:
            m = to_mag(req, mag)
            plane = read_plane(layer.mag(mag).volume, m.request)
            assert plane.complete and not plane.errors
            big = upscale(plane.data, m)
            status = upscale(plane.status, m)
            assert big.shape == (1, *req.shape) and status.shape == req.shape
            assert np.all(status == Status.DATA)
            u_ax, v_ax = {XY: (0, 1), XZ: (0, 2), YZ: (1, 2)}[req.axis]
            us = np.arange(req.lo[0], req.hi[0])
            vs = np.arange(req.lo[1], req.hi[1])
            index = [0, 0, 0]
            index[req.axis] = req.index // mag[req.axis]
            idx: list[object] = [None, None, None]
            idx[req.axis] = index[req.axis]
            idx[u_ax] = (us // mag[u_ax])[:, None]
            idx[v_ax] = (vs // mag[v_ax])[None, :]
            expected = full[mag][tuple(idx)]  # type: ignore[index]
            np.testing.assert_array_equal(big[0], expected, err_msg=f"{req} {mag}")


def test_choose_mag_xyz_takes_the_in_plane_entries() -> None:
    assert choose_mag_xyz(ANISO, XZ, (8, 0.1, 2)) == (4, 4, 2)
    assert choose_mag_xyz(ANISO, YZ, (0.1, 8, 1.5)) == (2, 2, 1)
    assert choose_mag_xyz(ANISO, XY, (4, 4, 0.1)) == (4, 4, 2)


def _three_mag_layer(tmp_path: Path) -> tuple[object, dict[tuple[int, int, int], np.ndarray]]:
    box = BoundingBox((0, 0, 0), (32, 32, 8))
    ds = create_dataset(tmp_path, [LayerSpec("em", box, "color", "uint8", ANISO,
                                             block_len=8, file_len=2)])
    layer = ds.layer("em")
    rng = np.random.default_rng(7)
    full = {}
    for mag in ANISO:
        cb = box.at_mag(mag)
        full[mag] = rng.integers(1, 255, size=cb.size).astype(np.uint8)
        layer.mag(mag).write(cb.top_left, full[mag])
    return layer, full


def test_compose_draws_coarser_mags_under_what_is_still_loading(tmp_path: Path) -> None:
    layer, _ = _three_mag_layer(tmp_path)
    req = PlaneRequest(XY, 3, (2, 1), (30, 31))

    def plane_at(mag: tuple[int, int, int]) -> tuple[object, object]:
        m = to_mag(req, mag)
        return m, read_plane(layer.mag(mag).volume, m.request)  # type: ignore[attr-defined]

    chosen_req, chosen = plane_at((1, 1, 1))
    mid_req, mid = plane_at((2, 2, 1))
    top_req, top = plane_at((4, 4, 2))
    full_chosen = chosen.data.copy()  # type: ignore[attr-defined]
    # as a loader would return them: the chosen mag's left half not loaded yet, the 2-2-1
    # placeholder only its top rows, 4-4-2 all of it
    chosen.status[:14, :] = Status.PENDING  # type: ignore[attr-defined]
    chosen.data[:, :14, :] = 0  # type: ignore[attr-defined]
    mid.status[:, :5] = Status.PENDING  # type: ignore[attr-defined]
    mid.data[:, :, :5] = 0  # type: ignore[attr-defined]
    out = compose((chosen_req, chosen), [(mid_req, mid), (top_req, top)])  # type: ignore[arg-type]
    assert out.data.shape == (1, 28, 30) and out.mags == [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
    big_mid = upscale(mid.data, mid_req)  # type: ignore[arg-type, attr-defined]
    big_top = upscale(top.data, top_req)  # type: ignore[arg-type, attr-defined]
    mid_status = upscale(mid.status, mid_req)  # type: ignore[arg-type, attr-defined]
    mid_rows = mid_status != Status.PENDING
    left = np.zeros((28, 30), bool)
    left[:14] = True
    np.testing.assert_array_equal(out.source[~left], 0)
    np.testing.assert_array_equal(out.source[left & mid_rows], 1)
    np.testing.assert_array_equal(out.source[left & ~mid_rows], 2)
    np.testing.assert_array_equal(out.data[0][~left], full_chosen[0][~left])
    np.testing.assert_array_equal(out.data[0][left & mid_rows], big_mid[0][left & mid_rows])
    np.testing.assert_array_equal(out.data[0][left & ~mid_rows], big_top[0][left & ~mid_rows])
    assert np.all(out.status == Status.DATA) and not out.complete
    assert out.label == "mag 1 (2-2-1, 4-4-2 while loading)"
    # nothing to put underneath: the pixels stay PENDING with no source
    alone = compose((chosen_req, chosen))  # type: ignore[arg-type]
    assert np.all(alone.source[left] == NO_SOURCE)
    assert np.all(alone.status[left] == Status.PENDING) and alone.label == "mag 1"
    # once loaded, the chosen mag alone
    done = compose(plane_at((1, 1, 1)), [(mid_req, mid)])  # type: ignore[arg-type]
    assert done.complete and done.label == "mag 1" and done.mags == [(1, 1, 1)]
    with pytest.raises(ValueError):
        compose((chosen_req, chosen), [(to_mag(PlaneRequest(XY, 4, (2, 1), (30, 31)), (2, 2, 1)),
                                        mid)])  # type: ignore[arg-type]


def test_physical_positions_and_lengths() -> None:
    size = (11.24, 11.24, 28.0)
    assert physical_position((100, 0, 10), size) == pytest.approx((1124.0, 0.0, 280.0))
    assert format_physical((100, 0, 10), size) == "1.124, 0, 0.28 µm"
    assert format_physical((1, 1, 1), (4, 4, 40)) == "4, 4, 40 nm"
    assert format_length(850) == "850 nm"
    assert format_length(1250) == "1.25 µm"
    assert format_length(2.5e6) == "2.5 mm"
    assert format_length(0.5) == "0.5 nm"


@pytest.mark.parametrize("nm_per_pixel, max_pixels, length", [
    (11.24, 100, 1000.0), (11.24, 80, 500.0), (1.0, 150, 100.0), (56.2, 120, 5000.0),
    (3.0, 70, 200.0), (1000.0, 100, 1e5),
])
def test_scale_bar_is_the_longest_round_length_that_fits(nm_per_pixel: float, max_pixels: float,
                                                          length: float) -> None:
    got, px, label = scale_bar(nm_per_pixel, max_pixels)
    assert got == pytest.approx(length)
    assert px == pytest.approx(length / nm_per_pixel) and px <= max_pixels * (1 + 1e-9)
    assert label == format_length(length)
    with pytest.raises(ValueError):
        scale_bar(0, 100)


def test_pixel_aspect_keeps_anisotropic_voxels_in_shape() -> None:
    size = (11.24, 11.24, 28.0)
    assert pixel_aspect(XY, size) == (1.0, 1.0)
    assert pixel_aspect(XZ, size) == pytest.approx((1.0, 28.0 / 11.24))
    assert pixel_aspect(YZ, size) == pytest.approx((1.0, 28.0 / 11.24))
    assert pixel_aspect(XZ, (20, 5, 10)) == (2.0, 1.0)
