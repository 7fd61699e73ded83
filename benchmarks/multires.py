"""Multi-resolution benchmark: zoomed out to a whole 3-mag webKnossos dataset, cold.

``python -m benchmarks.multires [--json] [--rounds N]``

The dataset (built once into ``benchmarks/.cache/``): a webKnossos dataset with one color layer,
uint8 EM-like data (``viewer.core.synthetic.EMVolume``), 1024 x 1024 x 256 voxels at mag 1, mags
1, 2-2-1 and 4-4-2 (the coarse ones downsampled from mag 1 by the project's writer), LZ4HC, 32^3
blocks, 256^3-voxel files, voxel size 11.24 x 11.24 x 28 nm.

The measurement runs in the real window (offscreen, 1280 x 860, background loading).  Each round
opens the dataset anew (a new source with an empty block cache) at the largest zoom, centred on
the middle, waits until that tiny screen is loaded and the loaders are idle, then drops every
decoded block from the shared cache and the data files from the page cache
(``posix_fadvise(POSIX_FADV_DONTNEED)``), and zooms out to the whole extent
(``state.set_zoom(window.fit_zoom(bounds))`` and ``recenter``).  Timed: from that zoom change to
``window.planes_complete()`` (events processed in small sleeps).  (The few blocks the opening
screen read stay mapped by its loaders and so in the page cache: a handful of the ~600 blocks the
zoomed-out screen reads; the cache hits of the round are reported and are 0.)  Figures:

* ``zoomed_out_complete_ms``: the median over the rounds (target <= 100);
* ``decoded_bytes_over_needed``: the bytes the loaders decoded between the zoom change and the
  moment the views were complete, over ``layered.decoded_needed_bytes`` of the views' requests
  (the whole blocks of the chosen mag the three planes touch; target <= 2); the median over the
  rounds;
* for context, ``zoomed_out_complete_ms_pages_cached``: the same zoom-out with the block cache
  emptied but the data files' pages in memory (read once just before: as after browsing them);
* for context, the same with the layer's mag locked to 1 (``state.set_layer(name,
  mag_lock=(1, 1, 1))``): ``mag1_complete_ms`` and ``mag1_decoded_mb``; and ``chosen_mag``, the
  mag the zoomed-out XY view read.
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

from benchmarks import load_average, with_load
from benchmarks.datasets import CACHE, em_file_data  # noqa: E402

NAME = "multires-1024x1024x256"
SHAPE = (1024, 1024, 256)
MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
LAYER = "color"
VOXEL_SIZE = (11.24, 11.24, 28.0)
BLOCK_LEN = 32
FILE_LEN = 8  # blocks per file side: 256^3-voxel files
SEED = 1
WINDOW = (1280, 860)
ROUNDS = 9
TIMEOUT_S = 60.0
#: The zoom each round opens at: the views show a few voxels, so opening reads next to nothing.
OPEN_ZOOM = 64.0
MIB = 1 << 20


# -- the dataset --------------------------------------------------------------------------------
def dataset() -> Path:
    """The benchmark's webKnossos dataset, built on first use (a ``.complete`` marker says the
    build finished; an interrupted one is redone)."""
    root = CACHE / NAME
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos import BoundingBox
    from viewer.format.webknossos.downsample import downsample_layer, run_parallel
    from viewer.format.webknossos.writer import LayerSpec, create_dataset

    started = time.perf_counter()
    spec = LayerSpec(LAYER, BoundingBox((0, 0, 0), SHAPE), "color", "uint8", MAGS,
                     block_len=BLOCK_LEN, file_len=FILE_LEN)
    wk = create_dataset(root, [spec], voxel_size=VOXEL_SIZE)
    try:
        layer = wk.layer(LAYER)
        mag1 = layer.mag((1, 1, 1))
        side = BLOCK_LEN * FILE_LEN
        volume = EMVolume(SEED)
        files = [(fx, fy, fz) for fz in range(-(-SHAPE[2] // side))
                 for fy in range(-(-SHAPE[1] // side)) for fx in range(-(-SHAPE[0] // side))]
        done = [0]

        def one_file(f: tuple[int, int, int]) -> None:
            origin = (f[0] * side, f[1] * side, f[2] * side)
            size = (min(side, SHAPE[0] - origin[0]), min(side, SHAPE[1] - origin[1]),
                    min(side, SHAPE[2] - origin[2]))
            mag1.write(origin, em_file_data(volume, origin, side, size))
            done[0] += 1
            print(f"\rbuilding {NAME}: mag 1 file {done[0]}/{len(files)} "
                  f"({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)

        run_parallel(one_file, files, 2)
        print(f"\rbuilding {NAME}: downsampling to 2-2-1 and 4-4-2 "
              f"({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)
        downsample_layer(layer, workers=2)
    finally:
        wk.close()
    print(f"\rbuilding {NAME}: done in {time.perf_counter() - started:.0f} s" + " " * 20,
          file=sys.stderr)
    (root / ".complete").write_text("ok\n")
    return root


def evict_page_cache(root: Path) -> None:
    for path in sorted(root.rglob("*.wkw")):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# -- the measurement ----------------------------------------------------------------------------
def read_all_files(root: Path) -> None:
    """Read every data file once, so that its pages are in the page cache."""
    for path in root.rglob("*.wkw"):
        with open(path, "rb") as fh:
            while fh.read(1 << 22):
                pass


def mag_text(mag: Any) -> str:
    m = tuple(int(v) for v in mag)
    return str(m[0]) if len(set(m)) == 1 else "-".join(map(str, m))


class Session:
    """The window and the helpers of one benchmark run (GUI thread)."""

    def __init__(self, root: Path) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QApplication

        from viewer.core.state import ViewerState
        from viewer.ui.main_window import QtMainWindow

        self.root = root
        self.app = QApplication.instance() or QApplication(["multires-benchmark"])
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
        """Every visible view shows the plane it wants now, all of it at its chosen mag."""
        if not self.window.planes_complete():
            return False
        for view in self.views():
            want = view.wanted_request()
            if want is None or view.plane is None or view.request != want:
                return False
        return True

    def wait_shown(self, began: float) -> float:
        """Process events in small sleeps until ``shown``; the seconds since ``began``."""
        while not self.shown():
            self.app.processEvents()
            if time.perf_counter() - began > TIMEOUT_S:
                raise SystemExit(f"the views were not complete after {TIMEOUT_S:.0f} s")
            time.sleep(0.0005)
        return time.perf_counter() - began

    def source(self) -> Any:
        """The window's ``LayeredSource`` (its loaders share one block cache)."""
        source = self.window.source
        if source is None or getattr(source, "cache", None) is None \
                or not hasattr(source, "layers"):
            raise SystemExit("the window's source is not a LayeredSource with a shared cache")
        return source

    def settle(self) -> None:
        """Wait until the screen is complete and every loader idle (prefetch included)."""
        self.wait_shown(time.perf_counter())
        if not self.source().wait_idle(TIMEOUT_S):
            raise SystemExit("the loaders did not go idle")
        self.app.processEvents()

    def check_planes(self) -> None:
        """The views show the chosen mag's voxels as the reference ``wkw`` reads them (a
        benchmark of a wrong picture would be worthless); untimed."""
        import numpy as np
        import wkw as reference

        from viewer.format.webknossos.dataset import open_dataset

        with open_dataset(self.root) as wk:
            paths = {m.mag: m.path for m in wk.layer(LAYER).mags}
        for view in self.views():
            plane = view.plane
            ref = reference.Dataset.open(paths[tuple(plane.mags[0])])
            try:
                offset, shape = plane.mag_request.request.box()
                got = np.moveaxis(ref.read(offset, shape)[0], view.axis, -1)[..., 0]
            finally:
                ref.close()
            if not np.array_equal(plane.data[0], got):
                raise SystemExit(f"the {view.name} view does not show mag "
                                 f"{mag_text(plane.mags[0])}'s voxels")

    def round(self, lock_mag1: bool, check: bool = False, evict: bool = True) -> dict[str, Any]:
        """Open, settle at the largest zoom, drop every cache, zoom out; the figures."""
        from viewer.core.layered import decoded_needed_bytes

        middle = tuple((a - 1) // 2 for a in SHAPE)
        if not self.window.open_path(str(self.root), pos=middle, zoom=OPEN_ZOOM):
            raise SystemExit(f"cannot open {self.root}: {self.window.errors}")
        source = self.source()
        cache = source.cache
        if lock_mag1:
            self.state.set_layer(LAYER, mag_lock=(1, 1, 1))
        self.settle()
        cache.clear()  # every decoded block gone: the zoomed-out screen starts cold
        if evict:
            evict_page_cache(self.root)
        else:  # context: the files' pages in memory (as after browsing them a while)
            read_all_files(self.root)
        before = source.stats()
        began = time.perf_counter()
        self.state.set_zoom(self.window.fit_zoom(self.state.bounds))
        self.state.recenter()
        elapsed = self.wait_shown(began)
        after = source.stats()
        requests = [v.request for v in self.views()]
        needed = decoded_needed_bytes(source, LAYER, requests)
        decoded = after.bytes_decoded - before.bytes_decoded
        chosen = {v.name: mag_text(v.plane.mags[0]) for v in self.views()}
        label = self.window.status.mag_label.text() if hasattr(self.window, "status") else ""
        if check:
            self.check_planes()
        source.wait_idle(TIMEOUT_S)
        idle = source.stats()
        return {
            "complete_ms": elapsed * 1e3,
            "decoded_bytes": decoded,
            "needed_bytes": needed,
            "over_needed": decoded / needed if needed else float("nan"),
            "decoded_by_idle_bytes": idle.bytes_decoded - before.bytes_decoded,
            "cache_hits": after.hits - before.hits,
            "blocks_read": after.blocks_read - before.blocks_read,
            "chosen": chosen,
            "label": label,
            "zoom": self.state.zoom,
            "planes": {v.name: [list(v.request.lo), list(v.request.hi)] for v in self.views()},
        }

    def close(self) -> None:
        self.window.close()
        self.app.processEvents()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run(rounds: int) -> dict[str, Any]:
    root = dataset()
    session = Session(root)
    try:
        multi = [session.round(lock_mag1=False, check=k == 0) for k in range(rounds)]
        mag1 = [session.round(lock_mag1=True, check=k == 0) for k in range(rounds)]
        warm = [session.round(lock_mag1=False, evict=False) for _ in range(rounds)]
    finally:
        session.close()
    first = multi[0]
    return {
        "zoomed_out_complete_ms": median([r["complete_ms"] for r in multi]),
        "decoded_bytes_over_needed": median([r["over_needed"] for r in multi]),
        "chosen_mag": first["chosen"].get("XY", next(iter(first["chosen"].values()), "")),
        "zoomed_out_decoded_mb": median([r["decoded_bytes"] for r in multi]) / MIB,
        "zoomed_out_needed_mb": first["needed_bytes"] / MIB,
        "mag1_complete_ms": median([r["complete_ms"] for r in mag1]),
        "mag1_decoded_mb": median([r["decoded_bytes"] for r in mag1]) / MIB,
        "mag1_decoded_bytes_over_needed": median([r["over_needed"] for r in mag1]),
        "zoomed_out_complete_ms_pages_cached": median([r["complete_ms"] for r in warm]),
        "detail": {
            "rounds": rounds,
            "zoom": first["zoom"],
            "chosen_mag_per_view": first["chosen"],
            "mag_label": first["label"],
            "planes_mag1_voxels": first["planes"],
            "zoomed_out_ms": [round(r["complete_ms"], 1) for r in multi],
            "mag1_ms": [round(r["complete_ms"], 1) for r in mag1],
            "pages_cached_ms": [round(r["complete_ms"], 1) for r in warm],
            "zoomed_out_over_needed": [round(r["over_needed"], 3) for r in multi],
            "zoomed_out_decoded_by_idle_mb": round(
                median([r["decoded_by_idle_bytes"] for r in multi]) / MIB, 1),
            "zoomed_out_cache_hits": [r["cache_hits"] for r in multi],
            "zoomed_out_blocks_read": [r["blocks_read"] for r in multi],
            "mag1_chosen_per_view": mag1[0]["chosen"],
            "mag1_label": mag1[0]["label"],
            "mag1_needed_mb": mag1[0]["needed_bytes"] / MIB,
            "mag1_cache_hits": [r["cache_hits"] for r in mag1],
        },
    }


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"cold rounds per measurement (default {ROUNDS}, at least 5 for "
                             "the figures of record)")
    args = parser.parse_args(argv)
    figures = run(max(1, args.rounds))
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
        return 0
    d = figures["detail"]
    print(f"multires: {SHAPE[0]}x{SHAPE[1]}x{SHAPE[2]} uint8 EM-like LZ4HC, mags 1, 2-2-1, 4-4-2,"
          f" 32^3 blocks, 256^3 files; window {WINDOW[0]}x{WINDOW[1]} offscreen, cold, "
          f"median of {d['rounds']} rounds")
    print(f"zoomed out to the whole extent: zoom {d['zoom']:.3f}, mag per view "
          f"{d['chosen_mag_per_view']}, status bar {d['mag_label']!r}")
    rows = [
        ("zoomed_out_complete_ms", figures["zoomed_out_complete_ms"], "<= 100"),
        ("decoded_bytes_over_needed", figures["decoded_bytes_over_needed"], "<= 2"),
        ("zoomed_out_decoded_mb", figures["zoomed_out_decoded_mb"], ""),
        ("zoomed_out_needed_mb", figures["zoomed_out_needed_mb"], ""),
        ("mag1_complete_ms", figures["mag1_complete_ms"], "(context: locked to mag 1)"),
        ("mag1_decoded_mb", figures["mag1_decoded_mb"], ""),
        ("mag1_decoded_bytes_over_needed", figures["mag1_decoded_bytes_over_needed"], ""),
        ("zoomed_out_complete_ms_pages_cached", figures["zoomed_out_complete_ms_pages_cached"],
         "(context: files in the page cache)"),
    ]
    print(f"{'figure':34} {'value':>10}  target")
    for name, value, target in rows:
        print(f"{name:34} {value:10.2f}  {target}")
    print(f"chosen_mag {figures['chosen_mag']}")
    print(f"rounds (ms): zoomed out {d['zoomed_out_ms']}, mag 1 {d['mag1_ms']}")
    print(f"detail: {json.dumps(d)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
