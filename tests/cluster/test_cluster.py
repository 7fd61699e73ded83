"""Exhaustive jobs on a Dask LocalCluster of 2 processes (127.0.0.1 only): the same answer as
the local run, key for key; a worker killed mid-run; cancel; paths the workers cannot see."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.cli import info
from viewer.core import cluster
from viewer.format import wkw

# Whether it is installed, without importing it (collection on a worker that runs none of
# these tests would pay for the import).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="dask.distributed not installed (CI installs it)")


def damaged_dataset(root: Path) -> Path:
    """16 files of 16^3 uint16, LZ4HC; one block garbled, one file cut inside its table."""
    rng = np.random.default_rng(5)
    data = rng.integers(0, 900, (64, 64, 16)).astype(np.uint16)
    header = wkw.Header(np.uint16, block_len=8, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4HC)
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), data)
        garbled = ds.file_path(1, 1, 0)
        cut = ds.file_path(3, 2, 0)
    with wkw.File.open(garbled) as f:
        start, end = (int(v[3]) for v in f.block_ranges())
    with open(garbled, "r+b") as fh:
        fh.seek(start)
        fh.write(b"\xff" * (end - start))
    os.truncate(cut, 40)
    return root


def run_info(*args: str) -> tuple[int, Any]:
    out = io.StringIO()
    import sys

    saved = sys.stdout
    sys.stdout = out
    try:
        code = info.main([*args, "--json"])
    finally:
        sys.stdout = saved
    return code, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def runner() -> Any:
    with cluster.ClusterRunner("local:2") as r:
        yield r


def test_parse_scheduler() -> None:
    assert cluster.parse_scheduler("local:3").local_workers == 3
    assert cluster.parse_scheduler("tcp://10.0.0.1:8786").address == "tcp://10.0.0.1:8786"
    for bad in ("local:0", "local:x", "nowhere", "tcp://"):
        with pytest.raises(cluster.SchedulerError):
            cluster.parse_scheduler(bad)


def test_info_on_the_cluster_equals_the_local_run(tmp_path: Path) -> None:
    root = damaged_dataset(tmp_path / "ds")
    code, local = run_info(str(root), "--chunks")
    assert code == 1 and local["problems"]
    rcode, remote = run_info(str(root), "--chunks", "--scheduler", "local:2")
    assert rcode == code
    assert remote == local


def _slow_check(share: Any) -> Any:
    time.sleep(0.2)
    return info.check_share(share)


def _shares(root: Path) -> list[Any]:
    from viewer.format import open_volume

    vol = open_volume(root)
    try:
        positions = sorted(vol.iter_units())
        layer = os.path.basename(str(root))
    finally:
        vol.close()
    return [info.UnitShare(str(root), layer, (1, 1, 1), (p,), True, True) for p in positions]


def test_a_killed_worker_has_its_tasks_rerun(tmp_path: Path, runner: Any) -> None:
    root = damaged_dataset(tmp_path / "ds")
    work = _shares(root)
    results: dict[int, Any] = {}
    killed = False
    for k, got in runner.map(_slow_check, work, key="kill"):
        results[k] = got
        if not killed:
            victim = next(iter(runner._client.scheduler_info()["workers"]))
            # The worker dies while answering.
            with contextlib.suppress(Exception):
                runner._client.run(os._exit, 1, workers=[victim])
            killed = True
    assert sorted(results) == list(range(len(work)))
    local = [info.check_share(share) for share in work]
    assert [[r.fields for r in results[k]] for k in sorted(results)] == \
        [[r.fields for r in part] for part in local]


def test_cancel_stops_the_run(tmp_path: Path, runner: Any) -> None:
    root = damaged_dataset(tmp_path / "ds")
    work = _shares(root) * 4
    got = 0
    for _ in runner.map(_slow_check, work, key="cancel"):
        got += 1
        if got == 2:
            threading.Thread(target=runner.cancel).start()
            break
    runner.cancel()
    assert runner.cancelled and got < len(work)


def test_paths_the_workers_cannot_see_are_named_up_front(runner: Any, tmp_path: Path) -> None:
    with pytest.raises(cluster.SchedulerError, match="cannot see"):
        runner.check_paths([str(tmp_path / "nowhere")])


def test_without_dask_the_scheduler_option_says_how_to_get_it(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(cluster, "dask_available", lambda: False)
    root = damaged_dataset(tmp_path / "ds")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = info.main([str(root), "--scheduler", "local:2"])
    assert code == 2 and "pip install 'wkw-viewer[dask]'" in err.getvalue()


def run_compare(*args: str) -> tuple[int, Any]:
    from viewer.cli import compare

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = compare.main([*args, "--json"])
    return code, json.loads(out.getvalue())


def _comparable(doc: Any) -> Any:
    doc = dict(doc)
    doc.pop("elapsed_s", None)
    doc.pop("elapsed", None)
    return doc


def test_compare_on_the_cluster_equals_the_local_run(tmp_path: Path, runner: Any) -> None:
    """On the module's cluster, by its address (``local:N`` from the command line is the info
    test's)."""
    a = damaged_dataset(tmp_path / "a")
    b = tmp_path / "b"
    import shutil

    shutil.copytree(tmp_path / "a", b)
    with wkw.Dataset.open(str(b)) as ds:
        box = ds.read((0, 0, 0), (16, 16, 16))
        box[0, 3, 4, 5] += 7
        ds.write((0, 0, 0), box)
        os.remove(ds.file_path(0, 3, 0))  # a file only A has
    code, local = run_compare(str(a), str(b))
    assert code == 1 and local["mismatching_blocks"]
    rcode, remote = run_compare(str(a), str(b), "--scheduler", runner.address)
    assert rcode == code
    assert _comparable(remote) == _comparable(local)


def _scan(volume: Any, scheduler: str) -> list[Any]:
    from viewer.core import inspect

    batches: list[Any] = []
    done = threading.Event()

    def on_batch(batch: Any) -> None:
        batches.append(batch)
        if batch.finished:
            done.set()

    scan = inspect.UnitScan(volume, on_batch, scheduler=scheduler)
    scan.start()
    assert done.wait(120)
    assert scan.wait(30)
    assert all(b.error is None for b in batches)
    assert batches[-1].done == batches[-1].total
    return [r for b in batches for r in b.rows]


def _row(r: Any) -> Any:
    return (r.path, r.position, r.compression, r.size_on_disk, r.chunk_count, r.size_min,
            r.size_max, r.total, [str(p) for p in r.problems],
            None if r.histogram is None else r.histogram.tolist())


def test_the_scan_on_the_cluster_equals_the_local_scan(tmp_path: Path, runner: Any) -> None:
    from viewer.core import inspect
    from viewer.format import open_volume

    root = damaged_dataset(tmp_path / "ds")
    volume = open_volume(root)
    try:
        rows = _scan(volume, runner.address)
        local = inspect.scan_all(volume)
    finally:
        volume.close()
    assert any(r.problems for r in local)
    assert sorted(map(_row, rows), key=str) == sorted(map(_row, local), key=str)


def test_the_scan_setting_is_checked_and_taken_by_later_scans(tmp_path: Path,
                                                               runner: Any) -> None:
    from viewer.core import inspect
    from viewer.format import open_volume

    with pytest.raises(cluster.SchedulerError):
        inspect.set_scan_scheduler("nowhere")
    root = damaged_dataset(tmp_path / "ds")
    volume = open_volume(root)
    inspect.set_scan_scheduler(runner.address)
    try:
        assert inspect.UnitScan(volume, print).scheduler == runner.address
        assert inspect.UnitScan(volume, print, scheduler="").scheduler is None
    finally:
        inspect.set_scan_scheduler(None)
        volume.close()
    assert inspect.UnitScan(volume, print).scheduler is None


def test_the_window_says_a_scheduler_it_cannot_use() -> None:
    from viewer import app

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert app.main(["--scheduler", "nowhere"]) == 2
    assert "local:N" in err.getvalue()


def test_a_scan_the_cluster_cannot_run_says_so_and_runs_here(tmp_path: Path,
                                                              runner: Any) -> None:
    from viewer.core import inspect
    from viewer.format import open_volume

    root = damaged_dataset(tmp_path / "ds")
    volume = open_volume(root)
    batches: list[Any] = []
    done = threading.Event()

    def on_batch(batch: Any) -> None:
        batches.append(batch)
        if batch.finished:
            done.set()

    try:
        scan = inspect.UnitScan(volume, on_batch, scheduler=runner.address,
                                reopen=inspect.Reopen(str(tmp_path / "elsewhere")))
        scan.start()
        assert done.wait(120)
        assert "cannot see" in (batches[0].error or "")
        rows = [r for b in batches for r in b.rows]
        assert sorted(r.path for r in rows) == sorted(r.path for r in inspect.scan_all(volume))
    finally:
        volume.close()


def test_cancel_ends_a_scan_on_the_cluster(tmp_path: Path, runner: Any) -> None:
    from viewer.core import inspect
    from viewer.format import open_volume

    root = damaged_dataset(tmp_path / "ds")
    volume = open_volume(root)
    batches: list[Any] = []
    try:
        scan = inspect.UnitScan(volume, batches.append, scheduler=runner.address)
        scan.start()
        scan.cancel()
        assert scan.wait(120)
    finally:
        volume.close()
    assert scan.cancelled and not any(b.finished for b in batches)


def test_info_on_the_cluster_lists_the_files_on_its_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: Any) -> None:
    """The files of a dataset cut into folders are listed by the cluster's workers (the
    module's cluster, by its address), which find their box too: here only the folders are
    listed; the report is the local one."""
    from viewer.format.wkw.volume import WkwVolume

    root = damaged_dataset(tmp_path / "ds")
    code, local = run_info(str(root), "--chunks")

    def no_walk(self: WkwVolume) -> None:
        raise AssertionError("the files were listed here")

    monkeypatch.setattr(WkwVolume, "iter_units", no_walk)
    monkeypatch.setattr(WkwVolume, "_files_box", no_walk)
    rcode, remote = run_info(str(root), "--chunks", "--scheduler", runner.address)
    assert (rcode, remote) == (code, local)
    assert len(local["files"]) == 16
