"""Segment colours: one deterministic bright colour per id whatever the voxel type, id 0
transparent, neighbouring and huge ids kept apart, the picked ids highlighted, and the looks of
missing data painted over a segmentation plane read from real files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import wkw as reference
from window_fixtures import write_dataset

from viewer.core.slicing import XY, XZ, YZ, Plane, PlaneRequest, Status, read_plane
from viewer.format import open_volume, wkw
from viewer.render.plane import FAILED_COLORS, PENDING_COLORS, to_screen
from viewer.render.segments import SEGMENT_ALPHA, SegmentPalette, render_segments, segment_rgb

INT_TYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"]


def alpha(px: np.ndarray | int) -> np.ndarray:
    return (np.asarray(px, dtype=np.uint32) >> 24) & 0xFF


def rgb(px: np.ndarray | int) -> np.ndarray:
    return np.asarray(px, dtype=np.uint32) & 0xFFFFFF


def hue(px: np.ndarray) -> np.ndarray:
    """Hue in turns (0..1) of 0xRRGGBB pixels."""
    c = np.stack([(px >> s) & 0xFF for s in (16, 8, 0)], axis=-1).astype(np.float64) / 255
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    mx, mn = c.max(axis=-1), c.min(axis=-1)
    d = np.where(mx > mn, mx - mn, 1.0)
    h = np.where(mx == r, (g - b) / d % 6, np.where(mx == g, (b - r) / d + 2, (r - g) / d + 4))
    return h / 6.0


@pytest.mark.parametrize("name", INT_TYPES)
def test_same_id_same_colour_in_every_type_and_zero_is_transparent(name):
    dtype = np.dtype(name)
    ids = np.array([[0, 1, 2], [3, 100, 127]], dtype=dtype)
    colors = SegmentPalette().colors(ids)
    assert colors.dtype == np.uint32 and colors.shape == ids.shape
    assert int(colors[0, 0]) == 0  # id 0: fully transparent, nothing drawn
    as_u64 = SegmentPalette().colors(ids.astype(np.uint64))
    np.testing.assert_array_equal(colors, as_u64)
    assert (alpha(colors.reshape(-1)[1:]) == SEGMENT_ALPHA).all()
    # deterministic: a new palette (a new session) gives the same colours
    np.testing.assert_array_equal(SegmentPalette(None, None).colors(ids), colors)


def test_neighbouring_ids_get_far_apart_hues():
    ids = np.arange(1, 200_001, dtype=np.uint32)
    colors = SegmentPalette().colors(ids)
    assert (colors[1:] != colors[:-1]).all()
    h = hue(rgb(colors))
    step = np.abs(h[1:] - h[:-1])
    step = np.minimum(step, 1 - step)
    assert step.min() > 0.15, step.min()
    # many ids: close to one colour per id (the table has 65,536)
    assert len(np.unique(colors[:5000])) > 4900


def test_colours_are_bright():
    colors = rgb(SegmentPalette().colors(np.arange(1, 10_000, dtype=np.uint64)))
    channels = np.stack([(colors >> s) & 0xFF for s in (16, 8, 0)])
    assert channels.max(axis=0).min() >= 200  # value >= ~0.8
    assert (channels.max(axis=0) - channels.min(axis=0)).min() >= 100  # saturated, not grey


def test_uint64_ids_above_2_53_stay_apart():
    base = 2 ** 53
    ids = np.array([base + k for k in range(1000)] + [2 ** 64 - 1, 2 ** 64 - 2, 2 ** 63],
                   dtype=np.uint64)
    # float64 cannot tell these apart: the hash must not go through floats
    assert float(ids[0]) == float(ids[1])
    colors = SegmentPalette().colors(ids)
    assert (colors[1:1000] != colors[:999]).all()
    assert len(np.unique(colors)) > 990
    assert int(colors[1000]) != int(colors[1001])
    assert (alpha(colors) == SEGMENT_ALPHA).all()
    # one id alone gives what the array gave
    assert SegmentPalette().color(2 ** 64 - 1) == int(colors[1000])
    assert SegmentPalette().color(base + 1) == int(colors[1])


def test_signed_ids_wrap_like_their_bits():
    for name in ("int8", "int16", "int32", "int64"):
        ids = np.array([-1, -2, 5], dtype=name)
        colors = SegmentPalette().colors(ids)
        assert int(colors[0]) == SegmentPalette().color(-1)
        assert int(colors[0]) != int(colors[1])
        assert int(colors[0]) == int(SegmentPalette().colors(np.array([2 ** 64 - 1],
                                                                        np.uint64))[0])


def test_selected_and_hovered_ids_are_highlighted():
    ids = np.array([0, 7, 8, 9, 7, 8], dtype=np.uint64)
    plain = SegmentPalette().colors(ids)
    lit = SegmentPalette(selected_id=7, hovered_id=8).colors(ids)
    assert int(lit[0]) == 0
    sel, hov, other = int(lit[1]), int(lit[2]), int(lit[3])
    assert alpha(sel) == 0xFF and alpha(hov) == 0xFF
    assert sel != int(plain[1]) and hov != int(plain[2]) and sel != hov
    assert other == int(plain[3])  # the rest is unchanged
    assert lit[4] == lit[1] and lit[5] == lit[2]
    # mixed towards white: every channel at least as bright as the plain colour
    for lit_px, plain_px in ((sel, int(plain[1])), (hov, int(plain[2]))):
        for s in (16, 8, 0):
            assert (lit_px >> s) & 0xFF >= (plain_px >> s) & 0xFF
    # the same through the narrow-type tables
    lit8 = SegmentPalette(selected_id=7, hovered_id=8).colors(ids.astype(np.uint8))
    np.testing.assert_array_equal(lit8, lit)
    # a selected id equal to the hovered one shows as selected
    both = SegmentPalette(selected_id=9, hovered_id=9).colors(ids)
    assert int(both[3]) == SegmentPalette(selected_id=9).color(9)
    # a pick out of the type's range is simply nowhere
    np.testing.assert_array_equal(SegmentPalette(selected_id=300).colors(ids.astype(np.uint8)),
                                  plain)


def test_palettes_compare_by_their_ids():
    assert SegmentPalette(1, 2) == SegmentPalette(1, 2)
    assert hash(SegmentPalette(1, 2)) == hash(SegmentPalette(1, 2))
    assert SegmentPalette(1, 2) != SegmentPalette(1, 3)
    assert SegmentPalette(None, 2) != SegmentPalette(2, None)
    assert len({SegmentPalette(1, 2), SegmentPalette(1, 2), SegmentPalette()}) == 2


def test_floats_are_not_segment_ids():
    with pytest.raises(TypeError):
        SegmentPalette().colors(np.zeros(3, np.float32))


def test_segment_rgb_matches_the_palette():
    for segment_id in (1, 2, 12345, 2 ** 40 + 3):
        assert SegmentPalette().color(segment_id) == (SEGMENT_ALPHA << 24) | segment_rgb(
            segment_id)


# -- planes from real files --------------------------------------------------------------------

def segmentation_volume() -> np.ndarray:
    """32^3 uint64 ids in 4^3 cubes, ids far above 2**53, some zero (background)."""
    x, y, z = np.indices((32, 32, 32))
    ids = (x // 4 + 8 * (y // 4) + 64 * (z // 4)).astype(np.uint64) + np.uint64(2 ** 60)
    ids[(x + y) % 7 == 0] = 0
    return ids


@pytest.fixture
def seg_dataset(tmp_path: Path) -> tuple[Path, np.ndarray]:
    ids = segmentation_volume()
    return write_dataset(tmp_path / "seg", ids, block_len=8, file_len=2), ids


@pytest.mark.parametrize("axis", [XY, XZ, YZ])
def test_render_segments_colours_every_voxel_as_the_reference_reads_it(seg_dataset, axis):
    root, _ = seg_dataset
    palette = SegmentPalette(selected_id=2 ** 60 + 9)
    request = PlaneRequest(axis, 5, (0, 0), (32, 32))
    plane = read_plane(open_volume(root), request)
    rendered = render_segments(plane, palette)
    offset, shape = request.box()
    with reference.Dataset.open(str(root)) as ref:
        ids = ref.read(offset, shape)[0]
    ids = np.moveaxis(ids, axis, -1)[..., 0]  # (u, v)
    expected = palette.colors(to_screen(axis, ids))
    np.testing.assert_array_equal(rendered.pixels, expected, strict=True)
    assert rendered.pixels.flags.c_contiguous
    assert (alpha(rendered.pixels)[to_screen(axis, ids) == 0] == 0).all()
    assert (alpha(rendered.pixels)[to_screen(axis, ids) == 2 ** 60 + 9] == 0xFF).all()


def test_absent_and_failed_files_stay_visible(seg_dataset):
    root, _ = seg_dataset
    ds = wkw.Dataset.open(str(root))
    os.remove(ds.file_path(1, 0, 0))  # x 16..31, y 0..15: absent
    damaged = ds.file_path(0, 1, 0)  # x 0..15, y 16..31: cut short after its header
    with open(damaged, "r+b") as f:
        f.truncate(40)
    ds.close()
    plane = read_plane(open_volume(root), PlaneRequest(XY, 3, (0, 0), (32, 32)))
    assert (plane.status[16:, :16] == Status.ABSENT).all()
    assert (plane.status[:16, 16:] == Status.FAILED).all()
    px = render_segments(plane, SegmentPalette()).pixels  # rows = y, columns = x
    absent = px[:16, 16:]
    assert (alpha(absent) > 0x80).all()  # absent reads as id 0 but is not left transparent
    assert (rgb(absent) != 0).all()
    failed = px[16:, :16]
    assert set(np.unique(failed).tolist()) == set(FAILED_COLORS)
    good = px[:16, :16]
    ids = plane.data[0][:16, :16].T
    np.testing.assert_array_equal(good, SegmentPalette().colors(ids))


def test_pending_hatch_and_arrivals_render_only_what_changed(seg_dataset):
    root, _ = seg_dataset
    full = read_plane(open_volume(root), PlaneRequest(XY, 3, (0, 0), (32, 32)))
    status = np.full_like(full.status, Status.PENDING)
    status[:16] = Status.DATA  # x 0..15 arrived
    data = full.data.copy()
    data[:, 16:] = 0
    early = Plane(full.request, data, status)
    palette = SegmentPalette()
    first = render_segments(early, palette)
    assert set(np.unique(first.pixels[:, 16:]).tolist()) == set(PENDING_COLORS)
    later = render_segments(full, SegmentPalette(), previous=first)  # an equal palette
    np.testing.assert_array_equal(later.pixels, render_segments(full, palette).pixels)
    assert later.pixels is not first.pixels  # the earlier picture is left alone
    assert set(np.unique(first.pixels[:, 16:]).tolist()) == set(PENDING_COLORS)
    # a different palette is a full render, not a patch of the old colours
    other = render_segments(full, SegmentPalette(selected_id=int(full.data[0, 1, 1])),
                            previous=later)
    np.testing.assert_array_equal(
        other.pixels,
        SegmentPalette(selected_id=int(full.data[0, 1, 1])).colors(full.data[0].T))


def test_a_plane_of_another_mag_is_not_patched_onto_the_previous_one(seg_dataset):
    root, _ = seg_dataset
    full = read_plane(open_volume(root), PlaneRequest(XY, 3, (0, 0), (32, 32)))
    pending = Plane(full.request, np.zeros_like(full.data),
                    np.full_like(full.status, Status.PENDING))
    first = render_segments(pending, SegmentPalette())
    # the same request answered at mag 2: half the pixels each way
    coarse = Plane(full.request, np.ascontiguousarray(full.data[:, ::2, ::2]),
                   np.zeros((16, 16), np.uint8), factors=(2, 2))
    out = render_segments(coarse, SegmentPalette(), previous=first)
    assert out.pixels.shape == (16, 16)
    np.testing.assert_array_equal(out.pixels, SegmentPalette().colors(coarse.data[0].T))


def test_new_picks_on_the_same_plane_recolour_exactly_like_a_full_render(seg_dataset):
    root, _ = seg_dataset
    ds = wkw.Dataset.open(str(root))
    os.remove(ds.file_path(1, 0, 0))  # an absent quarter: its look must survive the patch
    ds.close()
    plane = read_plane(open_volume(root), PlaneRequest(XZ, 6, (0, 0), (32, 32)))
    assert (plane.status == Status.ABSENT).any()
    present = np.unique(plane.data[0][(plane.status == Status.DATA) & (plane.data[0] != 0)])
    a, b, c = (int(v) for v in present[[0, 5, -1]])
    shown = render_segments(plane, SegmentPalette(selected_id=a))
    for palette in (SegmentPalette(a, b), SegmentPalette(a, c), SegmentPalette(None, c),
                    SegmentPalette(), SegmentPalette(b, b)):
        patched = render_segments(plane, palette, previous=shown)
        np.testing.assert_array_equal(patched.pixels, render_segments(plane, palette).pixels)
        assert patched.pixels is not shown.pixels
        shown = patched
