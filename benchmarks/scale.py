"""Scale: memory, window stalls and the metadata check's cost as datasets grow to a million.

``python -m benchmarks.scale [--json] [--skip-window]``

Datasets (built once into ``benchmarks/.cache/``; hard links of a few distinct files, as the
figures do not depend on the voxels):

* ``scale-files20k`` / ``scale-files100k`` / ``scale-files200k``: 20,000 / 100,000 / 200,000
  one-block WKW files (8^3 uint8 voxels, LZ4), 64 distinct files hard-linked over the grid;
* ``scale-chunks131k`` / ``scale-chunks1m``: 4 / 32 files of 32^3 blocks of 8^3 voxels
  (131,072 / 1,048,576 chunks), 4 distinct files hard-linked.

Figures (each command a fresh process; RSS is its peak resident set, from ``wait4``):

* ``info_rss_mb_20k`` / ``info_rss_mb_200k``: text ``info --quick`` on 20,000 / 200,000 files
  (target: 200k <= 1.1 x 20k);
* ``chunks_json_rss_mb_131k`` / ``chunks_json_rss_mb_1m``: ``info --json --chunks --quick`` on
  131,072 / 1,048,576 chunks (target: 1m <= 1.2 x 131k);
* ``quick_cpu_us_per_file``: CPU time (user + system) of ``info --json --quick --threads 1`` on
  20,000 files, less that of the same command on one file, per file (target <= 50);
* ``quick_threads_speedup``: wall time of ``info --json --quick --threads 1`` on 200,000
  files over the same with ``--threads 2``, each less the start-up (the wall time of the
  command on one file), the files' pages in memory (target >= 1.6 on two cores);
  ``quick_threads_speedup_whole``: the same ratio of the whole commands, start-up included;
* ``open_scan_max_stall_ms_100k``: the window (offscreen) opens the 100,000-file dataset and
  its inspector scans every file; the longest the event loop went without running a 5 ms
  heartbeat (``benchmarks.inspector.Heartbeat``) from the open to the end of the scan and a
  switch to the Sizes tab (target <= 50).

``load_before`` / ``load_after``: the one-minute load average around the run (the machine may
be shared: figures taken under load say so).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import available_cores
from benchmarks.datasets import CACHE

ROOT = Path(__file__).resolve().parents[1]
DISTINCT_FILES = 64


def _grid(count: int) -> tuple[int, int, int]:
    """A box of files holding ``count`` (x 50, y 40, z the rest)."""
    nz = count // (50 * 40)
    assert nz * 50 * 40 == count
    return 50, 40, nz


def _files_dataset(count: int) -> Path:
    """``count`` one-block WKW files (hard links of ``DISTINCT_FILES`` distinct ones)."""
    from viewer.format import wkw
    from viewer.format.wkw import writer

    root = CACHE / f"scale-files{count // 1000}k"
    if (root / ".complete").exists():
        return root
    header = wkw.Header(np.uint8, block_len=8, file_len=1, block_type=wkw.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(root), header)
    seeds = root / ".seeds"
    seeds.mkdir(exist_ok=True)
    rng = np.random.default_rng(34)
    sources = []
    for n in range(DISTINCT_FILES):
        path = seeds / f"{n}.wkw"
        writer.write_file(str(path), header, rng.integers(0, 40, (1, 8, 8, 8), dtype=np.uint8))
        sources.append(path)
    nx, ny, nz = _grid(count)
    n = 0
    for z in range(nz):
        for y in range(ny):
            for x in range(nx):
                target = Path(ds.file_path(x, y, z))
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.exists():
                    os.link(sources[n % DISTINCT_FILES], target)
                n += 1
    ds.close()
    (root / ".complete").write_text("ok\n")
    return root


def _chunks_dataset(files: int) -> Path:
    """``files`` WKW files of 32^3 blocks each (hard links of 4 distinct ones)."""
    from viewer.format import wkw
    from viewer.format.wkw import writer

    chunks = files * 32 ** 3
    name = "1m" if chunks >= 1 << 20 else f"{chunks // 1000}k"
    root = CACHE / f"scale-chunks{name}"
    if (root / ".complete").exists():
        return root
    header = wkw.Header(np.uint8, block_len=8, file_len=32, block_type=wkw.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(root), header)
    seeds = root / ".seeds"
    seeds.mkdir(exist_ok=True)
    rng = np.random.default_rng(35)
    sources = []
    for n in range(4):
        path = seeds / f"{n}.wkw"
        writer.write_file(str(path), header,
                          rng.integers(0, 40, (1, 256, 256, 256), dtype=np.uint8))
        sources.append(path)
    shape = {4: (2, 2, 1), 32: (4, 4, 2)}[files]
    n = 0
    for z in range(shape[2]):
        for y in range(shape[1]):
            for x in range(shape[0]):
                target = Path(ds.file_path(x, y, z))
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.exists():
                    os.link(sources[n % len(sources)], target)
                n += 1
    ds.close()
    (root / ".complete").write_text("ok\n")
    return root


def _one_file_dataset() -> Path:
    """The files dataset's header and one of its files: the start-up cost of a command."""
    import shutil

    src = _files_dataset(20_000)
    root = CACHE / "scale-files1"
    if (root / ".complete").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "header.wkw", root / "header.wkw")
    (root / "z0" / "y0").mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "z0" / "y0" / "x0.wkw", root / "z0" / "y0" / "x0.wkw")
    (root / ".complete").write_text("ok\n")
    return root


#: Runs a command and prints its wall time, CPU time and peak RSS as JSON.  A process's peak
#: RSS counts that of the process it was spawned from (Linux keeps it across ``exec``), so the
#: command is spawned from this small process, not from the benchmark (hundreds of MB).
_LAUNCHER = """
import json, os, subprocess, sys, time
began = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"wall": time.perf_counter() - began, "cpu": usage.ru_utime + usage.ru_stime,
                  "rss_mb": usage.ru_maxrss / 1024, "code": os.waitstatus_to_exitcode(status)}))
"""


def run_command(*args: str) -> dict[str, float]:
    """Run ``python -m viewer ARGS``; its wall time (s), CPU time (s) and peak RSS (MB)."""
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, "-m", "viewer",
                           *args], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"{args}: {proc.stderr[-2000:]}")
    found: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    if found.pop("code") not in (0, 1):
        raise RuntimeError(f"{args}: {proc.stderr[-2000:]}")
    return found


def _warm(root: Path) -> None:
    """Read every file once (their pages in memory: the disk out of the figures)."""
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as fh:
                fh.read()


def measure_memory() -> dict[str, float]:
    f20, f200 = _files_dataset(20_000), _files_dataset(200_000)
    c131, c1m = _chunks_dataset(4), _chunks_dataset(32)
    return {
        "info_rss_mb_20k": run_command("info", "--quick", str(f20))["rss_mb"],
        "info_rss_mb_200k": run_command("info", "--quick", str(f200))["rss_mb"],
        "chunks_json_rss_mb_131k":
            run_command("info", "--json", "--chunks", "--quick", str(c131))["rss_mb"],
        "chunks_json_rss_mb_1m":
            run_command("info", "--json", "--chunks", "--quick", str(c1m))["rss_mb"],
    }


def measure_quick(rounds: int = 3) -> dict[str, float]:
    """CPU per file on 20,000 files; the speed-up of two workers on 200,000 files, net of
    the start-up (the wall time of the same command on one file, taken off both runs: what
    ``--threads`` can speed up is the check of the files, not the imports)."""
    f20, f200, one = _files_dataset(20_000), _files_dataset(200_000), _one_file_dataset()
    _warm(f20)
    base = [run_command("info", "--json", "--quick", "--threads", "1", str(one))
            for _ in range(rounds)]
    single = [run_command("info", "--json", "--quick", "--threads", "1", str(f20))
              for _ in range(rounds)]
    cpu = min(r["cpu"] for r in single) - min(r["cpu"] for r in base)
    _warm(f200)
    start = min(r["wall"] for r in base)
    walls: dict[str, list[float]] = {"1": [], "2": []}
    for _ in range(rounds):  # alternating, so that a change of load hits both alike
        for threads in ("1", "2"):
            walls[threads].append(run_command("info", "--json", "--quick", "--threads",
                                              threads, str(f200))["wall"])
    one_thread, two = min(walls["1"]), min(walls["2"])
    return {"quick_cpu_us_per_file": cpu / 20_000 * 1e6,
            "quick_threads_speedup": (one_thread - start) / max(two - start, 1e-9),
            "quick_threads_speedup_whole": one_thread / two,
            "quick_wall_s_200k_threads_1": one_thread, "quick_wall_s_200k_threads_2": two,
            "start_wall_s": start}


def measure_window() -> dict[str, float]:
    """The window's longest event-loop stall opening and scanning 100,000 files (run in a
    child process: it imports Qt)."""
    root = _files_dataset(100_000)
    _warm(root)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.scale_window", str(root)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return {k: v for k, v in got.items() if k not in ("load_before", "load_after", "cores")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--skip-window", action="store_true")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    figures.update(measure_memory())
    figures.update(measure_quick())
    if not args.skip_window:
        figures.update(measure_window())
    figures["load_after"] = os.getloadavg()[0]
    figures["cores"] = available_cores()
    figures = {k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}
    if args.json:
        print(json.dumps(figures))
        return 0
    targets = {
        "info_rss_mb_200k": f"<= {1.1 * figures['info_rss_mb_20k']:.1f} (1.1 x 20k)",
        "chunks_json_rss_mb_1m": f"<= {1.2 * figures['chunks_json_rss_mb_131k']:.1f} "
                                 f"(1.2 x 131k)",
        "open_scan_max_stall_ms_100k": "<= 50",
        "quick_cpu_us_per_file": "<= 50",
        "quick_threads_speedup": ">= 1.6",
    }
    for key, value in figures.items():
        print(f"{key:32} {value:>10}  {targets.get(key, '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
