"""Multiscale groups as BigDataViewer, Paintera and the N5 viewer lay them out (levels written
by tensorstore, group attributes as those tools write them), N5 roots with several layers, and
a webKnossos dataset whose layer has ``dataFormat: "n5"``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from n5_writers import source, write_tensorstore

from viewer.format import open_dataset, open_volume
from viewer.format.registry import detect, format_names

pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")

SHAPE = (48, 40, 24)


def _attrs(path: Path, doc: dict[str, Any]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "attributes.json").write_text(json.dumps(doc))


def _pyramid(group: Path, factors: list[tuple[int, int, int]], seed: int = 0,
             level_attrs: bool = True) -> list[Any]:
    """Levels s0.. of a group: s_k is s0 subsampled by factors[k]."""
    base = source(SHAPE, "uint16", seed=seed, empty_corner=False)
    arrays = []
    for k, f in enumerate(factors):
        arr = np.ascontiguousarray(base[::f[0], ::f[1], ::f[2]])
        extra = {"downsamplingFactors": list(f)} if level_attrs and k else None
        write_tensorstore(group / f"s{k}", arr, (16, 16, 8), {"type": "gzip"}, extra)
        arrays.append(arr)
    return arrays


def _check_mags(layer: Any, factors: list[tuple[int, int, int]], arrays: list[Any]) -> None:
    assert [m.mag for m in layer.mags] == factors
    for mag, arr in zip(layer.mags, arrays, strict=True):
        np.testing.assert_array_equal(mag.read((0, 0, 0), arr.shape)[0], arr)


def test_bigdataviewer_layout(tmp_path: Path) -> None:
    factors = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
    _attrs(tmp_path, {"n5": "2.5.1"})
    _attrs(tmp_path / "setup0", {"downsamplingFactors": [list(f) for f in factors],
                                 "dataType": "uint16"})
    tp = tmp_path / "setup0" / "timepoint0"
    _attrs(tp, {"multiScale": True, "resolution": [0.5, 0.5, 2.0]})
    arrays = _pyramid(tp, factors, level_attrs=False)
    ds = open_dataset(tmp_path)
    assert ds.format == "n5" and [layer.name for layer in ds.layers] == ["setup0/timepoint0"]
    _check_mags(ds.layers[0], factors, arrays)
    assert ds.scale.factor == (0.5, 0.5, 2.0) and ds.scale.unit == "nanometer"
    assert ds.voxel_size_declared
    v = open_volume(tmp_path, mag="4-4-2")
    assert v.shape == arrays[2].shape
    # the timepoint group alone opens as the one layer
    group = open_dataset(tp)
    assert group.kind == "group" and len(group.layers[0].mags) == 3


def test_paintera_layout(tmp_path: Path) -> None:
    factors = [(1, 1, 1), (2, 2, 1), (4, 4, 1)]
    group = tmp_path / "volumes" / "raw"
    _attrs(tmp_path, {"n5": "2.1.0"})
    _attrs(tmp_path / "volumes", {})
    _attrs(group, {"multiScale": True, "resolution": [4.0, 4.0, 40.0],
                   "offset": [0.0, 0.0, 0.0]})
    arrays = _pyramid(group, factors, seed=2)
    _attrs(tmp_path / "volumes" / "cells", {"multiScale": True, "maxId": 4321,
                                             "resolution": [4.0, 4.0, 40.0]})
    _pyramid(tmp_path / "volumes" / "cells", factors[:2], seed=3)
    ds = open_dataset(tmp_path)
    assert [layer.name for layer in ds.layers] == ["volumes/cells", "volumes/raw"]
    raw = ds.layer("volumes/raw")
    _check_mags(raw, factors, arrays)
    assert raw.category == "color" and raw.largest_segment_id is None
    assert ds.scale.factor == (4.0, 4.0, 40.0)
    assert raw.bounding_box.size == SHAPE
    cells = ds.layer("volumes/cells")
    assert cells.category == "segmentation" and cells.largest_segment_id == 4321


def test_n5_viewer_layout_root_defaults(tmp_path: Path) -> None:
    factors = [(1, 1, 1), (2, 2, 2)]
    _attrs(tmp_path, {"n5": "2.0.0", "scales": [[1, 1, 1], [2, 2, 2]],
                      "pixelResolution": {"unit": "um", "dimensions": [0.097, 0.097, 0.18]}})
    a0 = _pyramid(tmp_path / "c0", factors, seed=3, level_attrs=False)
    a1 = _pyramid(tmp_path / "c1", factors, seed=4, level_attrs=False)
    ds = open_dataset(tmp_path)
    assert [layer.name for layer in ds.layers] == ["c0", "c1"]
    _check_mags(ds.layer("c0"), factors, a0)
    _check_mags(ds.layer("c1"), factors, a1)
    assert ds.scale.unit == "micrometer" and ds.scale.factor == (0.097, 0.097, 0.18)
    assert ds.voxel_size == pytest.approx((97.0, 97.0, 180.0))


def test_resolution_with_units_and_inferred_factors(tmp_path: Path) -> None:
    factors = [(1, 1, 1), (2, 2, 1)]
    _attrs(tmp_path / "em", {"resolution": [8, 8, 30], "units": ["nm", "nm", "nm"]})
    arrays = _pyramid(tmp_path / "em", factors, seed=5, level_attrs=False)
    ds = open_dataset(tmp_path / "em")
    _check_mags(ds.layers[0], factors, arrays)
    assert ds.scale.factor == (8, 8, 30) and ds.scale.unit == "nanometer"


def test_root_with_datasets_and_groups(tmp_path: Path) -> None:
    """tensorstore writes no root attributes: the root is found from its children."""
    arr = source((20, 20, 10), "uint8", seed=6)
    write_tensorstore(tmp_path / "raw", arr, (8, 8, 8), {"type": "raw"})
    write_tensorstore(tmp_path / "deep" / "seg", arr.astype("uint64"), (8, 8, 8),
                      {"type": "gzip"})
    _pyramid(tmp_path / "multi", [(1, 1, 1), (2, 2, 2)], seed=7)
    assert detect(tmp_path).name == "n5"
    ds = open_dataset(tmp_path)
    assert sorted(layer.name for layer in ds.layers) == ["deep/seg", "multi", "raw"]
    assert ds.layer("deep/seg").category == "segmentation"
    assert ds.layer("deep/seg").dtype == np.dtype("uint64")
    assert len(ds.layer("multi").mags) == 2
    np.testing.assert_array_equal(open_volume(tmp_path, layer="raw").read((0, 0, 0),
                                                                          arr.shape)[0], arr)


def test_webknossos_dataset_with_n5_layer(tmp_path: Path) -> None:
    assert "n5" in format_names()
    factors = [(1, 1, 1), (2, 2, 1)]
    base = source(SHAPE, "uint16", seed=8, empty_corner=False)
    arrays = []
    for f in factors:
        arr = np.ascontiguousarray(base[::f[0], ::f[1], ::f[2]])
        name = "1" if f == (1, 1, 1) else "2-2-1"
        write_tensorstore(tmp_path / "color" / name, arr, (16, 16, 16), {"type": "gzip"})
        arrays.append(arr)
    props = {
        "id": {"name": "n5test", "team": ""},
        "scale": {"factor": [11.24, 11.24, 25.0], "unit": "nanometer"},
        "dataLayers": [{
            "name": "color", "category": "color", "dataFormat": "n5",
            "elementClass": "uint16", "numChannels": 1,
            "boundingBox": {"topLeft": [0, 0, 0], "width": SHAPE[0], "height": SHAPE[1],
                            "depth": SHAPE[2]},
            "mags": [{"mag": list(f), "path": f"./color/{'1' if f == (1, 1, 1) else '2-2-1'}"}
                     for f in factors],
        }],
    }
    (tmp_path / "datasource-properties.json").write_text(json.dumps(props))
    ds = open_dataset(tmp_path)
    assert ds.format == "webknossos"
    layer = ds.layer("color")
    assert layer.data_format == "n5"
    for mag, arr in zip(layer.mags, arrays, strict=True):
        v = mag.volume
        assert v.format == "n5"
        np.testing.assert_array_equal(v.read((0, 0, 0), arr.shape)[0], arr)
    v = open_volume(tmp_path, layer="color", mag="2-2-1")
    assert v.format == "n5" and v.shape == arrays[1].shape
