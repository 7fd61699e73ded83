"""Interaction benchmark: cursor move -> all three views repainted; start-up to first paint.

``cursor_to_repaint_*``: a 512^3 EM-like LZ4HC dataset (``benchmarks/.cache/em512_lz4hc_f16``)
in the real window (offscreen), views about 800 x 800 pixels showing the whole 512 x 512 plane.
The data is already decoded: the window reads through the background loader (the program's own
``PlaneSource``) with a 1 GiB budget, and every plane of the move sequence is visited once and
waited for before timing.  A move is one voxel along x, y or z in turn (as when browsing with
the keys), so each move changes one view's plane and moves the crosshair in all three; the time
is from ``state.set_cursor`` to the end of ``processEvents`` with every view painted once more.

``startup_to_first_paint_s``: from launching ``python -m viewer DEMO --screenshot FILE`` on the
already generated demo dataset to the moment the window has painted its three views with all
their data (the program prints that moment when WKW_VIEWER_TIMING is set; median of 5).  The
inspector panel is mounted after that moment, as in an interactive start; the whole process's
wall time (PNG written, inspector included) is printed too.

    python -m benchmarks.interaction [--json] [--moves N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WKW_VIEWER_NO_SETTINGS", "1")

from benchmarks import load_average, with_load
from benchmarks.datasets import CACHE, em_dataset  # noqa: E402

SIDE = 512
WINDOW = (1836, 1720)  # views ~805 x 820 beside the 220-pixel contrast dock


def cursor_to_repaint(moves: int) -> dict[str, float]:
    from PySide6.QtWidgets import QApplication

    from viewer.ui.main_window import QtMainWindow

    root = em_dataset("em512_lz4hc_f16", (SIDE, SIDE, SIDE), file_len=16)
    app = QApplication.instance() or QApplication([])
    window = QtMainWindow()
    window.add_background_loading(1 << 30)
    kind = "background loader"
    window.resize(*WINDOW)
    window.show()
    app.processEvents()
    window.open_path(root)
    state = window.state
    start = state.cursor
    path = []
    pos = list(start)
    for i in range(moves):
        pos[i % 3] += 1 if (i // 90) % 2 == 0 else -1
        path.append(tuple(pos))

    def settle() -> None:
        loader = window.source
        for _ in range(2000):
            app.processEvents()
            if hasattr(loader, "wait_idle"):
                loader.wait_idle(0.05)
            if all(v.plane is None or v.plane.complete for v in window.views.values()):
                app.processEvents()
                if all(v.plane is None or v.plane.complete for v in window.views.values()):
                    return
        raise RuntimeError("planes never completed")

    for p in path:  # warm: decode every block the moves will show
        state.set_cursor(p)
        settle()
    state.set_cursor(start)
    settle()
    times = []
    incomplete = 0
    for p in path:
        before = [v.paint_count for v in window.views.values()]
        t0 = time.perf_counter()
        state.set_cursor(p)
        app.processEvents()
        times.append((time.perf_counter() - t0) * 1000)
        after = [v.paint_count for v in window.views.values()]
        if any(a <= b for a, b in zip(after, before, strict=True)):
            raise RuntimeError("a view was not repainted")
        incomplete += sum(1 for v in window.views.values() if not v.plane.complete)
    sizes = [f"{v.width()}x{v.height()}" for v in window.views.values()]
    window.close()
    times.sort()
    return {
        "cursor_to_repaint_median_ms": round(statistics.median(times), 3),
        "cursor_to_repaint_p95_ms": round(times[int(len(times) * 0.95) - 1], 3),
        "_source": kind, "_view_sizes": sizes, "_moves": len(times),
        "_planes_shown_incomplete": incomplete,
    }


def startup(runs: int = 5) -> tuple[float, float]:
    """Median seconds from launching ``python -m viewer DEMO --screenshot`` to the window's
    first paint with its data (the program reports that moment), and to the process's exit
    (the PNG, which also shows the inspector, written)."""
    env = dict(os.environ, WKW_VIEWER_CACHE=str(CACHE), QT_QPA_PLATFORM="offscreen",
               WKW_VIEWER_NO_SETTINGS="1", WKW_VIEWER_TIMING="1")
    from viewer.core import demo

    path = demo.ensure_demo(lambda d, t: print(f"\rdemo {d}/{t}", end="", file=sys.stderr),
                            cache_folder=str(CACHE))
    firsts, walls = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(runs):
            png = Path(tmp) / f"shot{n}.png"
            launched = time.time()
            t0 = time.perf_counter()
            result = subprocess.run([sys.executable, "-m", "viewer", str(path), "--screenshot",
                                     str(png)], env=env, check=True, capture_output=True,
                                    text=True)
            walls.append(time.perf_counter() - t0)
            mark = re.search(r"first_paint_unix=([0-9.]+)", result.stderr)
            if mark is None:
                raise RuntimeError("the viewer did not report its first paint")
            firsts.append(float(mark.group(1)) - launched)
    return round(statistics.median(firsts), 3), round(statistics.median(walls), 3)


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--moves", type=int, default=360)
    args = parser.parse_args(argv)
    figures = cursor_to_repaint(args.moves)
    figures["startup_to_first_paint_s"], figures["_screenshot_wall_s"] = startup()
    if args.json:
        shown = {k: v for k, v in figures.items() if not k.startswith("_")}
        print(json.dumps(with_load(shown, load_before)))
        return 0
    targets = {"cursor_to_repaint_median_ms": "<= 8", "cursor_to_repaint_p95_ms": "",
               "startup_to_first_paint_s": "<= 1.0"}
    print(f"{'figure':32} {'value':>10}  target")
    for key, target in targets.items():
        print(f"{key:32} {figures[key]:>10}  {target}")
    print(f"(--screenshot process wall time, inspector included: "
          f"{figures['_screenshot_wall_s']} s)")
    print(f"(source: {figures['_source']}, views {', '.join(figures['_view_sizes'])}, "
          f"{figures['_moves']} moves)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
