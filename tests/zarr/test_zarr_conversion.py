"""Conversion QA: a WKW webKnossos dataset (written by the ``webknossos`` package) and its
zarr3 conversion (``fixtures.wk_dataset_to_zarr3``: tensorstore, webKnossos' layout) read the
same through ``open_dataset`` / ``open_volume``, layer by layer and mag by mag; one voxel
changed in the zarr3 copy is found, and placed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from zarr_test_fixtures import (
    wkw_mag_bounds,
    wkw_to_zarr3,
)

from viewer.format import match_mags, open_dataset, open_volume

pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
# Whether it is installed, without importing it at collection (a worker that runs none of these
# tests would pay for the import; the dataset fixture imports it).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("webknossos") is None,
                                reason="webknossos (test extra) is not installed")


def _pairs_equal(src: Path, dst: Path) -> list[tuple[str, tuple[int, int, int], np.ndarray]]:
    """Every (layer, mag) pair of the two datasets: the positions where they differ."""
    out = []
    with open_dataset(src) as a, open_dataset(dst) as b:
        pairs = match_mags(a, b)
        assert not pairs.only_a and not pairs.only_b
        assert len(pairs.both) == 6
        for name, mag, ma, mb in pairs.both:
            box = a.layer(name).bounding_box.at_mag(mag)
            ra = ma.read(box.top_left, box.size)
            rb = mb.read(box.top_left, box.size)
            assert mb.volume.format == "zarr3" and ma.volume.format == "wkw"
            out.append((name, mag, np.argwhere(ra != rb)))
    return out


def test_converted_dataset_reads_the_same(converted: tuple[Path, Path]) -> None:
    src, dst = converted
    props = json.loads((dst / "datasource-properties.json").read_text())
    assert {layer["dataFormat"] for layer in props["dataLayers"]} == {"zarr3"}
    meta = json.loads((dst / "color" / "1" / "zarr.json").read_text())
    assert meta["dimension_names"] == ["c", "x", "y", "z"]
    assert meta["codecs"][0]["name"] == "sharding_indexed"
    for name, mag, diff in _pairs_equal(src, dst):
        assert len(diff) == 0, (name, mag, diff[:5])


def test_one_changed_voxel_is_found(converted: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    import tensorstore as ts

    src, dst = converted
    copy = tmp_path / "zarr3"
    shutil.copytree(dst, copy)
    arr = ts.open({"driver": "zarr3",
                   "kvstore": {"driver": "file", "path": str(copy / "color" / "2")}}).result()
    old = int(arr[0, 17, 9, 5].read().result())
    arr[0, 17, 9, 5].write(np.uint8((old + 1) % 256)).result()
    found = [(name, mag, diff) for name, mag, diff in _pairs_equal(src, copy) if len(diff)]
    assert len(found) == 1
    name, mag, diff = found[0]
    assert (name, mag) == ("color", (2, 2, 2))
    assert diff.tolist() == [[0, 17, 9, 5]]  # (c, x, y, z) in mag-2 voxels


def test_wkw_mag_to_zarr3(converted: tuple[Path, Path], tmp_path: Path) -> None:
    src, _ = converted
    out = wkw_to_zarr3(src / "segmentation" / "1", tmp_path / "seg1", shard_len=64)
    lo, hi = wkw_mag_bounds(src / "segmentation" / "1")
    assert (lo, hi) == ((0, 0, 0), (90, 70, 40))  # the layer's box, not the 1024^3 file's
    with open_volume(src / "segmentation" / "1") as a, open_volume(out) as b:
        size = [h - lo_ for lo_, h in zip(lo, hi, strict=True)]
        assert b.dtype == a.dtype == np.uint32
        np.testing.assert_array_equal(a.read(lo, size), b.read(lo, size))
