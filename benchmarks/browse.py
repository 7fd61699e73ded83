"""Browsing benchmark: a scripted session through the real window (offscreen) on the loader.

``python -m benchmarks.browse [--json] [--cache-mb N] [--quick]``

The dataset: 1024 x 1024 x 512 uint8 EM-like data, LZ4HC, 32^3 blocks, 256^3-voxel files
(4 x 4 x 2 = 32 files), built once into ``benchmarks/.cache/``.  The session, at zoom 1 in a
1280 x 860 window, run twice, each time in a fresh process (so that peak RSS is the run's own):
once with the files in the page cache (warm) and once with them evicted with
``posix_fadvise(POSIX_FADV_DONTNEED)`` (cold):

1. scroll at 30 slices/s for 5 s in each view (XY along z, XZ along y, YZ along x), the view
   focused; a frame is *complete* when, right after the move was handled (before the next
   one), no view shows a placeholder;
2. pan the XY view in x at 30 frames/s, 16 voxels a frame, for 3 s (same criterion);
3. jump to far positions: time from setting the cursor to all three views complete (seen by
   the benchmark's loop, which polls the views between passes of the event loop), and to
   every view having painted its complete plane (the time of that paint: what a person sees).

Figures: ``complete_frames_fraction`` (scroll and pan frames), ``p50/p95_jump_to_complete_ms``,
``p50/p95_jump_to_painted_ms``,
``cache_hit_rate`` and ``prefetch_useful_fraction`` (the loader's own counters),
``peak_rss_over_budget_mb`` (peak RSS of the run minus the cache budget); the cold run's under
the same keys ending in ``_cold``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import load_average, with_load
from benchmarks.datasets import em_dataset

SHAPE = (1024, 1024, 512)
FILE_LEN = 8  # blocks per file side: 256^3-voxel files
RATE = 30.0  # slices (frames) per second
SCROLL_S = 5.0
PAN_S = 3.0
PAN_STEP = 16
JUMPS = [(900, 100, 450), (100, 900, 60), (880, 880, 300), (60, 60, 480), (500, 950, 20),
         (950, 500, 250), (200, 300, 400), (800, 150, 100), (120, 700, 350), (700, 700, 10),
         (400, 50, 200), (1000, 1000, 500)]
JUMP_TIMEOUT_S = 30.0
DEFAULT_CACHE_MB = 256  # half the dataset, so that the cache must evict


def dataset() -> Path:
    return em_dataset("browse-f8", SHAPE, file_len=FILE_LEN)


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.wkw"))


def warm_page_cache(root: Path) -> None:
    for path in data_files(root):
        with open(path, "rb") as fh:
            while fh.read(8 << 20):
                pass


def evict_page_cache(root: Path) -> None:
    for path in data_files(root):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def peak_rss_mb() -> float:
    """This process's own peak RSS (``VmHWM``).  ``ru_maxrss`` is not it: a child made by
    fork and exec inherits its parent's high-water mark, so a child started right after the
    parent built its dataset reported the parent's peak (474-512 MB instead of ~143)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def current_rss_mb() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, int(round(q / 100.0 * (len(ordered) - 1)))))
    return ordered[k]


def run_session(root: Path, cache_mb: int, quick: bool) -> dict[str, Any]:
    """One session in this process (called in a child process)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from viewer.core.slicing import XY, XZ, YZ
    from viewer.core.state import ViewerState
    from viewer.ui.main_window import QtMainWindow

    app = QApplication.instance() or QApplication(["browse-benchmark"])
    state = ViewerState()
    window = QtMainWindow(state)
    arrivals: list[float] = []  # GUI time spent handling each "data arrived"
    handle_arrival = window.data_arrived

    def timed_arrival(box: Any) -> None:
        began = time.perf_counter()
        handle_arrival(box)
        arrivals.append(time.perf_counter() - began)

    window.data_arrived = timed_arrival  # type: ignore[method-assign]
    loading = window.add_background_loading(budget_bytes=cache_mb << 20)
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
    window.resize(1280, 860)
    window.show()
    start = (512, 512, 256)
    if not window.open_path(str(root), pos=start, zoom=1.0):
        raise SystemExit(f"cannot open {root}: {window.errors}")
    app.processEvents()
    views = [window.views[a] for a in (XY, XZ, YZ)]

    def complete() -> bool:
        return all(v.plane is not None and v.plane.complete for v in views)

    painted_at: list[float] = []  # when every view had painted its complete plane

    def on_painted(axis: int) -> None:
        if not painted_at and all(v.plane is not None and v.plane.complete
                                  and v.picture_painted for v in views):
            painted_at.append(time.perf_counter())

    for view in views:
        view.painted.connect(on_painted)

    def pump_until(deadline: float) -> None:
        while True:
            app.processEvents()
            left = deadline - time.perf_counter()
            if left <= 0:
                return
            time.sleep(min(0.001, left))

    def wait_complete(timeout: float, began: float | None = None) -> float:
        began = time.perf_counter() if began is None else began
        while not complete():
            app.processEvents()
            if time.perf_counter() - began > timeout:
                return float("inf")
            time.sleep(0.0005)
        return time.perf_counter() - began

    wait_complete(JUMP_TIMEOUT_S)
    rss_open = current_rss_mb()
    frames = 0
    complete_frames = 0
    frame_s = 1.0 / RATE
    scroll_steps = int((1.5 if quick else SCROLL_S) * RATE)
    per_view: dict[str, float] = {}
    handle_ms: list[float] = []
    for axis, name in ((XY, "XY"), (XZ, "XZ"), (YZ, "YZ")):
        state.set_focused(axis)
        state.set_cursor(start)
        state.recenter()
        wait_complete(JUMP_TIMEOUT_S)
        t0 = time.perf_counter()
        ok = 0
        for i in range(scroll_steps):
            pump_until(t0 + i * frame_s)
            began = time.perf_counter()
            state.move_along(axis, 1)
            app.processEvents()
            handle_ms.append((time.perf_counter() - began) * 1e3)
            ok += complete()
        frames += scroll_steps
        complete_frames += ok
        per_view[name] = ok / scroll_steps
    # Pan the XY view in x.
    state.set_focused(XY)
    state.set_cursor(start)
    state.recenter()
    wait_complete(JUMP_TIMEOUT_S)
    pan_steps = int((1.0 if quick else PAN_S) * RATE)
    t0 = time.perf_counter()
    ok = 0
    for i in range(pan_steps):
        pump_until(t0 + i * frame_s)
        state.pan(XY, PAN_STEP, 0)
        app.processEvents()
        ok += complete()
    frames += pan_steps
    complete_frames += ok
    per_view["pan"] = ok / pan_steps
    # Jumps.
    jump_ms: list[float] = []
    jump_arrivals: list[int] = []
    jump_arrival_ms: list[float] = []
    jump_cpu_ms: list[float] = []  # GUI-thread CPU per jump (what competes with decoding)
    painted_ms: list[float] = []
    for pos in JUMPS[:4] if quick else JUMPS:
        pump_until(time.perf_counter() + 0.1)
        del arrivals[:]
        del painted_at[:]
        cpu_began = time.thread_time()
        began = time.perf_counter()
        state.jump_to(pos)  # what the position field does
        jump_ms.append(wait_complete(JUMP_TIMEOUT_S, began) * 1e3)
        jump_cpu_ms.append((time.thread_time() - cpu_began) * 1e3)
        while not painted_at and time.perf_counter() - began < JUMP_TIMEOUT_S:
            app.processEvents()
            time.sleep(0.0005)
        painted_ms.append((painted_at[0] - began) * 1e3 if painted_at else float("inf"))
        jump_arrivals.append(len(arrivals))
        jump_arrival_ms.append(sum(arrivals) * 1e3)
    stats = loading.loader.stats() if loading.loader is not None else None
    window.close()
    app.processEvents()
    assert stats is not None
    return {
        "complete_frames_fraction": complete_frames / frames,
        "p95_jump_to_complete_ms": percentile(jump_ms, 95),
        "p50_jump_to_complete_ms": percentile(jump_ms, 50),
        "p95_jump_to_painted_ms": percentile(painted_ms, 95),
        "p50_jump_to_painted_ms": percentile(painted_ms, 50),
        "cache_hit_rate": stats.hit_rate,
        "prefetch_useful_fraction": stats.prefetch_useful_fraction,
        "peak_rss_over_budget_mb": peak_rss_mb() - cache_mb,
        "detail": {
            "complete_by_phase": per_view,
            "jump_ms": [round(j, 1) for j in jump_ms],
            "jump_repaints": jump_arrivals,
            "jump_repaint_ms": [round(j, 1) for j in jump_arrival_ms],
            "jump_gui_cpu_ms_p50": round(percentile(jump_cpu_ms, 50), 1),
            "visible_blocks": stats.pinned_blocks,
            "move_handling_p50_ms": percentile(handle_ms, 50),
            "move_handling_p95_ms": percentile(handle_ms, 95),
            "peak_rss_mb": peak_rss_mb(),
            "decode_mb_s": stats.decode_mb_s,
            "decode_mb_per_cpu_s": stats.decode_mb_per_cpu_s,
            "rss_before_browsing_mb": rss_open,
            "blocks_read": stats.blocks_read,
            "peak_cache_mb": stats.peak_cache_bytes / (1 << 20),
        },
    }


def loader_only_jumps(root: Path, cache_mb: int, quick: bool) -> list[float]:
    """The same far jumps against a fresh ``Loader`` with no window: time from ``set_wanted``
    to three complete 448x448 planes (what the loader itself costs, rendering aside)."""
    from viewer.core.loader import Loader
    from viewer.core.slicing import XY, XZ, YZ, PlaneRequest
    from viewer.format import open_volume

    def planes(pos: tuple[int, int, int]) -> list[PlaneRequest]:
        def span(c: int, n: int) -> tuple[int, int]:
            return max(0, c - 224) // 64 * 64, min(n, (c + 224 + 63) // 64 * 64)
        (x0, x1), (y0, y1), (z0, z1) = (span(c, n) for c, n in zip(pos, SHAPE, strict=True))
        x, y, z = pos
        return [PlaneRequest(XY, z, (x0, y0), (x1, y1)), PlaneRequest(XZ, y, (x0, z0), (x1, z1)),
                PlaneRequest(YZ, x, (y0, z0), (y1, z1))]

    loader = Loader(open_volume(root), budget_bytes=cache_mb << 20)
    out: list[float] = []
    try:
        for pos in JUMPS[:4] if quick else JUMPS:
            loader.wait_idle(JUMP_TIMEOUT_S)
            reqs = planes(pos)
            began = time.perf_counter()
            loader.set_wanted(reqs, 0, pos)
            while not all(loader.plane(r).complete for r in reqs):
                if time.perf_counter() - began > JUMP_TIMEOUT_S:
                    break
                time.sleep(0.0005)
            out.append((time.perf_counter() - began) * 1e3)
    finally:
        loader.close()
    return out


def child(mode: str, cache_mb: int, quick: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.browse", "--child", mode, "--cache-mb",
           str(cache_mb)] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    parser.add_argument("--cache-mb", type=int, default=DEFAULT_CACHE_MB)
    parser.add_argument("--quick", action="store_true", help="a shorter session (smoke test)")
    parser.add_argument("--child", choices=["warm", "cold"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    root = dataset()
    if args.child:
        if args.child == "warm":
            warm_page_cache(root)
        else:
            evict_page_cache(root)
        result = run_session(root, args.cache_mb, args.quick)
        if args.child == "cold":
            evict_page_cache(root)
        direct = loader_only_jumps(root, args.cache_mb, args.quick)
        result["detail"]["loader_only_jump_ms_p50_p95"] = [round(percentile(direct, 50), 1),
                                                           round(percentile(direct, 95), 1)]
        print(json.dumps(result))
        return 0
    warm = child("warm", args.cache_mb, args.quick)
    cold = child("cold", args.cache_mb, args.quick)
    keys = ["complete_frames_fraction", "p95_jump_to_complete_ms", "p50_jump_to_complete_ms",
            "p95_jump_to_painted_ms", "p50_jump_to_painted_ms",
            "cache_hit_rate", "prefetch_useful_fraction", "peak_rss_over_budget_mb"]
    figures: dict[str, Any] = {k: warm[k] for k in keys}
    figures.update({f"{k}_cold": cold[k] for k in keys})
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
        return 0
    targets = {"complete_frames_fraction": ">= 0.98", "p95_jump_to_complete_ms": "<= 30",
               "peak_rss_over_budget_mb": "<= 250"}
    print(f"browse: {SHAPE[0]}x{SHAPE[1]}x{SHAPE[2]} uint8 LZ4HC, 32^3 blocks, 256^3 files, "
          f"cache budget {args.cache_mb} MB, window 1280x860 offscreen, zoom 1")
    print(f"{'figure':32} {'warm':>10} {'cold':>10}  target")
    for k in keys:
        print(f"{k:32} {warm[k]:10.3f} {cold[k]:10.3f}  {targets.get(k, '')}")
    lw = warm["detail"]["loader_only_jump_ms_p50_p95"]
    lc = cold["detail"]["loader_only_jump_ms_p50_p95"]
    print(f"{'jump p50/p95, loader alone (ms)':32} {lw[0]:4.0f}/{lw[1]:<5.0f} "
          f"{lc[0]:4.0f}/{lc[1]:<5.0f}"
          "  (no window: rendering aside)")
    for name, run in (("warm", warm), ("cold", cold)):
        print(f"{name}: {json.dumps(run['detail'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
