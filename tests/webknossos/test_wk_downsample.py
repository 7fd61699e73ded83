"""Building coarser mags: the downsampling rules against a plain loop, on disk through the
project's writer, and the synthetic demo dataset (color + segmentation, 1 / 2-2-1 / 4-4-2)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from viewer.core.synthetic import EMVolume
from viewer.format import wkw
from viewer.format.webknossos import BoundingBox, WkDataset
from viewer.format.webknossos.downsample import downsample, downsample_layer, relative_factor
from viewer.format.webknossos.writer import LayerSpec, create_dataset, write_synthetic_dataset


def _loop_reference(data: np.ndarray, f: tuple[int, int, int], mode: str,
                    mask: np.ndarray | None = None) -> np.ndarray:
    """The rules written out voxel by voxel: mean rounded half up, mode with ties to the
    smallest id, stride = first valid voxel; windows with no valid voxel are 0."""
    c = data.shape[0]
    shape = [-(-s // k) for s, k in zip(data.shape[1:], f, strict=True)]
    out = np.zeros((c, *shape), dtype=data.dtype)
    valid = np.ones(data.shape[1:], bool) if mask is None else mask
    for x, y, z in itertools.product(*(range(s) for s in shape)):
        sl = (slice(x * f[0], (x + 1) * f[0]), slice(y * f[1], (y + 1) * f[1]),
              slice(z * f[2], (z + 1) * f[2]))
        v = valid[sl]
        if not v.any():
            continue
        for ch in range(c):
            w = data[ch][sl]
            vals = w[v]
            if mode == "mean":
                out[ch, x, y, z] = int(np.floor(vals.astype(np.float64).mean() + 0.5))
            elif mode == "mode":
                ids, counts = np.unique(vals, return_counts=True)
                out[ch, x, y, z] = ids[np.argmax(counts)]  # unique sorts: first max = smallest
            else:
                first = np.argwhere(v)[0]
                out[ch, x, y, z] = w[tuple(first)]
    return out


@settings(max_examples=60, deadline=None)
@given(shape=st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 5)),
       f=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3)),
       mode=st.sampled_from(["mean", "mode", "stride"]),
       channels=st.sampled_from([1, 3]), masked=st.booleans(), seed=st.integers(0, 2**16))
def test_downsample_matches_the_loop(shape: tuple[int, int, int], f: tuple[int, int, int],
                                     mode: str, channels: int, masked: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 4 if mode == "mode" else 256, size=(channels, *shape)).astype(np.uint8)
    mask = rng.random(shape) < 0.7 if masked else None
    got = downsample(data, f, mode, mask)
    np.testing.assert_array_equal(got, _loop_reference(data, f, mode, mask))
    if channels == 1:
        np.testing.assert_array_equal(downsample(data[0], f, mode, mask), got[0])


def test_mean_rounds_halves_up_and_keeps_the_type() -> None:
    data = np.array([1, 2, 254, 255], dtype=np.uint8).reshape(4, 1, 1)
    assert downsample(data, (2, 1, 1)).tolist() == [[[2]], [[255]]]
    floats = np.array([0.25, 0.5], dtype=np.float32).reshape(2, 1, 1)
    got = downsample(floats, (2, 1, 1))
    assert got.dtype == np.float32 and got[0, 0, 0] == pytest.approx(0.375)
    big = np.array([2**63, 2**63 + 2], dtype=np.uint64).reshape(2, 1, 1)
    assert downsample(big, (2, 1, 1), "mode").tolist() == [[[2**63]]]


def test_mode_tie_goes_to_the_smallest_id() -> None:
    ids = np.array([7, 7, 3, 3, 9, 0, 0, 1], dtype=np.uint32).reshape(2, 2, 2, order="F")
    assert downsample(ids, (2, 2, 2), "mode").item() == 0  # 0, 3 and 7 twice each
    ids = np.array([7, 7, 7, 3], dtype=np.uint32).reshape(4, 1, 1)
    assert downsample(ids, (4, 1, 1), "mode").item() == 7


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        downsample(np.zeros((2, 2, 2), np.uint8), (2, 2, 2), "median")
    with pytest.raises(ValueError):
        downsample(np.zeros((2, 2, 2), np.uint8), (0, 2, 2))
    with pytest.raises(ValueError):
        relative_factor((2, 2, 1), (3, 4, 2))


@pytest.mark.parametrize("legacy", [False, True])
def test_downsample_layer_on_disk(tmp_path: Path, legacy: bool) -> None:
    """An unaligned box (coarse windows at its edges are partial), mags 1, 2-2-1, 4-4-2, each
    built from the previous; compared with the loop applied to the previous mag."""
    box = BoundingBox((3, 5, 1), (37, 29, 11))
    mags = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
    specs = [LayerSpec("color", box, "color", "uint8", mags, block_len=8, file_len=2),
             LayerSpec("segmentation", box, "segmentation", "uint32", mags, block_len=8,
                       file_len=2, block_type=wkw.BLOCK_TYPE_RAW),
             LayerSpec("rgb", box, "color", "uint24", mags, block_len=8, file_len=2)]
    ds = create_dataset(tmp_path, specs, voxel_size=(5, 5, 20), legacy=legacy)
    assert ds.problems == []
    rng = np.random.default_rng(4)
    for layer in ds.layers:
        hi = 5 if layer.is_segmentation else 256
        mag1 = rng.integers(0, hi, size=(layer.num_channels, *box.size)).astype(layer.dtype)
        layer.mag(1).write(box.top_left, mag1)
        downsample_layer(layer)
        mode = "mode" if layer.is_segmentation else "mean"
        prev_mag, prev_box = (1, 1, 1), box
        prev = mag1
        for mag in mags[1:]:
            f = tuple(m // p for m, p in zip(mag, prev_mag, strict=True))
            cb = box.at_mag(mag)
            # the finer mag on the coarse window grid, with the voxels outside its box masked
            lo = [c * k for c, k in zip(cb.top_left, f, strict=True)]
            hi_ = [c * k for c, k in zip(cb.end, f, strict=True)]
            extent = [b - a for a, b in zip(lo, hi_, strict=True)]
            grid = np.zeros((layer.num_channels, *extent), layer.dtype)
            mask = np.zeros(grid.shape[1:], bool)
            off = [p - a for p, a in zip(prev_box.top_left, lo, strict=True)]
            sl = tuple(slice(o, o + s) for o, s in zip(off, prev_box.size, strict=True))
            grid[(slice(None), *sl)] = prev
            mask[sl] = True
            expected = _loop_reference(grid, f, mode, mask)  # type: ignore[arg-type]
            got = layer.read(mag, cb.top_left, cb.size)
            np.testing.assert_array_equal(got, expected, err_msg=f"{layer.name} {mag}")
            prev_mag, prev_box, prev = mag, cb, got
    doc = json.loads((tmp_path / "datasource-properties.json").read_text())
    assert ("wkwResolutions" in doc["dataLayers"][0]) == legacy
    assert isinstance(doc["scale"], list) == legacy
    reopened = WkDataset(tmp_path)
    assert reopened.problems == [] and reopened.voxel_size == (5.0, 5.0, 20.0)
    assert reopened.layer("rgb").element_class == "uint24"
    assert reopened.layer("rgb").num_channels == 3


def test_synthetic_dataset_is_the_demo_layout(tmp_path: Path) -> None:
    volume = EMVolume(3)
    shape = (96, 80, 24)
    ds = write_synthetic_dataset(tmp_path, volume, shape=shape, block_len=16, file_len=2)
    assert ds.problems == [] and ds.check() == []
    assert [(layer.name, layer.category, layer.element_class) for layer in ds.layers] == [
        ("color", "color", "uint8"), ("segmentation", "segmentation", "uint32")]
    assert all(layer.mag_vectors == [(1, 1, 1), (2, 2, 1), (4, 4, 2)] for layer in ds.layers)
    assert ds.voxel_size == (11.24, 11.24, 28.0)
    # mag 1 is the volume on its 128-voxel generation grid
    np.testing.assert_array_equal(ds.layer("color").read(1, (0, 0, 0), shape)[0],
                                  volume.em((0, 0, 0), (128, 128, 128))[:96, :80, :24])
    seg1 = volume.segmentation((0, 0, 0), (128, 128, 128))[:96, :80, :24]
    seg = ds.layer("segmentation")
    np.testing.assert_array_equal(seg.read(1, (0, 0, 0), shape)[0], seg1)
    assert seg.largest_segment_id == int(seg1.max()) > 0
    np.testing.assert_array_equal(seg.read((2, 2, 1), (0, 0, 0), (48, 40, 24))[0],
                                  downsample(seg1, (2, 2, 1), "mode"))
    color = ds.layer("color")
    np.testing.assert_array_equal(
        color.read((4, 4, 2), (0, 0, 0), (24, 20, 12))[0],
        downsample(color.read((2, 2, 1), (0, 0, 0), (48, 40, 24))[0], (2, 2, 2), "mean"))


@pytest.mark.parametrize("block_len, file_len, mags", [
    (8, 4, [(1, 1, 1), (2, 2, 1), (4, 4, 2)]),  # files smaller than a generation chunk
    (16, 8, [(1, 1, 1), (2, 2, 1), (4, 4, 2)]),  # a coarse file gathers parts of two chunks
    (8, 4, [(1, 1, 1), (2, 2, 2), (3, 3, 1)]),  # 3 divides no chunk: built from the files
])
def test_synthetic_coarse_mags_equal_downsample_layer(tmp_path: Path, block_len: int,
                                                      file_len: int, mags: list) -> None:
    """write_synthetic_dataset derives the coarse mags from the chunks in memory; building
    them again from the files with downsample_layer changes no voxel."""
    shape = (200, 70, 20)
    ds = write_synthetic_dataset(tmp_path, EMVolume(4), shape=shape, mags=mags,
                                 block_len=block_len, file_len=file_len)
    assert ds.problems == [] and ds.check() == []
    for layer in ds.layers:
        boxes = [layer.bounding_box_at(m) for m in mags]
        before = [layer.read(m, (0, 0, 0), [e + 8 for e in b.end])
                  for m, b in zip(mags, boxes, strict=True)]
        downsample_layer(layer, workers=1)
        after = [layer.read(m, (0, 0, 0), [e + 8 for e in b.end])
                 for m, b in zip(mags, boxes, strict=True)]
        for m, x, y in zip(mags, before, after, strict=True):
            np.testing.assert_array_equal(x, y, err_msg=f"{layer.name} {m}")
        assert after[1].any()


@pytest.mark.parametrize("f", [(2, 2, 1), (2, 2, 2), (4, 2, 2), (4, 4, 2)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_whole_window_shortcut_matches_the_loop(f: tuple[int, int, int], order: str) -> None:
    """Whole windows and no mask take the shortcut (integer mean, sorted-run mode; k = 32
    sorts with numpy): same values as the loop, ties in the mode included."""
    rng = np.random.default_rng(sum(f))
    shape = (3, *(k * n for k, n in zip(f, (3, 2, 2), strict=True)))
    for dtype, hi, mode in ((np.uint8, 256, "mean"), (np.int16, 5, "mean"),
                            (np.uint32, 3, "mode"), (np.uint64, 4, "mode")):
        data = np.asarray(rng.integers(0, hi, size=shape).astype(dtype), order=order)
        got = downsample(data, f, mode)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, _loop_reference(data, f, mode), err_msg=f"{dtype}")
