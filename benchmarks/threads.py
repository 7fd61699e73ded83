"""Threads of a window browsing a three-layer dataset: how many, and whose.

``python -m benchmarks.threads [--json]``

The dataset: the demo's webKnossos layout (``color`` uint8, ``segmentation`` uint32) plus a
third layer ``color2`` (a copy of ``color``), 256 x 256 x 128 voxels, three mags, built once
into ``benchmarks/.cache/``.  The session, offscreen in a fresh process: open it with
background loading, jump to four far positions (each until the views are complete), then
count the process's threads (the kernel's list, native threads of libraries included) and
name the Python ones; then close the window, call ``viewer.format.shutdown()`` and count
again.

Figures: ``threads_browsing`` (kernel threads while browsing), ``python_threads_browsing``
(by name, with how many of each), the same after the window closed
(``threads_after_window_close``, ...) and after ``viewer.format.shutdown()`` too
(``threads_after_close``, ``python_threads_after_close``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks import load_average, with_load

CACHE = Path(__file__).resolve().parent / ".cache"
SHAPE = (256, 256, 128)
JUMPS = [(200, 40, 100), (30, 220, 20), (128, 128, 64), (250, 250, 120)]
TIMEOUT_S = 60.0


def dataset() -> Path:
    """The three-layer dataset (built once)."""
    root = CACHE / "threads-3layers"
    if (root / "datasource-properties.json").exists():
        return root
    from viewer.core.synthetic import EMVolume
    from viewer.format import write_synthetic_dataset

    tmp = CACHE / "threads-3layers.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    write_synthetic_dataset(tmp, EMVolume(7), shape=SHAPE, block_len=32, file_len=4).close()
    shutil.copytree(tmp / "color", tmp / "color2")
    props = json.loads((tmp / "datasource-properties.json").read_text())
    layer = json.loads(json.dumps(next(x for x in props["dataLayers"]
                                       if x["name"] == "color")))
    layer["name"] = "color2"
    for mag in layer.get("mags", []):
        if "path" in mag:
            mag["path"] = mag["path"].replace("color", "color2", 1)
    props["dataLayers"].append(layer)
    (tmp / "datasource-properties.json").write_text(json.dumps(props, indent=2))
    os.replace(tmp, root)
    return root


def kernel_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def python_threads() -> dict[str, int]:
    """Live Python threads by name (a trailing number dropped: one entry per kind)."""
    names: Counter[str] = Counter()
    for t in threading.enumerate():
        name = t.name.rstrip("0123456789").rstrip("-_ ") or t.name
        names[name] += 1
    return dict(sorted(names.items()))


def run_session(root: Path) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from viewer.core.slicing import XY, XZ, YZ
    from viewer.core.state import ViewerState
    from viewer.format import shutdown
    from viewer.ui.main_window import QtMainWindow

    app = QApplication.instance() or QApplication(["threads-benchmark"])
    before = kernel_threads()
    window = QtMainWindow(ViewerState())
    window.add_background_loading()
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
    window.resize(1280, 860)
    window.show()
    if not window.open_path(str(root), pos=(128, 128, 64), zoom=1.0):
        raise SystemExit(f"cannot open {root}: {window.errors}")
    views = [window.views[a] for a in (XY, XZ, YZ)]
    layers = len(window.opened.layers) if window.opened is not None else 0

    def wait_complete() -> None:
        began = time.perf_counter()
        while not all(v.plane is not None and v.plane.complete for v in views):
            app.processEvents()
            if time.perf_counter() - began > TIMEOUT_S:
                return
            time.sleep(0.002)

    wait_complete()
    for pos in JUMPS:
        window.state.set_cursor(pos)
        wait_complete()
    browsing = kernel_threads()
    named = python_threads()
    window.close()
    window.deleteLater()
    for _ in range(20):
        app.processEvents()
    time.sleep(0.5)
    closed, closed_named = kernel_threads(), python_threads()
    shutdown()
    time.sleep(0.5)
    return {"layers": layers, "threads_before_window": before, "threads_browsing": browsing,
            "python_threads_browsing": named, "threads_after_window_close": closed,
            "python_threads_after_window_close": closed_named,
            "threads_after_close": kernel_threads(),
            "python_threads_after_close": python_threads()}


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object of figures")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    root = dataset()
    if args.child:
        print(json.dumps(run_session(root)))
        return 0
    proc = subprocess.run([sys.executable, "-m", "benchmarks.threads", "--child"],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        print(proc.stderr[-4000:], file=sys.stderr)
        return 1
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
        return 0
    print(f"window browsing a {figures['layers']}-layer dataset: "
          f"{figures['threads_browsing']} threads (before the window: "
          f"{figures['threads_before_window']}); after the window closed: "
          f"{figures['threads_after_window_close']}; and after shutdown: "
          f"{figures['threads_after_close']}")
    for title, key in (("browsing", "python_threads_browsing"),
                       ("after the window closed", "python_threads_after_window_close"),
                       ("after shutdown", "python_threads_after_close")):
        print(f"  Python threads {title}:")
        for name, n in figures[key].items():
            print(f"    {n:3d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
