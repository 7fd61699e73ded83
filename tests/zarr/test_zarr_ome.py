"""OME-Zarr 0.4 (zarr v2) and 0.5 (zarr v3) multiscale images written with zarr-python: the
levels become mags (factors from each level's scale relative to level 0), level 0's scale and
the axes' unit the voxel size; labels are segmentation layers; a plain group's arrays are
layers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")

from zarr_test_fixtures import sample  # noqa: E402

from viewer.format import DatasetLayoutError, open_dataset, open_volume  # noqa: E402

AXES = [{"name": "c", "type": "channel"},
        {"name": "z", "type": "space", "unit": "micrometer"},
        {"name": "y", "type": "space", "unit": "micrometer"},
        {"name": "x", "type": "space", "unit": "micrometer"}]


def _multiscale(levels: list[tuple[str, list[float]]], version: str) -> dict[str, Any]:
    ms = {"axes": AXES, "name": "cells",
          "datasets": [{"path": p, "coordinateTransformations": [{"type": "scale", "scale": s}]}
                       for p, s in levels]}
    if version == "0.4":
        ms["version"] = "0.4"
        return {"multiscales": [ms]}
    return {"ome": {"version": "0.5", "multiscales": [ms]}}


def write_ome(root: Path, version: str) -> np.ndarray:
    fmt = 2 if version == "0.4" else 3
    data = sample((2, 20, 40, 48), "uint16", seed=21)  # c, z, y, x
    levels = [("0", [1.0, 0.5, 0.25, 0.25]), ("1", [1.0, 0.5, 0.5, 0.5]),
              ("2", [1.0, 1.0, 1.0, 1.0])]
    group = zarr.open_group(str(root), mode="w", zarr_format=fmt)
    group.attrs.update(_multiscale(levels, version))
    for k, (path, _) in enumerate(levels):
        step = (1, 2 ** min(k, 1) if k < 2 else 2, 2 ** k, 2 ** k)
        part = data[:, ::step[1], ::step[2], ::step[3]]
        kw: dict[str, Any] = {"dimension_names": ["c", "z", "y", "x"]} if fmt == 3 else {}
        arr = group.create_array(path, shape=part.shape, chunks=(2, 8, 16, 16),
                                 dtype=part.dtype, **kw)
        arr[...] = part
    labels = group.create_group("labels")
    labels.attrs.update({"labels": ["nuclei"]})
    lab = labels.create_group("nuclei")
    lab_attrs = _multiscale([("0", [1.0, 0.5, 0.25, 0.25])], version)
    if version == "0.4":
        lab_attrs["image-label"] = {"version": "0.4"}
    else:
        lab_attrs["ome"]["image-label"] = {}
    lab.attrs.update(lab_attrs)
    seg = lab.create_array("0", shape=(1, 20, 40, 48), chunks=(1, 8, 16, 16), dtype="uint32",
                           **({"dimension_names": ["c", "z", "y", "x"]} if fmt == 3 else {}))
    seg[...] = (data[:1] % 7).astype(np.uint32)
    return data


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_ome_multiscale(tmp_path: Path, version: str) -> None:
    data = write_ome(tmp_path / "img.zarr", version)
    with open_dataset(tmp_path / "img.zarr") as ds:
        assert ds.format == ("zarr" if version == "0.4" else "zarr3")
        assert not ds.problems, ds.problems
        image = ds.layer("cells")
        assert image.category == "color" and image.num_channels == 2
        assert [m.mag for m in image.mags] == [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
        assert ds.scale.factor == (0.25, 0.25, 0.5) and ds.scale.unit == "micrometer"
        assert ds.voxel_size == (250.0, 250.0, 500.0)
        want0 = np.asfortranarray(data.transpose(0, 3, 2, 1))  # (C, X, Y, Z)
        np.testing.assert_array_equal(image.mags[0].read((0, 0, 0), (48, 40, 20)), want0)
        np.testing.assert_array_equal(image.mags[2].read((0, 0, 0), (12, 10, 10)),
                                      want0[:, ::4, ::4, ::2])
        assert image.mags[0].volume.axis_units == ("micrometer",) * 3
        [labels] = [layer for layer in ds.layers if layer.category == "segmentation"]
        assert labels.dtype == np.uint32
        np.testing.assert_array_equal(labels.mags[0].read((0, 0, 0), (48, 40, 20))[0],
                                      (data[0] % 7).transpose(2, 1, 0))
    # one level opened directly takes its axis names from the multiscale (v2 has none)
    with open_volume(tmp_path / "img.zarr" / "1") as v:
        assert v.num_channels == 2 and v.shape == (24, 20, 10)
    with open_volume(tmp_path / "img.zarr", mag=(2, 2, 1)) as v:
        assert v.shape == (24, 20, 10)


def test_level_with_a_fractional_factor_is_a_problem(tmp_path: Path) -> None:
    group = zarr.open_group(str(tmp_path / "g"), mode="w", zarr_format=3)
    group.attrs.update(_multiscale([("0", [1, 1, 1, 1]), ("1", [1, 1.5, 1.5, 1.5])], "0.5"))
    for p in ("0", "1"):
        group.create_array(p, shape=(1, 4, 4, 4), chunks=(1, 4, 4, 4), dtype="uint8",
                           dimension_names=["c", "z", "y", "x"])
    with open_dataset(tmp_path / "g") as ds:
        assert [m.mag for m in ds.layers[0].mags] == [(1, 1, 1)]
        assert len(ds.problems) == 1 and "not an integer multiple" in str(ds.problems[0])


def test_plain_group_of_arrays(tmp_path: Path) -> None:
    group = zarr.open_group(str(tmp_path / "g"), mode="w", zarr_format=3)
    a = group.create_array("raw", shape=(10, 12, 14), chunks=(4, 4, 4), dtype="float32")
    a[...] = sample((10, 12, 14), "float32")
    sub = group.create_group("more")
    b = sub.create_array("seg", shape=(10, 12, 14), chunks=(4, 4, 4), dtype="uint64")
    b[...] = 3
    with open_dataset(tmp_path / "g") as ds:
        assert ds.kind == "group" and ds.format == "zarr3"
        assert sorted(layer.name for layer in ds.layers) == ["more/seg", "raw"]
        assert ds.layer("more/seg").category == "segmentation"
        np.testing.assert_array_equal(ds.layer("raw").mags[0].read((0, 0, 0), (14, 12, 10))[0],
                                      a[...].transpose(2, 1, 0))


def test_empty_group_is_an_error(tmp_path: Path) -> None:
    zarr.open_group(str(tmp_path / "g"), mode="w", zarr_format=2)
    with pytest.raises(DatasetLayoutError, match="no arrays"):
        open_dataset(tmp_path / "g")
