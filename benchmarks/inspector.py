"""Inspector benchmark: how fast the inspector shows a big file, and fills a big file table.

- ``inspector_show_ms``: from creating a ``QtInspectorPanel`` (with its overlays attached to
  three slice views of the program, ``QtSliceView``) and giving it a one-file 1024^3 LZ4HC
  dataset (32,768 blocks of 32^3) with the cursor at its centre, until the header, the jump
  table (32,768 rows) and the compression planes of all three overlays are shown and painted.
  Median of 5 runs after a warm-up (page cache warm).
  Target <= 100 ms.  Scrolling the table to its last row is timed apart (printed only).
- ``file_table_1000_files_s``: time until the file table of a 1,000-file dataset (10^3 files of
  16^3 voxels, block_len 8, file_len 2, LZ4HC) is filled by the background scan.  Target <= 5 s.
- ``max_event_loop_stall_ms``: the longest the GUI event loop went without running a 5 ms
  ``QTimer`` heartbeat (gap minus the interval) during both measurements.  Target <= 50 ms.

Datasets are built once into ``benchmarks/.cache/``.  The 1024^3 file is EM-like data
(``EMVolume``) generated in 256^3 sub-cubes, in Morton order, and streamed to disk as a real
LZ4HC file (level 9, as the reference writes): the same jump-table structure as
``datasets.em_dataset("insp_1024", (1024,) * 3)`` in bounded memory (generating the whole 1024^3
file at once needs about 20 GB).

    python -m benchmarks.inspector [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import load_average, with_load
from benchmarks.datasets import CACHE
from viewer.core.synthetic import EMVolume
from viewer.format import open_dataset, wkw
from viewer.format.wkw import lz4block, morton, writer
from viewer.format.wkw.header import HEADER_SIZE

BIG = "insp_1024"
MANY = "insp_1000_files"
SUB = 256  # voxels per sub-cube side while generating the big file


def build_big_file() -> Path:
    """A one-file 1024^3 uint8 LZ4HC dataset (block_len 32, file_len 32), built once."""
    root = CACHE / BIG
    if (root / ".complete").exists():
        return root
    header = wkw.Header(np.uint8, block_len=32, file_len=32, block_type=wkw.BLOCK_TYPE_LZ4HC)
    ds = wkw.Dataset.create(str(root), header)
    path = ds.file_path(0, 0, 0)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    b = header.block_len
    n = header.num_blocks
    per_sub = (SUB // b) ** 3  # Morton indices of one sub-cube are contiguous
    data_offset = HEADER_SIZE + 8 * n
    ends = np.zeros(n, dtype="<u8")
    volume = EMVolume(1)
    started = time.perf_counter()
    tmp = path + ".building"
    with open(tmp, "wb") as fh:
        fh.write(header.to_bytes(data_offset))
        fh.write(bytes(8 * n))
        pos = data_offset
        local = np.stack(morton.decode(np.arange(per_sub)), axis=1) * b
        for sub in range(n // per_sub):
            origin = [int(c) * SUB for c in morton.decode(sub)]
            cube = volume.em(origin, (SUB, SUB, SUB))
            for k, (x, y, z) in enumerate(local.tolist()):
                raw = writer.block_bytes_of(cube[None, x:x + b, y:y + b, z:z + b])
                enc = lz4block.encode(raw)
                fh.write(enc)
                pos += len(enc)
                ends[sub * per_sub + k] = pos
            print(f"\rbuilding {BIG}: sub-cube {sub + 1}/{n // per_sub} "
                  f"({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)
        fh.seek(HEADER_SIZE)
        fh.write(ends.tobytes())
    os.replace(tmp, path)
    print(file=sys.stderr)
    (root / ".complete").write_text("ok\n")
    return root


def build_many_files() -> Path:
    """A 1,000-file dataset of small LZ4HC files (16^3 voxels each), built once."""
    root = CACHE / MANY
    if (root / ".complete").exists():
        return root
    header = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4HC)
    ds = wkw.Dataset.create(str(root), header)
    side = header.file_len_vx
    volume = EMVolume(2)
    for fz in range(10):
        for fy in range(10):
            for fx in range(10):
                data = volume.em((fx * side, fy * side, fz * side), (side, side, side))
                writer.write_file(ds.file_path(fx, fy, fz), header, data[None])
    (root / ".complete").write_text("ok\n")
    return root


class Heartbeat:
    """A 5 ms QTimer whose longest gap shows how long the event loop was blocked."""

    INTERVAL_MS = 5

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.timer = QTimer()
        self.timer.setInterval(self.INTERVAL_MS)
        self.timer.timeout.connect(self._on_timeout)
        self.last = time.perf_counter()
        self.max_gap = 0.0

    def start(self) -> None:
        self.last = time.perf_counter()
        self.timer.start()

    def _on_timeout(self) -> None:
        now = time.perf_counter()
        self.max_gap = max(self.max_gap, now - self.last)
        self.last = now

    def stop(self) -> float:
        """Stop; the longest stall in ms (gap minus the interval)."""
        self.timer.stop()
        self._on_timeout()
        return max(0.0, self.max_gap * 1000 - self.INTERVAL_MS)


def wait_for(app: object, flags: dict[str, bool], keys: list[str], timeout: float = 120) -> None:
    """Run the event loop until every flag in ``keys`` is set.  It sleeps between events like
    ``exec()`` does (the 5 ms heartbeat wakes it): a busy loop here would hold the GIL and slow
    the very threads whose results it waits for."""
    from PySide6.QtCore import QEventLoop

    deadline = time.perf_counter() + timeout
    wait = QEventLoop.ProcessEventsFlag.AllEvents | QEventLoop.ProcessEventsFlag.WaitForMoreEvents
    while not all(flags.get(k) for k in keys):
        app.processEvents(wait)  # type: ignore[attr-defined]
        if time.perf_counter() > deadline:
            raise TimeoutError(f"waited {timeout} s for {keys}")


def _spin(app: object, seconds: float) -> None:
    from PySide6.QtCore import QEventLoop

    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)  # type: ignore[attr-defined]


def measure_show(app: object, root: Path, views: list[Any]) -> tuple[float, float, float]:
    """One run: (ms from creating the panel until header, jump table and overlays are shown
    and painted; stall ms; ms to scroll the jump table to its last row and repaint)."""
    from viewer.ui.inspector import QtInspectorPanel

    flags: dict[str, bool] = {}
    beat = Heartbeat()
    beat.start()
    t0 = time.perf_counter()
    panel = QtInspectorPanel()
    panel.resize(900, 700)
    panel.file_shown.connect(lambda _p: flags.__setitem__("file", True))
    panel.overlays_updated.connect(lambda: flags.__setitem__("overlays", True))
    overlays = [panel.attach_to_view(view) for view in views]
    panel.tabs.setCurrentIndex(2)
    panel.show()
    app.processEvents()  # type: ignore[attr-defined]  # as in the app: built, then used
    panel.set_dataset(open_dataset(str(root)), own=True)
    panel.show_cursor((512, 512, 512))
    wait_for(app, flags, ["file", "overlays"])
    app.processEvents()  # type: ignore[attr-defined]  # the paint of what arrived last
    elapsed = (time.perf_counter() - t0) * 1000
    jump = panel.jump_tab
    assert jump.jump_model.rowCount() == 32 ** 3
    t1 = time.perf_counter()
    jump.jump_view.scrollToBottom()  # the virtual model: the last of 32,768 rows at once
    jump.jump_view.viewport().repaint()
    scroll_ms = (time.perf_counter() - t1) * 1000
    stall = beat.stop()
    for overlay in overlays:
        overlay.setParent(None)
        overlay.deleteLater()
    panel.shutdown()
    panel.deleteLater()
    app.processEvents()  # type: ignore[attr-defined]
    return elapsed, stall, scroll_ms


def measure_file_table(app: object, root: Path) -> tuple[float, float, int]:
    """(seconds until the 1,000-file table is filled, stall ms, rows)."""
    from viewer.ui.inspector import QtInspectorPanel

    flags: dict[str, bool] = {}
    panel = QtInspectorPanel()
    panel.resize(900, 700)
    panel.tabs.setCurrentIndex(1)
    panel.show()
    panel.scan_finished.connect(lambda _n: flags.__setitem__("scan", True))
    app.processEvents()  # type: ignore[attr-defined]
    beat = Heartbeat()
    beat.start()
    t0 = time.perf_counter()
    panel.set_dataset(open_dataset(str(root)), own=True)
    wait_for(app, flags, ["scan"])
    app.processEvents()  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - t0
    stall = beat.stop()
    rows = panel.files_tab.files_model.rowCount()
    panel.shutdown()
    panel.deleteLater()
    return elapsed, stall, rows


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(prog="python -m benchmarks.inspector")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    big = build_big_file()
    many = build_many_files()

    from PySide6.QtWidgets import QApplication, QHBoxLayout, QWidget

    from viewer.core.state import ViewerState
    from viewer.ui.slice_view import QtSliceView

    app = QApplication.instance() or QApplication([])
    window = QWidget()
    window.resize(900, 300)
    row = QHBoxLayout(window)
    state = ViewerState()
    state.set_bounds(((0, 0, 0), (1024, 1024, 1024)), (512, 512, 512), 300 / 1024)
    views = [QtSliceView(axis, state) for axis in (2, 1, 0)]
    for view in views:
        row.addWidget(view)
    window.show()
    app.processEvents()

    idle = Heartbeat()  # how the machine itself delays a timer (others' load), for reference
    idle.start()
    _spin(app, 1.0)
    idle_stall = idle.stop()
    measure_show(app, big, views)  # warm-up: page cache, imports, first paint
    runs = [measure_show(app, big, views) for _ in range(args.runs)]
    show_ms = statistics.median(r[0] for r in runs)
    show_stall = max(r[1] for r in runs)
    table_s, table_stall, rows = measure_file_table(app, many)
    figures = {
        "inspector_show_ms": round(show_ms, 1),
        "file_table_1000_files_s": round(table_s, 3),
        "max_event_loop_stall_ms": round(max(show_stall, table_stall), 1),
    }
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
        return 0
    print(f"{'figure':34} {'value':>10} {'target':>10}")
    print(f"{'inspector_show_ms (1024^3, 32,768 blocks)':34} {figures['inspector_show_ms']:>10} "
          f"{'<= 100':>10}")
    print(f"{'file_table_1000_files_s':34} {figures['file_table_1000_files_s']:>10} "
          f"{'<= 5':>10}")
    print(f"{'max_event_loop_stall_ms':34} {figures['max_event_loop_stall_ms']:>10} "
          f"{'<= 50':>10}")
    print(f"  show runs (ms): {', '.join(f'{r[0]:.1f}' for r in runs)}; scroll to row 32,768 "
          f"and repaint: {statistics.median(r[2] for r in runs):.1f} ms (median)")
    print(f"  stalls: show {show_stall:.1f} ms, file table {table_stall:.1f} ms "
          f"({rows} rows); idle event loop on this machine: {idle_stall:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
