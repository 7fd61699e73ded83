"""LayeredSource: the layers and mags of a webKnossos dataset read through background loaders
sharing one cache, each view at the mag its zoom calls for, coarse mags drawn underneath."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import wkw as reference

from viewer.core.cache import BlockCache
from viewer.core.layered import LayeredSource, SourceLayer, decoded_needed_bytes, source_layers
from viewer.core.loader import Loader
from viewer.core.multires import NO_SOURCE
from viewer.core.slicing import XY, XZ, YZ, PlaneRequest, Status
from viewer.format import wkw
from viewer.format.webknossos import BoundingBox
from viewer.format.webknossos.dataset import WkDataset, open_dataset
from viewer.format.webknossos.writer import LayerSpec, create_dataset

MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
BOX = BoundingBox((0, 0, 0), (64, 64, 16))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """Two layers; every mag holds data of its own (not a downsampling), so a pixel's value
    says which mag it came from."""
    root = tmp_path_factory.mktemp("layered") / "ds"
    ds = create_dataset(root, [LayerSpec("em", BOX, "color", "uint8", MAGS, block_len=8,
                                         file_len=2),
                               LayerSpec("seg", BOX, "segmentation", "uint32", MAGS,
                                         block_len=8, file_len=2)])
    rng = np.random.default_rng(5)
    full: dict = {}
    for name, dtype, base in (("em", np.uint8, 0), ("seg", np.uint32, 10**6)):
        for k, mag in enumerate(MAGS):
            cb = BOX.at_mag(mag)
            lo = 1 + 60 * k if dtype == np.uint8 else base * (k + 1)
            full[(name, mag)] = rng.integers(lo, lo + 50, size=cb.size).astype(dtype)
            ds.layer(name).mag(mag).write(cb.top_left, full[(name, mag)])
    ds.close()
    return root, full


def open_layers(root: Path) -> tuple[list[SourceLayer], WkDataset]:
    wk = open_dataset(root)
    layers, problems = source_layers(wk)
    assert not problems and [la.name for la in layers] == ["em", "seg"]
    assert [la.category for la in layers] == ["color", "segmentation"]
    return layers, wk


def mag_path(root: Path, layer: str, mag: tuple[int, int, int]) -> str:
    with open_dataset(root) as wk:
        return wk.layer(layer).mag(mag).path


def make_source(root: Path, budget: int = 64 << 20, prefetch: bool = True) -> LayeredSource:
    cache = BlockCache(budget)
    layers, wk = open_layers(root)

    def part(ds: wkw.Dataset, layer: str, mag: tuple[int, int, int]) -> Loader:
        return Loader(ds, layer=layer, mag=mag, cache=cache, close_dataset=False)

    return LayeredSource(layers, part, cache=cache, on_close=wk.close, prefetch=prefetch)


@pytest.fixture(autouse=True)
def no_threads_left_behind():
    before = set(threading.enumerate())
    yield
    assert {t for t in threading.enumerate() if not t.name.startswith("wkw-decode")} <= before


def expected(full: dict, layer: str, mag: tuple[int, int, int], req: PlaneRequest) -> np.ndarray:
    """``req`` (mag 1) read at ``mag`` straight from the written arrays, on the mag's grid."""
    from viewer.core.multires import to_mag

    m = to_mag(req, mag).request
    (ox, oy, oz), (sx, sy, sz) = m.box()
    vol = full[(layer, mag)][ox:ox + sx, oy:oy + sy, oz:oz + sz]
    return np.moveaxis(vol, req.axis, -1)[..., 0]


PLANES = [PlaneRequest(XY, 9, (0, 0), (64, 64)), PlaneRequest(XZ, 33, (0, 0), (64, 16)),
          PlaneRequest(YZ, 21, (0, 0), (64, 16))]


@pytest.mark.parametrize("vpp, mag", [((1, 1, 1), (1, 1, 1)), ((2.5, 2.5, 1.1), (2, 2, 1)),
                                      ((4, 4, 2), (4, 4, 2)), ((16, 16, 8), (4, 4, 2))])
def test_each_view_reads_the_mag_its_zoom_calls_for(dataset, vpp, mag) -> None:
    root, full = dataset
    source = make_source(root)
    try:
        source.set_wanted(PLANES, 0, (21, 33, 9), voxels_per_px=[vpp] * 3)
        assert source.wait_idle(30)
        for req in PLANES:
            for layer in ("em", "seg"):
                plane = source.plane(req, layer)
                assert plane.complete and plane.mags[0] == mag and plane.label == \
                    f"mag {'-'.join(map(str, mag)) if len(set(mag)) > 1 else mag[0]}"
                assert plane.factors == (mag[IN(req)[0]], mag[IN(req)[1]])
                np.testing.assert_array_equal(plane.data[0], expected(full, layer, mag, req))
                # the reference reads the same voxels from the same files
                ref = reference.Dataset.open(mag_path(root, layer, mag))
                (ox, oy, oz), shape = plane.mag_request.request.box()
                got = ref.read((ox, oy, oz), shape)[0]
                np.testing.assert_array_equal(plane.data[0],
                                              np.moveaxis(got, req.axis, -1)[..., 0])
                ref.close()
    finally:
        source.close()


def IN(req: PlaneRequest) -> tuple[int, int]:
    return {XY: (0, 1), XZ: (0, 2), YZ: (1, 2)}[req.axis]


def test_a_cached_coarse_mag_fills_in_while_the_chosen_one_loads(dataset) -> None:
    root, full = dataset
    source = make_source(root)
    try:
        # zoomed out: 4-4-2 loads and stays cached
        source.set_wanted(PLANES, 0, (21, 33, 9), voxels_per_px=[(4, 4, 2)] * 3)
        assert source.wait_idle(30)
        for req in PLANES:
            assert source.plane(req, "em").complete
        # zoomed in to mag 1: whatever has not arrived yet comes from a coarser mag, never a
        # hatch, since 4-4-2 is in the cache
        source.set_wanted(PLANES, 0, (21, 33, 9), voxels_per_px=[(1, 1, 1)] * 3)
        for req in PLANES:
            plane = source.plane(req, "em")
            assert plane.mags[0] == (1, 1, 1)
            assert not np.any(plane.status == Status.PENDING)
            assert not np.any(plane.source == NO_SOURCE)
            exact = expected(full, "em", (1, 1, 1), req)
            u, v = IN(req)
            top = np.kron(expected(full, "em", (4, 4, 2), req),
                          np.ones(((4, 4, 2)[u], (4, 4, 2)[v]), np.uint8))
            # every pixel is either mag 1's or the 2-2-1 / 4-4-2 voxel containing it
            mine = plane.source == 0
            np.testing.assert_array_equal(plane.data[0][mine], exact[mine])
            from_top = plane.source == plane.mags.index((4, 4, 2)) if (4, 4, 2) in \
                plane.mags else np.zeros_like(mine)
            np.testing.assert_array_equal(plane.data[0][from_top],
                                          top[:exact.shape[0], :exact.shape[1]][from_top])
        assert source.wait_idle(30)
        for req in PLANES:
            plane = source.plane(req, "em")
            assert plane.complete and plane.label == "mag 1"
            np.testing.assert_array_equal(plane.data[0], expected(full, "em", (1, 1, 1), req))
    finally:
        source.close()


def test_arrivals_are_reported_in_mag1_voxels_and_planes_are_reused(dataset) -> None:
    root, _ = dataset
    source = make_source(root)
    boxes: list = []
    source.add_listener(boxes.append)
    try:
        source.set_wanted(PLANES[:1], 0, (21, 33, 9), voxels_per_px=[(4, 4, 2)])
        assert source.wait_idle(30)
        assert boxes
        for (ox, oy, oz), (sx, _sy, sz) in boxes:
            # a 4-4-2 block is 8 voxels of the mag: 32 x 32 x 16 mag-1 voxels
            assert (ox % 32, oy % 32, oz % 16) == (0, 0, 0) and sx % 32 == 0 and sz % 16 == 0
        first = source.plane(PLANES[0], "em")
        assert source.plane(PLANES[0], "em") is first  # nothing new: the same object
    finally:
        source.close()


def test_hidden_layers_are_not_read_and_a_locked_mag_is_kept(dataset) -> None:
    root, full = dataset
    source = make_source(root, prefetch=False)
    try:
        source.set_wanted(PLANES, 0, (21, 33, 9), voxels_per_px=[(8, 8, 4)] * 3,
                          layers={"seg": (2, 2, 1)})
        assert source.wait_idle(30)
        assert {key for key in source.parts} == {("seg", (2, 2, 1)), ("seg", (4, 4, 2))}
        plane = source.plane(PLANES[0], "seg")
        assert plane.mags[0] == (2, 2, 1) and plane.complete
        np.testing.assert_array_equal(plane.data[0], expected(full, "seg", (2, 2, 1), PLANES[0]))
        stats = source.stats()
        assert stats.blocks_read > 0 and stats.workers == 4
        # what was decoded is what the chosen mag needed, plus its placeholder (4-4-2) at most
        needed = decoded_needed_bytes(source, "seg", PLANES)
        assert needed <= stats.bytes_decoded <= needed * (1 + 1 / 4 + 0.01)
    finally:
        source.close()
    assert source.threads == []


def test_pins_of_several_loaders_add_up(dataset) -> None:
    root, _ = dataset
    source = make_source(root)
    try:
        source.set_wanted(PLANES, 0, (21, 33, 9), voxels_per_px=[(1, 1, 1)] * 3)
        assert source.wait_idle(30)
        assert source.cache is not None
        pinned = source.cache.stats().pinned_blocks
        one = make_source(root)
        try:
            one.set_wanted(PLANES, 0, (21, 33, 9), voxels_per_px=[(1, 1, 1)] * 3,
                           layers={"em": None})
            assert one.wait_idle(30)
            assert one.cache is not None
            # both layers' screens are pinned in the shared cache: more than one layer's
            assert pinned > one.cache.stats().pinned_blocks > 0
        finally:
            one.close()
    finally:
        source.close()
