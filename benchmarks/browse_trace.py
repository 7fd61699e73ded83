"""Where a far jump's time goes in the real window: ``python -m benchmarks.browse_trace``.

``python -m benchmarks.browse_trace [--json] [--cache-mb N] [--rounds N] [--show]``

``--show`` maps the window on the display (run it under ``xvfb-run`` with
``QT_QPA_PLATFORM=xcb`` for a real window; by default it is kept off screen, as in ``browse``).

The ``browse`` benchmark's dataset and window (1280 x 860, zoom 1, files in the page cache),
its twelve far jumps, each traced from setting the cursor: the GUI thread's ``set_wanted``,
every worker batch (start, end, blocks, on screen or prefetch), every hop of arrivals to the
GUI thread and every view's fetch (plane, compose, render, image) and paint, and when each
view first showed its whole plane; after the screen's last block was decoded, how long the GUI
thread took to begin the hop that carried it and what it spent in fetches and paints since.
Per jump it prints the times from the jump to: the screen's blocks queued, the first and last
screen block decoded, each view complete, and what ran meanwhile: prefetch batches, blocks
decoded that no view needed, GUI-thread time in fetches and paints.  Figures are medians over
the jumps.  The tracing wraps methods from outside (it runs against any version of the code
that has the same method names), so it adds a little time of its own to every event.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import load_average, with_load
from benchmarks.browse import JUMP_TIMEOUT_S, JUMPS, dataset, percentile, warm_page_cache


class Trace:
    """Events as ``(time, kind, thread, data)``; ``time`` from ``perf_counter``."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str, str, Any]] = []
        self.lock = threading.Lock()

    def add(self, kind: str, data: Any = None, at: float | None = None) -> None:
        t = time.perf_counter() if at is None else at
        with self.lock:
            self.events.append((t, kind, threading.current_thread().name, data))

    def take(self) -> list[tuple[float, str, str, Any]]:
        with self.lock:
            out, self.events = self.events, []
        return out


def install(trace: Trace) -> None:
    """Wrap the loader's, the drawing's and the views' methods to record events."""
    from viewer.core import loader as loader_mod
    from viewer.core.layered import LayeredSource
    from viewer.ui.layer_drawing import QtLayerDrawing
    from viewer.ui.slice_view import QtSliceView

    Loader = loader_mod.Loader
    read = Loader._read

    def traced_read(self: Any, taken: Any) -> None:
        began = time.perf_counter()
        cpu = time.thread_time()
        with self._lock:
            visible = self._visible
            shown = sum(1 for key in taken.keys if key in visible)
        read(self, taken)
        trace.add("batch", {"began": began, "blocks": len(taken.keys), "shown": shown,
                            "prefetch": bool(taken.task.prefetch),
                            "cpu": time.thread_time() - cpu})

    Loader._read = traced_read  # type: ignore[method-assign]

    set_wanted = LayeredSource.set_wanted

    def traced_set_wanted(self: Any, *args: Any, **kwargs: Any) -> None:
        began = time.perf_counter()
        set_wanted(self, *args, **kwargs)
        trace.add("set_wanted", {"began": began})

    LayeredSource.set_wanted = traced_set_wanted  # type: ignore[method-assign]

    fetch = QtLayerDrawing.fetch

    def traced_fetch(self: Any, view: Any, request: Any, rerender: bool = False) -> None:
        began = time.perf_counter()
        cpu = time.thread_time()
        before = view.plane
        fetch(self, view, request, rerender)
        trace.add("fetch", {"began": began, "axis": view.axis,
                            "drew": view.plane is not before,
                            "complete": view.plane is not None and view.plane.complete,
                            "cpu": time.thread_time() - cpu})

    QtLayerDrawing.fetch = traced_fetch  # type: ignore[method-assign]

    from viewer.ui.loading import QtLoadingBridge

    hop = QtLoadingBridge._on_arrived_elsewhere

    def traced_hop(self: Any) -> None:
        began = time.perf_counter()
        hop(self)
        trace.add("hop", {"began": began})

    QtLoadingBridge._on_arrived_elsewhere = traced_hop  # type: ignore[method-assign]

    paint = QtSliceView.paintEvent

    def traced_paint(self: Any, event: Any) -> None:
        began = time.perf_counter()
        paint(self, event)
        trace.add("paint", {"began": began, "axis": self.axis,
                            "complete": self.plane is not None and self.plane.complete})

    QtSliceView.paintEvent = traced_paint  # type: ignore[method-assign]


def analyse(events: list[tuple[float, str, str, Any]], t0: float, done: float
            ) -> dict[str, Any]:
    """One jump's figures (ms from ``t0``) from its events."""
    ms = 1e3
    out: dict[str, Any] = {"complete_ms": (done - t0) * ms}
    batches = [e for e in events if e[1] == "batch"]
    screen = [e for e in batches if e[3]["shown"]]
    wanted = [e for e in events if e[1] == "set_wanted"]
    out["set_wanted_ms"] = sum(e[0] - e[3]["began"] for e in wanted) * ms
    if screen:
        out["first_screen_block_ms"] = (min(e[0] for e in screen) - t0) * ms
        out["last_screen_block_ms"] = (max(e[0] for e in screen) - t0) * ms
        out["first_batch_began_ms"] = (min(e[3]["began"] for e in screen) - t0) * ms
    last = max((e[0] for e in screen), default=t0)
    out["screen_blocks"] = sum(e[3]["shown"] for e in screen)
    out["screen_batches"] = len(screen)
    out["blocks_not_shown_before_last_screen"] = sum(
        e[3]["blocks"] - e[3]["shown"] for e in batches if e[3]["began"] < last)
    out["prefetch_batches_before_last_screen"] = sum(
        1 for e in batches if e[3]["prefetch"] and e[3]["began"] < last)
    out["worker_cpu_ms"] = sum(e[3]["cpu"] for e in batches if e[0] <= done) * ms
    out["worker_wall_ms"] = sum(e[0] - e[3]["began"] for e in batches if e[0] <= done) * ms
    fetches = [e for e in events if e[1] == "fetch" and e[0] <= done]
    out["fetches"] = len(fetches)
    out["fetch_ms"] = sum(e[0] - e[3]["began"] for e in fetches) * ms
    out["fetch_cpu_ms"] = sum(e[3]["cpu"] for e in fetches) * ms
    paints = [e for e in events if e[1] == "paint" and e[0] <= done]
    out["paints"] = len(paints)
    out["paint_ms"] = sum(e[0] - e[3]["began"] for e in paints) * ms
    # After the last screen block was decoded: how long until the GUI thread began the hop
    # that carried it (busy with what came before), and what it spent from then on.
    hops = [e for e in events if e[1] == "hop" and e[0] <= done]
    out["hops"] = len(hops)
    carrying = [e for e in hops if e[3]["began"] >= last]
    if screen and carrying:
        first_after = min(e[3]["began"] for e in carrying)
        out["last_block_to_its_hop_ms"] = (first_after - last) * ms
    out["fetch_ms_after_last_block"] = sum(
        e[0] - max(e[3]["began"], last) for e in fetches if e[0] > last) * ms
    out["paint_ms_after_last_block"] = sum(
        e[0] - max(e[3]["began"], last) for e in paints if e[0] > last) * ms
    for axis, name in ((2, "xy"), (1, "xz"), (0, "yz")):
        first = [e for e in fetches if e[3]["axis"] == axis and e[3]["complete"]]
        if first:
            out[f"{name}_complete_ms"] = (min(e[0] for e in first) - t0) * ms
    # When every view first painted its complete plane (what a person sees), from the paints
    # up to a little after the jump was seen complete (the last paints come after it).
    painted = [min((e[0] for e in events if e[1] == "paint" and e[3]["axis"] == axis
                    and e[3]["complete"]), default=None) for axis in (2, 1, 0)]
    if all(p is not None for p in painted):
        out["painted_complete_ms"] = (max(p for p in painted if p is not None) - t0) * ms
    return out


def run(cache_mb: int, rounds: int, show: bool = False) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from viewer.core.slicing import XY, XZ, YZ
    from viewer.core.state import ViewerState
    from viewer.ui.main_window import QtMainWindow

    root: Path = dataset()
    warm_page_cache(root)
    trace = Trace()
    install(trace)
    app = QApplication.instance() or QApplication(["browse-trace"])
    state = ViewerState()
    window = QtMainWindow(state)
    window.add_background_loading(budget_bytes=cache_mb << 20)
    if not show:
        window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
    window.resize(1280, 860)
    window.show()
    if not window.open_path(str(root), pos=(512, 512, 256), zoom=1.0):
        raise SystemExit(f"cannot open {root}: {window.errors}")
    views = [window.views[a] for a in (XY, XZ, YZ)]

    def complete() -> bool:
        return all(v.plane is not None and v.plane.complete for v in views)

    def pump(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.001)

    began = time.perf_counter()
    while not complete() and time.perf_counter() - began < JUMP_TIMEOUT_S:
        app.processEvents()
        time.sleep(0.0005)
    jumps: list[dict[str, Any]] = []
    for _ in range(rounds):
        for pos in JUMPS:
            pump(0.3)  # the previous jump's prefetch runs meanwhile, as when browsing
            trace.take()
            t0 = time.perf_counter()
            state.jump_to(pos)
            while not complete() and time.perf_counter() - t0 < JUMP_TIMEOUT_S:
                app.processEvents()
                time.sleep(0.0005)
            done = time.perf_counter()
            pump(0.05)  # the last paints
            jumps.append(analyse(trace.take(), t0, done))
    window.close()
    app.processEvents()
    keys = sorted({k for j in jumps for k in j})
    figures = {k: round(statistics.median([j[k] for j in jumps if k in j]), 2) for k in keys}
    figures["p95_complete_ms"] = round(percentile([j["complete_ms"] for j in jumps], 95), 1)
    return {"median": figures, "jumps": jumps}


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache-mb", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--show", action="store_true",
                        help="map the window (under xvfb-run, QT_QPA_PLATFORM=xcb)")
    args = parser.parse_args(argv)
    result = run(args.cache_mb, args.rounds, args.show)
    if args.json:
        print(json.dumps(with_load(result, load_before)))
        return 0
    platform = os.environ.get("QT_QPA_PLATFORM")
    print(f"browse_trace ({platform}): median over {len(result['jumps'])} far jumps, ms from "
          f"the jump (load {load_before} -> {load_average()})")
    for k, v in result["median"].items():
        print(f"  {k:40} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
