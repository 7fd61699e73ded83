"""The main window: three linked slice views, a side panel, contrast, status bar, menus.

(Over 600 lines, long because the window still composes its parts by mixins; issue 19 turns
them into widgets of their own.)

Layout (2x2): XY top left, YZ top right (its rows line up with XY's), XZ bottom left (its
columns line up with XY's), and the side panel (the inspector; a placeholder until
``set_side_panel``) bottom right.  One key (M) maximises the focused view and back.

The window owns the ``PlaneSource``: whenever the planes on screen change it tells the source
(``set_wanted``), asks it for each changed plane (``plane``) and hands the rendered pixels to the
view.  ``_on_data_arrived(boxes)`` re-fetches the planes the boxes touch (the background loader's
Qt bridge calls it on the GUI thread).  Everything the views show follows the ``ViewerState``.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import (
    QCursor,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeyEvent,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QFrame,
    QGridLayout,
    QLabel,
    QMainWindow,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from viewer.core import extent
from viewer.core import state as st
from viewer.core.layered import LayeredSource, SourceLayer, source_layers
from viewer.core.slicing import Box3, PlaneRequest
from viewer.core.state import (
    SCREEN_AXES,
    XY,
    XZ,
    YZ,
    ViewerState,
    format_position,
    parse_position,
)
from viewer.format import Dataset, FormatError, Volume
from viewer.render.palette import Palette
from viewer.ui import remote as remote_ui
from viewer.ui.contrast import QtContrastPanel
from viewer.ui.error_banner import QtErrorBanner, _describe
from viewer.ui.layer_drawing import LayerDrawingMixin, default_contrast
from viewer.ui.menus import MenusMixin
from viewer.ui.opening import (
    QtExtentBridge,
    RecentDatasetsMixin,
)
from viewer.ui.slice_view import MAX_PLANE_SIDE, QtSliceView
from viewer.ui.status_bar import StatusBarMixin
from viewer.ui.theme import checkbox_style

#: Makes the window's source from the layers of a dataset (``on_close`` runs when it closes).
SourceFactory = Callable[[Sequence[SourceLayer], Callable[[], None] | None], LayeredSource]


def sync_source(layers: Sequence[SourceLayer],
                on_close: Callable[[], None] | None = None) -> LayeredSource:
    """The default source: every plane read at once on the GUI thread (no cache)."""
    return LayeredSource(layers, on_close=on_close)

HISTOGRAM_DELAY_MS = 150
#: The contrast dock's width at start: narrow, so that the 2x2 grid gets the room.
CONTRAST_DOCK_WIDTH = 220
#: How long opening waits for the file scan before it shows a provisional extent (a dataset of
#: a few hundred files is listed in far less: it opens with its whole extent at once).
QUICK_EXTENT_S = 0.15
#: A segmentation layer's opacity when a dataset opens: the image beneath stays readable.
SEGMENTATION_OPACITY = 0.5
#: The cursor is kept this far (fraction of the view) inside a view after a key move.
EDGE_MARGIN = 0.08
#: Each view's (row, column) in the 2x2 grid; the side panel has (1, 1).
GRID_CELLS = {XY: (0, 0), YZ: (0, 1), XZ: (1, 0)}


class QtMainWindow(MenusMixin, StatusBarMixin, RecentDatasetsMixin, LayerDrawingMixin,
                   QMainWindow):
    """The viewer window.  ``open_path`` opens a dataset; ``set_side_panel`` fills the fourth
    quadrant.

    The menus (``MenusMixin``, viewer.ui.menus), the status bar (``StatusBarMixin``,
    viewer.ui.status_bar) and the recent datasets (``RecentDatasetsMixin``, viewer.ui.opening)
    are parts of it kept in their own modules."""

    #: The cursor moved: (x, y, z).
    cursor_changed = Signal(object)
    #: A dataset was opened: its path.
    dataset_opened = Signal(str)

    def __init__(self, state: ViewerState | None = None,
                 source_factory: SourceFactory = sync_source) -> None:
        super().__init__()
        self.state = state or ViewerState()
        self.source_factory = source_factory
        self.source: LayeredSource | None = None
        #: The volume of the first layer's finest mag; its voxels are the window's coordinates.
        self.dataset: Volume | None = None
        self.dataset_path: str | None = None
        #: The dataset open (any format: its layers, mags, voxel size and problems).
        self.opened: Dataset | None = None
        #: The mag of ``dataset`` (its voxel ``p`` covers mag-1 voxels ``p * dataset_mag``).
        self.dataset_mag: tuple[int, int, int] = (1, 1, 1)
        #: Each layer's (dtype of one channel, channel count), by name.
        self.layer_types: dict[str, tuple[np.dtype[Any], int]] = {}
        #: Each layer's palette as last drawn (``blend.render_layer`` keeps it current).
        self._palettes: dict[str, Any] = {}
        #: The layer whose voxel type and channels the contrast controls are set up for.
        self._contrast_for: str | None = None
        self._wanted_key: tuple[Any, ...] = ()
        #: Read every layer at its finest mag whatever the zoom (a comparison is open: its
        #: differences are voxel for voxel).
        self.force_finest = False
        self.errors: list[str] = []
        self._failed_blocks: dict[tuple[str, int], FormatError] = {}
        self._wanted: list[PlaneRequest] = []
        self._palette: Palette | None = None
        self._hover: tuple[int, int, int] | None = None
        self._auto_pending = False
        self._last_centers: dict[int, tuple[float, float]] = {}
        self._extent_scan: extent.ExtentScan | None = None
        #: Test hook: the file listing the extent scan walks (default ``list_files``).
        self.extent_listing: Callable[[Volume], Any] | None = None
        self._extent_bridge = QtExtentBridge(self)
        self._extent_bridge.extent_found.connect(self._on_extent_found,
                                                 Qt.ConnectionType.QueuedConnection)
        self.setWindowTitle("wkw-viewer")
        self.setAcceptDrops(True)
        self.resize(1280, 860)

        self.views: dict[int, QtSliceView] = {a: QtSliceView(a, self.state) for a in (XY, XZ, YZ)}
        for view in self.views.values():
            view.hovered.connect(self._on_hovered)
            view.plane_wanted.connect(self._on_plane_wanted)
            view.message = "No dataset open.\nFile \u25b8 Open, or drop a dataset folder here."
        self.side_panel: QWidget = self._placeholder_panel()
        self._side_holder: QWidget = self.side_panel
        self.banner = QtErrorBanner()
        self.grid = QGridLayout()
        self.grid.setSpacing(3)
        self.grid.setContentsMargins(3, 3, 3, 3)
        for axis, (row, col) in GRID_CELLS.items():
            self.grid.addWidget(self.views[axis], row, col)
        self.grid.addWidget(self.side_panel, 1, 1)
        for k in (0, 1):  # four equal quadrants, whatever the panels' own size hints
            self.grid.setRowStretch(k, 1)
            self.grid.setColumnStretch(k, 1)
        for widget in (*self.views.values(), self.side_panel):
            widget.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.banner)
        column.addLayout(self.grid, 1)
        self.setCentralWidget(central)

        self.contrast_panel = QtContrastPanel(self.state)
        self.contrast_panel.auto_requested.connect(self.auto_contrast)
        dock = QDockWidget("Contrast", self)
        dock.setObjectName("contrastDock")
        dock.setWidget(self.contrast_panel)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.contrast_dock = dock
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        self.resizeDocks([dock], [CONTRAST_DOCK_WIDTH], Qt.Orientation.Horizontal)

        self._build_status_bar()
        remote_ui.install(self)
        self._build_actions()
        self._histogram_timer = QTimer(self)
        self._histogram_timer.setSingleShot(True)
        self._histogram_timer.setInterval(HISTOGRAM_DELAY_MS)
        self._histogram_timer.timeout.connect(self._on_histogram_due)
        self.state.subscribe(self._on_state_changed)
        self.setStyleSheet(STYLE + checkbox_style())

    # -- building ----------------------------------------------------------------------------
    def _placeholder_panel(self) -> QWidget:
        panel = QLabel("Inspector\n\n(header, jump table and blocks of the file under the cursor)")
        panel.setAlignment(Qt.AlignmentFlag.AlignCenter)
        panel.setWordWrap(True)
        panel.setObjectName("sidePlaceholder")
        panel.setStyleSheet("#sidePlaceholder { color: #7a7f8a; background: #1c1d21; "
                            "border: 1px solid #2c2e34; }")
        return panel

    # -- the side panel ----------------------------------------------------------------------
    def set_side_panel(self, widget: QWidget) -> None:
        """Put ``widget`` (the inspector) in the fourth quadrant, replacing what was there.
        It sits in a scroll area, so its own minimum size cannot squeeze the slice views."""
        holder = QScrollArea()
        holder.setObjectName("sidePanelHolder")
        holder.setWidgetResizable(True)
        holder.setFrameShape(QFrame.Shape.NoFrame)
        # The panel lays itself out to the quadrant's width; it scrolls only vertically.
        holder.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        holder.setWidget(widget)
        holder.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.grid.replaceWidget(self._side_holder, holder)
        self._side_holder.hide()
        self._side_holder.deleteLater()
        self._side_holder = holder
        self.side_panel = widget
        holder.setVisible(self.state.layout is None)

    # -- opening -----------------------------------------------------------------------------
    def open_path(self, path: str | os.PathLike[str], pos: Sequence[int] | None = None,
                  zoom: float | None = None) -> bool:
        """Open a dataset of any format the registry reads (a folder, a file).  On failure the
        window says why (and keeps what it showed before) and False is returned."""
        path = os.fspath(path)
        notes: list[str] = []
        scan: extent.ExtentScan | None = None
        opened: Dataset | None = None
        try:
            opened = remote_ui.open_dataset(path)  # a URL: on a thread
            layers, bounds, scan = self._open_layers(opened, pos, notes)
            dataset = layers[0].finest
        except Exception as exc:  # whatever it is, a message in the window, not a crash
            if opened is not None:
                opened.close()
            self.show_error(f"Cannot open {path}", _describe(exc))
            return False
        self.set_dataset(dataset, path, bounds, pos, zoom, opened=opened, layers=layers)
        self._extent_scan = scan  # its reports are queued: they come after this
        self._show_info()
        if notes:
            self.banner.show_message("Parts of this dataset did not open", "; ".join(notes))
        self._add_recent(path)
        return True

    def _find_extent(self, dataset: Volume, pos: Sequence[int] | None
                     ) -> tuple[tuple[st.Vec3, st.Vec3], extent.ExtentScan | None]:
        """The extent of a volume that does not declare it, and the scan still growing it
        (None when it is final).  The storage units are listed on a thread; a small dataset's
        listing ends while we wait a moment, a large one opens with a provisional extent
        (``extent.provisional_bounds``)."""
        listing = self.extent_listing(dataset) if self.extent_listing is not None else None
        bridge = self._extent_bridge
        scan = extent.ExtentScan(dataset, lambda b, done: bridge.report(scan, b, done), listing)
        scan.start()
        if scan.wait(QUICK_EXTENT_S) and scan.result is not None:
            return scan.result, None
        try:
            return extent.provisional_bounds(dataset, pos), scan
        except BaseException:
            self._stop_extent_scan(scan)
            raise

    def _stop_extent_scan(self, scan: extent.ExtentScan | None = None) -> None:
        scan = scan or self._extent_scan
        if scan is not None:
            scan.cancel()
            scan.join(2.0)
        if scan is self._extent_scan:
            self._extent_scan = None

    def _on_extent_found(self, scan: extent.ExtentScan, bounds: extent.Bounds,
                         done: bool) -> None:
        """The background scan found more files: widen the extent; the cursor and the views
        stay where they are."""
        if scan is not self._extent_scan:
            return  # a scan of a dataset no longer shown
        if done:
            self._extent_scan = None
        self.state.grow_bounds(bounds)
        self._show_info()

    def _open_layers(self, opened: Dataset, pos: Sequence[int] | None, notes: list[str]
                     ) -> tuple[list[SourceLayer], tuple[st.Vec3, st.Vec3],
                                extent.ExtentScan | None]:
        """The layers of ``opened`` that can be read (color layers first), the box they span
        in mag-1 voxels, and the extent scan still growing it (a single layer whose extent is
        not declared, such as a plain WKW dataset: see ``_find_extent``); what did not open is
        noted."""
        notes.extend(str(p) for p in opened.problems)
        layers, problems = source_layers(opened)
        notes.extend(str(p) for p in problems)
        if not layers:
            raise ValueError("no layer of this dataset can be read"
                             + (f": {'; '.join(notes)}" if notes else ""))
        layers.sort(key=lambda la: la.category == "segmentation")  # stable: colors first
        described = [opened.layer(la.name) for la in layers]
        if len(layers) == 1 and not described[0].extent_declared:
            bounds, scan = self._find_extent(layers[0].finest, pos)
            return layers, bounds, scan
        boxes = [d.bounding_box for d in described]
        boxes = [b for b in boxes if not b.is_empty] or boxes
        lo = tuple(min(b.top_left[a] for b in boxes) for a in range(3))
        hi = tuple(max(b.top_left[a] + b.size[a] for b in boxes) for a in range(3))
        return layers, (lo, hi), None  # type: ignore[return-value]

    def set_dataset(self, dataset: Volume, path: str, bounds: tuple[st.Vec3, st.Vec3],
                    pos: Sequence[int] | None = None, zoom: float | None = None,
                    opened: Dataset | None = None,
                    layers: Sequence[SourceLayer] | None = None) -> None:
        """Show the ``layers`` of ``opened`` (``dataset`` is the first layer's finest mag; a
        declared voxel size gives physical positions, scale bars and the aspect of anisotropic
        voxels), or ``dataset`` alone as one layer."""
        if self.source is not None:
            self.source.close()
        self._stop_extent_scan()
        if self.opened is not None and self.opened is not opened:
            self.opened.close()
        self.opened = opened
        if layers is None:
            layers = [SourceLayer(Path(path).name or "data", {(1, 1, 1): dataset})]
        size: tuple[float, float, float] | None = None
        if opened is not None and opened.voxel_size_declared:
            size = tuple(float(v) for v in opened.voxel_size)  # type: ignore[assignment]
        self.state.set_voxel_size(size, notify=False)  # set_bounds below notifies
        self.dataset = dataset
        self.dataset_path = path
        self.errors = []
        self._failed_blocks = {}
        self.banner.hide()
        self._wanted = []
        self._wanted_key = ()
        self.dataset_mag = layers[0].mag_list[0]
        self.layer_types = {layer.name: (layer.dtype, layer.num_channels) for layer in layers}
        self._palettes = {}
        coarsest = max(max(m) for layer in layers for m in layer.mags)
        for view in self.views.values():
            view.message = ""
            view.layer_planes, view.layer_rendered = {}, {}
            view.max_side = MAX_PLANE_SIDE * coarsest
            view.show_plane(None, None)
        on_close = None if opened is None else opened.close
        self.source = self.source_factory(layers, on_close)
        self.state.set_layers([st.LayerDisplay(layer.name, layer.category,
                                               contrast=default_contrast(
                                                   layer.dtype, layer.finest.value_range,
                                                   layer.num_channels),
                                               opacity=SEGMENTATION_OPACITY
                                               if layer.category == st.SEGMENTATION else 1.0)
                               for layer in layers], notify=False)
        self._contrast_for = None  # a new dataset: set the controls up for its active layer
        self._show_active_layer()
        panel = getattr(self, "layers_panel", None)
        if panel is not None:
            panel.set_mags({layer.name: layer.mag_list for layer in layers})
        self._auto_pending = (dataset.dtype != np.uint8 and dataset.value_range is None
                              and layers[0].category != st.SEGMENTATION)
        self._palette = None
        self.state.set_bounds(bounds, pos, zoom if zoom is not None else self.fit_zoom(bounds))
        name = Path(path).name or path
        self.setWindowTitle(f"{name} \u2014 wkw-viewer")
        self._show_info()
        #: Whether this opening was given a position and a zoom (a remembered view yields).
        self.opened_with = (pos is not None, zoom is not None)
        self.dataset_opened.emit(path)
        if not self.position_field.hasFocus():
            self.views[self.state.focused].setFocus()  # arrows and PgUp/PgDn work at once

    def fit_zoom(self, bounds: tuple[st.Vec3, st.Vec3]) -> float:
        """The zoom at which the whole dataset fits in every view of the 2x2 grid (capped at
        8 pixels per voxel; views not laid out yet count as 400 pixels)."""
        lo, hi = bounds
        fits = []
        for axis, view in self.views.items():
            ha, va = SCREEN_AXES[axis]
            sh, sv = self.state.stretch(axis)
            w = view.width() if view.width() >= 50 else 400
            h = view.height() if view.height() >= 50 else 400
            fits.append(min(w / ((hi[ha] - lo[ha]) * sh), h / ((hi[va] - lo[va]) * sv)))
        return max(min(min(fits) * 0.92, 8.0), st.MIN_ZOOM)

    def choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open WKW dataset folder")
        if path:
            self.open_path(path)

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a WKW file", "",
                                              "WKW files (*.wkw);;All files (*)")
        if path:
            self.open_path(path)

    def open_demo(self) -> None:
        from viewer.ui.demo_dialog import ensure_demo_with_progress

        path = ensure_demo_with_progress(self)
        if path is not None:
            self.open_path(path)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile():
                event.acceptProposedAction()
                self.open_path(url.toLocalFile())
                return

    # -- errors ------------------------------------------------------------------------------
    def show_error(self, title: str, detail: str) -> None:
        """Say in the window what went wrong; the window stays usable."""
        self.errors.append(f"{title}: {detail}")
        self.banner.show_message(title, detail)
        if self.dataset is None:
            for view in self.views.values():
                view.message = f"{title}\n\n{detail}"
                view.update()
        self.statusBar().showMessage(title, 8000)

    def report_exception(self, exc: BaseException) -> None:
        """Last resort for an unexpected exception in a slot: a message, not a crash."""
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self.show_error("Something went wrong (the window is still usable)", detail)

    # -- model -> views ----------------------------------------------------------------------
    def _on_state_changed(self, changes: frozenset[str]) -> None:
        if st.LAYOUT in changes:
            self._apply_layout()
        if st.CURSOR in changes:
            self._keep_cursor_visible()
            self.cursor_changed.emit(self.state.cursor)
            if not self.position_field.hasFocus():
                self.position_field.setText(format_position(self.state.cursor))
            self.cursor_label.setText(f"cursor  {self._position_text(self.state.cursor)}")
        serials = {a: v._image_serial for a, v in self.views.items()}
        centers = dict(self.state.centers)
        if st.LAYERS in changes:
            self._show_active_layer()
        restyled = bool(changes & {st.CONTRAST, st.LAYERS})  # the same planes, drawn anew
        fetched: set[int] = set()
        if changes & {st.CURSOR, st.CENTER, st.ZOOM, st.DATASET, st.LAYOUT, st.BOUNDS,
                      st.VOXEL_SIZE, st.LAYERS}:
            fetched = self.refresh_planes(rerender=restyled)
        if restyled:
            self._palette = None
            self._rerender_all(skip=fetched)
        if st.CONTRAST in changes:
            self._histogram_timer.start()
        if changes == {st.CURSOR}:
            # A view whose plane and centre stayed only needs its crosshair moved.
            for axis, view in self.views.items():
                if view._image_serial == serials[axis] and centers == self._last_centers:
                    view.update_cursor()
                else:
                    view.update()
        else:
            for view in self.views.values():
                view.update()
        self._last_centers = dict(self.state.centers)
        if self._hover is not None and changes & {st.CURSOR, st.CENTER, st.ZOOM}:
            for view in self.views.values():  # the voxel under a still mouse may be another
                view.rehover()
            self._show_hover(self._hover)

    def planes_complete(self) -> bool:
        """Every visible view shows its whole plane of every visible layer, each at the mag
        its zoom calls for (nothing still loading, no coarse placeholder left)."""
        for axis in self._visible_axes():
            view = self.views[axis]
            if view.plane is None:
                continue
            if not all(p.complete for p in (view.layer_planes or {"": view.plane}).values()):
                return False
        return True

    def _visible_axes(self) -> list[int]:
        layout = self.state.layout
        return [a for a in (XY, XZ, YZ) if layout is None or layout == a]

    def refresh_planes(self, force: bool = False, rerender: bool = False) -> set[int]:
        """Fetch the planes that changed (all with ``force``) and tell the source what is on
        screen: the planes, how many voxels a pixel spans in each view (which mag it reads)
        and the layers drawn with their locked mags.  ``rerender``: what is fetched is drawn
        anew even if no plane changed (the look did).  Returns the views fetched."""
        if self.source is None:
            return set()
        requests: dict[int, PlaneRequest] = {}
        for axis in self._visible_axes():
            req = self.views[axis].wanted_request()
            if req is not None:
                requests[axis] = req
        wanted = list(requests.values())
        vpp = [self.views[a].voxels_per_pixel() for a in requests]
        layers = {la.name: (self.source.layers[la.name].mag_list[0] if self.force_finest
                            else la.mag_lock) for la in self._shown_layers()}
        key = (tuple(wanted), tuple(vpp), tuple(layers.items()))
        mags_changed = key[1:] != self._wanted_key[1:]
        if key != self._wanted_key or wanted != self._wanted:
            self._wanted_key = key
            self._wanted = wanted
            focused = list(requests).index(self.state.focused) \
                if self.state.focused in requests else None
            self.source.set_wanted(wanted, focused, self.state.cursor, voxels_per_px=vpp,
                                   layers=layers)
        fetched = set()
        for axis, req in requests.items():
            view = self.views[axis]
            if force or mags_changed or req != view.request:
                self._fetch(view, req, rerender=rerender)
                fetched.add(axis)
        if fetched:
            self._maybe_auto_contrast()
            self._histogram_timer.start()
            self._show_mag()
        return fetched

    def _on_data_arrived(self, boxes: Box3 | Sequence[Box3]) -> None:
        """Data inside ``boxes`` (one ``(offset, shape)`` or a list of them) became
        available: re-fetch the planes they touch.  Called on the GUI thread (the loader's Qt
        bridge hops there)."""
        if self.source is None:
            return
        if boxes and isinstance(boxes[0][0], int):
            boxes = [boxes]  # type: ignore[list-item]
        for view in self.views.values():
            req = view.request
            if req is None:
                continue
            r_off, r_shape = req.box()
            if any(all(o < ro + rs and ro < o + s
                       for o, s, ro, rs in zip(offset, shape, r_off, r_shape, strict=True))
                   for offset, shape in boxes):  # type: ignore[misc]
                self._fetch(view, req)
        self._maybe_auto_contrast()
        self._histogram_timer.start()
        if self._hover is not None:
            self._show_hover(self._hover)

    def _on_plane_wanted(self, axis: int) -> None:
        self.refresh_planes()

    def _note_failures(self, errors: dict[tuple[str, int], FormatError]) -> None:
        new = {k: v for k, v in errors.items() if k not in self._failed_blocks}
        if not new:
            return
        self._failed_blocks.update(new)
        first = next(iter(self._failed_blocks.values()))
        n = len(self._failed_blocks)
        what = "a block" if n == 1 else f"{n} blocks"
        self.errors.append(str(first))
        self.banner.show_message(f"Could not read {what} (shown hatched red in the views)",
                                 _describe(first))

    def _apply_layout(self) -> None:
        layout = self.state.layout
        for axis, view in self.views.items():
            view.setVisible(layout is None or layout == axis)
        self._side_holder.setVisible(layout is None)
        # A row or column whose widgets are all hidden still takes its stretch's share: the
        # maximised view's row and column get all of it.
        row, col = GRID_CELLS[layout] if layout is not None else (None, None)
        for k in (0, 1):
            self.grid.setRowStretch(k, 1 if row in (None, k) else 0)
            self.grid.setColumnStretch(k, 1 if col in (None, k) else 0)

    def _keep_cursor_visible(self) -> None:
        """After the cursor moved, a view whose visible area no longer holds it follows it."""
        cursor = self.state.cursor
        for axis, view in self.views.items():
            if not view.isVisible() or view.width() < 10:
                continue
            (h0, h1), (v0, v1) = view.visible_range()
            ch, cv = self.state.centers[axis]
            mh, mv = (h1 - h0) * EDGE_MARGIN, (v1 - v0) * EDGE_MARGIN
            ha, va = SCREEN_AXES[axis]
            x, y = cursor[ha] + 0.5, cursor[va] + 0.5
            nh = ch + min(0.0, x - (h0 + mh)) + max(0.0, x - (h1 - mh))
            nv = cv + min(0.0, y - (v0 + mv)) + max(0.0, y - (v1 - mv))
            if (nh, nv) != (ch, cv):
                self.state.centers[axis] = (nh, nv)  # the CURSOR notification repaints

    # -- keys --------------------------------------------------------------------------------
    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        step = 10 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1
        axis = self.state.focused
        ha, va = SCREEN_AXES[axis]
        moves = {Qt.Key.Key_Left: (ha, -1), Qt.Key.Key_Right: (ha, 1),
                 Qt.Key.Key_Up: (va, -1), Qt.Key.Key_Down: (va, 1),
                 Qt.Key.Key_PageUp: (axis, -1), Qt.Key.Key_PageDown: (axis, 1)}
        if key in moves:
            along, sign = moves[key]
            self.state.move_along(along, sign * step)
            event.accept()
            return
        super().keyPressEvent(event)

    def _zoom_key(self, steps: int) -> None:
        """Zoom about the mouse when it is over a view, else about that view's centre."""
        for axis, view in self.views.items():
            if not view.isVisible():
                continue
            local = view.mapFromGlobal(QCursor.pos())
            if view.rect().contains(local):
                h, v = view.to_dataset(local.x(), local.y())
                self.state.zoom_by(steps, about=(axis, h, v))
                return
        self.state.zoom_by(steps)

    # -- position ----------------------------------------------------------------------------
    def _on_position_entered(self) -> None:
        try:
            pos = parse_position(self.position_field.text())
        except ValueError as exc:
            self.statusBar().showMessage(str(exc), 6000)
            self.position_field.setStyleSheet("border: 1px solid #d44;")
            return
        self.position_field.setStyleSheet("")
        self.state.jump_to(pos)  # one notification: each plane fetched and drawn once
        self.position_field.setText(format_position(self.state.cursor))
        self.views[self.state.focused].setFocus()

    def _on_go_to(self) -> None:
        self.position_field.setFocus()
        self.position_field.selectAll()

    def copy_position(self) -> None:
        text = format_position(self.state.cursor)
        QGuiApplication.clipboard().setText(text)
        self.statusBar().showMessage(f"copied {text}", 3000)

    def closeEvent(self, event: Any) -> None:
        self._stop_extent_scan()
        if self.source is not None:
            self.source.close()
            self.source = None
        super().closeEvent(event)


STYLE = """
QMainWindow, QDockWidget, QWidget { background: #232428; color: #dcdde1; }
QMenuBar, QMenu { background: #2a2b30; color: #dcdde1; }
QMenu::item:selected, QMenuBar::item:selected { background: #3d5a8a; }
QToolBar { background: #2a2b30; border: none; spacing: 4px; padding: 2px; }
QToolButton { padding: 3px 8px; border-radius: 3px; }
QToolButton:hover { background: #3a3c44; }
QLineEdit, QDoubleSpinBox, QComboBox { background: #1a1b1e; border: 1px solid #3a3c44;
  border-radius: 3px; padding: 2px 4px; color: #e8e8ea; }
QPushButton { background: #34363d; border: 1px solid #44464f; border-radius: 3px;
  padding: 3px 10px; }
QPushButton:hover { background: #3f424b; }
QStatusBar { background: #1d1e22; color: #c8c9ce; }
QStatusBar::item { border: none; }
QStatusBar QLabel { padding: 0 10px; font-family: monospace; background: transparent; }
QDockWidget::title { background: #2a2b30; padding: 4px; }
"""
