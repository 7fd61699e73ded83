"""Time-series benchmark: ``]`` (the next time point) -> all three views complete.

A zarr v3 time series written by zarr-python (``benchmarks/.cache/timeseries_t10.zarr``: 10
time points of a 384 x 384 x 192 EM-like uint8 volume, axes ``t, z, y, x``, zstd chunks of
1 x 32^3) in the real window (offscreen, background loader, 1 GiB budget, views about 800 x 800
pixels showing whole planes).  After opening, the window settles (every plane complete, the
loaders idle); then each step sends ``]`` (``state.step_index(1)``, what the key does) and
times until every view's plane is complete, then lets the loaders finish (a user looking at
each time point for a moment) before the next step: nine steps forward, then nine ``[`` back.

Two ways of stepping, alternated in one run (``--rounds`` of each):

* ``read_ahead``: the program as it is: the source keeps its cache and the parts of the
  neighbouring time points across a step, and reads the screen's planes ahead at the previous
  and next time point (``LayeredSource.show_layers``, ``time_ahead``);
* ``rebuilt``: as before reading ahead existed: each step closes the source and makes a new one
  (a fresh cache) at the new time point, nothing read ahead (its spatial prefetch still on).

    python -m benchmarks.timepoints [--json] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WKW_VIEWER_NO_SETTINGS", "1")

import numpy as np  # noqa: E402

from benchmarks import load_average, with_load  # noqa: E402
from benchmarks.datasets import CACHE  # noqa: E402

T = 10
SHAPE = (384, 384, 192)  # x, y, z
CHUNK = 32
WINDOW = (1836, 1720)  # views ~805 x 820 beside the 220-pixel contrast dock


def series() -> Path:
    """The time series, written once with zarr-python (each time point its own EM volume)."""
    import zarr

    from viewer.core.synthetic import EMVolume

    path = CACHE / "timeseries_t10.zarr"
    if (path / ".complete").exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = zarr.create_array(str(path), shape=(T, *SHAPE[::-1]), dtype="uint8",
                            chunks=(1, CHUNK, CHUNK, CHUNK), zarr_format=3, fill_value=0,
                            dimension_names=["t", "z", "y", "x"], overwrite=True)
    for t in range(T):
        print(f"\rwriting time point {t + 1}/{T}", end="", file=sys.stderr)
        em = EMVolume(seed=t)
        arr[t] = np.ascontiguousarray(em.em((0, 0, 0), SHAPE).transpose(2, 1, 0))
    print(file=sys.stderr)
    (path / ".complete").touch()
    return path


def _rebuilt_show_index(window: Any) -> Any:
    """The window's step as it was before reading ahead: a new source at the new index."""
    from viewer.core import state as st
    from viewer.core.layered import source_layers

    def show_index(self: Any) -> None:
        opened = self.opened
        opened.set_index(self.state.index)
        layers, _ = source_layers(opened)
        layers.sort(key=lambda la: la.category == st.SEGMENTATION)
        shown = {la.name for la in self.state.layers}
        layers = [la for la in layers if la.name in shown]
        self.source._on_close = None  # the dataset stays open for the next source
        self.source.close()
        self.source = self.source_factory(layers, None)
        self.source.time_ahead = False
        self.dataset = layers[0].finest
        for view in self.views.values():
            view.layer_planes, view.layer_rendered = {}, {}
        self.drawing.start(layers)
        self.drawing.refresh_planes(force=True)

    return types.MethodType(show_index, window)


def steps(path: Path, mode: str) -> dict[str, list[float]]:
    """Milliseconds from each step to every view complete, forward and back."""
    from PySide6.QtWidgets import QApplication

    from viewer.ui.main_window import QtMainWindow

    app = QApplication.instance() or QApplication([])
    window = QtMainWindow()
    window.add_background_loading(1 << 30)
    window.resize(*WINDOW)
    window.show()
    app.processEvents()
    if not window.open_path(path):
        raise RuntimeError(f"could not open {path}")
    source = window.source
    assert source is not None
    if mode == "rebuilt":
        window._show_index = _rebuilt_show_index(window)  # type: ignore[method-assign]
        source.time_ahead = False

    def complete() -> bool:
        return all(v.plane is not None and v.plane.complete for v in window.views.values())

    def until_complete() -> None:
        deadline = time.monotonic() + 60
        while not complete():
            app.processEvents()
            if time.monotonic() > deadline:
                raise RuntimeError("planes never completed")

    def settle() -> None:
        until_complete()
        for _ in range(200):
            app.processEvents()
            shown = window.source
            if shown is not None and shown.wait_idle(0.05) and complete():
                app.processEvents()
                return
        raise RuntimeError("the loaders never went idle")

    settle()
    out: dict[str, list[float]] = {"forward": [], "back": []}
    for direction, step in (("forward", 1), ("back", -1)):
        for _ in range(T - 1):
            t0 = time.perf_counter()
            window.state.step_index(step)
            until_complete()
            out[direction].append((time.perf_counter() - t0) * 1000)
            settle()
    window.close()
    window.deleteLater()
    app.processEvents()
    return out


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    path = series()
    times: dict[str, dict[str, list[float]]] = {
        m: {"forward": [], "back": []} for m in ("rebuilt", "read_ahead")}
    for _ in range(args.rounds):
        for mode in times:
            for direction, ms in steps(path, mode).items():
                times[mode][direction].extend(ms)
    figures: dict[str, Any] = {}
    for mode, by_direction in times.items():
        for direction, ms in by_direction.items():
            ms.sort()
            figures[f"step_{direction}_to_complete_median_ms_{mode}"] = \
                round(statistics.median(ms), 2)
            figures[f"step_{direction}_to_complete_max_ms_{mode}"] = round(ms[-1], 2)
    if args.json:
        print(json.dumps(with_load(figures, load_before)))
        return 0
    print(f"{'figure':52} {'value':>10}")
    for key, value in figures.items():
        print(f"{key:52} {value:>10}")
    print(f"(load average {load_before} before, {load_average()} after; {args.rounds} rounds "
          f"of {T - 1} steps each way per mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
