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

Then one chunk per file (how, in ``benchmarks.n5``): the loader's worker CPU per
chunk on a Zarr v2 array of 20,480 chunk files of 32^3, against tensorstore and the bare decode
(``chunk_files_*`` keys; ``--chunk-files-only`` runs this part alone).

And the listing of those chunk files in the three key layouts (the extent scan's
listing at most 3x a bare ``os.scandir`` walk): the flat v2 keys (``z.y.x``) of that array, the
same files as nested v2 keys (``z/y/x``) and as a v3 array (``c/z/y/x``, blosc codec), both
copied once from the flat one beside it in the cache.  ``listing_ratio_vs_scandir_*`` keys:
the median over rounds of the extent scan's time over the bare walk's, the layouts taking
turns round after round; ``--listing-only`` runs this part alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import CoreMeter, load_average, with_load
from benchmarks.datasets import CACHE

SHAPE = (1024, 1024, 256)
SHARD = 1024
CHUNK = 32
#: Targets (ours / peer, at most).
TARGETS = {"xy_ratio_vs_tensorstore": 0.8, "box64_ratio_vs_tensorstore": 1.5,
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


def chunk_file_layouts() -> dict[str, Path]:
    """The 20,480 chunk files of ``benchmarks.n5``'s Zarr v2 array in the three key layouts
    (``v2_flat`` is that array; ``v2_nested`` and ``v3`` are copies, made on first use)."""
    import shutil

    from benchmarks.n5 import CF_CHUNK, CF_SHAPE, chunk_file_dataset

    flat = chunk_file_dataset("zarr2")
    out = {"v2_flat": flat}
    for layout in ("v2_nested", "v3"):
        root = flat.parent / f"{flat.name}-{layout.replace('_', '-')}"
        out[layout] = root
        if (root / ".complete").exists():
            continue
        if root.exists():
            shutil.rmtree(root)
        root.mkdir()
        chunks = root if layout == "v2_nested" else root / "c"
        for entry in os.scandir(flat):
            parts = entry.name.split(".")
            if len(parts) != 3 or not all(p.isdigit() for p in parts):
                continue
            dest = chunks.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(entry.path, dest)
        if layout == "v2_nested":
            meta = json.loads((flat / ".zarray").read_text())
            meta["dimension_separator"] = "/"
            (root / ".zarray").write_text(json.dumps(meta))
        else:
            meta = {"zarr_format": 3, "node_type": "array", "shape": list(CF_SHAPE[::-1]),
                    "data_type": "uint8", "fill_value": 0,
                    "chunk_grid": {"name": "regular",
                                   "configuration": {"chunk_shape": [CF_CHUNK] * 3}},
                    "chunk_key_encoding": {"name": "default",
                                           "configuration": {"separator": "/"}},
                    "codecs": [{"name": "bytes"},
                               {"name": "blosc", "configuration": {
                                   "cname": "lz4", "clevel": 5, "shuffle": "noshuffle",
                                   "typesize": 1, "blocksize": 0}}],
                    "attributes": {}}
            (root / "zarr.json").write_text(json.dumps(meta))
        (root / ".complete").write_text("ok\n")
    return out


def listing_figures(rounds: int = 9) -> dict[str, Any]:
    """Per layout of ``chunk_file_layouts`` the extent scan's listing
    (``viewer.core.extent.scan_bounds``) over a bare recursive ``os.scandir`` walk of the same
    folder, median of ``rounds`` (the layouts take turns, the walk right after each scan)."""
    from benchmarks.many_files import scandir_walk
    from viewer.core.extent import scan_bounds
    from viewer.format import open_volume

    layouts = chunk_file_layouts()
    volumes = {name: open_volume(str(root)) for name, root in layouts.items()}
    ratios: dict[str, list[float]] = {name: [] for name in layouts}
    ms: dict[str, list[float]] = {name: [] for name in layouts}
    try:
        for name, volume in volumes.items():  # warm: the folders' entries, the code
            if scan_bounds(volume) is None:
                raise AssertionError(f"no chunk found in {layouts[name]}")
            scandir_walk(str(layouts[name]))
        for k in range(rounds):
            names = list(layouts)
            names = names[k % 3:] + names[:k % 3]
            for name in names:
                t0 = time.perf_counter()
                scan_bounds(volumes[name])
                t1 = time.perf_counter()
                scandir_walk(str(layouts[name]))
                t2 = time.perf_counter()
                ratios[name].append((t1 - t0) / (t2 - t1))
                ms[name].append((t1 - t0) * 1e3)
    finally:
        for volume in volumes.values():
            volume.close()
    out: dict[str, Any] = {f"listing_ratio_vs_scandir_{name}": round(statistics.median(r), 3)
                           for name, r in ratios.items()}
    out["listing_detail"] = {
        "scan_ms": {name: round(statistics.median(v), 2) for name, v in ms.items()},
        "rounds": rounds, "load_average": [round(v, 2) for v in os.getloadavg()]}
    return out


def run(rounds: int, zarr_rounds: int) -> dict[str, Any]:
    path = build()
    sides: list[Any] = [Ours(path), TensorStore(path), ZarrPython(path)]
    times: dict[tuple[str, str], list[float]] = {}
    meter = CoreMeter()
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
                t, out = meter.time(side.name,
                                    lambda s=side, off=off, size=size: s.read(off, size))
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
        "cores_busy": meter.busy(),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
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
    parser.add_argument("--listing-only", action="store_true",
                        help="only the listing figures (v2 flat, v2 nested, v3)")
    parser.add_argument("--listing-rounds", type=int, default=9)
    args = parser.parse_args(argv)
    from benchmarks.n5 import chunk_file_figures

    if args.listing_only:
        listing = listing_figures(args.listing_rounds)
        if args.json:
            print(json.dumps(with_load(listing, load_before)))
        else:
            _print_listing(listing)
        return 0
    result = {} if args.chunk_files_only else run(args.rounds, args.zarr_rounds)
    result.update(chunk_file_figures("zarr2", args.jumps))
    result.update(listing_figures(args.listing_rounds))
    if args.json:
        print(json.dumps(with_load(result, load_before)))
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
    _print_listing(result)
    return 0


def _print_listing(result: dict[str, Any]) -> None:
    detail = result["listing_detail"]
    for name, ms in detail["scan_ms"].items():
        print(f"listing {name:10s} {result[f'listing_ratio_vs_scandir_{name}']:6.3f}x os.scandir "
              f"({ms:.1f} ms)")
    print(f"  load average {detail['load_average']}, {detail['rounds']} rounds")


if __name__ == "__main__":
    sys.exit(main())
