"""The loader's one read path: every batch is one ``Volume.read_batch`` call, handed the
loader's table of open units, whatever the volume; the volume says whether its units are kept
(opened once, kept in the table) or not (``small_units``: read many in one call, none kept).
The test-only toy format (one chunk per file) stands for both."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from toyformat import ToyVolume, write_toy

from viewer.core.loader import Loader
from viewer.core.slicing import PlaneRequest
from viewer.format import StorageUnit
from viewer.format.batchread import UNKNOWN, UnitTable
from viewer.format.volume import UnitRead

WAIT = 30.0
XY, XZ, YZ = 2, 1, 0


class _Batches(ToyVolume):
    """The toy volume, its units small or not, counting the batches it is asked to read."""

    def __init__(self, path: str, small: bool) -> None:
        super().__init__(path)
        self.small_units = small
        self.batches = 0
        self.units_read = 0
        self._count = threading.Lock()

    def read_batch(self, jobs: Sequence[tuple[tuple[int, int, int], Sequence[int]]],
                   units: UnitTable[StorageUnit], hint: bool = False) -> list[UnitRead] | None:
        with self._count:
            self.batches += 1
        return super().read_batch(jobs, units, hint)

    def read_units(self, jobs: Sequence[tuple[tuple[int, int, int], Sequence[int]]]
                   ) -> list[UnitRead]:
        with self._count:
            self.units_read += len(jobs)
        return super().read_units(jobs)


@pytest.mark.parametrize("small", [False, True], ids=["kept", "small"])
def test_the_loader_reads_every_batch_through_the_volume(tmp_path: Path, small: bool) -> None:
    rng = np.random.default_rng(5)
    data = rng.integers(0, 60000, (1, 64, 48, 40), dtype=np.uint16)
    vol = _Batches(write_toy(tmp_path / "toy", data, (8, 8, 8)), small)
    ld = Loader(vol, workers=2, prefetch_enabled=False)
    z = 17
    planes = [PlaneRequest(XY, z, (0, 0), (64, 48)), PlaneRequest(XZ, 20, (0, 0), (64, 40)),
              PlaneRequest(YZ, 30, (0, 0), (48, 40))]
    try:
        ld.set_wanted(planes, 0, (30, 20, z))
        for r in planes:
            ld.plane(r)
        assert ld.wait_idle(WAIT)
        for r, want in zip(planes, (data[0, :, :, z], data[0, :, 20, :], data[0, 30, :, :]),
                           strict=True):
            plane = ld.plane(r)
            assert plane.complete
            np.testing.assert_array_equal(plane.data[0], want)
        assert vol.batches >= 1
        state: Any = ld._io.state((0, 0, z // 8))
        if small:  # read many in one call and not kept
            assert state is UNKNOWN and vol.units_read >= 48
        else:  # opened once and kept in the loader's table
            assert isinstance(state, StorageUnit) and vol.units_read == 0
    finally:
        ld.close()
