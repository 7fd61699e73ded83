"""Ours vs tensorstore and zarr-python on a sharded zarr3 array as webKnossos writes it, in one
run.

The array: 1024 x 1024 x 256 uint8 EM-like data (``viewer.core.synthetic.EMVolume``), shape
``[1, 1024, 1024, 256]`` (``c, x, y, z``), one shard of 1024^3 voxels (so the whole array is
in one shard, whose index has 32^3 entries), 32^3 inner chunks, codecs transpose
``[3, 2, 1, 0]``, bytes, zstd level 5 with checksum, index bytes + crc32c at the end (the
layout of FORMAT-NOTES.md), written with tensorstore once into ``benchmarks/.cache``.

Reads: an XY plane (1024^2 at one z) and a 64^3 box, at a new position every round, the same
for every side.  Each side opens the array once (as a viewer keeps it open) and then reads;
the sides take turns round after round (interleaved, the order rotating), so they share the
machine's load.  Figures are the median per side and the ratios ours / peer of the medians
(measured in the same run, so fair on a busy machine while the absolute times are not); the
ratios of the best rounds are printed too.

    python -m benchmarks.zarr            # a table
    python -m benchmarks.zarr --json     # {"xy_ratio_vs_tensorstore", "box64_ratio_vs_tensorstore",
                                         #  "xy_ratio_vs_zarr_python", ...}
    python -m benchmarks.zarr --rounds 31

Then one chunk per file (issue 20; how, in ``benchmarks.n5``): the loader's worker CPU per
chunk on a Zarr v2 array of 20,480 chunk files of 32^3, against tensorstore and the bare decode
(``chunk_files_*`` keys; ``--chunk-files-only`` runs this part alone).
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

SHAPE = (1024, 1024, 256)
SHARD = 1024
CHUNK = 32
#: Targets (ours / peer, at most) from issue 14.
TARGETS = {"xy_ratio_vs_tensorstore": 1.0, "box64_ratio_vs_tensorstore": 1.5,
           "xy_ratio_vs_zarr_python": 0.3}


def build() -> Path:
    """The benchmark array (built once)."""
    root = CACHE / "zarr3_wk_1024x1024x256"
    if (root / ".complete").exists():
        return root
    import shutil

    import tensorstore as ts

    from viewer.core.synthetic import EMVolume

    if root.exists():
        shutil.rmtree(root)
    import importlib.util

    spec = importlib.util.spec_from_file_location(  # the test fixtures' layout, one source
        "zarr_test_fixtures", Path(__file__).resolve().parents[1] / "tests" / "zarr" /
        "fixtures.py")
    assert spec is not None and spec.loader is not None
    fixtures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixtures)
    meta = fixtures.webknossos_zarr3_metadata((1, *SHAPE), "uint8", SHARD, CHUNK)
    arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(root)},
                   "metadata": meta, "create": True, "delete_existing": True}).result()
    volume = EMVolume(3)
    data = np.zeros((1, *SHAPE), np.uint8)
    step = 256
    started = time.perf_counter()
    for z in range(0, SHAPE[2], step):
        for y in range(0, SHAPE[1], step):
            for x in range(0, SHAPE[0], step):
                data[0, x:x + step, y:y + step, z:z + step] = volume.em((x, y, z), (step,) * 3)
        print(f"\rbuilding {root.name}: z {z + step}/{SHAPE[2]} "
              f"({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    arr.write(data).result()
    (root / ".complete").write_text("ok\n")
    return root


def _box(op: str, k: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    if op == "xy":
        return (0, 0, (37 + 97 * k) % SHAPE[2]), (SHAPE[0], SHAPE[1], 1)
    corner = ((11 + 53 * k) % (SHAPE[0] - 64), (23 + 71 * k) % (SHAPE[1] - 64),
              (5 + 89 * k) % (SHAPE[2] - 64))
    return corner, (64, 64, 64)


class Ours:
    name = "ours"

    def __init__(self, path: Path) -> None:
        from viewer.format import open_volume

        self.v = open_volume(path)

    def read(self, off: tuple[int, int, int], size: tuple[int, int, int]) -> Any:
        return self.v.read(off, size)[0]


class TensorStore:
    name = "tensorstore"

    def __init__(self, path: Path) -> None:
        import tensorstore as ts

        self.a = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}},
                         read=True).result()

    def read(self, off: tuple[int, int, int], size: tuple[int, int, int]) -> Any:
        x, y, z = off
        return self.a[0, x:x + size[0], y:y + size[1], z:z + size[2]].read().result()


class ZarrPython:
    name = "zarr_python"

    def __init__(self, path: Path) -> None:
        import zarr

        self.a = zarr.open_array(str(path), mode="r")

    def read(self, off: tuple[int, int, int], size: tuple[int, int, int]) -> Any:
        x, y, z = off
        return self.a[0, x:x + size[0], y:y + size[1], z:z + size[2]]


def _time(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(rounds: int, zarr_rounds: int) -> dict[str, Any]:
    path = build()
    sides: list[Any] = [Ours(path), TensorStore(path), ZarrPython(path)]
    times: dict[tuple[str, str], list[float]] = {}
    for op in ("xy", "box64"):
        for side in sides:  # warm up: open costs, index read, page cache
            side.read(*_box(op, 0))
    for k in range(1, rounds + 1):
        for op in ("xy", "box64"):
            off, size = _box(op, k)
            order = sides[k % 3:] + sides[:k % 3]
            results = []
            for side in order:
                if side.name == "zarr_python" and (op != "xy" or k > zarr_rounds):
                    continue
                t, out = _time(lambda s=side, off=off, size=size: s.read(off, size))
                times.setdefault((side.name, op), []).append(t)
                results.append(np.asarray(out))
            for r in results[1:]:
                if not np.array_equal(r, results[0]):
                    raise AssertionError(f"sides disagree on {op} at {off}")
    med = {key: statistics.median(v) for key, v in times.items()}
    best = {key: min(v) for key, v in times.items()}
    out: dict[str, Any] = {
        "xy_ratio_vs_tensorstore": med[("ours", "xy")] / med[("tensorstore", "xy")],
        "box64_ratio_vs_tensorstore": med[("ours", "box64")] / med[("tensorstore", "box64")],
        "xy_ratio_vs_zarr_python": med[("ours", "xy")] / med[("zarr_python", "xy")],
        "xy_min_ratio_vs_tensorstore": best[("ours", "xy")] / best[("tensorstore", "xy")],
        "box64_min_ratio_vs_tensorstore": best[("ours", "box64")]
        / best[("tensorstore", "box64")],
        "xy_min_ratio_vs_zarr_python": best[("ours", "xy")] / best[("zarr_python", "xy")],
        "rounds": rounds,
        "ms": {f"{name}_{op}": round(v * 1e3, 2) for (name, op), v in sorted(med.items())},
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.zarr", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--zarr-rounds", type=int, default=7,
                        help="rounds in which zarr-python reads too (it is slow)")
    parser.add_argument("--jumps", type=int, default=12,
                        help="far jumps per side of the one-chunk-per-file figures")
    parser.add_argument("--chunk-files-only", action="store_true",
                        help="only the one-chunk-per-file figures (Zarr v2)")
    args = parser.parse_args(argv)
    from benchmarks.n5 import chunk_file_figures

    result = {} if args.chunk_files_only else run(args.rounds, args.zarr_rounds)
    result.update(chunk_file_figures("zarr2", args.jumps))
    if args.json:
        print(json.dumps(result))
        return 0
    for key, target in TARGETS.items() if not args.chunk_files_only else ():
        v = result[key]
        print(f"{key:30s} {v:6.3f}  (target <= {target}, best rounds "
              f"{result[key.replace('_ratio', '_min_ratio')]:.3f})")
    for key, ms in result.get("ms", {}).items():
        print(f"  {key:24s} {ms:8.2f} ms (median)")
    print(f"chunk files (zarr v2): loader CPU per chunk "
          f"{result['chunk_files_loader_cpu_us_per_chunk']} us (kept units: "
          f"{result['chunk_files_loader_cpu_us_per_chunk_kept_units']} us; tensorstore "
          f"{result['chunk_files_tensorstore_cpu_us_per_chunk']} us; bare decode "
          f"{result['chunk_files_decode_us_per_chunk']} us; listing "
          f"{result['chunk_files_listing_ratio_vs_scandir']}x os.scandir; load "
          f"{result['chunk_files_detail']['load_average']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
