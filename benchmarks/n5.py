"""Ours vs tensorstore on an N5 dataset, in one run.

A 512^3 uint8 EM-like dataset (``viewer.core.synthetic.EMVolume``), gzip, 64^3 chunks, written
once by tensorstore into ``benchmarks/.cache/``.  Two reads: an XY plane (512 x 512 x 1: the 64
chunks it cuts) and the full 512^3 read.  The two sides take turns, round after round (order
alternating), each round opening the dataset afresh (``open_volume(path).read`` for ours,
``tensorstore.open(...)`` and a read for tensorstore, whose chunk cache is off by default); the
plane moves every round, the same for both.  The figure per read is the ratio ours/tensorstore
of the median times (``*_min_ratio``: of the best rounds).  The machine is shared, so run it a
few times and look at the spread.

Then one chunk per file: the loader's worker CPU per chunk on an N5 dataset of
20,480 chunk files of 32^3, against tensorstore and the bare decode (``chunk_files_*`` keys;
``--chunk-files-only`` runs this part alone).  The same on Zarr v2: ``benchmarks.zarr``.

    python -m benchmarks.n5            # a table
    python -m benchmarks.n5 --json     # {"xy_ratio_vs_tensorstore",
                                       #  "full_ratio_vs_tensorstore",
                                       #  "chunk_files_loader_cpu_us_per_chunk", ...}
    python -m benchmarks.n5 --chunk-files-only --jumps 12

One chunk per file, in detail (N5 here, Zarr v2 for ``benchmarks.zarr``).  The dataset:
1024 x 1024 x 640 uint8 EM-like voxels (``viewer.core.synthetic.EMVolume``, a 256^3 cube
tiled) in 32^3 chunks, blosc-lz4 (level 5, no shuffle), 20,480 chunk files, written by
tensorstore once into ``benchmarks/.cache/`` as N5 and as Zarr v2 (``.zarray``, ``.``
separator), every file read once beforehand (warm page cache).

A *jump*: a fresh ``Loader`` (no prefetch, empty cache, so no unit is known yet: a far jump)
asked for the three planes of a 1024 x 860 screen at a new cursor (XY 1024 x 860, XZ
1024 x 640, YZ 860 x 640; about 2,000 chunks), until idle.  Figures per chunk read, under
``chunk_files_`` keys:

* ``loader_cpu_us_per_chunk``: the workers' CPU time (their threads' CPU clocks, as
  ``benchmarks.many_files`` measures it) with ``small_units`` as the volume sets it (on: one
  ``read_units`` call per batch, each chunk file read once, nothing kept);
* ``loader_cpu_us_per_chunk_kept_units``: the same jumps with ``small_units`` turned off on
  the volume, the way every N5 and Zarr v2 chunk was read before (``open_unit``: a ``stat``, a
  unit object kept; then ``read_chunks``); ``small_over_kept``: their ratio;
* ``tensorstore_cpu_us_per_chunk``: the process's CPU time while tensorstore reads the same
  chunks (the planes' chunk-aligned slabs, one ``read`` each, its chunk cache off);
* ``decode_us_per_chunk``: numcodecs' blosc alone decoding the stored chunks (one thread);
* ``listing_ratio_vs_scandir``: the extent scan's listing of the chunk files over a bare
  ``os.scandir`` walk (as ``benchmarks.many_files`` measures WKW's; the target is <= 3).

The three sides take turns jump by jump (order alternating).  Two shared cores: give the load
average (``chunk_files_detail``) with the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import CoreMeter, load_average, with_load
from benchmarks.datasets import CACHE
from viewer.core.synthetic import EMVolume
from viewer.format import open_volume

SIDE = 512
CHUNK = 64
#: Targets (ours / tensorstore, at most).
TARGETS = {"xy": 0.8, "full": 0.8}


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
    busy: dict[str, dict[str, float]] = {}
    for op, n in rounds.items():
        ours(path, op, 0)
        theirs(path, op, 0)  # warm the page cache and both libraries
        mine: list[float] = []
        ref: list[float] = []
        meter = CoreMeter()
        for k in range(n):
            pair = [(mine, "ours", lambda op=op, k=k: ours(path, op, k)),
                    (ref, "tensorstore", lambda op=op, k=k: theirs(path, op, k))]
            if k % 2:
                pair.reverse()
            for bucket, side, fn in pair:
                bucket.append(meter.time(side, fn)[0])
        busy[op] = meter.busy()
        m, r = statistics.median(mine), statistics.median(ref)
        out[f"{op}_ours_s"] = round(m, 5)
        out[f"{op}_tensorstore_s"] = round(r, 5)
        out[f"{op}_ratio_vs_tensorstore"] = round(m / r, 3)
        out[f"{op}_min_ratio"] = round(min(mine) / min(ref), 3)
    out["cores_busy"] = busy
    return out


# -- one chunk per file -----------------------------------------------------------------
CF_SHAPE = (1024, 1024, 640)
CF_CHUNK = 32
CF_TILE = 256
CF_SCREEN = (1024, 860, 640)  # XY 1024 x 860, XZ 1024 x 640, YZ 860 x 640
#: Cursors of the jumps (x, y, z): each screen's planes cross the volume at other chunks.
CF_CURSORS = [(100, 900, 40), (900, 130, 600), (420, 610, 300), (650, 300, 170),
           (230, 50, 480), (770, 740, 90)]
CF_BLOSC_N5 = {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0}
CF_BLOSC_ZARR = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}


# -- the datasets -------------------------------------------------------------------------------
def _spec(fmt: str, root: Path) -> dict[str, Any]:
    kv = {"driver": "file", "path": str(root)}
    if fmt == "n5":
        return {"driver": "n5", "kvstore": kv}
    return {"driver": "zarr", "kvstore": kv}


def chunk_file_dataset(fmt: str) -> Path:
    """The N5 (``"n5"``) or Zarr v2 (``"zarr2"``) dataset, built on first use."""
    import tensorstore as ts

    from viewer.core.synthetic import EMVolume

    root = CACHE / f"chunk-files-{fmt}-1024x1024x640"
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    spec = _spec(fmt, root)
    if fmt == "n5":
        spec["metadata"] = {"dimensions": list(CF_SHAPE), "blockSize": [CF_CHUNK] * 3,
                            "dataType": "uint8", "compression": CF_BLOSC_N5}
    else:  # zarr v2 in (z, y, x) order, as zarr-python writes it: x varies fastest
        spec["metadata"] = {"shape": list(CF_SHAPE[::-1]), "chunks": [CF_CHUNK] * 3, "dtype": "|u1",
                            "compressor": CF_BLOSC_ZARR, "fill_value": 0, "order": "C"}
    t = ts.open({**spec, "create": True, "delete_existing": True}).result()
    tile = np.asarray(EMVolume(5).em((0, 0, 0), (CF_TILE,) * 3), dtype=np.uint8)
    started = time.perf_counter()
    slab = np.empty((CF_SHAPE[0], CF_SHAPE[1], CF_TILE), np.uint8)
    for x in range(0, CF_SHAPE[0], CF_TILE):
        for y in range(0, CF_SHAPE[1], CF_TILE):
            slab[x:x + CF_TILE, y:y + CF_TILE] = np.roll(tile, (x // 7, y // 5), axis=(1, 2))
    for z in range(0, CF_SHAPE[2], CF_TILE):
        part = slab[:, :, :min(CF_TILE, CF_SHAPE[2] - z)]
        if fmt == "n5":
            t[:, :, z:z + part.shape[2]] = part
        else:
            t[z:z + part.shape[2]] = part.transpose(2, 1, 0)
        print(f"\rbuilding {root.name}: z {z + part.shape[2]}/{CF_SHAPE[2]} "
              f"({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    (root / ".complete").write_text("ok\n")
    return root


def warm(root: Path) -> int:
    """Every chunk file's pages into the page cache; the number of files."""
    count = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as fh:
                while fh.read(1 << 20):
                    pass
            count += 1
    return count


# -- the loader ---------------------------------------------------------------------------------
def _planes(cursor: tuple[int, int, int]) -> list[Any]:
    from viewer.core.slicing import XY, XZ, YZ, PlaneRequest

    x, y, z = cursor
    w, h, d = CF_SCREEN
    return [PlaneRequest(XY, z, (0, 0), (w, h)), PlaneRequest(XZ, y, (0, 0), (w, d)),
            PlaneRequest(YZ, x, (0, 0), (h, d))]


def _thread_cpu(threads: list[Any]) -> dict[int, float]:
    out: dict[int, float] = {}
    for t in threads:
        if t.ident is None or not t.is_alive():
            continue
        with contextlib.suppress(OSError):
            out[t.ident] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
    return out


def loader_jump(root: Path, cursor: tuple[int, int, int], small: bool) -> tuple[float, int]:
    """A far jump through a fresh loader: (worker CPU seconds, chunks read)."""
    from viewer.core.loader import Loader
    from viewer.format import open_volume

    volume = open_volume(root)
    if not small:
        volume.small_units = False  # the kept-units way, as before the small-units path
    loader = Loader(volume, prefetch_enabled=False)
    try:
        before = _thread_cpu(loader.threads)
        loader.set_wanted(_planes(cursor), 0, cursor)
        if not loader.wait_idle(120):
            raise SystemExit("the loader did not go idle")
        after = _thread_cpu(loader.threads)
        blocks = loader.stats().blocks_read
    finally:
        loader.close()
    cpu = sum(v - before.get(k, 0.0) for k, v in after.items())
    return cpu, blocks


def _slabs(cursor: tuple[int, int, int]) -> list[tuple[slice, slice, slice]]:
    """The chunk-aligned (x, y, z) boxes of a screen's three planes."""
    x, y, z = (c // CF_CHUNK * CF_CHUNK for c in cursor)
    w, h, d = CF_SCREEN
    up = lambda n: -(-n // CF_CHUNK) * CF_CHUNK  # noqa: E731 - a one-line helper
    return [(slice(0, up(w)), slice(0, up(h)), slice(z, z + CF_CHUNK)),
            (slice(0, up(w)), slice(y, y + CF_CHUNK), slice(0, up(d))),
            (slice(x, x + CF_CHUNK), slice(0, up(h)), slice(0, up(d)))]


def tensorstore_jump(fmt: str, root: Path, cursor: tuple[int, int, int]) -> tuple[float, int]:
    """tensorstore reading the chunks of the same screen: (process CPU seconds, chunks)."""
    import tensorstore as ts

    t = ts.open(_spec(fmt, root), read=True).result()
    cpu0 = time.process_time()
    chunks = set()
    for sx, sy, sz in _slabs(cursor):
        sx = slice(sx.start, min(sx.stop, CF_SHAPE[0]))
        sy = slice(sy.start, min(sy.stop, CF_SHAPE[1]))
        sz = slice(sz.start, min(sz.stop, CF_SHAPE[2]))
        if fmt == "n5":
            t[sx, sy, sz].read().result()
        else:
            t[sz, sy, sx].read().result()
        for i in range(sx.start // CF_CHUNK, -(-sx.stop // CF_CHUNK)):
            for j in range(sy.start // CF_CHUNK, -(-sy.stop // CF_CHUNK)):
                for k in range(sz.start // CF_CHUNK, -(-sz.stop // CF_CHUNK)):
                    chunks.add((i, j, k))
    return time.process_time() - cpu0, len(chunks)


def decode_us_per_chunk(fmt: str, root: Path, count: int = 2000) -> float:
    """numcodecs' blosc alone decoding ``count`` stored chunks (one thread, best of 5)."""
    from numcodecs import blosc

    payloads: list[bytes] = []
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if name.startswith(".") or name == "attributes.json":
                continue
            with open(os.path.join(dirpath, name), "rb") as fh:
                raw = fh.read()
            payloads.append(raw[16:] if fmt == "n5" else raw)  # an N5 3-D header: 16 bytes
            if len(payloads) >= count:
                break
        if len(payloads) >= count:
            break
    dest = [np.empty(CF_CHUNK ** 3, np.uint8) for _ in payloads]
    old = blosc.use_threads
    blosc.use_threads = False
    try:
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for p, d in zip(payloads, dest, strict=True):
                blosc.decompress(p, d)
            best = min(best, time.perf_counter() - t0)
    finally:
        blosc.use_threads = old
    return best / len(payloads) * 1e6


# -- the run ------------------------------------------------------------------------------------
def run_format(fmt: str, jumps: int) -> dict[str, Any]:
    root = chunk_file_dataset(fmt)
    files = warm(root)
    for small in (True, False):  # warm both ways and the libraries
        loader_jump(root, CF_CURSORS[0], small)
    cpu: dict[str, list[float]] = {"small": [], "kept": [], "tensorstore": []}
    chunks: dict[str, list[int]] = {"small": [], "kept": [], "tensorstore": []}
    tensorstore_jump(fmt, root, CF_CURSORS[0])
    for j in range(jumps):
        cursor = CF_CURSORS[j % len(CF_CURSORS)]
        order = ["small", "kept", "tensorstore"]
        if j % 2:
            order = order[::-1]
        for side in order:
            if side == "tensorstore":
                c, n = tensorstore_jump(fmt, root, cursor)
            else:
                c, n = loader_jump(root, cursor, side == "small")
            cpu[side].append(c)
            chunks[side].append(n)
    per = {s: [c / max(1, n) * 1e6 for c, n in zip(cpu[s], chunks[s], strict=True)]
           for s in cpu}
    total = {s: sum(cpu[s]) / max(1, sum(chunks[s])) * 1e6 for s in cpu}
    decode = decode_us_per_chunk(fmt, root)
    listing = listing_ratio(root)
    return {
        "loader_cpu_us_per_chunk": round(total["small"], 2),
        "loader_cpu_us_per_chunk_kept_units": round(total["kept"], 2),
        "small_over_kept": round(total["small"] / total["kept"], 3),
        "tensorstore_cpu_us_per_chunk": round(total["tensorstore"], 2),
        "decode_us_per_chunk": round(decode, 2),
        "listing_ratio_vs_scandir": round(listing, 3),
        "detail": {"files": files, "jumps": jumps,
                   "chunks_per_jump": statistics.median(chunks["small"]),
                   "per_jump_us": {s: [round(v, 1) for v in per[s]] for s in per},
                   "load_average": [round(v, 2) for v in os.getloadavg()]},
    }


def listing_ratio(root: Path, rounds: int = 5) -> float:
    """The extent scan's listing of the chunk files (``viewer.core.extent.scan_bounds``) over
    a bare recursive ``os.scandir`` walk of the same folders, median of ``rounds``."""
    from benchmarks.many_files import scandir_walk
    from viewer.core.extent import scan_bounds
    from viewer.format import open_volume

    ratios = []
    with open_volume(str(root)) as volume:
        for _ in range(rounds):
            t0 = time.perf_counter()
            scan_bounds(volume)
            t1 = time.perf_counter()
            scandir_walk(str(root))
            ratios.append((t1 - t0) / (time.perf_counter() - t1))
    return statistics.median(ratios)


def chunk_file_figures(fmt: str, jumps: int = 12) -> dict[str, Any]:
    """``run_format``'s figures under ``chunk_files_`` keys (``benchmarks.zarr`` takes the
    Zarr v2 ones from here)."""
    got = run_format(fmt, jumps)
    return {f"chunk_files_{k}": v for k, v in got.items()}


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rounds per read (default: 41 for the plane, 7 for the full read)")
    parser.add_argument("--jumps", type=int, default=12,
                        help="far jumps per side of the one-chunk-per-file figures")
    parser.add_argument("--chunk-files-only", action="store_true",
                        help="only the one-chunk-per-file figures")
    args = parser.parse_args(argv)
    rounds = {"xy": args.rounds or 41, "full": args.rounds or 7}
    result = {} if args.chunk_files_only else run(rounds)
    result.update(chunk_file_figures("n5", args.jumps))
    if args.json:
        print(json.dumps(with_load(result, load_before)))
        return 0
    for op in ("xy", "full") if not args.chunk_files_only else ():
        print(f"{op:5s} ours {result[f'{op}_ours_s'] * 1e3:8.1f} ms  tensorstore "
              f"{result[f'{op}_tensorstore_s'] * 1e3:8.1f} ms  ratio "
              f"{result[f'{op}_ratio_vs_tensorstore']:.3f} (best rounds "
              f"{result[f'{op}_min_ratio']:.3f}, target <= {TARGETS[op]})")
    print(f"chunk files: loader CPU per chunk {result['chunk_files_loader_cpu_us_per_chunk']} us "
          f"(kept units: {result['chunk_files_loader_cpu_us_per_chunk_kept_units']} us; "
          f"tensorstore {result['chunk_files_tensorstore_cpu_us_per_chunk']} us; bare decode "
          f"{result['chunk_files_decode_us_per_chunk']} us; listing "
          f"{result['chunk_files_listing_ratio_vs_scandir']}x os.scandir; load "
          f"{result['chunk_files_detail']['load_average']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
