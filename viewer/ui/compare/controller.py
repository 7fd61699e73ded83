"""The compare mode: dataset B beside the window's A, the compare modes, the comparison.

``QtCompareController`` is the object the window holds (``window.compare``, built by
``install.build_compare``).  It is composed of parts, each in a file of its own:

- ``b``, a ``side_b.QtSideB``: B opened, read through a loader of its own on the window's block
  cache, with the same plane requests as A's views; B's own views beside A's (side by side);
- ``run``, a ``run.QtComparisonRun``: the whole-dataset comparison in the background, its
  results, the outlines of mismatching blocks and the way to them;
- ``pictures``, a ``pictures.ComparePictures``: what A's views show in the picture modes;
- ``overlays_a`` / ``overlays_b``: an ``overlay.QtCompareOverlay`` over each view, which draws
  what this controller (an ``overlay.OverlaySource``) says;
- ``hover``, a ``hover.QtHoverValues``: A's and B's values under the mouse in the status bar.

The controller holds what they share (the mode, the flicker side, the tolerance, whether
outlines show), ties them to the ``ViewerState`` and the window (``host.CompareHost``, the
members of the window it uses) and shuts them down with the window.  The modes are listed in
``modes``.

GUI thread only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication, QDockWidget, QWidget

from viewer.core import state as st
from viewer.core.compare import VolumeSpec, is_collection
from viewer.core.compare.model import Box
from viewer.core.slicing import IN_PLANE, PlaneRequest
from viewer.format import FormatError
from viewer.ui.compare import modes
from viewer.ui.compare.host import CompareHost, describe
from viewer.ui.compare.hover import QtHoverValues
from viewer.ui.compare.overlay import A_COLOR, B_COLOR, QtCompareOverlay
from viewer.ui.compare.pictures import ComparePictures
from viewer.ui.compare.run import QtComparisonRun, compared_bytes
from viewer.ui.compare.side_b import QtSideB, open_b_dataset


class QtCompareController(QObject):
    """The compare mode of one window.  See the module docstring."""

    A_ONLY: ClassVar[str] = modes.A_ONLY
    SIDE: ClassVar[str] = modes.SIDE
    FLICKER: ClassVar[str] = modes.FLICKER
    SWIPE: ClassVar[str] = modes.SWIPE
    DIFFERENCE: ClassVar[str] = modes.DIFFERENCE
    MASK: ClassVar[str] = modes.MASK
    MODES: ClassVar[tuple[str, ...]] = modes.MODES
    MODE_NAMES: ClassVar[dict[str, str]] = modes.MODE_NAMES

    #: B was opened (its path) or closed ("").
    b_changed = Signal(str)
    #: The mode, the flicker side or the difference levels changed.
    mode_changed = Signal(str)

    def __init__(self, window: CompareHost) -> None:
        super().__init__(window if isinstance(window, QObject) else None)
        self.window = window
        self.state: st.ViewerState = window.state
        self.mode = modes.A_ONLY
        self.showing_b = False
        self.tolerance = 0.0
        self.show_blocks = True
        self.b = QtSideB(window, self)
        self.run = QtComparisonRun(self.state, window.show_error, self)
        self.pictures = ComparePictures(window, self.b, self._on_level_changed)
        self.hover = QtHoverValues(window, self.b)
        self.overlays_a = {axis: QtCompareOverlay(view, self, "A")
                           for axis, view in window.views.items()}
        self.overlays_b: dict[int, QtCompareOverlay] = {}
        self.b.plane_changed.connect(lambda axis: self.overlays_a[axis].update())
        self.run.outlines_changed.connect(self._update_views)
        #: The Compare dock and its panel (set by ``install.build_compare``).
        self.dock: QDockWidget | None = None
        self.panel: QWidget | None = None
        self._closed = False
        self.state.subscribe(self._on_state_changed)
        window.dataset_opened.connect(self._on_a_opened)
        window.installEventFilter(self)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    # == B ======================================================================================
    @property
    def active(self) -> bool:
        """A dataset B is open."""
        return self.b.active

    @property
    def path_b(self) -> str | None:
        """The path B was opened by (None: no B)."""
        return self.b.path

    @property
    def name_a(self) -> str:
        return _short(self.window.dataset_path or "")

    @property
    def name_b(self) -> str:
        return _short(self.b.path or "")

    def open_b(self, path: str | os.PathLike[str], start: bool = True) -> bool:
        """Open dataset B next to the window's dataset; start the whole-dataset comparison
        (``start``).  On failure the window says why and False is returned."""
        path = os.fspath(path)
        if self.window.dataset is None:
            self.window.show_error("Nothing to compare with", "open dataset A first")
            return False
        first = self.state.layers[0].name if self.state.layers else None
        try:
            found = open_b_dataset(path, first, self.window.dataset_mag)
        except (FormatError, OSError, KeyError, ValueError) as exc:
            self.window.show_error(f"Cannot open {path} for comparison", describe(exc))
            return False
        self.close_b()
        # Differences are shown voxel for voxel: A's views read its finest mag meanwhile.
        self.window.force_finest = True
        self.window.refresh_planes(force=True)
        self.b.attach(path, found)
        for axis, b_view in self.b.views.items():
            if axis not in self.overlays_b:
                self.overlays_b[axis] = QtCompareOverlay(b_view, self, "B")
        self.set_mode(modes.SIDE if self.mode == modes.A_ONLY else self.mode)
        self.b.refresh(force=True)
        self.b_changed.emit(path)
        if start:
            self.start_comparison()
        return True

    @property
    def spec_a(self) -> VolumeSpec | None:
        """How the comparison opens A: the window's dataset, and of a dataset of several
        layers or mags the layer and mag the window's coordinates are in (its first layer's
        finest mag)."""
        path = self.window.dataset_path
        if path is None:
            return None
        opened = self.window.opened
        if opened is None or not is_collection(opened) or not self.state.layers:
            return VolumeSpec(path)
        return VolumeSpec(path, self.state.layers[0].name, self.window.dataset_mag)

    def close_b(self) -> None:
        """Close B: cancel the comparison, stop B's loader, back to A only."""
        self.run.abandon()
        self.run.clear()
        was = self.b.close()
        if was and self.window.force_finest:
            self.window.force_finest = False
            self.window.refresh_planes(force=True)
        self.pictures.clear()
        if self.mode != modes.A_ONLY:
            self.set_mode(modes.A_ONLY)
        self._update_views()
        if was:
            self.b_changed.emit("")

    def planes_complete(self) -> bool:
        """B's planes for every visible view are in (nothing of B still loading)."""
        return self.b.planes_complete()

    # == modes ==================================================================================
    def set_mode(self, mode: str) -> None:
        if mode not in modes.MODES:
            raise ValueError(f"unknown compare mode {mode!r} (known: {modes.MODES})")
        if not self.active and mode != modes.A_ONLY:
            self.window.statusBar().showMessage(
                "Open a dataset B first: File \u25b8 Compare with\u2026 (Ctrl+B)", 5000)
            return
        if mode == modes.FLICKER and self.mode != modes.FLICKER:
            self.showing_b = True
        changed = mode != self.mode
        self.mode = mode
        self._apply_layout()
        if changed:
            self.b.refresh()
        self._update_views()
        self.mode_changed.emit(mode)

    def toggle_flicker(self) -> None:
        """Show the other dataset (switches to flicker mode first)."""
        if self.mode != modes.FLICKER or not self.active:
            self.set_mode(modes.FLICKER)
            return
        self.showing_b = not self.showing_b
        self._update_views()
        self.mode_changed.emit(self.mode)

    def set_tolerance(self, tolerance: float) -> None:
        self.tolerance = max(0.0, float(tolerance))
        self._update_views()

    def set_show_blocks(self, show: bool) -> None:
        self.show_blocks = bool(show)
        self._update_views()

    def _apply_layout(self) -> None:
        """B's views in side by side only; the swipe handles in swipe mode only."""
        self.b.apply_layout(self.active and self.mode == modes.SIDE)
        for overlay in self.overlays_a.values():
            if overlay.handle is not None:
                overlay.handle.setVisible(self.active and self.mode == modes.SWIPE)
                overlay.handle.place()

    def _on_level_changed(self) -> None:
        # Found while painting: the panel (which shows the levels) hears of it afterwards.
        QTimer.singleShot(0, lambda: self.mode_changed.emit(self.mode))

    # == what the overlays draw (overlay.OverlaySource) =========================================
    def badge(self, role: str) -> tuple[str, QColor]:
        """The label a view wears: what it shows."""
        if not self.active:
            return "", A_COLOR
        a_text = "A" if self.name_a == "A" else f"A \u00b7 {self.name_a}"
        b_text = "B" if self.name_b == "B" else f"B \u00b7 {self.name_b}"
        if role == "B":
            return b_text, B_COLOR
        if self.mode == modes.FLICKER:
            return (b_text, B_COLOR) if self.showing_b else (a_text, A_COLOR)
        if self.mode == modes.DIFFERENCE:
            return f"A \u2212 B   \u00b1{_fmt_level(self.level)}", QColor(225, 225, 230)
        if self.mode == modes.MASK:
            return f"|A \u2212 B| > {_fmt_level(self.tolerance)}", QColor(255, 210, 31)
        return a_text, A_COLOR

    def mode_image(self, axis: int) -> tuple[QImage, tuple[int, int]] | None:
        """The picture A's view ``axis`` shows in the current mode (None: A's own image)."""
        if not self.active:
            return None
        return self.pictures.picture(axis, self.mode, self.showing_b, self.tolerance)

    def block_rects(self, axis: int, request: PlaneRequest
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_],
                               tuple[int, int, int, int] | None]:
        """The outlines of the mismatching blocks on a plane (``run.block_rects``)."""
        return self.run.block_rects(axis, request)

    @property
    def block_len(self) -> int:
        return self.run.block_len

    @property
    def level(self) -> float:
        """The difference mode's levels: ``-level .. +level``."""
        return self.pictures.level

    def difference_level(self) -> float:
        """The largest |A - B| on the views on screen (``pictures.difference_level``)."""
        return self.pictures.difference_level()

    def _update_views(self) -> None:
        for overlay in (*self.overlays_a.values(), *self.overlays_b.values()):
            overlay.update()
        for view in self.b.views.values():
            view.update()

    # == the comparison =========================================================================
    def start_comparison(self, box: Box | None = None) -> bool:
        """Compare A and B block by block in the background (over ``box``, or everything),
        with the current tolerance.  A running comparison is cancelled first."""
        a, b, dataset = self.spec_a, self.b.spec, self.window.dataset
        if not self.active or a is None or b is None or dataset is None or self._closed:
            return False
        c = dataset.chunk_shape
        return self.run.start(a, b, box, self.tolerance, (int(c[0]), int(c[1]), int(c[2])),
                              compared_bytes(dataset, self.state.bounds, box))

    def cancel_comparison(self) -> None:
        """Stop the comparison (it still reports what it compared)."""
        self.run.cancel()

    def screen_box(self) -> Box | None:
        """The box the three views show now (x and y from XY, x and z from XZ, y and z from
        YZ), or None before any plane."""
        cursor = self.state.cursor
        lo: list[int] = [cursor[0], cursor[1], cursor[2]]
        hi: list[int] = [cursor[0] + 1, cursor[1] + 1, cursor[2] + 1]
        seen = [False, False, False]
        for axis, view in self.window.views.items():
            req = view.request
            if req is None or not view.isVisibleTo(view.window()):
                continue
            offset, shape = req.box()
            for a in IN_PLANE[axis]:
                end = offset[a] + shape[a]
                lo[a] = offset[a] if not seen[a] else min(lo[a], offset[a])
                hi[a] = end if not seen[a] else max(hi[a], end)
                seen[a] = True
        if any(b <= a for a, b in zip(lo, hi, strict=True)):
            return None
        return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))

    def common_box(self) -> Box | None:
        """Where the data files of A and B overlap (``b.common_box``)."""
        return self.b.common_box()

    # == the model ==============================================================================
    def _on_state_changed(self, changes: frozenset[str]) -> None:
        if self._closed:
            return
        if st.LAYOUT in changes and self.b.splitters:
            self._apply_layout()
        if not self.active:
            return
        if st.CONTRAST in changes:
            self.b.rerender()
        if changes & {st.CURSOR, st.CENTER, st.ZOOM, st.DATASET, st.LAYOUT}:
            self.b.refresh()
        self._update_views()

    def _on_a_opened(self, _path: str) -> None:
        """Another dataset A: the running comparison is cancelled; with B open it starts
        again for the new pair."""
        if self._closed or not self.active:
            return
        self.run.abandon()
        self.run.clear()
        self.pictures.clear()
        self.b.forget_planes()
        self.b.refresh(force=True)
        self.start_comparison(self.run.box)

    # == shutting down ==========================================================================
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.parent() and event.type() == QEvent.Type.Close:  # the window's
            self.shutdown()
        return False

    def shutdown(self) -> None:
        """Cancel and join the comparison, stop B's loader and the worker: no thread left."""
        if self._closed:
            return
        self.close_b()
        self.run.shutdown()
        self._closed = True
        self.state.unsubscribe(self._on_state_changed)


def _short(path: str, limit: int = 28) -> str:
    p = Path(path)
    name = p.name or path
    if p.parent.name and name.isdigit():  # a mag folder: say which layer
        name = f"{p.parent.name}/{name}"
    return name if len(name) <= limit else "\u2026" + name[-(limit - 1):]


def _fmt_level(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.4g}"


__all__ = ["QtCompareController"]
