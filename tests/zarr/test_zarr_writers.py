"""Arrays written by tensorstore (zarr3 sharded as webKnossos lays it out, index at the end
and at the start; zarr v2) and datasets written by the ``webknossos`` package (zarr3, zarr and
WKW layers in one dataset, mags 1, 2 and 4, three channels), read voxel for voxel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from zarr_test_fixtures import (
    sample,
    strided,
    write_tensorstore_zarr3,
    write_webknossos_dataset,
)

from viewer.format import open_dataset, open_volume


@pytest.mark.parametrize("index_location", ["end", "start"])
@pytest.mark.parametrize("channels,dtype", [(1, "uint8"), (3, "uint8"), (1, "float32"),
                                            (2, "int64")])
def test_tensorstore_zarr3(tmp_path: Path, index_location: str, channels: int,
                           dtype: str) -> None:
    pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
    data = sample((channels, 50, 40, 30), dtype, seed=channels)
    path = write_tensorstore_zarr3(tmp_path / "a", data, shard_len=32, chunk_len=8,
                                   index_location=index_location, offset=(10, 0, 5))
    with open_volume(path) as v:
        assert v.format == "zarr3"
        assert v.shape == (64, 64, 64)
        assert v.chunk_shape == (8, 8, 8) and v.unit_shape == (4, 4, 4)
        assert v.num_channels == channels and v.dtype == np.dtype(dtype)
        got = v.read((0, 0, 0), (64, 64, 64))
        want = np.zeros((channels, 64, 64, 64), dtype)
        want[:, 10:60, 0:40, 5:35] = data
        np.testing.assert_array_equal(got, want)
        # the first inner chunk (x 0..8) lies before the data: absent, not stored
        unit = v.open_unit((0, 0, 0))
        assert unit is not None and not unit.chunk_table().present[0]
        assert unit.describe().fields["index_location"] == index_location


def test_tensorstore_zarr2(tmp_path: Path) -> None:
    ts = pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
    data = sample((37, 21, 15), "uint16", seed=4)
    spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(tmp_path / "a")},
            "metadata": {"shape": list(data.shape), "chunks": [16, 8, 8], "dtype": "<u2",
                         "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5,
                                        "shuffle": 1},
                         "order": "F", "dimension_separator": "/", "fill_value": 9},
            "create": True, "delete_existing": True}
    arr = ts.open(spec).result()
    arr[:30].write(data[:30]).result()
    want = np.full(data.shape, 9, np.uint16)
    want[:30] = data[:30]
    with open_volume(tmp_path / "a") as v:
        assert v.format == "zarr" and v.shape == (15, 21, 37)  # no names: last axis is x
        np.testing.assert_array_equal(v.read((0, 0, 0), v.shape)[0], want.transpose(2, 1, 0))


@pytest.fixture(scope="module")
def wk_dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray,
                                                                  np.ndarray]:
    pytest.importorskip("webknossos", reason="webknossos (test extra) is not installed")
    root = tmp_path_factory.mktemp("wk") / "ds"
    gray = sample((1, 70, 60, 50), "uint8", seed=1)
    rgb = sample((3, 40, 36, 20), "uint8", seed=2)
    seg = (sample((1, 70, 60, 50), "uint32", seed=3) % 1000).astype(np.uint32)
    write_webknossos_dataset(root, {
        "color_z3": ("zarr3", gray), "color_z2": ("zarr", gray), "color_wkw": ("wkw", gray),
        "rgb_z3": ("zarr3", rgb), "seg_z3": ("zarr3", seg)}, downsample=True)
    return root, gray, rgb


def test_webknossos_layers(wk_dataset: tuple[Path, np.ndarray, np.ndarray]) -> None:
    root, gray, rgb = wk_dataset
    props = json.loads((root / "datasource-properties.json").read_text())
    formats = {lay["name"]: lay["dataFormat"] for lay in props["dataLayers"]}
    assert formats["color_z3"] == "zarr3" and formats["color_z2"] == "zarr"
    with open_dataset(root) as ds:
        assert ds.format == "webknossos"
        assert not ds.problems, ds.problems
        names = {layer.name for layer in ds.layers}
        assert names == set(formats)
        for name in ("color_z3", "color_z2", "color_wkw"):
            layer = ds.layer(name)
            assert [m.mag for m in layer.mags] == [(1, 1, 1), (2, 2, 2), (4, 4, 4)]
            got = layer.mags[0].read((0, 0, 0), (70, 60, 50))
            np.testing.assert_array_equal(got, gray)
        # mags 2 and 4 of the zarr layers agree with the WKW layer's, voxel for voxel
        wkw_layer = ds.layer("color_wkw")
        for name in ("color_z3", "color_z2"):
            for m_wkw, m in zip(wkw_layer.mags[1:], ds.layer(name).mags[1:], strict=True):
                size = [-(-s // f) for s, f in zip((70, 60, 50), m.mag, strict=True)]
                got = m.read((0, 0, 0), size)
                np.testing.assert_array_equal(got, m_wkw.read((0, 0, 0), size))
                np.testing.assert_array_equal(got, strided(gray, m.mag[0]))
                assert m.volume.format == ("zarr3" if name.endswith("z3") else "zarr")
        rgb_layer = ds.layer("rgb_z3")
        assert rgb_layer.num_channels == 3 and rgb_layer.element_class == "uint24"
        np.testing.assert_array_equal(rgb_layer.mags[0].read((0, 0, 0), (40, 36, 20)), rgb)
        seg = ds.layer("seg_z3")
        assert seg.category == "segmentation" and seg.dtype == np.uint32


def test_webknossos_mag_and_layer_folders(wk_dataset: tuple[Path, np.ndarray, np.ndarray]
                                          ) -> None:
    root, gray, _ = wk_dataset
    # a zarr3 mag folder, a zarr v2 mag folder (axes from the layer's OME-Zarr 0.4 group)
    for mag_dir, fmt in ((root / "color_z3" / "1", "zarr3"), (root / "color_z2" / "1", "zarr")):
        with open_volume(mag_dir) as v:
            assert v.format == fmt
            np.testing.assert_array_equal(v.read((0, 0, 0), (70, 60, 50)), gray)
    # the layer folder is an OME-Zarr multiscale group (0.5 for zarr3, 0.4 for zarr)
    for layer_dir, fmt in ((root / "color_z3", "zarr3"), (root / "color_z2", "zarr")):
        with open_dataset(layer_dir) as ds:
            assert ds.format == fmt
            [layer] = ds.layers
            assert [m.mag for m in layer.mags] == [(1, 1, 1), (2, 2, 2), (4, 4, 4)]
            assert ds.scale.factor == (11.0, 11.0, 24.0) and ds.scale.unit == "nanometer"
            np.testing.assert_array_equal(layer.mags[1].read((0, 0, 0), (35, 30, 25)),
                                          open_volume(root, layer="color_wkw", mag=2)
                                          .read((0, 0, 0), (35, 30, 25)))


def test_webknossos_zarr2_mag_without_ome_axes(wk_dataset: tuple[Path, np.ndarray, np.ndarray],
                                               tmp_path: Path) -> None:
    """A zarr v2 mag has no axis names of its own: without the layer's OME-Zarr ``.zattrs``
    (older tools wrote none) the properties file's ``axisOrder`` says c, x, y, z."""
    import shutil

    root, gray, _ = wk_dataset
    copy = tmp_path / "ds"
    shutil.copytree(root, copy)
    (copy / "color_z2" / ".zattrs").unlink()
    with open_volume(copy / "color_z2" / "1") as v:
        np.testing.assert_array_equal(v.read((0, 0, 0), (70, 60, 50)), gray)
    with open_volume(copy, layer="color_z2") as v:
        np.testing.assert_array_equal(v.read((0, 0, 0), (70, 60, 50)), gray)
    # without either, the last axis is x: a (1, 96, 64, 64) array is 64 x 64 x 96 voxels
    (copy / "datasource-properties.json").unlink()
    with open_volume(copy / "color_z2" / "1") as v:
        assert v.shape == (64, 64, 96)
