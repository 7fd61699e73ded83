"""The compare side of the window: dataset B, the compare modes, the background comparison.

(Over 600 lines, long because the compare mode is still methods spread over one controller;
issue 19 makes it objects of their own.)

``QtCompareController`` holds dataset B next to the window's dataset A.  B is any dataset the
format registry opens (``open_b_dataset``: the one place B is opened; its mag is the volume
compared with the window's) and is read through a background ``Loader`` of its own on the
window's block cache (one budget for A and B, B's blocks keyed apart; the same
``PlaneRequest``s as A's views, so it shows the same cursor, zoom and region: both follow the
one ``ViewerState``).  The modes:

- ``A_ONLY``: the window as usual (the mismatch overlay stays);
- ``SIDE``: every quadrant split in two, A's view on the left, B's (a ``QtSliceView`` on the
  same state) on the right;
- ``FLICKER``: the views show A or B; a key (B) toggles;
- ``SWIPE``: each view shows A left and B right of a draggable divider;
- ``DIFFERENCE``: ``A - B`` through a diverging colormap with symmetric levels;
- ``MASK``: A dimmed, with ``|A - B| > tolerance`` in yellow.

The whole-dataset comparison (its job, results, mismatch navigation and the block outlines
the overlays draw) is ``viewer.ui.compare.run.ComparisonRunMixin``, mixed into the
controller; its signals are declared here.

GUI thread only (the job's and the worker's callables excepted, which only call the bridge).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication, QLabel, QSizePolicy, QSplitter

from viewer.core import extent
from viewer.core import state as st
from viewer.core.compare import VolumeSpec, is_collection
from viewer.core.compare.model import Box
from viewer.core.loader import Loader
from viewer.core.slicing import IN_PLANE, Box3, Plane, PlaneRequest, Status
from viewer.core.state import SCREEN_AXES, XY, XZ, YZ
from viewer.format import Dataset, FormatError, Mag, Volume, open_dataset, select_mag
from viewer.render import difference as images
from viewer.render.palette import Palette
from viewer.render.plane import render_plane
from viewer.ui.compare.overlay import A_COLOR, B_COLOR, QtCompareOverlay
from viewer.ui.compare.run import (
    PROCESS_THRESHOLD_BYTES,  # noqa: F401  (re-exported: part of this module's API before the split)
    ComparisonRunMixin,
    _describe,
    find_voxel,
    parse_box,
)
from viewer.ui.loading import QtLoadingBridge
from viewer.ui.slice_view import QtSliceView

Vec3 = tuple[int, int, int]


def plane_value(plane: Plane | None, pos: Vec3) -> tuple[Any, int] | None:
    """``(values of every channel, status)`` of ``pos`` on ``plane``, None when off it."""
    if plane is None or pos[plane.request.axis] != plane.request.index:
        return None
    u, v = IN_PLANE[plane.request.axis]
    iu, iv = pos[u] - plane.request.lo[0], pos[v] - plane.request.lo[1]
    if 0 <= iu < plane.data.shape[1] and 0 <= iv < plane.data.shape[2]:
        return plane.data[:, iu, iv], int(plane.status[iu, iv])
    return None


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(int(v))


#: How long the common-extent box may wait on the GUI thread for B's file listing.
EXTENT_WAIT_S = 0.15


def open_b_dataset(path: str, layer: str | None = None,
                   mag: tuple[int, int, int] | None = None) -> tuple[Dataset, Mag, VolumeSpec]:
    """B, opened through the format registry (any format): the dataset, the mag compared with
    the window's (of a dataset of several layers or mags: the layer named ``layer`` when B
    has it, else B's default layer, at ``mag``; of a single array: that array), and the
    ``VolumeSpec`` the comparison job opens it by.  Raises the ``FormatError`` (or
    ``OSError``, ``KeyError`` for a missing mag) that stops it.

    The one place the window opens B: the window's layered source will open B here too."""
    opened = open_dataset(path)
    try:
        if not opened.layers:
            raise FormatError("no layer of this dataset can be read: "
                              + ("; ".join(str(p) for p in opened.problems) or "none"), path)
        if not is_collection(opened):
            chosen, spec = opened.layers[0].finest, VolumeSpec(path)
        else:
            names = [la.name for la in opened.layers]
            chosen = select_mag(opened, layer if layer in names else None, mag)
            spec = VolumeSpec(path, chosen.layer, chosen.mag)
        chosen.volume  # noqa: B018 - opened now: a B that cannot be read is said at once
        return opened, chosen, spec
    except BaseException:
        opened.close()
        raise


class QtCompareController(ComparisonRunMixin, QObject):
    """Dataset B and everything the window does with it.  See the module docstring."""

    A_ONLY, SIDE, FLICKER, SWIPE, DIFFERENCE, MASK = (
        "a", "side", "flicker", "swipe", "difference", "mask")
    MODES = (A_ONLY, SIDE, FLICKER, SWIPE, DIFFERENCE, MASK)
    MODE_NAMES: ClassVar[dict[str, str]] = {A_ONLY: "A only", SIDE: "Side by side", FLICKER: "Flicker A/B",
                  SWIPE: "Swipe", DIFFERENCE: "Difference A\u2212B", MASK: "Mismatch mask"}

    #: B was opened (its path) or closed ("").
    b_changed = Signal(str)
    #: The mode (or the flicker side) changed.
    mode_changed = Signal(str)
    #: A comparison started.
    job_started = Signal()
    #: New results arrived (blocks, findings, progress) from the running comparison.
    results_changed = Signal()
    #: The comparison ended: its Summary, or the exception that stopped it.
    job_finished = Signal(object)
    #: The selected mismatching block (index into ``results``).
    selection_changed = Signal(int)

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self.state: st.ViewerState = window.state
        self.mode = self.A_ONLY
        self.showing_b = False
        self.tolerance = 0.0
        self.show_blocks = True
        self.path_b: str | None = None
        #: Where B's compared mag lives (a dataset of layers: one layer's mag folder).
        self.data_path_b: str | None = None
        #: B's compared volume, the dataset it belongs to, and how the job opens it.
        self.dataset_b: Volume | None = None
        self._opened_b: Dataset | None = None
        self._spec_b: VolumeSpec | None = None
        #: Lists B's files in the background for its extent (the common-extent box).
        self._extent_b: extent.ExtentScan | None = None
        self.source_b: Loader | None = None
        self._loading_bridge: QtLoadingBridge | None = None
        self.planes_b: dict[int, Plane] = {}
        self._wanted_b: list[PlaneRequest] = []
        self.b_views: dict[int, QtSliceView] = {}
        self.splitters: dict[int, QSplitter] = {}
        self.overlays_b: dict[int, QtCompareOverlay] = {}
        self.overlays_a = {axis: QtCompareOverlay(view, self, "A")
                           for axis, view in window.views.items()}
        self._init_run()
        self._closed = False
        # Caches of derived pictures.
        self._palettes: dict[str, Palette] = {}
        self._images: dict[int, tuple[tuple[Any, ...], QImage, npt.NDArray[Any], Any]] = {}
        self._diffs: dict[int, tuple[tuple[Any, ...], npt.NDArray[np.float64], float, Any]] = {}
        self.level = 1.0
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self.refresh_b)

        self.hover_label = QLabel()
        self.hover_label.setObjectName("compareHover")
        self.hover_label.setTextFormat(Qt.TextFormat.RichText)
        window.add_status_widget(self.hover_label)
        for view in window.views.values():
            view.hovered.connect(self._on_hovered)
            view.plane_wanted.connect(lambda *_: self._refresh_timer.start())
        self.state.subscribe(self._on_state_changed)
        window.dataset_opened.connect(self._on_a_opened)
        window.installEventFilter(self)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    # == B ======================================================================================
    @property
    def active(self) -> bool:
        return self.source_b is not None

    @property
    def name_a(self) -> str:
        return _short(self.window.dataset_path or "")

    @property
    def name_b(self) -> str:
        return _short(self.path_b or "")

    def open_b(self, path: str | os.PathLike[str], start: bool = True) -> bool:
        """Open dataset B next to the window's dataset; start the whole-dataset comparison
        (``start``).  On failure the window says why and False is returned."""
        path = os.fspath(path)
        if self.window.dataset is None:
            self.window.show_error("Nothing to compare with", "open dataset A first")
            return False
        first = self.state.layers[0].name if self.state.layers else None
        try:
            opened, mag, spec = open_b_dataset(path, first,
                                               getattr(self.window, "dataset_mag", None))
            dataset = mag.volume
        except (FormatError, OSError, KeyError, ValueError) as exc:
            self.window.show_error(f"Cannot open {path} for comparison", _describe(exc))
            return False
        self.close_b()
        # Differences are shown voxel for voxel: A's views read its finest mag meanwhile.
        self.window.force_finest = True
        self.window.refresh_planes(force=True)
        self.dataset_b = dataset
        self._opened_b = opened
        self._spec_b = spec
        self.data_path_b = mag.path
        self.path_b = path
        self._extent_b = extent.ExtentScan(dataset, lambda _bounds, _done: None).start()
        # B's blocks go into A's block cache (one budget for both: B does not double the
        # memory), keyed apart from A's layers; a window reading synchronously has no cache.
        shared = getattr(self.window.source, "cache", None)
        self.source_b = Loader(dataset, layer=("compare B", mag.layer), mag=mag.mag, workers=2,
                               cache=shared, close_dataset=False)
        bridge = QtLoadingBridge(self.source_b, self)
        bridge.data_arrived.connect(self._on_b_arrived)
        self._loading_bridge = bridge
        self._ensure_b_views()
        self.set_mode(self.SIDE if self.mode == self.A_ONLY else self.mode)
        self.refresh_b(force=True)
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
        opened = getattr(self.window, "opened", None)
        if opened is None or not is_collection(opened) or not self.state.layers:
            return VolumeSpec(path)
        return VolumeSpec(path, self.state.layers[0].name,
                          getattr(self.window, "dataset_mag", None))

    @property
    def spec_b(self) -> VolumeSpec | None:
        """How the comparison opens B (see ``open_b_dataset``)."""
        return self._spec_b

    @property
    def data_path_a(self) -> str | None:
        """Where A's compared mag lives (the volume the window's coordinates are in)."""
        dataset = self.window.dataset
        return None if dataset is None else str(dataset.path)

    def close_b(self) -> None:
        """Close B: cancel the comparison, stop B's loader, back to A only."""
        self._abandon_comparison()
        self._clear_results()
        if self._loading_bridge is not None:
            self._loading_bridge.detach()
            self._loading_bridge.deleteLater()
            self._loading_bridge = None
        if self._extent_b is not None:
            self._extent_b.cancel()
            self._extent_b.join()
            self._extent_b = None
        if self.source_b is not None:
            self.source_b.close()
        if self._opened_b is not None:
            self._opened_b.close()
        self._opened_b = None
        self._spec_b = None
        self.data_path_b = None
        was = self.source_b is not None
        self.source_b = None
        if was and getattr(self.window, "force_finest", False):
            self.window.force_finest = False
            self.window.refresh_planes(force=True)
        self.dataset_b = None
        self.path_b = None
        self.planes_b = {}
        self._wanted_b = []
        self._images.clear()
        self._diffs.clear()
        for view in self.b_views.values():
            view.show_plane(None, None)
        if self.mode != self.A_ONLY:
            self.set_mode(self.A_ONLY)
        self._update_views()
        if was:
            self.b_changed.emit("")

    def _ensure_b_views(self) -> None:
        """Split every quadrant: A's view left, B's right (B's shown in side-by-side only)."""
        if self.b_views:
            return
        for axis, view in self.window.views.items():
            splitter = QSplitter(Qt.Orientation.Horizontal)
            splitter.setObjectName(f"compareSplit{axis}")
            splitter.setChildrenCollapsible(False)
            splitter.setHandleWidth(3)
            splitter.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
            self.window.grid.replaceWidget(view, splitter)
            splitter.addWidget(view)
            b_view = QtSliceView(axis, self.state)
            b_view.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
            b_view.hovered.connect(self._on_hovered)
            if hasattr(self.window, "_on_hovered"):
                b_view.hovered.connect(self.window._on_hovered)
            b_view.plane_wanted.connect(lambda *_: self._refresh_timer.start())
            splitter.addWidget(b_view)
            b_view.hide()
            self.splitters[axis] = splitter
            self.b_views[axis] = b_view
            self.overlays_b[axis] = QtCompareOverlay(b_view, self, "B")
        self._apply_layout()

    def _apply_layout(self) -> None:
        """Quadrants follow the window's layout (one maximised view, or 2x2); B's views
        show in side by side only."""
        side = self.active and self.mode == self.SIDE
        for axis, splitter in self.splitters.items():
            visible = self.state.layout is None or self.state.layout == axis
            splitter.setVisible(visible)
            b_view = self.b_views[axis]
            if side != b_view.isVisibleTo(splitter):
                b_view.setVisible(side)
                if side:
                    half = max(splitter.width() // 2, 1)
                    splitter.setSizes([half, half])
        for axis, overlay in self.overlays_a.items():
            if overlay.handle is not None:
                overlay.handle.setVisible(self.active and self.mode == self.SWIPE)
                overlay.handle.place()

    # == modes ==================================================================================
    def set_mode(self, mode: str) -> None:
        if mode not in self.MODES:
            raise ValueError(f"unknown compare mode {mode!r} (known: {self.MODES})")
        if not self.active and mode != self.A_ONLY:
            self.window.statusBar().showMessage(
                "Open a dataset B first: File \u25b8 Compare with\u2026 (Ctrl+B)", 5000)
            return
        if mode == self.FLICKER and self.mode != self.FLICKER:
            self.showing_b = True
        changed = mode != self.mode
        self.mode = mode
        self._apply_layout()
        if changed:
            self.refresh_b()
        self._update_views()
        self.mode_changed.emit(mode)

    def toggle_flicker(self) -> None:
        """Show the other dataset (switches to flicker mode first)."""
        if self.mode != self.FLICKER or not self.active:
            self.set_mode(self.FLICKER)
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

    def badge(self, role: str) -> tuple[str, QColor]:
        """The label a view wears: what it shows."""
        if not self.active:
            return "", A_COLOR
        a_text = "A" if self.name_a == "A" else f"A \u00b7 {self.name_a}"
        b_text = "B" if self.name_b == "B" else f"B \u00b7 {self.name_b}"
        if role == "B":
            return b_text, B_COLOR
        if self.mode == self.FLICKER:
            return (b_text, B_COLOR) if self.showing_b else (a_text, A_COLOR)
        if self.mode == self.DIFFERENCE:
            return f"A \u2212 B   \u00b1{_fmt_level(self.level)}", QColor(225, 225, 230)
        if self.mode == self.MASK:
            return f"|A \u2212 B| > {_fmt_level(self.tolerance)}", QColor(255, 210, 31)
        return a_text, A_COLOR

    # == B's planes =============================================================================
    def _palette(self, which: str) -> Palette:
        dataset = self.window.dataset if which == "A" else self.dataset_b
        dtype = dataset.dtype if dataset is not None else np.dtype(np.uint8)
        palette = self._palettes.get(which)
        if palette is None or palette.contrast != self.state.contrast or palette.dtype != dtype:
            palette = Palette(self.state.contrast, dtype)
            self._palettes[which] = palette
        return palette

    def refresh_b(self, force: bool = False) -> None:
        """Ask B's loader for the planes A's views show (and B's own views, in side by side)
        and fetch those that changed."""
        if self.source_b is None:
            return
        requests: dict[int, PlaneRequest] = {}
        for axis, view in self.window.views.items():
            if view.isVisibleTo(self.window) and view.request is not None:
                requests[axis] = view.request
        side: dict[int, PlaneRequest] = {}
        if self.mode == self.SIDE:
            for axis, b_view in self.b_views.items():
                if b_view.isVisibleTo(self.window):
                    req = b_view.wanted_request()
                    if req is not None:
                        side[axis] = req
        wanted: list[PlaneRequest] = []
        for req in (*requests.values(), *side.values()):
            if req not in wanted:
                wanted.append(req)
        if wanted != self._wanted_b:
            self._wanted_b = wanted
            focused = requests.get(self.state.focused) or side.get(self.state.focused)
            self.source_b.set_wanted(wanted, wanted.index(focused) if focused else None,
                                     self.state.cursor)
        for axis, req in requests.items():
            plane = self.planes_b.get(axis)
            if force or plane is None or plane.request != req:
                self._fetch_b(axis, req)
        for axis, req in side.items():
            if force or self.b_views[axis].request != req:
                self._show_b_view(axis, req)

    def _plane_b(self, req: PlaneRequest) -> Plane | None:
        assert self.source_b is not None
        try:
            return self.source_b.plane(req)
        except Exception as exc:  # noqa: BLE001  (an unexpected read error must not take the window down)
            self.window.show_error("Cannot read a plane of B", _describe(exc))
            return None

    def _fetch_b(self, axis: int, req: PlaneRequest) -> None:
        plane = self._plane_b(req)
        if plane is None:
            self.planes_b.pop(axis, None)
        else:
            self.planes_b[axis] = plane
        self.overlays_a[axis].update()
        b_view = self.b_views.get(axis)
        if plane is not None and b_view is not None and b_view.isVisibleTo(self.window) \
                and b_view.request == req:
            self._show_b_view(axis, req, plane)

    def _show_b_view(self, axis: int, req: PlaneRequest, plane: Plane | None = None) -> None:
        if plane is None:
            same = self.planes_b.get(axis)
            plane = same if same is not None and same.request == req else self._plane_b(req)
        if plane is not None:
            self.b_views[axis].show_plane(plane, render_plane(plane, self._palette("B")))

    def _on_b_arrived(self, box: Box3) -> None:
        """B's loader has data inside ``box``: fetch again the planes it touches."""
        if self.source_b is None:
            return
        for axis in list(self.planes_b):
            if _touches(self.planes_b[axis].request, box):
                self._fetch_b(axis, self.planes_b[axis].request)
        for axis, b_view in self.b_views.items():
            req = b_view.request
            if req is not None and b_view.isVisibleTo(self.window) and _touches(req, box) \
                    and self.planes_b.get(axis) is not b_view.plane:
                self._show_b_view(axis, req)

    def planes_complete(self) -> bool:
        """B's planes for every visible view are in (nothing of B still loading)."""
        if not self.active:
            return True
        for axis, view in self.window.views.items():
            if not view.isVisibleTo(self.window) or view.request is None:
                continue
            plane = self.planes_b.get(axis)
            if plane is None or plane.request != view.request or not plane.complete:
                return False
        for b_view in self.b_views.values():
            if b_view.isVisibleTo(self.window) and b_view.plane is not None \
                    and not b_view.plane.complete:
                return False
        return True

    # == the mode pictures ======================================================================
    def _diff(self, axis: int) -> tuple[npt.NDArray[np.float64], float] | None:
        """``A - B`` of the shown channel on view ``axis`` and its largest magnitude (cached
        per pair of planes)."""
        a = self.window.views[axis].plane
        b = self.planes_b.get(axis)
        if a is None or b is None or a.request != b.request:
            return None
        channel = self.state.contrast.channel
        key = (id(a), id(b), channel)
        cached = self._diffs.get(axis)
        if cached is None or cached[0] != key:
            diff = images.difference(a, b, channel)
            cached = (key, diff, images.max_abs(diff), (a, b))
            self._diffs[axis] = cached
        return cached[1], cached[2]

    def difference_level(self) -> float:
        """Symmetric levels: the largest |A - B| on the views on screen (at least 1 for
        integer data)."""
        top = 0.0
        for axis, view in self.window.views.items():
            if view.isVisibleTo(self.window):
                found = self._diff(axis)
                if found is not None:
                    top = max(top, found[1])
        dataset = self.window.dataset
        integer = dataset is not None and dataset.dtype.kind in "iu"
        return max(top, 1.0) if integer else (top if top > 0 else 1.0)

    def mode_image(self, axis: int) -> tuple[QImage, tuple[int, int]] | None:
        """The picture A's view ``axis`` shows in the current mode (None: A's own image)."""
        if not self.active:
            return None
        mode = self.mode
        if mode in (self.A_ONLY, self.SIDE) or (mode == self.FLICKER and not self.showing_b):
            return None
        view = self.window.views[axis]
        a = view.plane
        b = self.planes_b.get(axis)
        if a is None:
            return None
        if b is None or b.request != a.request:
            self._refresh_timer.start()  # A's view changed its plane without a state change
            return None
        contrast = self.state.contrast
        if mode in (self.FLICKER, self.SWIPE):
            key: tuple[Any, ...] = ("B", id(b), contrast)
        elif mode == self.DIFFERENCE:
            level = self.difference_level()
            if level != self.level:
                self.level = level
                QTimer.singleShot(0, lambda: self.mode_changed.emit(self.mode))
            key = ("D", id(a), id(b), contrast.channel, self.level)
        else:
            key = ("M", id(a), id(b), contrast, self.tolerance)
        cached = self._images.get(axis)
        if cached is None or cached[0] != key:
            if key[0] == "B":
                pixels = images.as_argb(render_plane(b, self._palette("B")))
            elif key[0] == "D":
                found = self._diff(axis)
                assert found is not None
                pixels = images.difference_image(found[0], axis, self.level)
            else:
                shown = images.as_argb(render_plane(a, self._palette("A")))
                pixels = images.mask_image(shown, images.mask(a, b, contrast.channel,
                                                              self.tolerance), axis)
            rows, cols = pixels.shape
            image = QImage(pixels.data, cols, rows, cols * 4, QImage.Format.Format_RGB32)
            cached = (key, image, pixels, (a, b))
            self._images[axis] = cached
        u, v = IN_PLANE[axis]
        origin = {u: a.request.lo[0], v: a.request.lo[1]}
        h_axis, v_axis = SCREEN_AXES[axis]
        return cached[1], (origin[h_axis], origin[v_axis])

    def _update_views(self) -> None:
        for overlay in (*self.overlays_a.values(), *self.overlays_b.values()):
            overlay.update()
        for view in self.b_views.values():
            view.update()

    # == the model ==============================================================================
    def _on_state_changed(self, changes: frozenset[str]) -> None:
        if self._closed:
            return
        if st.LAYOUT in changes and self.splitters:
            self._apply_layout()
        if not self.active:
            return
        if st.CONTRAST in changes:
            for b_view in self.b_views.values():
                if b_view.plane is not None:
                    b_view.show_plane(b_view.plane, render_plane(b_view.plane,
                                                                 self._palette("B")))
        if changes & {st.CURSOR, st.CENTER, st.ZOOM, st.DATASET, st.LAYOUT}:
            self.refresh_b()
        self._update_views()

    def _on_a_opened(self, _path: str) -> None:
        """Another dataset A: the running comparison is cancelled; with B open it starts
        again for the new pair."""
        if self._closed or not self.active:
            return
        self._abandon_comparison()
        self._clear_results()
        self._palettes.pop("A", None)
        self.planes_b = {}
        self._wanted_b = []
        self.refresh_b(force=True)
        self.start_comparison(self.box)

    # == boxes ================================================================================
    def screen_box(self) -> Box | None:
        """The box the three views show now (x and y from XY, x and z from XZ, y and z from
        YZ), or None before any plane."""
        cursor = self.state.cursor
        lo: list[int] = [cursor[0], cursor[1], cursor[2]]
        hi: list[int] = [cursor[0] + 1, cursor[1] + 1, cursor[2] + 1]
        seen = [False, False, False]
        for axis, view in self.window.views.items():
            req = view.request
            if req is None or not view.isVisibleTo(self.window):
                continue
            offset, shape = req.box()
            for a in IN_PLANE[axis]:
                end = offset[a] + shape[a]
                lo[a] = offset[a] if not seen[a] else min(lo[a], offset[a])
                hi[a] = end if not seen[a] else max(hi[a], end)
                seen[a] = True
        if any(h <= l for l, h in zip(lo, hi, strict=True)):
            return None
        return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))

    def common_box(self) -> Box | None:
        """Where the data files of A and B overlap (None when they do not, or while B's files
        are still being listed: the status bar says so).  A's extent is the window's (grown by
        its own background listing), B's comes from the listing started when B opened."""
        if self.window.dataset is None or self.dataset_b is None or self._extent_b is None:
            return None
        if not self._extent_b.wait(EXTENT_WAIT_S) or self._extent_b.result is None:
            self.window.statusBar().showMessage(
                "B's files are still being listed; try the common extent again shortly", 5000)
            return None
        la, ha = self.state.bounds
        lb, hb = self._extent_b.result
        lo = [max(a, b) for a, b in zip(la, lb, strict=True)]
        hi = [min(a, b) for a, b in zip(ha, hb, strict=True)]
        if any(h <= l for l, h in zip(lo, hi, strict=True)):
            return None
        return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))

    # == hover ==================================================================================
    def _on_hovered(self, pos: Vec3 | None) -> None:
        if pos is None or not self.active:
            self.hover_label.setText("")
            return
        a = None
        for view in self.window.views.values():
            a = plane_value(view.plane, pos)
            if a is not None:
                break
        b = None
        for plane in (*self.planes_b.values(), *(v.plane for v in self.b_views.values())):
            b = plane_value(plane, pos)
            if b is not None:
                break
        self.hover_label.setText(hover_text(a, b))

    # == shutting down ==========================================================================
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.Close:
            self.shutdown()
        return False

    def shutdown(self) -> None:
        """Cancel and join the comparison, stop B's loader and the worker: no thread left."""
        if self._closed:
            return
        self.close_b()
        self.cancel_comparison(wait=True)
        self._closed = True
        self._executor.shutdown(wait=True, cancel_futures=True)
        self.state.unsubscribe(self._on_state_changed)

def hover_text(a: tuple[Any, int] | None, b: tuple[Any, int] | None) -> str:
    """``A 12   B 15   A-B -3`` for the status bar (rich text)."""
    def side(v: tuple[Any, int] | None) -> str:
        if v is None:
            return "\u2013"
        values, status = v
        if status == Status.PENDING:
            return "(loading)"
        if status == Status.FAILED:
            return "(failed)"
        text = ", ".join(_fmt(x) for x in values)
        return text + (" (no file)" if status == Status.ABSENT else "")

    parts = [f"<span style='color:#78afff'>A</span> {side(a)}",
             f"<span style='color:#f5a623'>B</span> {side(b)}"]
    ok = (Status.DATA, Status.ABSENT)
    if a is not None and b is not None and a[1] in ok and b[1] in ok \
            and len(a[0]) == len(b[0]):
        d = a[0].astype(np.float64) - b[0].astype(np.float64)
        same = bool(np.all((d == 0) | (np.isnan(a[0].astype(np.float64))
                                       & np.isnan(b[0].astype(np.float64)))))
        colour = "#9a9ca3" if same else "#ffd21f"
        parts.append(f"<span style='color:{colour}'>A\u2212B {', '.join(_fmt(x) for x in d)}"
                     "</span>")
    return "&nbsp;&nbsp;&nbsp;".join(parts)


def _touches(req: PlaneRequest, box: Box3) -> bool:
    offset, shape = box
    r_off, r_shape = req.box()
    return all(o < ro + rs and ro < o + s for o, s, ro, rs in zip(offset, shape, r_off, r_shape, strict=True))


def _short(path: str, limit: int = 28) -> str:
    p = Path(path)
    name = p.name or path
    if p.parent.name and name.isdigit():  # a mag folder: say which layer
        name = f"{p.parent.name}/{name}"
    return name if len(name) <= limit else "\u2026" + name[-(limit - 1):]


def _fmt_level(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.4g}"


__all__ = [
    "XY",
    "XZ",
    "YZ",
    "QtCompareController",
    "find_voxel",
    "hover_text",
    "parse_box",
    "plane_value",
]
