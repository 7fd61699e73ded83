"""The window's longest event-loop stall while it opens a dataset of many files, its inspector
scans every file, and the Sizes tab is shown (``benchmarks.scale`` runs it in a child process).

``python -m benchmarks.scale_window DATASET [--where] [--events] [--switch-interval MS]``:
prints one JSON line ``{"open_scan_max_stall_ms_100k": ms, "open_stall_ms", "scan_stall_ms",
"sizes_tab_stall_ms", "scan_s"}``.  ``--where`` also prints, for each stall over 50 ms, where
the GUI thread was (sampled every 5 ms by a thread): a tool to find what blocks.  ``--events``
prints the ten latest heartbeats with the GUI thread's own CPU time in each, its time waiting
for a core (the kernel's run-queue delay, Linux) and the rest (mostly waiting for the
interpreter lock), and the top-level Qt events over 2 ms inside each (type, receiver, the first
Python function it ran, wall and CPU time): Qt's and the code's work told apart from the
load's and the lock's.
``--switch-interval MS`` sets the interpreter's switch interval first (an A/B of
``viewer.ui.gil``: the window never lengthens what is set).
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

from benchmarks import load_average, with_load  # noqa: E402
from benchmarks.inspector import Heartbeat, wait_for  # noqa: E402


def _run_delay() -> float:
    """Seconds the calling thread has waited for a core (Linux; 0 elsewhere)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except OSError:
        return 0.0


class EventLog:
    """``--events``: each late heartbeat's GUI-thread CPU and run-queue wait, and the
    top-level Qt events (a ``QApplication.notify`` wrapper) over 2 ms."""

    LATE_S = 0.03

    def __init__(self, app: Any, beat: Heartbeat) -> None:
        self.events: list[tuple[float, float, float, float, str]] = []
        self.late: list[tuple[str, float, float, float, float]] = []
        self.phase = "open"
        self.phase_cpu: dict[str, float] = {}  # the GUI thread's CPU seconds in each phase
        self._phase_began = time.thread_time()
        self._depth = 0
        self._last = (time.perf_counter(), time.thread_time(), _run_delay())
        beat.timer.timeout.connect(self.tick)
        app.notify_hook = self.notify

    def next_phase(self, phase: str) -> None:
        self.tick()
        now = time.thread_time()
        self.phase_cpu[self.phase] = now - self._phase_began
        self.phase, self._phase_began = phase, now

    def tick(self) -> None:
        now, cpu, delay = time.perf_counter(), time.thread_time(), _run_delay()
        t0, c0, d0 = self._last
        if now - t0 > self.LATE_S:
            self.late.append((self.phase, t0, now - t0, cpu - c0, delay - d0))
        self._last = (now, cpu, delay)

    def notify(self, call: Any, receiver: Any, event: Any) -> bool:
        if self._depth:
            return bool(call(receiver, event))
        self._depth += 1
        t0, c0, d0 = time.perf_counter(), time.thread_time(), _run_delay()
        kind = int(event.type().value)
        first: list[str] = []  # the first Python function the event ran (a timer's slot)

        def profile(frame: Any, what: str, arg: Any) -> None:
            if what == "call" and frame.f_code.co_filename != __file__:  # not this wrapper
                code = frame.f_code
                first.append(f"{os.path.basename(code.co_filename)}:{code.co_name}")
                sys.setprofile(None)

        sys.setprofile(profile)
        try:
            return bool(call(receiver, event))
        finally:
            sys.setprofile(None)
            self._depth -= 1
            wall = time.perf_counter() - t0
            if wall > 0.002:
                try:
                    name = f"{type(receiver).__name__}:{receiver.objectName()}"
                except RuntimeError:
                    name = "(deleted)"
                slot = f" -> {first[0]}" if first else ""
                self.events.append((t0, wall, time.thread_time() - c0, _run_delay() - d0,
                                    f"event {kind} {name}{slot}"))

    def report(self, began: float) -> None:
        for phase in ("open", "scan", "sizes"):
            beats = [b for b in self.late if b[0] == phase]
            if beats:
                longest = max(b[2] for b in beats) * 1000
                most = max(b[3] for b in beats) * 1000
                print(f"{phase}: {len(beats)} late beats, the longest {longest:.1f} ms, "
                      f"the most GUI CPU in one {most:.1f} ms, GUI CPU in the phase "
                      f"{self.phase_cpu.get(phase, 0.0) * 1000:.0f} ms", file=sys.stderr)
        for phase, t0, gap, cpu, delay in sorted(self.late, key=lambda b: -b[2])[:10]:
            rest = (gap - cpu - delay) * 1000
            print(f"[{phase}] at {t0 - began:6.2f} s: {gap * 1000:6.1f} ms, GUI CPU "
                  f"{cpu * 1000:5.1f}, waiting for a core {delay * 1000:5.1f}, the rest "
                  f"{rest:5.1f}", file=sys.stderr)
            for e0, wall, ecpu, edelay, what in self.events:
                if t0 - 0.001 <= e0 < t0 + gap:
                    print(f"    +{(e0 - t0) * 1000:6.1f} {wall * 1000:6.1f} ms CPU "
                          f"{ecpu * 1000:5.1f} core wait {edelay * 1000:5.1f}  {what}",
                          file=sys.stderr)


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
    load_before = load_average()
    root = argv[0]
    where = "--where" in argv
    if "--switch-interval" in argv:
        sys.setswitchinterval(float(argv[argv.index("--switch-interval") + 1]) / 1000)
    from PySide6.QtWidgets import QApplication

    class App(QApplication):
        """``notify`` through ``notify_hook`` when one is set (``--events``)."""

        notify_hook: Any = None

        def notify(self, receiver: Any, event: Any) -> bool:
            if self.notify_hook is None:
                return super().notify(receiver, event)
            return bool(self.notify_hook(super().notify, receiver, event))

    from viewer.app import WINDOW_SIZE
    from viewer.core.state import ViewerState
    from viewer.ui import settings
    from viewer.ui.inspector.install import install_inspector
    from viewer.ui.main_window import QtMainWindow

    settings.disable()
    app = QApplication.instance() or (App(["scale"]) if "--events" in argv
                                      else QApplication(["scale"]))
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
    log = EventLog(app, beat) if "--events" in argv else None
    sampler = Sampler(beat)
    if where:
        sampler.thread.start()
    figures: dict[str, Any] = {}
    beat.start()
    began = time.perf_counter()
    window.open_path(root)
    figures["open_stall_ms"] = beat.stop()
    if log is not None:
        log.next_phase("scan")
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
    if log is not None:
        log.next_phase("sizes")
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
    if log is not None:
        log.next_phase("end")
        app.notify_hook = None
        print(f"switch interval {sys.getswitchinterval() * 1000:.2f} ms", file=sys.stderr)
        log.report(began)
    if where:
        for stack, n in sampler.seen.most_common(15):
            print(f"{n * 5:6d} ms  {stack}", file=sys.stderr)
    print(json.dumps(with_load({k: round(v, 1) for k, v in figures.items()}, load_before)))
    sys.stdout.flush()
    os._exit(0)  # background scans end with the process: no teardown measured


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
