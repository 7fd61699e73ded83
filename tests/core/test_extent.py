"""A dataset's extent without listing every file up front: the provisional extent (the file
at the requested position, else the first file in sorted order), the scan's final box on a
sparse dataset, its progress reports, cancelling and the thread it runs on."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from viewer.core import extent
from viewer.format import open_volume, wkw
from viewer.format.wkw import writer


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8^3-voxel files (block_len 8, file_len 1) at a few grid cells of a sparse dataset."""
    root = tmp_path_factory.mktemp("extent") / "ds"
    header = wkw.Header(np.uint8, block_len=8, file_len=1, block_type=wkw.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(root), header)
    for cell in [(3, 1, 2), (12, 1, 2), (5, 10, 2), (4, 4, 7), (2, 9, 11)]:
        writer.write_file(ds.file_path(*cell), header, np.full((1, 8, 8, 8), 7, np.uint8))
    ds.close()
    return root


def test_provisional_extent_is_the_file_at_pos_else_the_first_file(sparse: Path) -> None:
    ds = open_volume(sparse)
    assert extent.provisional_bounds(ds, (36, 33, 60)) == ((32, 32, 56), (40, 40, 64))
    # No file at pos (or no pos): the first file of the z/y/x walk, z2/y1/x3.
    assert extent.provisional_bounds(ds, (0, 0, 0)) == ((24, 8, 16), (32, 16, 24))
    assert extent.provisional_bounds(ds) == ((24, 8, 16), (32, 16, 24))
    ds.close()


def test_scan_finds_the_box_of_every_file_and_reports_from_its_thread(sparse: Path) -> None:
    ds = open_volume(sparse)
    assert extent.scan_bounds(ds) == ((16, 8, 16), (104, 88, 96))
    reports: list[tuple[extent.Bounds, bool, bool]] = []
    scan = extent.ExtentScan(ds, lambda b, done: reports.append(
        (b, done, threading.current_thread() is not threading.main_thread())))
    scan.start()
    assert scan.wait(60)
    scan.join()
    assert not scan.thread.is_alive()
    assert reports[-1] == (((16, 8, 16), (104, 88, 96)), True, True)
    assert all(off_main for _, _, off_main in reports)
    ds.close()


def test_an_empty_dataset_scans_to_one_file_at_the_origin(tmp_path: Path) -> None:
    header = wkw.Header(np.uint8, block_len=8, file_len=2)
    wkw.Dataset.create(str(tmp_path / "empty"), header).close()
    ds = open_volume(tmp_path / "empty")
    assert extent.scan_bounds(ds) is None
    assert extent.provisional_bounds(ds) == ((0, 0, 0), (16, 16, 16))
    got: list[tuple[extent.Bounds, bool]] = []
    scan = extent.ExtentScan(ds, lambda b, done: got.append((b, done))).start()
    assert scan.wait(60)
    scan.join()
    assert got == [(((0, 0, 0), (16, 16, 16)), True)]


def test_a_cancelled_scan_stops_and_reports_nothing_more(sparse: Path) -> None:
    ds = open_volume(sparse)
    gate = threading.Event()
    seen: list[object] = []

    def held() -> object:
        for k, unit in enumerate(ds.iter_units()):
            if k == 2:
                gate.wait(60)
            seen.append(unit)
            yield unit

    got: list[tuple[extent.Bounds, bool]] = []
    scan = extent.ExtentScan(ds, lambda b, done: got.append((b, done)), held()).start()
    assert not scan.wait(0.05)
    scan.cancel()
    gate.set()
    scan.join(60)
    assert not scan.thread.is_alive()
    assert scan.done and scan.result is None
    assert not any(done for _, done in got)
    assert len(seen) <= 3
    ds.close()


def test_opening_does_not_wait_for_a_long_listing(sparse: Path) -> None:
    """``wait_small`` returns once the listing passed ``MANY_UNITS`` units, without waiting
    for its end (the window's event loop waits there)."""
    vol = open_volume(sparse)
    gate = threading.Event()
    events: list[str] = []

    def long_listing():  # type: ignore[no-untyped-def]
        for k in range(extent.MANY_UNITS + 10):
            yield (k % 7, k // 7 % 7, k // 49)
        gate.wait(60)
        events.append("listing resumed")

    scan = extent.ExtentScan(vol, lambda b, done: None, long_listing()).start()
    try:
        assert scan.wait_small(60) is False
        events.append("returned")
    finally:
        gate.set()
    scan.join(60)
    assert events == ["returned", "listing resumed"]
    assert scan.done and scan.result is not None
    small = extent.ExtentScan(vol, lambda b, done: None).start()
    assert small.wait_small(60) is True and small.result == extent.scan_bounds(vol)
    vol.close()
