"""Soak: thousands of scripted steps in the real window (offscreen), watching memory and threads.

``python -m benchmarks.soak [--json] [--steps N] [--cache-mb N]``

The demo dataset (a webKnossos dataset: a uint8 color and a uint32 segmentation layer, three
mags each, LZ4HC; built once into ``benchmarks/.cache/``) in a 1024 x 768 window.  Each step is
one of: scroll one or ten slices in the focused view, pan, zoom in or out (zoomed out, the
coarse mags are read), focus another view, jump to a random position, toggle the segmentation
layer, auto-contrast, maximise a view and back; every 500 steps the dataset is opened again
(the old one closed: its files, loaders and threads must go).  Events are processed after each
step, and every 50 steps the window is let finish loading what it shows.

Figures (``--json``): ``steps``; ``rss_growth_mb``, the resident set at the end minus after
the warm-up (the first ``WARMUP`` steps, by when the block cache has filled its budget);
``threads_growth``, the same for the number of threads; and beside them the absolute figures.
Targets: growth after warm-up at most 20 MB, threads flat.  A fixed seed makes the
script the same every run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import load_average, with_load
from benchmarks.datasets import CACHE

WARMUP = 1000
REOPEN_EVERY = 500
SETTLE_EVERY = 50
SETTLE_S = 2.0


def _status(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return float(line.split()[1])
    return float("nan")


def rss_mb() -> float:
    return _status("VmRSS") / 1024.0


def threads() -> int:
    return int(_status("Threads"))


def dataset() -> Path:
    from viewer.core import demo

    root = CACHE / "soak-demo"
    if not demo.is_complete(root):
        demo.build_demo(root)
    return root


def run(steps: int, cache_mb: int, seed: int) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from viewer.core.slicing import XY, XZ, YZ
    from viewer.core.state import ViewerState
    from viewer.ui.main_window import QtMainWindow

    root = dataset()
    app = QApplication.instance() or QApplication(["soak-benchmark"])
    state = ViewerState()
    window = QtMainWindow(state)
    window.add_background_loading(budget_bytes=cache_mb << 20)
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
    window.resize(1024, 768)
    window.show()
    if not window.open_path(str(root)):
        raise SystemExit(f"cannot open {root}: {window.errors}")
    app.processEvents()
    rng = random.Random(seed)

    def settle(limit: float = SETTLE_S) -> None:
        end = time.perf_counter() + limit
        while time.perf_counter() < end:
            app.processEvents()
            views = [window.views[a] for a in (XY, XZ, YZ)]
            if all(v.plane is not None and v.plane.complete for v in views):
                return
            time.sleep(0.002)

    def bounds() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        return state.bounds  # type: ignore[no-any-return]

    def random_pos() -> tuple[int, int, int]:
        lo, hi = bounds()
        return (rng.randrange(lo[0], hi[0]), rng.randrange(lo[1], hi[1]),
                rng.randrange(lo[2], hi[2]))

    def toggle_segmentation() -> None:
        names = [layer.name for layer in state.layers]
        if len(names) > 1:
            layer = state.layer(names[-1])
            state.set_layer(names[-1], visible=not layer.visible)

    def auto_contrast() -> None:
        action = getattr(window.drawing, "auto_contrast", None)
        if callable(action):
            action()

    actions = [
        (20, lambda: state.move_along(state.focused, rng.choice((-1, 1)))),
        (6, lambda: state.move_along(state.focused, rng.choice((-10, 10)))),
        (8, lambda: state.pan(state.focused, rng.uniform(-40, 40), rng.uniform(-40, 40))),
        (5, lambda: state.zoom_by(rng.choice((-1.0, 1.0)))),
        (4, lambda: state.set_focused(rng.choice((XY, XZ, YZ)))),
        (3, lambda: state.jump_to(random_pos())),
        (1, toggle_segmentation),
        (1, auto_contrast),
        (1, state.toggle_maximized),
    ]
    weights = [w for w, _ in actions]
    calls = [a for _, a in actions]
    rss_warm = threads_warm = float("nan")
    rss_start, _threads_start = rss_mb(), threads()
    peak = rss_start
    series: list[float] = []
    began = time.perf_counter()
    for step in range(1, steps + 1):
        rng.choices(calls, weights)[0]()
        app.processEvents()
        if step % SETTLE_EVERY == 0:
            settle()
        if step % REOPEN_EVERY == 0:
            if not window.open_path(str(root), pos=random_pos()):
                raise SystemExit(f"cannot open {root} again: {window.errors}")
            app.processEvents()
            settle()
        peak = max(peak, rss_mb()) if step % 10 == 0 else peak
        if step % 500 == 0:
            series.append(round(rss_mb(), 1))
        if step == min(WARMUP, steps // 2):
            settle()
            gc.collect()
            rss_warm, threads_warm = rss_mb(), threads()
    settle()
    gc.collect()
    app.processEvents()
    rss_end, threads_end = rss_mb(), threads()
    elapsed = time.perf_counter() - began
    window.close()
    app.processEvents()
    return {
        "steps": steps,
        "rss_growth_mb": round(rss_end - rss_warm, 1),
        "threads_growth": threads_end - threads_warm,
        "rss_start_mb": round(rss_start, 1),
        "rss_after_warmup_mb": round(rss_warm, 1),
        "rss_end_mb": round(rss_end, 1),
        "rss_peak_mb": round(peak, 1),
        "threads_after_warmup": threads_warm,
        "threads_end": threads_end,
        "python_threads_end": threading.active_count(),
        "rss_every_500_steps_mb": series,
        "cache_mb": cache_mb,
        "seconds": round(elapsed, 1),
    }


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--cache-mb", type=int, default=64)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args(argv)
    result = run(args.steps, args.cache_mb, args.seed)
    if args.json:
        print(json.dumps(with_load(result, load_before)))
    else:
        for key, value in result.items():
            print(f"{key:24} {value}")
        print("targets: rss_growth_mb <= 20, threads_growth 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
