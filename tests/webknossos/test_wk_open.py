"""Opening webKnossos datasets as webKnossos 4.x lays them out, read back voxel for voxel
through every mag; and every way a dataset can be half there, which is reported while the rest
opens."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import wk4_layout as wk4
from hypothesis import given, settings
from hypothesis import strategies as st

from viewer.format import DatasetLayoutError, FormatError
from viewer.format.webknossos import (
    BoundingBox,
    DatasetProperties,
    LayerProperties,
    MagMismatchError,
    MagProperties,
    MissingMagError,
    NoMagsError,
    PropertiesError,
    UnsupportedLayerError,
    VoxelSize,
    WkDataset,
    layers_json,
    match_mags,
    problems_json,
    select_mag,
    summary_lines,
)
from viewer.format.webknossos.properties import ELEMENT_CLASSES, parse_properties

MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
TOP_LEFT = (4, 8, 2)
SIZE = (40, 36, 14)


Written = dict[tuple[str, tuple[int, int, int]], np.ndarray]


def _build(root: Path, key: str = "mags", scale: object = None) -> Written:
    """A color (uint8, written by the reference ``wkw``) and a segmentation (uint32, written by
    the project) layer with mags 1, 2-2-1, 4-4-2, each mag with its own content; returns the
    arrays written per (layer, mag), in mag coordinates from the mag box's corner."""
    written = {}
    layers = []
    for li, (name, category, dtype, reference) in enumerate(
            [("color", "color", np.uint8, True),
             ("segmentation", "segmentation", np.uint32, False)]):
        for mi, mag in enumerate(MAGS):
            lo, shape = wk4.coarse_box(TOP_LEFT, SIZE, mag)
            data = wk4.model(dtype, shape, seed=10 * li + mi)
            wk4.write_mag(root / name / wk4.mag_folder(mag), data, lo, reference=reference)
            written[(name, mag)] = data
        mags = wk4.mags_entry(name, MAGS) if key == "mags" else wk4.resolutions_entry(MAGS)
        extra = {"largestSegmentId": 4294967295} if category == "segmentation" else {}
        layers.append(wk4.layer(name, category, np.dtype(dtype).name, wk4.bbox(TOP_LEFT, SIZE),
                                mags, key=key, numChannels=1, **extra))
    wk4.write_properties(root, layers, scale)
    return written


def _check_voxels(ds: WkDataset, written: Written) -> None:
    for (name, mag), data in written.items():
        layer = ds.layer(name)
        lo, shape = wk4.coarse_box(TOP_LEFT, SIZE, mag)
        got = layer.read(mag, lo, shape)
        assert got.shape == (1, *shape)
        np.testing.assert_array_equal(got[0], data, err_msg=f"{name} mag {mag}")
        # an unaligned inner box, crossing files
        inner = layer.mag(mag).read([a + 1 for a in lo], [max(1, s - 2) for s in shape])
        np.testing.assert_array_equal(inner[0], data[1:1 + max(1, shape[0] - 2),
                                                     1:1 + max(1, shape[1] - 2),
                                                     1:1 + max(1, shape[2] - 2)])


def test_current_mags_key_opens_every_layer_and_mag(tmp_path: Path) -> None:
    written = _build(tmp_path)
    ds = WkDataset(tmp_path)
    assert ds.problems == []
    assert ds.kind == "dataset"
    assert [layer.name for layer in ds.layers] == ["color", "segmentation"]
    color, seg = ds.layers
    assert (color.category, color.element_class, color.dtype, color.num_channels) == (
        "color", "uint8", np.dtype(np.uint8), 1)
    assert (seg.category, seg.element_class, seg.dtype, seg.largest_segment_id) == (
        "segmentation", "uint32", np.dtype(np.uint32), 4294967295)
    assert color.bounding_box.top_left == TOP_LEFT and color.bounding_box.size == SIZE
    assert color.mag_vectors == MAGS
    assert [m.name for m in color.mags] == ["1", "2-2-1", "4-4-2"]
    assert color.mag("2-2-1").path == str(tmp_path / "color" / "2-2-1")
    assert ds.voxel_size == pytest.approx((11.24, 11.24, 28.0))
    assert ds.color_layers == [color] and ds.segmentation_layers == [seg]
    _check_voxels(ds, written)


def test_opening_reads_no_data_file_and_no_mag_header(tmp_path: Path) -> None:
    _build(tmp_path)
    # damage every data file of mag 1: opening must not notice, reading must say so
    for f in (tmp_path / "color" / "1").rglob("x*.wkw"):
        f.write_bytes(b"nonsense")
    ds = WkDataset(tmp_path)
    assert not any(m.is_open for layer in ds.layers for m in layer.mags)
    assert ds.problems == []
    with pytest.raises(FormatError):
        ds.layer("color").read(1, (4, 8, 2), (8, 8, 8))


def test_legacy_wkw_resolutions_and_legacy_scale(tmp_path: Path) -> None:
    written = _build(tmp_path, key="wkwResolutions", scale=[11.24, 11.24, 28])
    doc = json.loads((tmp_path / "datasource-properties.json").read_text())
    assert doc["dataLayers"][0]["wkwResolutions"][0] == {"resolution": 1, "cubeLength": 1024}
    ds = WkDataset(tmp_path)
    assert ds.problems == []
    assert ds.properties is not None and ds.properties.legacy_scale
    assert ds.layers[0].properties is not None
    assert ds.layers[0].properties.mags_key == "wkwResolutions"
    assert ds.voxel_size == pytest.approx((11.24, 11.24, 28.0))
    assert ds.layers[0].mag_vectors == MAGS
    assert ds.layers[0].mag((2, 2, 1)).rel_path == "./color/2-2-1"
    _check_voxels(ds, written)


def test_legacy_mag_folders_with_long_names(tmp_path: Path) -> None:
    """Older tools name mag 2 ``2-2-2`` and mag 1 ``1-1-1``; webKnossos writes ``2`` and ``1``."""
    one = wk4.model(np.uint8, (16, 16, 16), 1)
    two = wk4.model(np.uint8, (8, 8, 8), 2)
    wk4.write_mag(tmp_path / "color" / "1-1-1", one)
    wk4.write_mag(tmp_path / "color" / "2-2-2", two)
    wk4.write_properties(tmp_path, [wk4.layer(
        "color", "color", "uint8", wk4.bbox((0, 0, 0), (16, 16, 16)),
        [{"resolution": 1}, {"resolution": [2, 2, 2]}], key="wkwResolutions")])
    ds = WkDataset(tmp_path)
    assert ds.problems == []
    layer = ds.layer("color")
    assert layer.mag_vectors == [(1, 1, 1), (2, 2, 2)]
    assert layer.mag(2).name == "2"
    np.testing.assert_array_equal(layer.read(1, (0, 0, 0), (16, 16, 16))[0], one)
    np.testing.assert_array_equal(layer.read(2, (0, 0, 0), (8, 8, 8))[0], two)


def test_scale_object_with_other_unit(tmp_path: Path) -> None:
    _build(tmp_path, scale={"factor": [0.5, 0.5, 1.25], "unit": "micrometer"})
    ds = WkDataset(tmp_path)
    assert ds.scale.unit == "micrometer" and ds.scale.factor == (0.5, 0.5, 1.25)
    assert ds.voxel_size == pytest.approx((500.0, 500.0, 1250.0))


def test_scale_object_without_unit_is_nanometres(tmp_path: Path) -> None:
    _build(tmp_path, scale={"factor": [4, 4, 40]})
    assert WkDataset(tmp_path).voxel_size == (4.0, 4.0, 40.0)


def test_half_written_layer_without_mags_is_reported(tmp_path: Path) -> None:
    written = _build(tmp_path)
    doc = json.loads((tmp_path / "datasource-properties.json").read_text())
    doc["dataLayers"].append(wk4.layer("fresh", "color", "uint8", wk4.bbox((0, 0, 0), (8, 8, 8)),
                                       [], key="mags"))
    doc["dataLayers"].append(wk4.layer("bare", "segmentation", "uint16",
                                       wk4.bbox((0, 0, 0), (8, 8, 8))))
    (tmp_path / "datasource-properties.json").write_text(json.dumps(doc))
    ds = WkDataset(tmp_path)
    assert [layer.name for layer in ds.layers] == ["color", "segmentation"]
    assert [type(p) for p in ds.problems] == [NoMagsError, NoMagsError]
    assert [p.layer for p in ds.problems] == ["fresh", "bare"]  # type: ignore[attr-defined]
    assert ds.problems[0].path == str(tmp_path / "fresh")
    assert "no mags" in str(ds.problems[0]) and "fresh" in str(ds.problems[0])
    _check_voxels(ds, written)


def test_missing_mag_folder_is_reported_and_the_rest_opens(tmp_path: Path) -> None:
    written = _build(tmp_path)
    shutil.rmtree(tmp_path / "color" / "4-4-2")
    ds = WkDataset(tmp_path)
    assert [type(p) for p in ds.problems] == [MissingMagError]
    problem = ds.problems[0]
    assert isinstance(problem, DatasetLayoutError)  # a MissingMagError is a layout error too
    assert problem.path == str(tmp_path / "color" / "4-4-2")
    assert problem.mag == (4, 4, 2) and problem.layer == "color"  # type: ignore[attr-defined]
    assert ds.layer("color").mag_vectors == [(1, 1, 1), (2, 2, 1)]
    del written[("color", (4, 4, 2))]
    _check_voxels(ds, written)


def test_mag_folder_without_header_is_reported(tmp_path: Path) -> None:
    _build(tmp_path, key="wkwResolutions")
    (tmp_path / "segmentation" / "2-2-1" / "header.wkw").unlink()
    ds = WkDataset(tmp_path)
    assert [type(p) for p in ds.problems] == [MissingMagError]
    assert "header.wkw" in ds.problems[0].reason
    assert ds.layer("segmentation").mag_vectors == [(1, 1, 1), (4, 4, 2)]


def test_layer_whose_every_mag_is_missing_is_reported(tmp_path: Path) -> None:
    _build(tmp_path)
    shutil.rmtree(tmp_path / "segmentation")
    ds = WkDataset(tmp_path)
    assert [layer.name for layer in ds.layers] == ["color"]
    assert [type(p) for p in ds.problems] == [MissingMagError] * 3 + [NoMagsError]


def test_layers_of_formats_not_read_are_reported_not_opened(tmp_path: Path) -> None:
    written = _build(tmp_path)
    doc = json.loads((tmp_path / "datasource-properties.json").read_text())
    (tmp_path / "em_zarr" / "1").mkdir(parents=True)
    (tmp_path / "em_zarr" / "1" / "zarr.json").write_text('{"zarr_format": 3}')
    for fmt, name in (("zarr3", "em_zarr"), ("n5", "em_n5"), ("zarr", "em_zarr2")):
        doc["dataLayers"].append(wk4.layer(name, "color", "uint8", wk4.bbox((0, 0, 0), (8, 8, 8)),
                                           wk4.mags_entry(name, [(1, 1, 1)]), data_format=fmt))
    (tmp_path / "datasource-properties.json").write_text(json.dumps(doc))
    ds = WkDataset(tmp_path)
    # a format the registry reads (N5 and zarr among them) is no longer
    # unsupported: its layer without a mag folder has a missing mag, and so no mags; the zarr3
    # layer whose mag folder is there opens, and its incomplete zarr.json is that mag's
    # problem once opened
    from viewer.format.registry import format_names

    zarr3 = "zarr3" in format_names()
    assert [layer.name for layer in ds.layers] == ["color", "segmentation"] + \
        (["em_zarr"] if zarr3 else [])
    want: list[type] = []
    for fmt in ("zarr3", "n5", "zarr"):
        if fmt == "zarr3" and zarr3:
            continue
        want += ([MissingMagError, NoMagsError] if fmt in format_names()
                 else [UnsupportedLayerError])
    assert [type(p) for p in ds.problems] == want
    if zarr3:
        [problem] = ds.layer("em_zarr").check()
        assert isinstance(problem, FormatError) and "zarr.json" in str(problem)
    else:
        assert "zarr3" in ds.problems[0].reason
        assert ds.problems[0].path == str(tmp_path / "em_zarr")
    _check_voxels(ds, written)


@pytest.mark.parametrize("num_channels", [3, None])
def test_uint24_color_layer_is_three_uint8_channels(tmp_path: Path,
                                                    num_channels: int | None) -> None:
    """uint24 = RGB: a WKW layer of uint8 with 3 channels (voxelSize 3); written here by the
    reference ``wkw`` for mag 1 and by the project for mag 2-2-1."""
    box = ((0, 0, 0), (24, 20, 6))
    rgb1 = wk4.model(np.uint8, (3, 24, 20, 6), 5)
    rgb2 = wk4.model(np.uint8, (3, 12, 10, 6), 6)
    wk4.write_mag(tmp_path / "rgb" / "1", rgb1, reference=True)
    wk4.write_mag(tmp_path / "rgb" / "2-2-1", rgb2)
    extra = {} if num_channels is None else {"numChannels": num_channels}
    wk4.write_properties(tmp_path, [wk4.layer("rgb", "color", "uint24", wk4.bbox(*box),
                                              wk4.mags_entry("rgb", [(1, 1, 1), (2, 2, 1)]),
                                              **extra)])
    ds = WkDataset(tmp_path)
    assert ds.problems == []
    layer = ds.layer("rgb")
    assert (layer.element_class, layer.dtype, layer.num_channels) == (
        "uint24", np.dtype(np.uint8), 3)
    assert ds.check() == []
    np.testing.assert_array_equal(layer.read(1, (0, 0, 0), (24, 20, 6)), rgb1)
    np.testing.assert_array_equal(layer.read((2, 2, 1), (1, 2, 3), (10, 7, 3)),
                                  rgb2[:, 1:11, 2:9, 3:6])
    entry = layers_json(ds)[0]
    assert (entry["element_class"], entry["num_channels"]) == ("uint24", 3)


def test_mag_header_that_disagrees_with_the_element_class_is_reported(tmp_path: Path) -> None:
    _build(tmp_path)
    doc = json.loads((tmp_path / "datasource-properties.json").read_text())
    doc["dataLayers"][1]["elementClass"] = "uint16"  # the files hold uint32
    (tmp_path / "datasource-properties.json").write_text(json.dumps(doc))
    ds = WkDataset(tmp_path)
    assert ds.problems == []  # headers are not read at open...
    found = ds.check()  # ...but on demand
    assert [type(p) for p in found] == [MagMismatchError] * 3
    assert found[0].path == str(tmp_path / "segmentation" / "1" / "header.wkw")
    assert "uint32" in found[0].reason and "uint16" in found[0].reason
    assert ds.problems == found and ds.check() == []
    with pytest.raises(MagMismatchError):
        ds.layer("segmentation").read(1, (4, 8, 2), (2, 2, 2))


def test_absolute_and_file_url_mag_paths(tmp_path: Path) -> None:
    elsewhere = tmp_path / "storage"
    data = wk4.model(np.uint16, (16, 8, 8), 3)
    wk4.write_mag(elsewhere / "c1", data)
    wk4.write_mag(elsewhere / "c2", data[::2, ::2, :])
    root = tmp_path / "ds"
    wk4.write_properties(root, [wk4.layer("c", "color", "uint16", wk4.bbox((0, 0, 0), (16, 8, 8)), [
        {"mag": [1, 1, 1], "path": str(elsewhere / "c1")},
        {"mag": [2, 2, 1], "path": "file://" + str(elsewhere / "c2")},
        # A URL of a scheme nothing reads (http, https, s3 and gs mags are read over the
        # network: tests/remote/test_remote_wkw.py).
        {"mag": [4, 4, 1], "path": "ftp://bucket/ds/c/4-4-1"},
    ])])
    ds = WkDataset(root)
    assert [type(p) for p in ds.problems] == [UnsupportedLayerError]
    assert "ftp://" in ds.problems[0].reason
    layer = ds.layer("c")
    assert layer.mag_vectors == [(1, 1, 1), (2, 2, 1)]
    np.testing.assert_array_equal(layer.read(1, (0, 0, 0), (16, 8, 8))[0], data)
    np.testing.assert_array_equal(layer.read((2, 2, 1), (0, 0, 0), (8, 4, 8))[0], data[::2, ::2])
    assert layers_json(ds)[0]["mags"][0]["path"] == str(elsewhere / "c1")


def test_properties_file_path_opens_its_dataset(tmp_path: Path) -> None:
    _build(tmp_path)
    ds = WkDataset(tmp_path / "datasource-properties.json")
    assert ds.path == str(tmp_path) and len(ds.layers) == 2


def test_single_layer_folder_opens_directly(tmp_path: Path) -> None:
    written = _build(tmp_path)
    ds = WkDataset(tmp_path / "segmentation")
    assert ds.kind == "layer" and ds.problems == []
    layer = ds.layers[0]
    assert (layer.name, layer.category, layer.element_class) == (
        "segmentation", "segmentation", "uint32")
    assert layer.mag_vectors == MAGS
    # the box is the extent of mag 1's data files (16-voxel files here)
    assert layer.bounding_box.top_left == (0, 0, 0)
    assert layer.bounding_box.end == (48, 48, 16)
    assert layers_json(ds)[0]["mags"][1]["path"] == "./2-2-1"
    lo, shape = wk4.coarse_box(TOP_LEFT, SIZE, (2, 2, 1))
    np.testing.assert_array_equal(layer.read((2, 2, 1), lo, shape)[0],
                                  written[("segmentation", (2, 2, 1))])
    assert not ds.voxel_size_declared


def test_single_mag_folder_opens_directly(tmp_path: Path) -> None:
    written = _build(tmp_path)
    for target in (tmp_path / "color" / "2-2-1", tmp_path / "color" / "2-2-1" / "header.wkw"):
        ds = WkDataset(target)
        assert ds.kind == "mag" and ds.problems == []
        layer = ds.layers[0]
        assert layer.name == "color" and layer.mag_vectors == [(1, 1, 1)]
        lo, shape = wk4.coarse_box(TOP_LEFT, SIZE, (2, 2, 1))
        np.testing.assert_array_equal(layer.read(1, lo, shape)[0], written[("color", (2, 2, 1))])


def test_plain_wkw_dataset_opens_as_one_layer(tmp_path: Path) -> None:
    data = wk4.model(np.uint8, (20, 20, 20), 9)
    wk4.write_mag(tmp_path / "plain", data, (3, 3, 3), reference=True)
    ds = WkDataset(tmp_path / "plain")
    layer = ds.layers[0]
    assert (layer.name, layer.category, layer.element_class) == ("plain", "color", "uint8")
    assert layer.bounding_box.top_left == (0, 0, 0) and layer.bounding_box.end == (32, 32, 32)
    np.testing.assert_array_equal(layer.read(1, (3, 3, 3), (20, 20, 20))[0], data)


def test_dataset_without_properties_file_infers_layers_and_says_so(tmp_path: Path) -> None:
    _build(tmp_path)
    (tmp_path / "datasource-properties.json").unlink()
    ds = WkDataset(tmp_path)
    assert [layer.name for layer in ds.layers] == ["color", "segmentation"]
    assert [type(p) for p in ds.problems] == [PropertiesError]
    assert ds.layers[1].category == "segmentation"


def test_layer_and_mag_folders_found_through_links_not_files(tmp_path: Path) -> None:
    """The registry's look at a folder without a properties file: a layer folder and a mag
    folder reached through symbolic links are found; a file named like a mag, or named like
    a layer, is not a folder."""
    from viewer.format import registry

    data = wk4.model(np.uint8, (16, 16, 16), 3)
    store = tmp_path / "elsewhere"
    wk4.write_mag(store / "mag1", data, (0, 0, 0), reference=True)
    layer = store / "layer"
    layer.mkdir()
    (layer / "1").symlink_to(store / "mag1", target_is_directory=True)
    (layer / "2").write_bytes(b"a file named like a mag")
    root = tmp_path / "dataset"
    root.mkdir()
    (root / "a-file").write_bytes(b"not a layer")
    (root / "color").symlink_to(layer, target_is_directory=True)
    assert registry.detect(layer).name == "webknossos"
    assert registry.detect(root).name == "webknossos"
    ds = WkDataset(root)
    assert [lay.name for lay in ds.layers] == ["color"]
    assert ds.layers[0].mag_vectors == [(1, 1, 1)]
    np.testing.assert_array_equal(ds.layers[0].read(1, (0, 0, 0), (16, 16, 16))[0], data)
    (layer / "1").unlink()
    (layer / "1").write_bytes(b"now a file")
    with pytest.raises(FormatError):
        registry.detect(root)


@pytest.mark.parametrize("kind", ["n5-dataset", "zarr2-array", "zarr3-array", "n5-group",
                                  "zarr3-group"])
def test_another_formats_array_is_not_looked_through_for_layers(tmp_path: Path,
                                                                 kind: str) -> None:
    """A folder that is an N5 dataset or a zarr array is that array, even with a layer folder
    inside (its subfolders are chunk folders, not looked through); a group of those formats
    holding a layer folder is still a dataset of inferred layers."""
    from viewer.format import open_volume, registry

    ts = pytest.importorskip("tensorstore")
    root = tmp_path / kind
    array = np.arange(8 * 6 * 4, dtype=np.uint8).reshape(8, 6, 4)
    kv = {"driver": "file", "path": str(root)}
    if kind == "n5-dataset":
        spec = {"driver": "n5", "kvstore": kv, "metadata": {
            "dimensions": [8, 6, 4], "blockSize": [4, 4, 4], "dataType": "uint8",
            "compression": {"type": "raw"}}}
    elif kind == "zarr2-array":
        spec = {"driver": "zarr", "kvstore": kv, "metadata": {
            "shape": [4, 6, 8], "chunks": [4, 4, 4], "dtype": "|u1", "compressor": None}}
    elif kind == "zarr3-array":
        spec = {"driver": "zarr3", "kvstore": kv, "metadata": {
            "shape": [4, 6, 8], "chunk_grid": {"name": "regular",
                                               "configuration": {"chunk_shape": [4, 4, 4]}},
            "data_type": "uint8"}}
    if kind.endswith("group"):
        root.mkdir()
        name = "attributes.json" if kind == "n5-group" else "zarr.json"
        doc = {"n5": "4.0.0"} if kind == "n5-group" else {"zarr_format": 3,
                                                          "node_type": "group"}
        (root / name).write_text(json.dumps(doc))
    else:
        t = ts.open({**spec, "create": True}).result()
        t[...] = array if kind == "n5-dataset" else array.transpose(2, 1, 0)
    data = wk4.model(np.uint8, (16, 16, 16), 4)
    wk4.write_mag(root / "color" / "1", data, (0, 0, 0), reference=True)
    found = registry.detect(root).name
    if kind.endswith("group"):
        assert found == "webknossos"
        assert [lay.name for lay in WkDataset(root).layers] == ["color"]
    else:
        assert found == kind.split("-")[0].replace("zarr2", "zarr").replace("zarr3", "zarr")
        with open_volume(root) as volume:
            np.testing.assert_array_equal(volume.read((0, 0, 0), (8, 6, 4))[0], array)


def test_not_a_dataset_at_all(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetLayoutError):
        WkDataset(tmp_path / "empty")
    with pytest.raises(DatasetLayoutError):
        WkDataset(tmp_path / "absent")


def test_properties_file_that_is_not_json_raises(tmp_path: Path) -> None:
    (tmp_path / "datasource-properties.json").write_text('{"dataLayers": [}')
    with pytest.raises(PropertiesError) as info:
        WkDataset(tmp_path)
    assert info.value.path == str(tmp_path / "datasource-properties.json")
    assert info.value.offset == 16


@pytest.mark.parametrize("doc, what", [
    ([], "JSON object"),
    ({"scale": [1, 1, 1]}, "dataLayers"),
    ({"scale": [1, 1], "dataLayers": []}, "scale"),
    ({"scale": {"factor": [1, 1, 1], "unit": "furlong"}, "dataLayers": []}, "unit"),
    ({"dataLayers": []}, "scale"),
])
def test_unusable_properties_file_raises(tmp_path: Path, doc: object, what: str) -> None:
    (tmp_path / "datasource-properties.json").write_text(json.dumps(doc))
    with pytest.raises(PropertiesError, match=what):
        WkDataset(tmp_path)


def test_broken_layer_entries_are_reported_and_the_rest_opens(tmp_path: Path) -> None:
    written = _build(tmp_path)
    doc = json.loads((tmp_path / "datasource-properties.json").read_text())
    box = wk4.bbox((0, 0, 0), (8, 8, 8))
    doc["dataLayers"] += [
        wk4.layer("odd", "color", "complex64", box, []),
        wk4.layer("nocat", "skeleton", "uint8", box, []),
        {"category": "color"},
        wk4.layer("badbox", "color", "uint8", {"topLeft": [0, 0], "width": 1}, []),
        wk4.layer("badmag", "color", "uint8", box, [{"mag": [0, 1, 1], "path": "./x"}]),
        wk4.layer("color", "color", "uint8", box, []),  # a second "color"
    ]
    (tmp_path / "datasource-properties.json").write_text(json.dumps(doc))
    ds = WkDataset(tmp_path)
    assert [layer.name for layer in ds.layers] == ["color", "segmentation"]
    assert [type(p) for p in ds.problems] == [PropertiesError] * 6
    reasons = " | ".join(str(p) for p in ds.problems)
    for text in ("complex64", "skeleton", "no name", "topLeft", "at least 1", "second layer"):
        assert text in reasons
    _check_voxels(ds, written)


def test_layers_json_is_what_info_prints(tmp_path: Path) -> None:
    _build(tmp_path)
    ds = WkDataset(tmp_path)
    box = {"topLeft": list(TOP_LEFT), "width": SIZE[0], "height": SIZE[1], "depth": SIZE[2]}
    assert layers_json(ds) == [
        {"name": name, "category": category, "element_class": ec, "num_channels": 1,
         "bounding_box": box,
         "mags": [{"mag": [1, 1, 1], "path": f"./{name}/1"},
                  {"mag": [2, 2, 1], "path": f"./{name}/2-2-1"},
                  {"mag": [4, 4, 2], "path": f"./{name}/4-4-2"}]}
        for name, category, ec in (("color", "color", "uint8"),
                                   ("segmentation", "segmentation", "uint32"))]
    json.dumps(layers_json(ds))  # plain JSON types only


def test_problems_json_and_pickling(tmp_path: Path) -> None:
    _build(tmp_path)
    shutil.rmtree(tmp_path / "color" / "2-2-1")
    ds = WkDataset(tmp_path)
    assert problems_json(ds) == [{"kind": "MissingMagError", "layer": "color", "mag": [2, 2, 1],
                                  "path": str(tmp_path / "color" / "2-2-1"),
                                  "message": "mag folder is missing"}]
    back = pickle.loads(pickle.dumps(ds.problems[0]))
    assert type(back) is MissingMagError and str(back) == str(ds.problems[0])
    assert back.layer == "color" and back.mag == (2, 2, 1)


def test_select_mag_for_tools_that_work_on_one_wkw_dataset(tmp_path: Path) -> None:
    _build(tmp_path)
    ds = WkDataset(tmp_path)
    assert select_mag(ds).path == str(tmp_path / "color" / "1")  # first color layer, finest
    assert select_mag(ds, "segmentation", "4-4-2").path == str(tmp_path / "segmentation" / "4-4-2")
    assert select_mag(ds, "segmentation", (2, 2, 1)).mag == (2, 2, 1)
    with pytest.raises(KeyError, match="2-2-1, 4-4-2"):
        select_mag(ds, "color", 8)
    with pytest.raises(KeyError, match="color, segmentation"):
        select_mag(ds, "nuclei")
    single = WkDataset(tmp_path / "segmentation")
    assert select_mag(single).path == str(tmp_path / "segmentation" / "1")


def test_match_mags_pairs_layers_by_name_and_mags_by_factor(tmp_path: Path) -> None:
    _build(tmp_path / "a")
    _build(tmp_path / "b")
    shutil.rmtree(tmp_path / "b" / "color" / "4-4-2")
    pairs = match_mags(WkDataset(tmp_path / "a"), WkDataset(tmp_path / "b"))
    assert [(name, mag) for name, mag, _, _ in pairs.both] == [
        ("color", (1, 1, 1)), ("color", (2, 2, 1)),
        ("segmentation", (1, 1, 1)), ("segmentation", (2, 2, 1)), ("segmentation", (4, 4, 2))]
    assert pairs.both[0][2].path == str(tmp_path / "a" / "color" / "1")
    assert pairs.both[0][3].path == str(tmp_path / "b" / "color" / "1")
    assert (pairs.only_a, pairs.only_b) == (["color/4-4-2"], [])
    flipped = match_mags(WkDataset(tmp_path / "b"), WkDataset(tmp_path / "a"))
    assert (flipped.only_a, flipped.only_b) == ([], ["color/4-4-2"])


def test_mags_entries_without_path_are_found_by_folder_name(tmp_path: Path) -> None:
    written = _build(tmp_path)
    doc = json.loads((tmp_path / "datasource-properties.json").read_text())
    for entry in doc["dataLayers"]:
        for m in entry["mags"]:
            del m["path"]
    (tmp_path / "datasource-properties.json").write_text(json.dumps(doc))
    ds = WkDataset(tmp_path)
    assert ds.problems == []
    assert [m.rel_path for m in ds.layer("color").mags] == ["./color/1", "./color/2-2-1",
                                                            "./color/4-4-2"]
    _check_voxels(ds, written)


def test_summary_lines_for_info(tmp_path: Path) -> None:
    _build(tmp_path)
    shutil.rmtree(tmp_path / "color" / "4-4-2")
    lines = summary_lines(WkDataset(tmp_path))
    assert lines[0] == (f"webKnossos dataset {tmp_path}: 2 layer(s), voxel size 11.24, 11.24, 28 "
                        "nanometer")
    assert lines[1] == "  color: color uint8, box 4,8,2 size 40x36x14, mags 1 2-2-1"
    assert lines[2] == ("  segmentation: segmentation uint32, box 4,8,2 size 40x36x14, mags 1 "
                        "2-2-1 4-4-2, largest segment id 4294967295")
    assert lines[3].startswith("  problem (MissingMagError): layer 'color' mag 4-4-2: ")


@settings(max_examples=40, deadline=None)
@given(legacy=st.booleans(),
       factor=st.tuples(*[st.floats(0.1, 100, allow_nan=False)] * 3),
       element_class=st.sampled_from(sorted(ELEMENT_CLASSES)),
       mags=st.lists(st.tuples(*[st.sampled_from([1, 2, 4, 8])] * 3), min_size=0, max_size=4,
                     unique=True),
       top_left=st.tuples(*[st.integers(-50, 5000)] * 3),
       size=st.tuples(*[st.integers(0, 5000)] * 3),
       largest=st.one_of(st.none(), st.integers(0, 2**63)))
def test_properties_round_trip(legacy: bool, factor: tuple[float, float, float],
                               element_class: str, mags: list[tuple[int, int, int]],
                               top_left: tuple[int, int, int], size: tuple[int, int, int],
                               largest: int | None) -> None:
    layers = [LayerProperties("seg", "segmentation", "wkw", BoundingBox(top_left, size),
                              element_class, ELEMENT_CLASSES[element_class][1],
                              [MagProperties(m, None if legacy else f"./seg/{m[0]}-{m[1]}-{m[2]}")
                               for m in mags], largest)]
    props = DatasetProperties(VoxelSize(factor), layers)
    doc = json.loads(json.dumps(props.to_json(legacy)))
    back, problems = parse_properties(doc)
    assert problems == [] and back.legacy_scale == legacy
    assert back.voxel_size.nanometers == pytest.approx(factor)
    got = back.layers[0]
    assert (got.name, got.category, got.element_class, got.num_channels, got.bounding_box,
            got.largest_segment_id) == ("seg", "segmentation", element_class,
                                        ELEMENT_CLASSES[element_class][1],
                                        BoundingBox(top_left, size), largest)
    assert [m.mag for m in got.mags] == mags
    assert got.mags_key == ("wkwResolutions" if legacy else "mags")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12)

_KEYS = ["scale", "dataLayers", "name", "category", "dataFormat", "elementClass", "numChannels",
         "boundingBox", "largestSegmentId", "mags", "wkwResolutions"]


@settings(max_examples=300, deadline=None)
@given(where=st.sampled_from(_KEYS), value=_JSON, in_mag=st.booleans())
def test_any_value_anywhere_is_reported_never_a_crash(where: str, value: object,
                                                     in_mag: bool) -> None:
    """Whatever a key holds, parsing raises PropertiesError or reports one, never another
    exception (a viewer for QA must survive any properties file)."""
    layer = wk4.layer("color", "color", "uint8", wk4.bbox((0, 0, 0), (8, 8, 8)),
                      wk4.mags_entry("color", [(1, 1, 1), (2, 2, 1)]), numChannels=1)
    doc: dict[str, object] = {"scale": [1, 1, 1], "dataLayers": [layer]}
    if where in ("scale", "dataLayers"):
        doc[where] = value
    elif in_mag and where == "mags":
        layer["mags"][0]["mag"] = value
    elif in_mag:
        layer["mags"][1]["path"] = value
    else:
        layer[where] = value
    try:
        props, problems = parse_properties(doc)
    except PropertiesError:
        return
    assert all(isinstance(p, PropertiesError) for p in problems)


@settings(max_examples=60, deadline=None)
@given(path=st.one_of(st.text(max_size=12), st.sampled_from(
    ["", ".", "./", "/", "./color", "file://", "file:///nonexistent", "./color/1\x00x",
     "../..", "http://127.0.0.1:9/y", "./datasource-properties.json"])),
       mag=st.sampled_from([[1, 1, 1], [2, 2, 1], 1, "2-2-1", [1.0, 1.0, 1.0]]))
def test_any_mag_path_opens_or_is_reported(path: str, mag: object) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wk4.write_mag(root / "color" / "1", np.zeros((4, 4, 4), np.uint8))
        wk4.write_properties(root, [wk4.layer("color", "color", "uint8",
                                              wk4.bbox((0, 0, 0), (4, 4, 4)),
                                              [{"mag": mag, "path": path}])])
        ds = WkDataset(root)
        assert all(isinstance(p, FormatError) for p in ds.problems)
        assert len(ds.layers) + len(ds.problems) >= 1
        for layer in ds.layers:
            for m in layer.mags:
                problem = m.check()
                assert problem is None or isinstance(problem, FormatError)


@pytest.mark.parametrize("value", [[float("inf"), 1, 1], [1e400, 1, 1], [2**80, 1, 1], [1.5, 1, 1],
                                   [True, 1, 1], "2-2", "x", [1, 1]])
def test_absurd_mags_are_reported(tmp_path: Path, value: object) -> None:
    wk4.write_mag(tmp_path / "color" / "1", np.zeros((4, 4, 4), np.uint8))
    wk4.write_properties(tmp_path, [wk4.layer("color", "color", "uint8",
                                              wk4.bbox((0, 0, 0), (4, 4, 4)),
                                              [{"mag": value, "path": "./color/1"}])])
    ds = WkDataset(tmp_path)
    assert ds.layers == [] and [type(p) for p in ds.problems] == [PropertiesError]


def test_absurd_box_and_huge_segment_ids(tmp_path: Path) -> None:
    wk4.write_mag(tmp_path / "seg" / "1", np.zeros((4, 4, 4), np.uint64))
    entry = wk4.layer("seg", "segmentation", "uint64", wk4.bbox((0, 0, 0), (4, 4, 4)),
                      wk4.mags_entry("seg", [(1, 1, 1)]), largestSegmentId=2**64 - 1)
    wk4.write_properties(tmp_path, [entry])
    assert WkDataset(tmp_path).layer("seg").largest_segment_id == 2**64 - 1
    entry["boundingBox"]["width"] = 2**62
    wk4.write_properties(tmp_path, [entry])
    assert [type(p) for p in WkDataset(tmp_path).problems] == [PropertiesError]
