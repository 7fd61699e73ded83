"""Many files, many chunks: the same voxels stored in few large or many small storage units.

``python -m benchmarks.many_files [--json] [--rounds N]``

The datasets (built once into ``benchmarks/.cache/``): EM-like uint8 voxels (the 512^3
``em512_lz4hc_f16`` benchmark volume, tiled with period 512), LZ4 (default level), 32^3 blocks,
stored as

* ``one``: 640^3 voxels in 512^3-voxel files (``file_len`` 16: 8 files, the first one holds
  512^3 of the 640^3);
* ``f64``: the same 640^3 voxels in 64^3-voxel files (1,000 files);
* ``f32``: 32^3-voxel files, one block per file (how N5 and Zarr v2 store every chunk):
  100 x 100 x 10 = 100,000 files (3200 x 3200 x 320 voxels), whose first 640 x 640 x 320
  are the same voxels as the others'.

Measured in the real window (offscreen, 1280 x 860, zoom 1, background loading), every data
file's pages in memory (warm), datasets taken in turn round after round (A/B alternating):

* ``far_jump_ratio_1000_files`` / ``far_jump_ratio_100000_files``: the time from a far cursor
  jump (every decoded block dropped from the block cache first) to the three views complete,
  median over the jumps, over the same on ``one``;
* ``extent_view_ratio_1000_files``: zoomed out to the whole 640^3 extent, block cache
  emptied, until the views are complete, ``f64`` over ``one``;
* ``listing_ratio_vs_scandir``: listing the 100,000 files' unit positions and their box as the
  window's extent scan does (``viewer.core.extent.scan_bounds``) over a bare recursive
  ``os.scandir`` walk of the same folders (names only);
* ``worker_cpu_us_per_block``: the loader workers' CPU time (their threads' CPU clocks) per
  block they read during the far jumps on ``f32`` (every block its own file: the worst case);
* ``decode_us_per_block``: liblz4 alone decoding the same blocks' stored bytes (one thread).

Targets: far jump <= 1.5 (1,000 files), <= 3 (100,000); whole extent <= 1.5;
listing <= 3; worker CPU per block <= 2 x the decode.  Two shared cores: the spread over the
rounds is printed with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WKW_VIEWER_NO_SETTINGS", "1")

import contextlib

import numpy as np  # noqa: E402

from benchmarks import load_average, with_load
from benchmarks.datasets import CACHE, em_dataset  # noqa: E402

SOURCE = "em512_lz4hc_f16"
PERIOD = 512
BLOCK = 32
WINDOW = (1280, 860)
ROUNDS = 5
JUMPS = 6
TIMEOUT_S = 120.0
#: name -> (file_len in blocks, shape in voxels)
DATASETS: dict[str, tuple[int, tuple[int, int, int]]] = {
    "one": (16, (640, 640, 640)),
    "f64": (2, (640, 640, 640)),
    "f32": (1, (3200, 3200, 320)),
}
#: Jump targets inside the 640 x 640 x 320 part every dataset holds (far apart: no block of
#: one screen is on the next).
TARGETS = [(150, 140, 90), (500, 480, 250), (470, 130, 60), (160, 510, 280)]


# -- the datasets -------------------------------------------------------------------------------
def _source_blocks() -> dict[tuple[int, int, int], bytes]:
    """The raw bytes (on-disk order) of every 32^3 block of the 512^3 source volume."""
    from viewer.format import wkw
    from viewer.format.wkw import writer

    src = em_dataset(SOURCE, (PERIOD, PERIOD, PERIOD), file_len=16)
    with wkw.Dataset.open(str(src)) as ds:
        data = ds.read((0, 0, 0), (PERIOD, PERIOD, PERIOD))
    n = PERIOD // BLOCK
    out = {}
    for z in range(n):
        for y in range(n):
            for x in range(n):
                sub = data[:, x * BLOCK:(x + 1) * BLOCK, y * BLOCK:(y + 1) * BLOCK,
                           z * BLOCK:(z + 1) * BLOCK]
                out[(x, y, z)] = writer.block_bytes_of(sub)
    return out


def dataset(name: str) -> Path:
    """The dataset ``name`` (see ``DATASETS``), built on first use."""
    from viewer.format import wkw
    from viewer.format.wkw import lz4block, morton, writer

    root = CACHE / f"many-{name}"
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    file_len, shape = DATASETS[name]
    started = time.perf_counter()
    raw = _source_blocks()
    n = PERIOD // BLOCK
    encoded: dict[tuple[int, int, int], bytes] = {}

    def block(gx: int, gy: int, gz: int) -> bytes:
        key = (gx % n, gy % n, gz % n)
        got = encoded.get(key)
        if got is None:
            got = encoded[key] = lz4block.encode(raw[key], high_compression=False)
        return got

    header = wkw.Header(wkw.VOXEL_TYPES[1], block_len=BLOCK, file_len=file_len,
                        block_type=wkw.BLOCK_TYPE_LZ4)
    wkw.Dataset.create(str(root), header)
    grid = [s // (BLOCK * file_len) + (s % (BLOCK * file_len) > 0) for s in shape]
    nb = [s // BLOCK for s in shape]
    idx = np.arange(file_len ** 3, dtype=np.int64)
    lx, ly, lz = (a.tolist() for a in morton.decode(idx))
    total = grid[0] * grid[1] * grid[2]
    done = 0
    empty = lz4block.encode(bytes(BLOCK ** 3), high_compression=False)
    for fz in range(grid[2]):
        os.makedirs(root / f"z{fz}", exist_ok=True)
        for fy in range(grid[1]):
            folder = root / f"z{fz}" / f"y{fy}"
            os.makedirs(folder, exist_ok=True)
            for fx in range(grid[0]):
                blocks = []
                for a, b, c in zip(lx, ly, lz, strict=True):
                    g = (fx * file_len + a, fy * file_len + b, fz * file_len + c)
                    inside = g[0] < nb[0] and g[1] < nb[1] and g[2] < nb[2]
                    blocks.append(block(*g) if inside else empty)
                parts = writer.assemble_compressed(header, blocks)
                with open(folder / f"x{fx}.wkw", "wb") as fh:
                    for p in parts:
                        fh.write(p)
                done += 1
                if done % 5000 == 0 or done == total:
                    print(f"\rbuilding many-{name}: file {done}/{total} "
                          f"({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    (root / ".complete").write_text("ok\n")
    return root


def read_all_files(root: Path) -> None:
    """Every data file's pages into the page cache (warm)."""
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".wkw"):
                with open(os.path.join(dirpath, name), "rb") as fh:
                    while fh.read(1 << 22):
                        pass


# -- the window ---------------------------------------------------------------------------------
class Session:
    """The window of one run (GUI thread)."""

    def __init__(self) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QApplication

        from viewer.core.state import ViewerState
        from viewer.ui.main_window import QtMainWindow

        self.app = QApplication.instance() or QApplication(["many-files-benchmark"])
        self.state = ViewerState()
        self.window = QtMainWindow(self.state)
        self.loading = self.window.add_background_loading()
        self.window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
        self.window.resize(*WINDOW)
        self.window.show()
        self.app.processEvents()

    def views(self) -> list[Any]:
        return [v for v in self.window.views.values() if v.isVisible()]

    def shown(self) -> bool:
        if not self.window.planes_complete():
            return False
        for view in self.views():
            want = view.wanted_request()
            if want is None or view.plane is None or view.request != want:
                return False
        return True

    def wait_shown(self, began: float) -> float:
        while not self.shown():
            self.app.processEvents()
            if time.perf_counter() - began > TIMEOUT_S:
                raise SystemExit(f"the views were not complete after {TIMEOUT_S:.0f} s")
            time.sleep(0.0002)
        return time.perf_counter() - began

    def source(self) -> Any:
        return self.window.source

    def settle(self) -> None:
        self.wait_shown(time.perf_counter())
        src = self.source()
        if hasattr(src, "wait_idle") and not src.wait_idle(TIMEOUT_S):
            raise SystemExit("the loaders did not go idle")
        self.app.processEvents()

    def open(self, root: Path, pos: tuple[int, int, int]) -> None:
        if not self.window.open_path(str(root), pos=pos, zoom=1.0):
            raise SystemExit(f"cannot open {root}: {self.window.errors}")
        scan = self.window.opening.scan
        began = time.perf_counter()
        while scan is not None and not scan.done:  # the whole extent known (listing ended)
            self.app.processEvents()
            time.sleep(0.001)
            if time.perf_counter() - began > TIMEOUT_S:
                raise SystemExit("the extent scan did not end")
        self.app.processEvents()
        self.settle()

    def worker_cpu(self) -> float:
        """CPU seconds the loader workers used so far (their threads' CPU clocks)."""
        total = 0.0
        for t in self.source().threads:
            if t.ident is None or not t.is_alive():
                continue
            with contextlib.suppress(OSError):
                total += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        return total

    def jump(self, pos: tuple[int, int, int]) -> dict[str, float]:
        """A far jump with every decoded block dropped: seconds to complete, blocks read and
        worker CPU seconds (until idle, prefetch held back excluded: see below)."""
        source = self.source()
        source.cache.clear()
        before = source.stats()
        cpu0 = self.worker_cpu()
        began = time.perf_counter()
        self.state.set_cursor(pos)
        elapsed = self.wait_shown(began)
        after = source.stats()
        cpu1 = self.worker_cpu()
        self.settle()  # prefetch runs after the screen: not timed, not counted
        return {"ms": elapsed * 1e3, "blocks": after.blocks_read - before.blocks_read,
                "cpu_s": cpu1 - cpu0}

    def whole_extent(self) -> float:
        source = self.source()
        self.settle()
        source.cache.clear()
        began = time.perf_counter()
        self.state.set_zoom(self.window.fit_zoom(self.state.bounds))
        self.state.recenter()
        elapsed = self.wait_shown(began)
        self.settle()
        self.state.set_zoom(1.0)
        self.settle()
        return elapsed * 1e3

    def close(self) -> None:
        self.window.close()
        self.app.processEvents()


# -- listing and decoding -----------------------------------------------------------------------
def scandir_walk(root: str) -> int:
    """A bare recursive ``os.scandir`` walk (names only): the number of files."""
    count = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    count += 1
    return count


def listing(root: Path) -> tuple[float, float, int]:
    """(seconds of the extent scan's listing, seconds of a bare scandir walk, units found)."""
    from viewer.core.extent import scan_bounds
    from viewer.format import open_volume

    with open_volume(str(root)) as volume:
        t0 = time.perf_counter()
        units = sum(1 for _ in volume.iter_units())
        t1 = time.perf_counter()
        scan_bounds(volume)
        t2 = time.perf_counter()
    t3 = time.perf_counter()
    files = scandir_walk(str(root))
    t4 = time.perf_counter()
    if files < units:
        raise SystemExit(f"scandir found {files} files, the listing {units}")
    return max(t2 - t1, t1 - t0), t4 - t3, units


def decode_us_per_block(root: Path) -> float:
    """liblz4 alone: microseconds per block decoding the stored bytes of the blocks of a
    640 x 640 x 32 slab (one thread, buffers allocated beforehand)."""
    from viewer.format.wkw import lz4block
    from viewer.format.wkw.dataset import Dataset

    stored: list[bytes] = []
    with Dataset.open(str(root)) as ds:
        for fy in range(0, 640 // (BLOCK * ds.header.file_len)):
            for fx in range(0, 640 // (BLOCK * ds.header.file_len)):
                f = ds.get_file(fx, fy, 0)
                assert f is not None
                n = f.header.num_blocks
                for _, _, raw in f._fetch(np.arange(min(n, 64), dtype=np.int64)):
                    assert not isinstance(raw, Exception)
                    stored.append(bytes(raw))
    bb = BLOCK ** 3
    keep = [np.frombuffer(s, np.uint8) for s in stored]
    src = [a.ctypes.data for a in keep]
    sizes = [len(s) for s in stored]
    dst_arrays = [np.empty(bb, np.uint8) for _ in stored]
    dst = [a.ctypes.data for a in dst_arrays]
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        lz4block.decode_many(src, sizes, dst, [bb] * len(src), bb)
        best = min(best, time.perf_counter() - t0)
    return best / len(src) * 1e6


# -- the run ------------------------------------------------------------------------------------
def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{min(values):.1f}..{max(values):.1f}"


def run(rounds: int, jumps: int) -> dict[str, Any]:
    roots = {name: dataset(name) for name in DATASETS}
    for root in roots.values():
        read_all_files(root)
    lst, bare, units = [], [], 0
    for _ in range(3):
        a, b, units = listing(roots["f32"])
        lst.append(a)
        bare.append(b)
    session = Session()
    jumps_ms: dict[str, list[float]] = {n: [] for n in DATASETS}
    extent_ms: dict[str, list[float]] = {"one": [], "f64": []}
    cpu: dict[str, list[float]] = {n: [] for n in DATASETS}
    blocks: dict[str, list[int]] = {n: [] for n in DATASETS}
    names = list(DATASETS)
    try:
        for r in range(rounds):
            order = names if r % 2 == 0 else names[::-1]
            for name in order:
                session.open(roots[name], TARGETS[-1])
                for j in range(jumps):
                    got = session.jump(TARGETS[j % len(TARGETS)])
                    jumps_ms[name].append(got["ms"])
                    cpu[name].append(got["cpu_s"])
                    blocks[name].append(int(got["blocks"]))
                if name in extent_ms:
                    extent_ms[name].append(session.whole_extent())
            print(f"\rround {r + 1}/{rounds}", end="", file=sys.stderr)
        print(file=sys.stderr)
    finally:
        session.close()
    med = {n: statistics.median(v) for n, v in jumps_ms.items()}
    ext = {n: statistics.median(v) for n, v in extent_ms.items()}
    cpu_us = {n: sum(cpu[n]) / max(1, sum(blocks[n])) * 1e6 for n in names}
    decode_us = decode_us_per_block(roots["one"])

    def ratios(name: str) -> list[float]:  # per round: this dataset's median over one's
        out = []
        for r in range(rounds):
            a = jumps_ms[name][r * jumps:(r + 1) * jumps]
            b = jumps_ms["one"][r * jumps:(r + 1) * jumps]
            out.append(statistics.median(a) / statistics.median(b))
        return out

    ext_ratios = [a / b for a, b in zip(extent_ms["f64"], extent_ms["one"], strict=True)]
    return {
        "far_jump_ratio_1000_files": round(med["f64"] / med["one"], 3),
        "far_jump_ratio_100000_files": round(med["f32"] / med["one"], 3),
        "extent_view_ratio_1000_files": round(ext["f64"] / ext["one"], 3),
        "listing_ratio_vs_scandir": round(statistics.median(lst) / statistics.median(bare), 3),
        "worker_cpu_us_per_block": round(cpu_us["f32"], 2),
        "decode_us_per_block": round(decode_us, 2),
        "detail": {
            "rounds": rounds, "jumps_per_round": jumps, "units_100000": units,
            "far_jump_ms_median": {n: round(v, 1) for n, v in med.items()},
            "far_jump_ms_spread": {n: spread(v) for n, v in jumps_ms.items()},
            "far_jump_ratio_per_round": {n: [round(x, 2) for x in ratios(n)]
                                         for n in ("f64", "f32")},
            "extent_view_ms_median": {n: round(v, 1) for n, v in ext.items()},
            "extent_view_ms": {n: [round(x, 1) for x in v] for n, v in extent_ms.items()},
            "extent_view_ratio_per_round": [round(x, 2) for x in ext_ratios],
            "blocks_per_jump": {n: statistics.median(v) for n, v in blocks.items()},
            "worker_cpu_us_per_block": {n: round(v, 2) for n, v in cpu_us.items()},
            "listing_s": [round(x, 4) for x in lst],
            "scandir_s": [round(x, 4) for x in bare],
        },
    }


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--jumps", type=int, default=JUMPS)
    args = parser.parse_args(argv)
    figures = run(max(1, args.rounds), max(1, args.jumps))
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
        return 0
    targets = {"far_jump_ratio_1000_files": "<= 1.5", "far_jump_ratio_100000_files": "<= 3",
               "extent_view_ratio_1000_files": "<= 1.5", "listing_ratio_vs_scandir": "<= 3",
               "worker_cpu_us_per_block": f"<= {2 * figures['decode_us_per_block']:.1f}",
               "decode_us_per_block": ""}
    print(f"{'figure':32} {'value':>10}  target")
    for key, target in targets.items():
        print(f"{key:32} {figures[key]:>10}  {target}")
    print(json.dumps(figures["detail"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
