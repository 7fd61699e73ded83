"""Exhaustive jobs on a Dask cluster against the local run.

Two EM-like 1024^3 uint8 WKW datasets of 128^3-voxel files (512 files each), built once into
``benchmarks/.cache``: A in LZ4, B its LZ4HC re-encoding with a few voxels changed in one file
(a conversion to check: every block is decoded on both sides).  Timed, interleaved,
``--rounds`` times each:

- ``info --json`` (the full validation: every block decoded) and ``compare --json``, locally
  on one thread (``--threads 1``, ``--workers 1``);
- the same with ``--scheduler tcp://...`` of a ``LocalCluster`` of 1 and of 2 single-threaded
  worker processes, started before the timing (its start-up is not the job's cost).

Figures (medians): ``info_speedup_2_workers`` and ``compare_speedup_2_workers`` (1 worker's
time over 2 workers'), ``overhead_ratio_1_worker`` (1 worker's time over the local run's, the
larger of info's and compare's).  Targets: speedup >= 1.7, overhead <= 1.15.  Beside them,
because a shared machine's load skews wall-clock ratios: the CPU seconds of each run over
every process (this one, which hosts the schedulers, and the clusters' nannies and workers;
an idle cluster's heartbeats included), ``cpu_overhead_ratio_1_worker`` and
``cpu_ratio_2_to_1_workers``; and ``bytes_per_task``: the pickled size of one task of
``MAX_UNITS_PER_TASK`` units and of its result (only summaries travel, never voxels).
``python -m benchmarks.cluster [--json] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import load_average, with_load
from benchmarks.datasets import CACHE, em_dataset
from viewer.format import wkw

SHAPE = (1024, 1024, 1024)


def datasets() -> tuple[Path, Path]:
    a = em_dataset("cluster-a-1024", SHAPE, block_type=wkw.BLOCK_TYPE_LZ4, file_len=4,
                   block_len=32)
    b = CACHE / "cluster-b-1024-lz4hc"
    if not (b / ".complete").exists():
        if b.exists():
            shutil.rmtree(b)
        with wkw.Dataset.open(str(a)) as src:
            src.compress(str(b)).close()
        with wkw.Dataset.open(str(b)) as ds:
            box = ds.read((384, 512, 640), (128, 128, 128))
            box[0, 10, 20, 30] ^= 0xFF
            box[0, 100, 5, 7] ^= 0x0F
            ds.write((384, 512, 640), box)
        (b / ".complete").write_text("ok\n")
    return a, b


def cpu_seconds() -> float:
    """CPU seconds used so far by this process (the LocalCluster's scheduler runs in it) and
    by its children (the clusters' nannies and workers)."""
    import psutil

    total = time.process_time()
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            t = child.cpu_times()
            total += t.user + t.system
    return total


def run(command: str, args: list[str]) -> tuple[float, float]:
    """Seconds and CPU seconds (all processes) one in-process run of ``wkw-viewer COMMAND
    ARGS --json`` takes."""
    if command == "info":
        from viewer.cli.info import main
    else:
        from viewer.cli.compare import main  # type: ignore[assignment]
    out = io.StringIO()
    cpu = cpu_seconds()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*args, "--json"])
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds() - cpu
    if code not in (0, 1):
        raise SystemExit(f"{command} {args} exited {code}")
    json.loads(out.getvalue())
    return elapsed, cpu


def bytes_per_task(a: Path, b: Path) -> dict[str, int]:
    """What travels for one task of ``MAX_UNITS_PER_TASK`` units, pickled as Dask sends it:
    the task (paths, unit positions) and its result (summaries: block results, unit
    reports), for compare and for the full validation."""
    import pickle

    from viewer.cli.info import UnitShare, check_share
    from viewer.core.cluster import MAX_UNITS_PER_TASK
    from viewer.core.compare.job import UnitsTask, run_units
    from viewer.core.compare.sides import VolumeSpec
    from viewer.format import open_volume

    with contextlib.closing(open_volume(str(a))) as volume:
        positions = tuple(sorted(volume.iter_units())[:MAX_UNITS_PER_TASK])
    task = UnitsTask(VolumeSpec(str(a)), VolumeSpec(str(b)), positions, None, 0.0)
    share = UnitShare(str(a), a.name, (1, 1, 1), positions, True, False)
    size = lambda obj: len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))  # noqa: E731
    return {"units": len(positions),
            "compare_task": size(task), "compare_result": size(run_units(task)),
            "info_task": size(share), "info_result": size(check_share(share))}


def main() -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from viewer.core.cluster import _distributed

    a, b = datasets()
    dist = _distributed()
    clusters = {n: dist.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                     dashboard_address=None, host="127.0.0.1")
                for n in (1, 2)}
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    jobs = {"info": [str(a)], "compare": [str(a), str(b)]}
    single = {"info": ["--threads", "1"], "compare": ["--workers", "1"]}
    try:
        for job, paths in jobs.items():  # warm-up: the workers import the program once
            for cluster in clusters.values():
                run(job, [*paths, "--scheduler", cluster.scheduler_address])
        for _ in range(args.rounds):
            for job, paths in jobs.items():
                runs = {"local": [*paths, *single[job]]}
                for n, cluster in clusters.items():
                    runs[str(n)] = [*paths, "--scheduler", cluster.scheduler_address]
                for name, job_args in runs.items():
                    wall, used = run(job, job_args)
                    times.setdefault(f"{job}_{name}", []).append(wall)
                    cpu.setdefault(f"{job}_{name}", []).append(used)
    finally:
        for cluster in clusters.values():
            cluster.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    figures: dict[str, Any] = {
        "info_speedup_2_workers": med["info_1"] / med["info_2"],
        "compare_speedup_2_workers": med["compare_1"] / med["compare_2"],
        "overhead_ratio_1_worker": max(med["info_1"] / med["info_local"],
                                       med["compare_1"] / med["compare_local"]),
        "seconds": {k: round(v, 3) for k, v in med.items()},
        # Under load the wall-clock ratios say more about the other processes than about
        # this code; CPU seconds (every process of the run) do not: 1 worker's over the
        # local run's (its overhead), 2 workers' over 1 worker's (work added by splitting).
        "cpu_seconds": {k: round(v, 3) for k, v in med_cpu.items()},
        "cpu_overhead_ratio_1_worker": max(med_cpu["info_1"] / med_cpu["info_local"],
                                           med_cpu["compare_1"] / med_cpu["compare_local"]),
        "cpu_ratio_2_to_1_workers": max(med_cpu["info_2"] / med_cpu["info_1"],
                                        med_cpu["compare_2"] / med_cpu["compare_1"]),
        "bytes_per_task": bytes_per_task(a, b),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "rounds": args.rounds,
    }
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
    else:
        for k, v in figures.items():
            print(f"{k}: {v}")
        print("targets: speedup >= 1.7, overhead <= 1.15", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
