"""The demo dataset as a webKnossos dataset: layout, voxel size, content of every mag (read with
the project's reader and with the reference ``wkw`` package), and an all-or-nothing build."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import wkw as reference

from viewer.core import demo
from viewer.core.synthetic import EMVolume
from viewer.format.webknossos.dataset import open_dataset
from viewer.format.webknossos.downsample import downsample

#: Not a multiple of the 128-voxel generation grid, the files or the mags: chunks and coarse
#: windows are cut at the box's far end.
SHAPE = (160, 136, 44)
MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.build_demo(tmp_path_factory.mktemp("wkdemo") / "demo", shape=SHAPE)


def _ref_read(root: Path, layer: str, mag: tuple[int, int, int], size: tuple[int, ...]
              ) -> np.ndarray:
    name = "1" if mag == (1, 1, 1) else "-".join(map(str, mag))
    with reference.Dataset.open(str(root / layer / name)) as ds:
        assert ds.header.block_type == reference.Header.BLOCK_TYPE_LZ4HC
        return ds.read((0, 0, 0), size)[0]


def _general_downsample(data: np.ndarray, f: tuple[int, int, int], mode: str) -> np.ndarray:
    """``downsample`` through its general (masked) path, checked against a plain loop in
    test_wk_downsample, not through the whole-window shortcut the writer uses."""
    return downsample(data, f, mode, np.ones(data.shape, dtype=bool))


def test_layout_layers_mags_and_voxel_size(built: Path) -> None:
    assert demo.is_complete(built)
    ds = open_dataset(built)
    assert ds.problems == [] and ds.check() == []
    assert [(layer.name, layer.category, layer.element_class, layer.num_channels)
            for layer in ds.layers] == [("color", "color", "uint8", 1),
                                        ("segmentation", "segmentation", "uint32", 1)]
    for layer in ds.layers:
        assert layer.mag_vectors == MAGS
        assert layer.bounding_box.top_left == (0, 0, 0) and layer.bounding_box.size == SHAPE
    assert ds.voxel_size == (11.24, 11.24, 28.0)
    doc = json.loads((built / "datasource-properties.json").read_text())
    assert doc["scale"] == {"factor": [11.24, 11.24, 28.0], "unit": "nanometer"}
    assert doc["id"]["name"] == "demo"  # the final folder's name, not the temporary one's
    assert [m["path"] for m in doc["dataLayers"][1]["mags"]] == [
        "./segmentation/1", "./segmentation/2-2-1", "./segmentation/4-4-2"]
    ds.close()


def test_mag1_is_the_volume_and_largest_segment_id_is_set(built: Path) -> None:
    volume = EMVolume(demo.DEMO_SEED)
    ds = open_dataset(built)
    seg = ds.layer("segmentation")
    ids = seg.read(1, (0, 0, 0), SHAPE)[0]
    np.testing.assert_array_equal(ids, _ref_read(built, "segmentation", (1, 1, 1), SHAPE))
    # a box across the generation grid (x = 128) and a file boundary
    box_lo, box_size = (100, 30, 10), (50, 90, 30)
    np.testing.assert_array_equal(
        seg.read(1, box_lo, box_size)[0], volume.segmentation(box_lo, box_size))
    assert seg.largest_segment_id == int(ids.max()) > 1
    assert 0 in ids  # membranes
    # grey values: the volume on its 128-voxel grid, whose noise is seeded per grid box
    color = ds.layer("color")
    np.testing.assert_array_equal(color.read(1, (128, 0, 0), (32, 128, 44))[0],
                                  volume.em((128, 0, 0), (128, 128, 128))[:32, :, :44])
    np.testing.assert_array_equal(color.read(1, (0, 0, 0), SHAPE)[0],
                                  _ref_read(built, "color", (1, 1, 1), SHAPE))
    ds.close()


@pytest.mark.parametrize("layer, mode", [("color", "mean"), ("segmentation", "mode")])
def test_coarse_mags_are_the_downsampling_of_the_finer(built: Path, layer: str,
                                                       mode: str) -> None:
    """Read with the reference: mag 2-2-1 is mag 1 downsampled by 2-2-1, mag 4-4-2 is mag
    2-2-1 downsampled by 2-2-2 (partial windows at the box's far end count only the voxels
    inside), and nothing is written outside the box."""
    ds = open_dataset(built)
    finer = _ref_read(built, layer, (1, 1, 1), SHAPE)
    for prev, mag in zip(MAGS, MAGS[1:], strict=False):
        f = (mag[0] // prev[0], mag[1] // prev[1], mag[2] // prev[2])
        size = tuple(-(-s // m) for s, m in zip(SHAPE, mag, strict=True))
        coarse = _ref_read(built, layer, mag, tuple(s + 8 for s in size))
        np.testing.assert_array_equal(coarse[:size[0], :size[1], :size[2]],
                                      _general_downsample(finer, f, mode),
                                      err_msg=f"{layer} {mag}")
        assert not coarse[size[0]:].any() and not coarse[:, size[1]:].any()
        assert not coarse[:, :, size[2]:].any()
        np.testing.assert_array_equal(ds.layer(layer).read(mag, (0, 0, 0), size)[0],
                                      coarse[:size[0], :size[1], :size[2]])
        finer = coarse[:size[0], :size[1], :size[2]]
    ds.close()


def test_interrupted_build_leaves_nothing_behind(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []

    def stop(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        demo.build_demo(tmp_path / "demo", stop, shape=(256, 128, 64))
    assert seen[-1][0] == 2 and list(tmp_path.iterdir()) == []


def test_a_failing_worker_leaves_nothing_behind(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """An error on a worker thread (here: generating the second chunk) reaches the caller,
    and the half-written dataset is removed."""
    calls = []
    original = EMVolume.em_and_segmentation

    def failing(self: EMVolume, offset, shape):  # type: ignore[no-untyped-def]
        calls.append(tuple(offset))
        if len(calls) == 2:
            raise OSError("disk full (simulated)")
        return original(self, offset, shape)

    monkeypatch.setattr(EMVolume, "em_and_segmentation", failing)
    with pytest.raises(OSError, match="disk full"):
        demo.build_demo(tmp_path / "demo", shape=(384, 128, 64))
    assert list(tmp_path.iterdir()) == []
