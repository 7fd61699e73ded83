"""The window's longest event-loop stall while it opens a dataset of many files, its inspector
scans every file, and the Sizes tab is shown (``benchmarks.scale`` runs it in a child process).

``python -m benchmarks.scale_window DATASET [--where]``: prints one JSON line
``{"open_scan_max_stall_ms_100k": ms, "open_stall_ms", "scan_stall_ms", "sizes_tab_stall_ms",
"scan_s"}``.  ``--where`` also prints, for each stall over 50 ms, where the GUI thread was
(sampled every 5 ms by a thread): a tool to find what blocks.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections import Counter
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WKW_VIEWER_NO_SETTINGS", "1")

from benchmarks.inspector import Heartbeat, wait_for  # noqa: E402


class Sampler:
    """Samples the GUI thread's stack while the heartbeat is late (``--where``)."""

    def __init__(self, beat: Heartbeat) -> None:
        self.beat = beat
        self.main = threading.main_thread().ident
        self.seen: Counter[str] = Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.005):
            if time.perf_counter() - self.beat.last > 0.05:
                frame = sys._current_frames().get(self.main or 0)
                if frame is not None:
                    stack = traceback.extract_stack(frame)[-6:]
                    self.seen[" <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}"
                                          for f in reversed(stack))] += 1


def main(argv: list[str]) -> int:
    root = argv[0]
    where = "--where" in argv
    from PySide6.QtWidgets import QApplication

    from viewer.app import WINDOW_SIZE
    from viewer.core.state import ViewerState
    from viewer.ui import settings
    from viewer.ui.inspector.install import install_inspector
    from viewer.ui.main_window import QtMainWindow

    settings.disable()
    app = QApplication.instance() or QApplication(["scale"])
    window = QtMainWindow(ViewerState())
    window.add_background_loading(None)
    window.resize(*WINDOW_SIZE)
    window.show()
    from viewer.ui.layers_panel import install_layers_panel

    install_layers_panel(window)
    panel = install_inspector(window)
    flags: dict[str, bool] = {}
    panel.scan_finished.connect(lambda n: flags.__setitem__("scanned", True))
    app.processEvents()
    beat = Heartbeat()
    sampler = Sampler(beat)
    if where:
        sampler.thread.start()
    figures: dict[str, Any] = {}
    beat.start()
    began = time.perf_counter()
    window.open_path(root)
    figures["open_stall_ms"] = beat.stop()
    beat.max_gap = 0.0
    beat.start()
    wait_for(app, flags, ["scanned"], timeout=1800)
    figures["scan_s"] = time.perf_counter() - began
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:  # the end of the scan's refreshes
        wait_for(app, {"x": True}, ["x"])
        app.processEvents()
        time.sleep(0.002)
    figures["scan_stall_ms"] = beat.stop()
    beat.max_gap = 0.0
    beat.start()
    panel.tabs.setCurrentWidget(panel.sizes_tab)
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.002)
    figures["sizes_tab_stall_ms"] = beat.stop()
    sampler.stop.set()
    figures["open_scan_max_stall_ms_100k"] = max(
        figures["open_stall_ms"], figures["scan_stall_ms"], figures["sizes_tab_stall_ms"])
    if where:
        for stack, n in sampler.seen.most_common(15):
            print(f"{n * 5:6d} ms  {stack}", file=sys.stderr)
    print(json.dumps({k: round(v, 1) for k, v in figures.items()}))
    sys.stdout.flush()
    os._exit(0)  # background scans end with the process: no teardown measured


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
