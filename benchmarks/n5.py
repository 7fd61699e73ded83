"""Ours vs tensorstore on an N5 dataset, in one run.

A 512^3 uint8 EM-like dataset (``viewer.core.synthetic.EMVolume``), gzip, 64^3 chunks, written
once by tensorstore into ``benchmarks/.cache/``.  Two reads: an XY plane (512 x 512 x 1: the 64
chunks it cuts) and the full 512^3 read.  The two sides take turns, round after round (order
alternating), each round opening the dataset afresh (``open_volume(path).read`` for ours,
``tensorstore.open(...)`` and a read for tensorstore, whose chunk cache is off by default); the
plane moves every round, the same for both.  The figure per read is the ratio ours/tensorstore
of the median times (``*_min_ratio``: of the best rounds).  The machine is shared, so run it a
few times and look at the spread.

    python -m benchmarks.n5            # a table
    python -m benchmarks.n5 --json     # {"xy_ratio_vs_tensorstore",
                                       #  "full_ratio_vs_tensorstore", ...}
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.datasets import CACHE
from viewer.core.synthetic import EMVolume
from viewer.format import open_volume

SIDE = 512
CHUNK = 64
#: Targets (ours / tensorstore, at most) from issue 13.
TARGETS = {"xy": 1.0, "full": 1.2}


def dataset() -> Path:
    """The benchmark dataset, built on first use."""
    import tensorstore as ts

    root = CACHE / "n5-em-512-gzip"
    if (root / ".complete").exists():
        return root
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(root)},
                 "metadata": {"dimensions": [SIDE] * 3, "blockSize": [CHUNK] * 3,
                              "dataType": "uint8", "compression": {"type": "gzip"}},
                 "create": True, "delete_existing": True}).result()
    volume = EMVolume(1)
    step = 128
    for z in range(0, SIDE, step):
        for y in range(0, SIDE, step):
            for x in range(0, SIDE, step):
                data = volume.em((x, y, z), (step,) * 3)
                t[x:x + step, y:y + step, z:z + step] = np.asarray(data, dtype=np.uint8)
        print(f"\rbuilding {root.name}: z {z + step}/{SIDE}", end="", file=sys.stderr)
    print(file=sys.stderr)
    (root / ".complete").write_text("ok\n")
    return root


def _box(op: str, k: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    if op == "xy":
        return (0, 0, (37 + 97 * k) % SIDE), (SIDE, SIDE, 1)
    return (0, 0, 0), (SIDE, SIDE, SIDE)


def ours(path: Path, op: str, k: int) -> Any:
    off, shape = _box(op, k)
    v = open_volume(path)
    try:
        return v.read(off, shape)
    finally:
        v.close()


def theirs(path: Path, op: str, k: int) -> Any:
    import tensorstore as ts

    off, shape = _box(op, k)
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}).result()
    sl = tuple(slice(o, o + s) for o, s in zip(off, shape, strict=True))
    return t[sl].read().result()


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(rounds: dict[str, int]) -> dict[str, Any]:
    path = dataset()
    # the same voxels on both sides, checked once
    a, b = ours(path, "xy", 3), theirs(path, "xy", 3)
    if not np.array_equal(a[0], b):
        raise SystemExit("ours and tensorstore disagree on the plane")
    out: dict[str, Any] = {}
    for op, n in rounds.items():
        ours(path, op, 0)
        theirs(path, op, 0)  # warm the page cache and both libraries
        mine: list[float] = []
        ref: list[float] = []
        for k in range(n):
            pair = [(mine, lambda op=op, k=k: ours(path, op, k)),
                    (ref, lambda op=op, k=k: theirs(path, op, k))]
            if k % 2:
                pair.reverse()
            for bucket, fn in pair:
                bucket.append(_time(fn))
        m, r = statistics.median(mine), statistics.median(ref)
        out[f"{op}_ours_s"] = round(m, 5)
        out[f"{op}_tensorstore_s"] = round(r, 5)
        out[f"{op}_ratio_vs_tensorstore"] = round(m / r, 3)
        out[f"{op}_min_ratio"] = round(min(mine) / min(ref), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rounds per read (default: 41 for the plane, 7 for the full read)")
    args = parser.parse_args(argv)
    rounds = {"xy": args.rounds or 41, "full": args.rounds or 7}
    result = run(rounds)
    if args.json:
        print(json.dumps(result))
        return 0
    for op in ("xy", "full"):
        print(f"{op:5s} ours {result[f'{op}_ours_s'] * 1e3:8.1f} ms  tensorstore "
              f"{result[f'{op}_tensorstore_s'] * 1e3:8.1f} ms  ratio "
              f"{result[f'{op}_ratio_vs_tensorstore']:.3f} (best rounds "
              f"{result[f'{op}_min_ratio']:.3f}, target <= {TARGETS[op]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
