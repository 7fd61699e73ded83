"""Every format over every store: data written by other tools (zarr-python, tensorstore,
the ``webknossos`` package, N5 multiscale conventions) opens from disk, over HTTP (a server
that cannot list) and over S3 (moto, which lists) with the same layers, mags, extents and
voxels, and the extent is the array's shape or the layer's box, never rounded to chunks,
shards or the size an array was allocated at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import extents_writers as w
import numpy as np
import pytest

from viewer.format import Dataset, open_dataset, open_volume

STORES = ("local", "http", "s3")


def _location(store: str, root: Path, rel: str, request: pytest.FixtureRequest) -> str:
    if store == "local":
        return str(root / rel)
    if store == "http":
        return f"{request.getfixturevalue('http').url}/{rel}"
    request.getfixturevalue("s3")
    return f"s3://bkt/data/{rel}"


def _shape(ds: Dataset) -> list[tuple[str, list[tuple[Any, Any, Any]]]]:
    """Layers, their mags and each mag's extent, in the order they opened."""
    return [(layer.name, [(m.mag, m.volume.bounds, m.volume.dtype.name) for m in layer.mags])
            for layer in ds.layers]


NAMES = ["OME-Zarr tczyx, c chunk 1", "OME-Zarr 0.5 czyx, c chunk 1, shards of 2",
         "OME-Zarr czyx, c chunk 2", "zarr-python v2", "zarr-python v3", "zarr-python v3 sharded",
         "tensorstore zarr v2",
         "tensorstore zarr3 sharded", "OME-Zarr", "zarr v3 consolidated group",
         "webKnossos zarr3", "webKnossos zarr", "webKnossos wkw", "webKnossos zarr3 two channels",
         "webKnossos wkw two channels", "N5 BigDataViewer", "N5 Paintera",
         "N5 multiscale group", "N5 viewer"]


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("name", NAMES)
def test_the_same_layers_mags_extents_and_voxels_from_every_store(
        cases: tuple[Path, list[Any]], name: str, store: str,
        request: pytest.FixtureRequest) -> None:
    root, all_cases = cases
    found = [c for c in all_cases if c.name == name]
    if not found:
        pytest.skip(f"{name}: its writer is not installed")
    case = found[0]
    local = open_dataset(str(root / case.rel))
    try:
        expected = _shape(local)
        ds = open_dataset(_location(store, root, case.rel, request))
        try:
            assert _shape(ds) == expected
            assert len(ds.layers) == len(case.layers)
            for layer, mags in zip(ds.layers, case.layers, strict=True):
                assert [m.mag for m in layer.mags] == [mag for mag, _, _ in mags]
                for m, (_, origin, truth) in zip(layer.mags, mags, strict=True):
                    v = m.volume
                    truth_c = truth if truth.ndim == 4 else truth[None]
                    xyz = truth_c.shape[1:]
                    hi = tuple(o + s for o, s in zip(origin, xyz, strict=True))
                    assert v.bounds == (origin, hi), (layer.name, m.mag)
                    assert v.origin == origin and v.shape == xyz
                    got = v.read(v.origin, v.shape)
                    assert got.shape == truth_c.shape
                    np.testing.assert_array_equal(got, truth_c)
        finally:
            ds.close()
    finally:
        local.close()


@pytest.mark.parametrize("store", STORES)
def test_every_time_point_of_a_time_series_from_every_store(
        cases: tuple[Path, list[Any]], store: str, request: pytest.FixtureRequest) -> None:
    """The OME-Zarr ``(t, c, z, y, x)`` image (zarr-python, c chunk 1) at each time point, by
    ``open_volume(index=)``, ``Volume.at_index`` and ``Dataset.set_index``, from every store."""
    root, _ = cases
    tc = np.stack([np.stack([w.truth((*w.ODD[:2], 12), seed=2 + 3 * k + c) for c in range(3)])
                   for k in range(2)])  # as the conftest writes it: (T, C, X, Y, Z)
    where = _location(store, root, "ome-tc.zarr", request)
    v = open_volume(where, index={"t": 1})
    try:
        assert v.extra_axes == {"t": 2} and v.extra_index == {"t": 1}
        np.testing.assert_array_equal(v.read(v.origin, v.shape), tc[1])
        first = v.at_index({"t": 0})
        np.testing.assert_array_equal(first.read(first.origin, first.shape), tc[0])
    finally:
        v.close()
    ds = open_dataset(where)
    try:
        ds.set_index({"t": 1})
        m = ds.layers[0].mags[0].volume
        np.testing.assert_array_equal(m.read(m.origin, m.shape), tc[1])
    finally:
        ds.close()
