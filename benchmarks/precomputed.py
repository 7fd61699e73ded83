"""Ours vs tensorstore on Neuroglancer precomputed volumes, in one run.

Two volumes of 512^3 voxels in chunks of 64^3, sharded (``neuroglancer_uint64_sharded_v1``,
murmurhash3_x86_128, preshift 3, 8 minishards in each of 8 shards, gzip minishard indexes),
written by tensorstore once into ``benchmarks/.cache``:

* ``raw``: uint8 EM-like data (``viewer.core.synthetic.EMVolume``), raw chunks;
* ``cseg``: uint64 segment ids (the same synthetic cells, ids spread over 64 bits),
  compressed_segmentation in blocks of 8^3, gzip chunk data (as igneous writes segmentations).

Reads per volume: an XY plane (512^2 at one z), a 64^3 box off the chunk grid and the whole
volume, at a new position every round, the same for both sides.  Each side opens the volume
once and then reads; the sides take turns round after round (the order alternating), so they
share the machine's load.  Figures are the ratios ours / tensorstore of the medians, per
operation over both volumes (the median of the two volumes' ratios; each volume's own ratios
are in ``detail``), with the 1-minute load average before and after.

    python -m benchmarks.precomputed            # a table
    python -m benchmarks.precomputed --json     # {"xy_ratio_vs_tensorstore",
                                                #  "box64_ratio_vs_tensorstore",
                                                #  "full_ratio_vs_tensorstore", ...}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import CoreMeter, available_cores
from benchmarks.datasets import CACHE

SIDE = 512
CHUNK = 64
SHARDING = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 3,
            "hash": "murmurhash3_x86_128", "minishard_bits": 3, "shard_bits": 3,
            "minishard_index_encoding": "gzip", "data_encoding": "raw"}
#: Targets (ours / tensorstore, at most).
TARGETS = {"xy_ratio_vs_tensorstore": 1.0, "box64_ratio_vs_tensorstore": 1.5,
           "full_ratio_vs_tensorstore": 1.2}
OPS = ("xy", "box64", "full")


def _spec(path: Path) -> dict[str, Any]:
    return {"driver": "neuroglancer_precomputed",
            "kvstore": {"driver": "file", "path": str(path) + "/"}}


def build(kind: str) -> Path:
    """The benchmark volume ``raw`` or ``cseg`` (built once)."""
    root = CACHE / f"precomputed_{kind}_{SIDE}"
    if (root / ".complete").exists():
        return root
    import tensorstore as ts

    from viewer.core.synthetic import EMVolume

    if root.exists():
        shutil.rmtree(root)
    dtype = "uint8" if kind == "raw" else "uint64"
    scale: dict[str, Any] = {"size": [SIDE] * 3, "chunk_size": [CHUNK] * 3,
                             "resolution": [8, 8, 8], "voxel_offset": [0, 0, 0],
                             "sharding": dict(SHARDING)}
    if kind == "raw":
        scale["encoding"] = "raw"
    else:
        scale["encoding"] = "compressed_segmentation"
        scale["compressed_segmentation_block_size"] = [8, 8, 8]
        scale["sharding"]["data_encoding"] = "gzip"
    spec = dict(_spec(root), create=True, scale_metadata=scale,
                multiscale_metadata={"type": "image" if kind == "raw" else "segmentation",
                                     "data_type": dtype, "num_channels": 1})
    arr = ts.open(spec).result()
    volume = EMVolume(5)
    data = np.zeros((SIDE, SIDE, SIDE, 1), dtype)
    step = 256
    for z in range(0, SIDE, step):
        for y in range(0, SIDE, step):
            for x in range(0, SIDE, step):
                box = ((x, y, z), (step,) * 3)
                if kind == "raw":
                    data[x:x + step, y:y + step, z:z + step, 0] = volume.em(*box)
                else:
                    ids = volume.segmentation(*box).astype(np.uint64)
                    data[x:x + step, y:y + step, z:z + step, 0] = \
                        ids * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(1)
        print(f"\rbuilding {root.name}: z {z + step}/{SIDE}", end="", file=sys.stderr)
    print(file=sys.stderr)
    arr.write(data).result()
    (root / ".complete").write_text("ok\n")
    return root


def _box(op: str, k: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    if op == "xy":
        return (0, 0, (37 + 97 * k) % SIDE), (SIDE, SIDE, 1)
    if op == "full":
        return (0, 0, 0), (SIDE, SIDE, SIDE)
    corner = ((11 + 53 * k) % (SIDE - 64), (23 + 71 * k) % (SIDE - 64),
              (5 + 89 * k) % (SIDE - 64))
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

        self.a = ts.open(dict(_spec(path), context={"cache_pool": {"total_bytes_limit": 0}}),
                         read=True).result()

    def read(self, off: tuple[int, int, int], size: tuple[int, int, int]) -> Any:
        x, y, z = off
        return self.a[x:x + size[0], y:y + size[1], z:z + size[2], 0].read(
            order="F").result()


def run(rounds: int, full_rounds: int) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    detail: dict[str, Any] = {}
    ratios: dict[str, list[float]] = {op: [] for op in OPS}
    for kind in ("raw", "cseg"):
        path = build(kind)
        sides: list[Any] = [Ours(path), TensorStore(path)]
        times: dict[tuple[str, str], list[float]] = {}
        meter = CoreMeter()
        for op in ("xy", "box64"):
            for side in sides:  # warm: open costs, shard indexes, page cache
                side.read(*_box(op, 0))
        for k in range(1, rounds + 1):
            for op in OPS:
                if op == "full" and k > full_rounds:
                    continue
                off, size = _box(op, k)
                order = sides if k % 2 else sides[::-1]
                results = []
                for side in order:
                    t, out = meter.time(side.name,
                                        lambda s=side, off=off, size=size: s.read(off, size))
                    times.setdefault((side.name, op), []).append(t)
                    results.append(np.asarray(out))
                if not np.array_equal(results[0], results[1]):
                    raise AssertionError(f"{kind}: the sides disagree on {op} at {off}")
                del results
        med = {key: statistics.median(v) for key, v in times.items()}
        per: dict[str, Any] = {}
        for op in OPS:
            r = med[("ours", op)] / med[("tensorstore", op)]
            ratios[op].append(r)
            per[f"{op}_ratio"] = round(r, 3)
            per[f"{op}_ms"] = {s: round(med[(s, op)] * 1e3, 2) for s in ("ours", "tensorstore")}
        per["cores_busy"] = meter.busy()
        detail[kind] = per
        for side in sides:
            if isinstance(side, Ours):
                side.v.close()
    out: dict[str, Any] = {f"{op}_ratio_vs_tensorstore": round(statistics.median(r), 3)
                           for op, r in ratios.items()}
    out["load_before"] = round(load_before, 2)
    out["load_after"] = round(os.getloadavg()[0], 2)
    out["cores"] = available_cores()
    out["detail"] = detail
    out["rounds"] = rounds
    out["full_rounds"] = full_rounds
    out["targets"] = TARGETS
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.precomputed")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--full-rounds", type=int, default=5)
    args = p.parse_args(argv)
    out = run(args.rounds, args.full_rounds)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"load average (1 min): {out['load_before']} before, {out['load_after']} after")
    for kind, per in out["detail"].items():
        for op in OPS:
            ms = per[f"{op}_ms"]
            print(f"{kind:5} {op:6} ours {ms['ours']:9.2f} ms  tensorstore "
                  f"{ms['tensorstore']:9.2f} ms  ratio {per[f'{op}_ratio']:.3f}")
    for key, target in TARGETS.items():
        print(f"{key}: {out[key]:.3f} (target <= {target})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
