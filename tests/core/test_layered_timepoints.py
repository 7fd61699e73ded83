"""LayeredSource over a time series written by zarr-python (axes t, c, z, y, x, one channel per
chunk, shown as a composite): the planes on screen are read ahead at the previous and next
time point into the shared cache, under keys naming the time point, so that the next time
point is complete the moment it is shown and stepping back is served from memory; the voxels
are zarr-python's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.core.cache import BlockCache
from viewer.core.layered import LayeredSource, SourceLayer, composite_layers
from viewer.core.loader import Loader
from viewer.core.slicing import XY, XZ, YZ, PlaneRequest
from viewer.format import Volume, open_volume

zarr = pytest.importorskip("zarr")

T, C = 4, 2
SHAPE = (48, 40, 24)  # x, y, z
PLANES = [PlaneRequest(XY, 9, (0, 0), (48, 40)), PlaneRequest(XZ, 21, (0, 0), (48, 24)),
          PlaneRequest(YZ, 30, (0, 0), (40, 24))]
CURSOR = (30, 21, 9)


@pytest.fixture(scope="module")
def movie(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """(t, c, x, y, z) uint16 data, every voxel its own, written with zarr-python (v3 names)."""
    path = tmp_path_factory.mktemp("timepoints") / "movie.zarr"
    data = np.random.default_rng(28).integers(1, 60000, size=(T, C, *SHAPE), dtype=np.uint16)
    arr = zarr.create_array(str(path), shape=(T, C, *SHAPE[::-1]), dtype="uint16",
                            chunks=(1, 1, 8, 16, 16), zarr_format=3, fill_value=0,
                            dimension_names=["t", "c", "z", "y", "x"])
    arr[...] = data.transpose(0, 1, 4, 3, 2)
    return path, data


def at(layers: list[SourceLayer], t: int) -> list[SourceLayer]:
    """The same layers at time point ``t`` (``Volume.at_index``), as the window makes them."""
    return [SourceLayer(la.name, {m: v.at_index({"t": t}) for m, v in la.mags.items()},
                        la.category, la.channel, la.composite) for la in layers]


@pytest.fixture
def source(movie: tuple[Path, np.ndarray]) -> Iterator[tuple[LayeredSource, list[SourceLayer]]]:
    before = set(threading.enumerate())
    volume: Volume = open_volume(movie[0])
    assert volume.extra_axes == {"t": T} and volume.num_channels == C
    layers = composite_layers(SourceLayer("movie", {(1, 1, 1): volume}))
    assert len(layers) == C
    cache = BlockCache(64 << 20)

    def part(v: Volume, layer: str, mag: tuple[int, int, int]) -> Loader:
        return Loader(v, layer=layer, mag=mag, cache=cache, close_dataset=False)

    src = LayeredSource(layers, part, cache=cache)
    yield src, layers
    src.close()
    volume.close()
    assert {t for t in threading.enumerate() if not t.name.startswith("wkw-decode")} <= before


def shown(src: LayeredSource, layers: list[SourceLayer]) -> list[Any]:
    return [src.plane(req, la.name) for req in PLANES for la in layers]


def wait_complete(src: LayeredSource, layers: list[SourceLayer]) -> None:
    """Take the planes as a view does until they are complete (which lets the reads held
    behind the screen start), then wait for the loaders to finish."""
    for _ in range(3000):
        if all(p.complete for p in shown(src, layers)):
            break
        time.sleep(0.01)
    assert all(p.complete for p in shown(src, layers))
    assert src.wait_idle(60)


def check_voxels(src: LayeredSource, layers: list[SourceLayer], data: np.ndarray,
                 t: int) -> None:
    for req in PLANES:
        for c, la in enumerate(layers):
            plane = src.plane(req, la.name)
            (ox, oy, oz), (sx, sy, sz) = req.box()
            want = np.moveaxis(data[t, c, ox:ox + sx, oy:oy + sy, oz:oz + sz], req.axis, -1)
            np.testing.assert_array_equal(plane.data[0], want[..., 0])


def time_points_cached(src: LayeredSource) -> set[int]:
    """The time points of which the cache holds blocks."""
    assert src.cache is not None
    cached = src.cache.keys()
    return {dict(key[0][1])["t"] for key in cached if isinstance(key[0], tuple)}


def test_the_next_time_point_is_read_ahead_and_shown_at_once(source, movie) -> None:
    src, layers = source
    data = movie[1]
    src.set_wanted(PLANES, 0, CURSOR)
    wait_complete(src, layers)
    check_voxels(src, layers, data, 0)
    assert time_points_cached(src) == {0, 1}  # the next one read ahead, before it is shown
    before = src.stats()

    src.show_layers(at(layers, 1))
    src.set_wanted(PLANES, 0, CURSOR)
    planes = shown(src, layers)  # at once: every block is in the cache already
    assert all(p.complete for p in planes)
    after = src.stats()
    assert after.misses == before.misses and after.hits > before.hits
    assert after.prefetch_useful > before.prefetch_useful
    check_voxels(src, layers, data, 1)
    wait_complete(src, layers)
    assert time_points_cached(src) == {0, 1, 2}  # now t=2 is ahead, and t=0 kept
    assert src.stats().blocks_read > before.blocks_read

    # stepping back is served from memory, reading nothing more
    read = src.stats().blocks_read
    src.show_layers(at(layers, 0))
    src.set_wanted(PLANES, 0, CURSOR)
    assert all(p.complete for p in shown(src, layers))
    check_voxels(src, layers, data, 0)
    wait_complete(src, layers)
    assert src.stats().blocks_read == read


def test_the_last_time_point_reads_ahead_backwards_only(source, movie) -> None:
    src, layers = source
    src.show_layers(at(layers, T - 1))
    src.set_wanted(PLANES, 0, CURSOR)
    wait_complete(src, layers)
    check_voxels(src, layers, movie[1], T - 1)
    assert time_points_cached(src) == {T - 2, T - 1}
    src.show_layers(at(layers, T - 2))
    src.set_wanted(PLANES, 0, CURSOR)
    assert all(p.complete for p in shown(src, layers))
    check_voxels(src, layers, movie[1], T - 2)


def test_without_prefetch_nothing_is_read_ahead(source, movie) -> None:
    src, layers = source
    src.prefetch = False
    src.set_wanted(PLANES, 0, CURSOR)
    wait_complete(src, layers)
    assert time_points_cached(src) == {0}
    misses = src.stats().misses
    src.show_layers(at(layers, 1))
    src.set_wanted(PLANES, 0, CURSOR)
    assert src.stats().misses > misses  # the blocks of t=1 were not there when shown
    wait_complete(src, layers)
    check_voxels(src, layers, movie[1], 1)
