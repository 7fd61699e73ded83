"""The inspector's scan over a store that cannot list (plain HTTP): its rows come from the
unit grid (``Volume.units_to_check``), so a remote dataset shows the same units as the same
files on disk (a listing over HTTP finds nothing), a unit that cannot be fetched is a row
naming its error, and a proven-absent unit is no row (as a listing leaves it out)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from range_server import RangeServer

from viewer.core import inspect
from viewer.format import RemoteError, open_volume
from viewer.format.remote import configure


@pytest.fixture
def served(foreign: Path, tmp_path: Path) -> tuple[RangeServer, Path]:
    """The foreign datasets, and ``zarr2-gap``: the Zarr v2 array with one chunk file gone."""
    root = tmp_path / "served"
    for name in ("n5", "zarr3", "zarr2"):
        shutil.copytree(foreign / name, root / name)
    shutil.copytree(foreign / "zarr2", root / "zarr2-gap")
    (root / "zarr2-gap" / "1.0.0").unlink()
    configure(retries=0, timeout_s=5)
    return RangeServer(str(root)), root


def _rows(where: str) -> list[inspect.UnitStats]:
    vol = open_volume(where)
    try:
        return inspect.scan_all(vol)
    finally:
        vol.close()


@pytest.mark.parametrize("name", ["n5", "zarr3", "zarr2", "zarr2-gap"])
def test_scan_over_http_shows_the_units_found_on_disk(served: tuple[RangeServer, Path],
                                                      name: str) -> None:
    srv, root = served
    local = _rows(str(root / name))
    with srv:
        remote = _rows(f"{srv.url}/{name}")
    assert len(local) > 0
    assert sorted(r.position for r in remote) == sorted(r.position for r in local)
    by_pos = {r.position: r for r in local}
    for row in remote:
        want = by_pos[row.position]
        assert (row.chunk_count, row.size_on_disk, row.problem_count) == \
            (want.chunk_count, want.size_on_disk, want.problem_count)


def test_scan_over_http_names_a_unit_it_cannot_fetch(served: tuple[RangeServer, Path]) -> None:
    srv, root = served
    with srv:
        vol = open_volume(f"{srv.url}/zarr3")
        try:
            srv.fault_match = "/c/"
            srv.fail_next = 10**6
            rows = inspect.scan_all(vol)
        finally:
            srv.fail_next = 0
            vol.close()
    assert len(rows) == len(_rows(str(root / "zarr3"))) > 0
    assert all(r.problems and isinstance(r.problems[0], RemoteError) for r in rows)


def test_background_scan_over_http_streams_every_unit(served: tuple[RangeServer, Path]) -> None:
    """The window's scan (``UnitScan`` on a thread) over HTTP: its batches hold the units the
    same files on disk have, and its progress counts the grid positions it walked."""
    srv, root = served
    want = sorted(r.position for r in _rows(str(root / "zarr2-gap")))
    batches: list[inspect.ScanBatch] = []
    with srv:
        vol = open_volume(f"{srv.url}/zarr2-gap")
        try:
            scan = inspect.UnitScan(vol, batches.append, use_process=False, scheduler="")
            scan.start()
            assert scan.wait(60)
        finally:
            vol.close()
    assert batches and batches[-1].finished
    assert sorted(r.position for b in batches for r in b.rows) == want
    assert batches[-1].total == len(list(vol.grid_units())) > len(want)
