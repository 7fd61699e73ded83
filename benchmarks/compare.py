"""Benchmark: comparing two equal 1024^3 uint8 EM-like datasets.

Baseline: read both datasets file by file with the reference ``wkw`` package and compare each
pair with ``numpy.array_equal``.  Measured against ``viewer.core.compare.compare`` (2 workers)
in one run, for two pairs:

- same encoding: LZ4HC against a byte-identical copy (``ratio_same_encoding``, target <= 0.3)
- raw against LZ4HC of the same voxels (``ratio_raw_vs_lz4hc``, target <= 0.7)

The datasets (files of 256^3 voxels: file_len 8, block_len 32) are built once into
benchmarks/.cache/: the LZ4HC one from EM-like synthetic data, its copy with copytree, the raw
twin by re-encoding the LZ4HC files.  Each timing is the best of ``--repeat`` runs with a warm
page cache.  ``python -m benchmarks.compare [--json] [--repeat N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import numpy as np

from benchmarks import load_average, with_load
from benchmarks.datasets import CACHE, em_dataset
from viewer.core.compare import compare
from viewer.format import wkw
from viewer.format.wkw import writer

SHAPE = (1024, 1024, 1024)
FILE_LEN = 8


def _twin(name: str, make: Callable[[Path, Path], None], src: Path) -> Path:
    root = CACHE / name
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    print(f"building {name} from {src.name}", file=sys.stderr)
    make(src, root)
    (root / ".complete").write_text("ok\n")
    return root


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".complete"))


def _to_raw(src: Path, dst: Path) -> None:
    with wkw.Dataset.open(str(src)) as ds:
        header = ds.header.replace(block_type=wkw.BLOCK_TYPE_RAW)
        wkw.Dataset.create(str(dst), header).close()
        for path in ds.list_files():
            rel = os.path.relpath(path, src)
            writer.compress_file(path, str(dst / rel), ds.header, block_type=wkw.BLOCK_TYPE_RAW)


def datasets() -> tuple[Path, Path, Path]:
    lz4hc = em_dataset("cmp_lz4hc", SHAPE, file_len=FILE_LEN)
    copy = _twin("cmp_lz4hc_copy", _copy, lz4hc)
    raw = _twin("cmp_raw", _to_raw, lz4hc)
    return lz4hc, copy, raw


def _warm(root: Path) -> None:
    """Read every file once so that both contenders start from a warm page cache."""
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as fh:
                while fh.read(16 << 20):
                    pass


def reference_compare(a: Path, b: Path) -> bool:
    """Read both with the reference wkw, file by file, and numpy.array_equal each pair."""
    import wkw as ref

    equal = True
    with wkw.Dataset.open(str(a)) as mine:
        side = mine.header.file_len_vx
        positions = sorted({mine.file_position(p) for p in mine.list_files()})
    with ref.Dataset.open(str(a)) as ra, ref.Dataset.open(str(b)) as rb:
        for fx, fy, fz in positions:
            offset = (fx * side, fy * side, fz * side)
            va = ra.read(offset, (side, side, side))
            vb = rb.read(offset, (side, side, side))
            equal &= bool(np.array_equal(va, vb))
            del va, vb
    return equal


def _best(fn: Callable[[], bool], repeat: int) -> tuple[float, bool]:
    best = float("inf")
    result = False
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def run(repeat: int = 2, table: TextIO = sys.stdout) -> dict[str, float]:
    lz4hc, copy, raw = datasets()
    for root in (lz4hc, copy, raw):
        _warm(root)
    figures: dict[str, float] = {}
    rows = []
    for key, label, a, b in (("ratio_same_encoding", "LZ4HC vs identical copy", lz4hc, copy),
                             ("ratio_raw_vs_lz4hc", "raw vs LZ4HC", raw, lz4hc)):
        t_ref, ref_equal = _best(lambda a=a, b=b: reference_compare(a, b), repeat)
        t_ours, ours_equal = _best(lambda a=a, b=b: compare(a, b).equal, repeat)
        if not (ref_equal and ours_equal):
            raise SystemExit(f"{label}: expected equal datasets (reference {ref_equal}, "
                             f"ours {ours_equal})")
        figures[key] = round(t_ours / t_ref, 3)
        rows.append((label, t_ref, t_ours, t_ours / t_ref))
    print(f"{'pair (1024^3 uint8)':28} {'wkw+array_equal':>16} {'compare':>9} {'ratio':>7}",
          file=table)
    for label, t_ref, t_ours, ratio in rows:
        print(f"{label:28} {t_ref:15.2f}s {t_ours:8.2f}s {ratio:7.3f}", file=table)
    return figures


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    p = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__)
    p.add_argument("--json", action="store_true", help="print one JSON object of the figures")
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args(argv)
    figures = run(args.repeat, sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
    else:
        for key, value in figures.items():
            target = 0.3 if key == "ratio_same_encoding" else 0.7
            print(f"{key}: {value:.3f} (target <= {target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
