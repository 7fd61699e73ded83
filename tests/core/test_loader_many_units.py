"""The loader on datasets of many small storage units: open units kept (a limit
from RLIMIT_NOFILE) and reused, batches shared by units of one chunk, read-ahead hints only
while reads go to the disk.  A format of one chunk per file (the test-only toy format) stands
for N5 and Zarr v2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from loading_fixtures import CountingDataset
from toyformat import ToyVolume, write_toy

from viewer.core import chunkio, schedule
from viewer.core.loader import Loader, open_units_limit
from viewer.core.slicing import PlaneRequest

resource = pytest.importorskip("resource")

WAIT = 30.0
XY, XZ, YZ = 2, 1, 0


@pytest.fixture
def toy(tmp_path: Path) -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 60000, (1, 64, 48, 40), dtype=np.uint16)
    return write_toy(tmp_path / "toy", data, (8, 8, 8)), data


@pytest.fixture
def nofile() -> Iterator[Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def set_soft(n: int) -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))

    try:
        yield set_soft
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_open_unit_limit_follows_rlimit_nofile(nofile: Any, toy: tuple[str, np.ndarray]
                                               ) -> None:
    nofile(1000)
    assert open_units_limit() == (1000 - chunkio.RESERVED_DESCRIPTORS) // 2
    ld = Loader(ToyVolume(toy[0]), workers=1)
    try:
        assert ld.open_units_limit == (1000 - chunkio.RESERVED_DESCRIPTORS) // 2
    finally:
        ld.close()
    nofile(300)
    assert open_units_limit() == max(chunkio.MIN_OPEN_UNITS,
                                     (300 - chunkio.RESERVED_DESCRIPTORS) // 2)
    nofile(80)  # never below the floor
    assert open_units_limit() == chunkio.MIN_OPEN_UNITS


class _Opens(CountingDataset):
    """Counts ``open_unit`` calls per unit (the inner toy volume opens a unit anew each
    time, as a one-chunk-per-file format does) and records ``will_need`` calls."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.opens: Counter[tuple[int, int, int]] = Counter()
        self.hints = 0
        self.tasks_threads: list[int] = []

    def open_unit(self, unit: tuple[int, int, int]) -> Any:
        with self._lock:
            self.opens[tuple(unit)] += 1  # type: ignore[index]
        inner = self.inner.open_unit(unit)
        if inner is None:
            return None
        outer = self

        class Hinted(type(inner)):  # type: ignore[misc]
            def will_need(self, indices: Any) -> None:
                with outer._lock:
                    outer.hints += 1

        inner.__class__ = Hinted
        return inner


def _planes(z: int) -> list[PlaneRequest]:
    return [PlaneRequest(XY, z, (0, 0), (64, 48)), PlaneRequest(XZ, 20, (0, 0), (64, 40)),
            PlaneRequest(YZ, 30, (0, 0), (48, 40))]


def test_units_are_opened_once_and_reused(toy: tuple[str, np.ndarray]) -> None:
    path, data = toy
    vol = _Opens(ToyVolume(path))
    ld = Loader(vol, workers=2, prefetch_enabled=False)
    try:
        for _rnd in range(3):  # the same screens again, block cache emptied each time
            for z in (3, 17, 33):
                ld.cache.clear()
                ld.set_wanted(_planes(z), 0, (30, 20, z))
                for r in _planes(z):
                    ld.plane(r)
                assert ld.wait_idle(WAIT)
                plane = ld.plane(_planes(z)[0])
                assert plane.complete
                assert np.array_equal(plane.data[0], data[0, :, :, z])
        assert vol.opens and max(vol.opens.values()) == 1, vol.opens.most_common(3)
    finally:
        ld.close()


def test_small_units_share_batches(toy: tuple[str, np.ndarray]) -> None:
    """An XY plane of 8 x 6 one-chunk units: a few tasks, not one per unit."""
    path, _ = toy
    vol = ToyVolume(path)
    ld = Loader(vol, workers=1, prefetch_enabled=False)
    try:
        req = PlaneRequest(XY, 5, (0, 0), (64, 48))
        sched = ld._sched
        with sched.lock:  # the worker cannot take a task while the queue is looked at
            sched.enqueue_locked([((0, 0), (), *ld._keys.keys(None, ld._planes.layout(req).blocks),
                                   False)])
            tasks = [t for _, _, t in sched._queue if t.keys]
            units = {k[2] for t in tasks for k in t.keys}
            assert len(units) == 48
            assert len(tasks) == -(-48 // schedule.VISIBLE_BATCH)
            for t in tasks:  # each task's keys grouped by unit, first unit named
                assert t.file == t.keys[0][2]
    finally:
        ld.close()


@pytest.mark.skipif(getattr(resource, "RUSAGE_THREAD", None) is None,
                    reason="the system does not count a thread's disk reads")
def test_no_read_ahead_hints_for_pages_in_memory(toy: tuple[str, np.ndarray]) -> None:
    """The toy files were just written: their pages are in memory, no read goes to the disk,
    and the loader gives no hint at all (a hint on resident pages is pure cost)."""
    path, data = toy
    for f in Path(path, "c").iterdir():  # surely in memory
        f.read_bytes()
    vol = _Opens(ToyVolume(path))
    ld = Loader(vol, workers=2)
    try:
        for z in (3, 17, 33):
            ld.set_wanted(_planes(z), 0, (30, 20, z))
            for r in _planes(z):
                ld.plane(r)
            assert ld.wait_idle(WAIT)
            assert np.array_equal(ld.plane(_planes(z)[0]).data[0], data[0, :, :, z])
        assert ld.stats().blocks_read > 48
        assert vol.hints == 0
    finally:
        ld.close()


def test_read_ahead_hints_while_reads_go_to_the_disk(toy: tuple[str, np.ndarray],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read counted as one from the disk: the next tasks' blocks are hinted."""
    path, _ = toy
    counter = iter(range(10 ** 9))
    monkeypatch.setattr(chunkio, "_disk_reads", lambda: next(counter))
    vol = _Opens(ToyVolume(path))
    ld = Loader(vol, workers=1)
    try:
        ld.set_wanted(_planes(9), 0, (30, 20, 9))
        assert ld.wait_idle(WAIT)
        assert vol.hints > 0
    finally:
        ld.close()
