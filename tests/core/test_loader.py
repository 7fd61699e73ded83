"""The background loader over real files: planes voxel for voxel, the four looks, no duplicate
reads, stale work dropped, priorities, budget, clean shutdown.  No Qt; no timed assertions
(waits have generous timeouts and only wait for completion)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from loading_fixtures import (
    BLOCK_LEN,
    SHAPE,
    CountingDataset,
    volume,
    write_project,
    write_reference,
)

from viewer.core.loader import Loader
from viewer.core.slicing import XY, XZ, YZ, PlaneRequest, Status, read_plane
from viewer.format import open_volume, wkw

WAIT = 60.0


def planes_at(cursor: tuple[int, int, int], shape: tuple[int, int, int] = SHAPE
              ) -> list[PlaneRequest]:
    x, y, z = cursor
    return [PlaneRequest(XY, z, (0, 0), (shape[0], shape[1])),
            PlaneRequest(XZ, y, (0, 0), (shape[0], shape[2])),
            PlaneRequest(YZ, x, (0, 0), (shape[1], shape[2]))]


def expected(vol: np.ndarray, req: PlaneRequest) -> np.ndarray:
    (ox, oy, oz), (sx, sy, sz) = req.box()
    return vol[ox:ox + sx, oy:oy + sy, oz:oz + sz].squeeze(axis=req.axis)


@pytest.fixture(scope="module")
def vol() -> np.ndarray:
    return volume()


@pytest.fixture(scope="module")
def project_path(tmp_path_factory: pytest.TempPathFactory, vol: np.ndarray) -> Path:
    return write_project(tmp_path_factory.mktemp("loader") / "project", vol)


@pytest.fixture(scope="module")
def reference_path(tmp_path_factory: pytest.TempPathFactory, vol: np.ndarray) -> Path:
    return write_reference(tmp_path_factory.mktemp("loader") / "reference", vol)


def loader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("wkw-loader")]


@pytest.fixture(autouse=True)
def no_threads_left_behind():
    before = set(threading.enumerate())
    yield
    # The box-read engine's one helper thread lives for the process (created on first use).
    assert {t for t in threading.enumerate() if not t.name.startswith("wkw-decode")} <= before
    assert loader_threads() == []


@pytest.mark.parametrize("which", ["project", "reference"])
def test_planes_match_the_volume_voxel_for_voxel(which: str, request: pytest.FixtureRequest,
                                                 vol: np.ndarray) -> None:
    path = request.getfixturevalue(f"{which}_path")
    loader = Loader(open_volume(path))
    try:
        reqs = planes_at((37, 15, 50)) + [PlaneRequest(XY, 11, (5, 3), (90, 61)),
                                          PlaneRequest(YZ, 95, (7, 9), (60, 63)),
                                          PlaneRequest(XZ, 63, (31, 33), (33, 35))]
        loader.set_wanted(reqs, 0, (37, 15, 50))
        assert loader.wait_idle(WAIT)
        for req in reqs:
            plane = loader.plane(req)
            assert plane.complete
            assert plane.data.shape == (1, *req.shape)
            np.testing.assert_array_equal(plane.data[0], expected(vol, req))
            assert (plane.status == Status.DATA).all()
            sync = read_plane(loader.dataset, req)
            np.testing.assert_array_equal(plane.data, sync.data)
            assert not plane.data.flags.writeable
    finally:
        loader.close()


def test_plane_never_waits_and_late_blocks_fill_it_without_a_second_request(
        project_path: Path, vol: np.ndarray) -> None:
    ds = CountingDataset.open_counting(project_path)
    ds.log.gate = threading.Event()
    loader = Loader(ds, workers=1, prefetch_enabled=False)
    arrived: list[tuple[str, tuple]] = []
    loader.add_listener(lambda box: arrived.append((threading.current_thread().name, box)))
    try:
        req = PlaneRequest(XY, 40, (0, 0), (96, 64))
        loader.set_wanted([req], 0, (0, 0, 40))
        assert ds.log.entered.wait(WAIT)
        first = loader.plane(req)  # the worker is held at the gate: nothing decoded yet
        assert (first.status == Status.PENDING).all()
        ds.log.gate.set()
        assert loader.wait_idle(WAIT)
        assert arrived and all(name.startswith("wkw-loader") for name, _ in arrived)
        for _, ((_ox, _oy, oz), (_sx, _sy, sz)) in arrived:
            assert oz <= 40 < oz + sz  # every announced box touches the plane
        later = loader.plane(req)
        assert later.complete
        np.testing.assert_array_equal(later.data[0], expected(vol, req))
        assert (first.status == Status.PENDING).all()  # a returned plane never changes
        assert ds.log.main_thread_reads == 0
    finally:
        ds.log.gate.set()
        loader.close()


def test_no_block_is_read_twice(project_path: Path) -> None:
    ds = CountingDataset.open_counting(project_path)
    loader = Loader(ds, workers=3)
    try:
        for step in range(60):  # scroll z and y while the workers are busy
            cursor = (20 + step % 7, 10 + step // 2, step)
            loader.set_wanted(planes_at(cursor), step % 3, cursor)
            for req in planes_at(cursor):
                loader.plane(req)
        assert loader.wait_idle(WAIT)
        log = ds.log
        assert log.counts, "nothing was read"
        assert max(log.counts.values()) == 1, [k for k, n in log.counts.items() if n > 1][:5]
        assert log.overlaps == []
        assert log.main_thread_reads == 0
        assert log.threads and all(name.startswith("wkw-loader") for name in log.threads)
        stats = loader.stats()
        assert stats.blocks_read == sum(log.counts.values())
        assert stats.generation == 60
    finally:
        loader.close()


def test_stale_work_is_dropped_after_a_generation_bump(project_path: Path) -> None:
    ds = CountingDataset.open_counting(project_path)
    ds.log.gate = threading.Event()
    loader = Loader(ds, workers=1, prefetch_enabled=False)
    try:
        old = [PlaneRequest(XY, 3, (0, 0), (96, 64))]  # 12 x 8 blocks in 6 files: many tasks
        loader.set_wanted(old, 0, (0, 0, 3))
        assert ds.log.entered.wait(WAIT)  # the first task is in flight, the rest queued
        assert loader.stats().queued_tasks > 0
        new = [PlaneRequest(XY, 60, (0, 0), (96, 64))]
        loader.set_wanted(new, 0, (0, 0, 60))
        ds.log.gate.set()
        assert loader.wait_idle(WAIT)
        assert loader.plane(new[0]).complete
        old_blocks = {k for k in ds.log.counts
                      if wkw.morton.decode(k[1])[2] == 0 and "z0" in k[0]}
        first_batch = set(ds.log.batches[0])
        assert old_blocks == first_batch  # only the batch already in flight was read
        assert loader.stats().dropped_tasks > 0
        assert not loader.plane(old[0]).complete
    finally:
        ds.log.gate.set()
        loader.close()


def test_focused_view_is_read_first(project_path: Path) -> None:
    ds = CountingDataset.open_counting(project_path)
    ds.log.gate = threading.Event()
    loader = Loader(ds, workers=1, prefetch_enabled=False)
    try:
        # A throw-away plane holds the only worker while the real wish list is ranked.
        loader.set_wanted([PlaneRequest(XY, 0, (0, 0), (8, 8))], 0, (0, 0, 0))
        assert ds.log.entered.wait(WAIT)
        reqs = planes_at((50, 30, 20))
        loader.set_wanted(reqs, 2, (50, 30, 20))  # YZ focused
        ds.log.gate.set()
        assert loader.wait_idle(WAIT)
        read_order = [key for batch in ds.log.batches[1:] for key in batch]
        yz = set()
        for gy in range(SHAPE[1] // BLOCK_LEN):
            for gz in range(SHAPE[2] // BLOCK_LEN):
                path = ds.unit_path((50 // BLOCK_LEN // 4, gy // 4, gz // 4))
                yz.add((path, int(wkw.morton.encode(50 // BLOCK_LEN % 4, gy % 4, gz % 4))))
        assert set(read_order[:len(yz)]) == yz  # the focused YZ plane came first
        assert len(read_order) > len(yz)  # then the other two views
    finally:
        ds.log.gate.set()
        loader.close()


def test_the_four_looks(tmp_path: Path, vol: np.ndarray) -> None:
    path = write_project(tmp_path / "ds", vol)
    ds = wkw.Dataset.open(str(path))
    os.remove(ds.file_path(1, 0, 0))  # absent: x 32..63, y 0..31, z 0..31
    damaged = ds.file_path(2, 0, 0)
    with wkw.File.open(damaged) as f:
        start, end = (int(v[5]) for v in f.block_ranges())
    with open(damaged, "r+b") as fh:  # garble block 5 = block (1, 0, 1) of that file
        fh.seek(start)
        fh.write(bytes([0xFF]) * (end - start))
    loader = Loader(open_volume(path))
    try:
        req = PlaneRequest(XY, 12, (0, 0), (96, 32))
        loader.set_wanted([req], 0, (0, 0, 12))
        assert loader.wait_idle(WAIT)
        plane = loader.plane(req)
        assert plane.complete
        st = plane.status
        assert (st[32:64, :] == Status.ABSENT).all()
        assert (st[72:80, 0:8] == Status.FAILED).all()
        assert (st[10:20, 10:20] == Status.DATA).all() and (plane.data[0, 10:20, 10:20] == 0).all()
        assert (st[64:72, :] == Status.DATA).all()
        assert list(plane.errors) == [(damaged, 5)]
        err = plane.errors[(damaged, 5)]
        assert err.path == damaged and err.block == 5 and err.offset == start
        good = np.ones(st.shape, bool)
        good[32:64, :] = False
        good[72:80, 0:8] = False
        np.testing.assert_array_equal(plane.data[0][good], expected(vol, req)[good])
        assert (plane.data[0][32:64] == 0).all()
    finally:
        loader.close()


def test_budget_holds_while_browsing(project_path: Path, vol: np.ndarray) -> None:
    budget = 40 * BLOCK_LEN ** 3  # less than one screen of 3 planes
    loader = Loader(open_volume(project_path), budget_bytes=budget)
    try:
        for z in range(0, 64, 5):
            cursor = (40, 20, z)
            loader.set_wanted(planes_at(cursor), 0, cursor)
            assert loader.wait_idle(WAIT)
            for req in planes_at(cursor):
                plane = loader.plane(req)
                assert loader.wait_idle(WAIT)
                plane = loader.plane(req)
                if plane.complete:
                    np.testing.assert_array_equal(plane.data[0], expected(vol, req))
            stats = loader.stats()
            assert stats.cache_used_bytes <= budget + BLOCK_LEN ** 3
            assert stats.peak_cache_bytes <= budget + BLOCK_LEN ** 3
        assert loader.stats().over_budget
    finally:
        loader.close()


def test_prefetch_reads_ahead_in_the_direction_of_motion(project_path: Path) -> None:
    loader = Loader(open_volume(project_path))
    try:
        for z in (17, 18, 19):  # moving towards +z in the XY view
            loader.set_wanted([PlaneRequest(XY, z, (0, 0), (96, 64))], 0, (0, 0, z))
        assert loader.wait_idle(WAIT)
        ahead = loader.stats()
        loader.set_wanted([PlaneRequest(XY, 24, (0, 0), (96, 64))], 0, (0, 0, 24))
        stats = loader.stats()
        assert stats.hits - ahead.hits == 12 * 8  # the next block layer was already there
        assert stats.misses == ahead.misses
        assert stats.prefetch_useful > 0 and 0 < stats.prefetch_useful_fraction <= 1
        assert loader.wait_idle(WAIT)
    finally:
        loader.close()


def test_shutdown_joins_every_worker_even_with_work_queued(project_path: Path) -> None:
    before = set(threading.enumerate())
    ds = CountingDataset.open_counting(project_path)
    ds.log.gate = threading.Event()
    loader = Loader(ds, workers=4)
    assert len(loader_threads()) == 4
    loader.set_wanted(planes_at((40, 40, 40)), 0, (40, 40, 40))
    assert ds.log.entered.wait(WAIT)
    ds.log.gate.set()
    loader.close()
    assert set(threading.enumerate()) <= before
    assert not any(t.is_alive() for t in loader.threads)
    assert loader.stats().workers == 0
    loader.close()  # twice is harmless


def test_set_budget_at_run_time(project_path: Path) -> None:
    loader = Loader(open_volume(project_path))
    try:
        loader.set_wanted(planes_at((40, 40, 40)), 0, (40, 40, 40))
        assert loader.wait_idle(WAIT)
        small = 30 * BLOCK_LEN ** 3  # more than the 12 jump tables (6 KiB) need
        loader.set_budget(small)
        stats = loader.stats()
        assert stats.cache_budget_bytes == small and stats.cache_used_bytes <= small
    finally:
        loader.close()


def test_scrolling_inside_a_block_layer_keeps_the_queue(project_path: Path) -> None:
    ds = CountingDataset.open_counting(project_path)
    ds.log.gate = threading.Event()
    loader = Loader(ds, workers=1, prefetch_enabled=False)
    try:
        loader.set_wanted([PlaneRequest(XY, 3, (0, 0), (96, 64))], 0, (0, 0, 3))
        assert ds.log.entered.wait(WAIT)
        queued = loader.stats().queued_blocks
        loader.set_wanted([PlaneRequest(XY, 4, (0, 0), (96, 64))], 0, (0, 0, 4))  # same blocks
        stats = loader.stats()
        assert stats.generation == 2 and stats.dropped_tasks == 0
        assert stats.queued_blocks == queued > 0
        loader.set_wanted([PlaneRequest(XY, 9, (0, 0), (96, 64))], 0, (0, 0, 9))  # next layer
        assert loader.stats().dropped_tasks > 0
        ds.log.gate.set()
        assert loader.wait_idle(WAIT)
        assert loader.plane(PlaneRequest(XY, 9, (0, 0), (96, 64))).complete
    finally:
        ds.log.gate.set()
        loader.close()


def test_cached_blocks_own_their_memory(project_path: Path) -> None:
    """The budget counts what is held: no cached block keeps a larger decode buffer alive."""
    loader = Loader(open_volume(project_path))
    try:
        loader.set_wanted(planes_at((40, 40, 40)), 0, (40, 40, 40))
        assert loader.wait_idle(WAIT)
        keys = loader.cache.keys()
        assert len(keys) > 100
        for key in keys:
            value = loader.cache.peek(key)
            assert isinstance(value, np.ndarray) and not value.flags.writeable
            root = value
            while isinstance(root.base, np.ndarray):
                root = root.base
            assert root.nbytes == value.nbytes == BLOCK_LEN ** 3
    finally:
        loader.close()


def test_whole_blocks_land_in_place_for_every_channel_and_alignment(tmp_path: Path) -> None:
    """Blocks copied into a plane in one scatter (requests on the block grid) and one by one
    (off the grid) land where they belong, for each channel."""
    rng = np.random.default_rng(11)
    data = rng.integers(0, 60000, (2, 48, 40, 32), dtype=np.uint16)
    header = wkw.Header(np.uint16, num_channels=2, block_len=8, file_len=2,
                        block_type=wkw.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(tmp_path / "ds"), header)
    ds.write((0, 0, 0), data)
    ds.close()
    loader = Loader(open_volume(tmp_path / "ds"))
    try:
        reqs = [PlaneRequest(XY, 17, (0, 8), (48, 40)), PlaneRequest(XZ, 9, (16, 0), (48, 32)),
                PlaneRequest(YZ, 30, (8, 8), (40, 24)), PlaneRequest(XY, 3, (3, 5), (45, 37)),
                PlaneRequest(YZ, 0, (1, 0), (40, 31))]
        loader.set_wanted(reqs, 0, (17, 9, 30))
        assert loader.wait_idle(WAIT)
        for req in reqs:
            plane = loader.plane(req)
            assert plane.complete
            (ox, oy, oz), (sx, sy, sz) = req.box()
            want = data[:, ox:ox + sx, oy:oy + sy, oz:oz + sz].squeeze(axis=1 + req.axis)
            np.testing.assert_array_equal(plane.data, want)
    finally:
        loader.close()


def test_a_plane_asked_again_with_nothing_new_is_the_same_object(project_path: Path) -> None:
    """While no block of a plane arrived, ``plane`` hands back the same ``Plane`` (the window
    skips redrawing it); once blocks arrived, a new one with them."""
    ds = CountingDataset.open_counting(project_path)
    ds.log.gate = threading.Event()
    loader = Loader(ds, workers=1, prefetch_enabled=False)
    try:
        req = PlaneRequest(XZ, 20, (0, 0), (96, 64))
        loader.set_wanted([req], 0, (0, 20, 0))
        assert ds.log.entered.wait(WAIT)
        first = loader.plane(req)
        assert loader.plane(req) is first
        ds.log.gate.set()
        assert loader.wait_idle(WAIT)
        later = loader.plane(req)
        assert later is not first and later.complete
        assert loader.plane(req) is later
    finally:
        ds.log.gate.set()
        loader.close()


def test_a_plane_looks_its_blocks_up_again_only_after_a_read_finished(
        project_path: Path, vol: np.ndarray) -> None:
    """A view re-fetched for another view's arrival, while no batch of its loader finished,
    does not walk its missing blocks again (cache, orphan check); a finished batch, or a new
    wish list that dropped queued work, makes it look again, and a plane whose queued blocks
    were dropped is read all the same (its blocks are queued again)."""
    ds = CountingDataset.open_counting(project_path)
    ds.log.gate = threading.Event()
    loader = Loader(ds, workers=1, prefetch_enabled=False)
    lookups: list[int] = []
    get_many = loader.cache.get_many

    def counted(keys):  # type: ignore[no-untyped-def]
        keys = list(keys)
        lookups.append(len(keys))
        return get_many(keys)

    loader.cache.get_many = counted  # type: ignore[method-assign]
    try:
        a = PlaneRequest(XY, 3, (0, 0), (96, 64))  # many batches: the first one held
        loader.set_wanted([a], 0, (0, 0, 3))
        assert ds.log.entered.wait(WAIT)
        loader.plane(a)
        looked = len(lookups)
        assert looked == 1
        for _ in range(3):
            loader.plane(a)
        assert len(lookups) == looked  # nothing finished: nothing looked up
        b = PlaneRequest(XY, 60, (0, 0), (96, 64))
        loader.set_wanted([b], 0, (0, 0, 60))  # drops a's queued batches
        loader.plane(a)
        assert len(lookups) == looked + 1  # the wish list changed: looked again
        ds.log.gate.set()
        for req in (b, a):
            for _ in range(int(WAIT / 0.01)):
                if loader.plane(req).complete:
                    break
                loader.wait_idle(0.01)
            plane = loader.plane(req)
            assert plane.complete
            np.testing.assert_array_equal(plane.data[0], expected(vol, req))
    finally:
        ds.log.gate.set()
        loader.close()


def test_prefetch_waits_until_the_views_have_the_screen(project_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks on screen first, and prefetch only once the views took every plane complete
    (prefetch running while the GUI thread draws the last blocks slows a jump down)."""
    import time

    from viewer.core import loader as loader_module
    monkeypatch.setattr(loader_module, "PREFETCH_HOLD_S", 3600.0)  # only plane() releases it
    loader = Loader(open_volume(project_path))
    try:
        req = PlaneRequest(XY, 17, (0, 0), (96, 64))
        loader.set_wanted([req], 0, (0, 0, 17))
        deadline = time.monotonic() + WAIT
        while True:  # the plane's 12 x 8 blocks are read...
            stats = loader.stats()
            if stats.blocks_read >= 12 * 8 and not stats.in_flight_blocks:
                break
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert stats.blocks_read == 12 * 8
        assert stats.prefetched_blocks == 0 and stats.queued_tasks > 0  # ...prefetch waits
        assert loader.plane(req).complete  # the view has the whole screen: prefetch may start
        assert loader.wait_idle(WAIT)
        assert loader.stats().prefetched_blocks > 0
    finally:
        loader.close()


def test_a_loader_held_until_drawn_prefetches_only_when_released(
        project_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``hold_until_drawn``: the views taking every plane complete does not start prefetch
    (the window still renders and paints them); the owner's ``release_hold`` does."""
    import time

    from viewer.core import loader as loader_module
    monkeypatch.setattr(loader_module, "PREFETCH_HOLD_S", 3600.0)
    loader = Loader(open_volume(project_path), hold_until_drawn=True)
    try:
        req = PlaneRequest(XY, 17, (0, 0), (96, 64))
        loader.set_wanted([req], 0, (0, 0, 17))
        deadline = time.monotonic() + WAIT
        while not loader.plane(req).complete:
            assert time.monotonic() < deadline
            loader.wait_idle(0.01)
        assert not loader.wait_idle(0.2)  # taken complete, prefetch still held
        stats = loader.stats()
        assert stats.prefetched_blocks == 0 and stats.queued_tasks > 0
        loader.release_hold()  # the owner painted the screen
        assert loader.wait_idle(WAIT)
        assert loader.stats().prefetched_blocks > 0
    finally:
        loader.close()


def test_deferred_planes_wait_for_release_hold(project_path: Path, vol: np.ndarray,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Planes wanted ``deferred`` (coarse placeholders behind another loader's screen) are not
    read until ``release_hold`` (the hold's time limit set out of reach), then in full."""
    from viewer.core import loader as loader_module

    monkeypatch.setattr(loader_module, "PREFETCH_HOLD_S", 3600.0)
    ds = CountingDataset.open_counting(project_path)
    loader = Loader(ds, workers=2, prefetch_enabled=False)
    try:
        reqs = planes_at((37, 15, 50))
        loader.set_wanted(reqs, None, (37, 15, 50), deferred=True)
        assert not loader.wait_idle(0.3)  # held: queued, nothing read
        assert ds.log.counts == {} and loader.stats().blocks_read == 0
        assert not loader.plane(reqs[0]).complete
        loader.release_hold()
        assert loader.wait_idle(WAIT)
        for req in reqs:
            plane = loader.plane(req)
            assert plane.complete
            np.testing.assert_array_equal(plane.data[0], expected(vol, req))
        assert max(ds.log.counts.values()) == 1
    finally:
        loader.close()
