"""The main window: three linked slice views, a side panel, contrast, status bar, menus.

(Over 600 lines: the window owns its parts and routes the state between them; the seam to split
along is the dataset opening and index switching, which could move beside ``opening``.)

Layout (2x2): XY top left, YZ top right (its rows line up with XY's), XZ bottom left (its
columns line up with XY's), and the side panel (the inspector; a placeholder until
``set_side_panel``) bottom right.  One key (M) maximises the focused view and back.

The window is composed of parts, each a class of its own module that is handed what it needs
(the model, the window as a small typed ``WindowHost``): ``status`` (the status bar,
``viewer.ui.status_bar``), ``menus`` (menus, tool bar and position field, ``viewer.ui.menus``),
``opening`` (opening datasets and the extent scan, ``viewer.ui.opening``) and ``drawing`` (the
layers' planes fetched from the source, rendered and blended into the views, the contrast
controls and histogram, ``viewer.ui.layer_drawing``).  The window owns the ``PlaneSource`` of
the dataset shown, follows the ``ViewerState`` and tells its parts what changed;
``data_arrived(boxes)`` re-fetches the planes the boxes touch (the background loader's Qt bridge
calls it on the GUI thread).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import (
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeyEvent,
    QWindow,
)
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QDockWidget,
    QFrame,
    QGridLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPlainTextEdit,
    QScrollArea,
    QSizePolicy,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from viewer.core import state as st
from viewer.core.layered import LayeredSource, SourceLayer, source_layers
from viewer.core.slicing import Box3, Plane
from viewer.core.state import SCREEN_AXES, XY, XZ, YZ, Vec3, ViewerState
from viewer.core.workers import DEFAULT_THREADS
from viewer.format import Dataset, FileChangedError, FormatError, Volume
from viewer.render.plane import Rendered
from viewer.ui import collector, gil
from viewer.ui import remote as remote_ui
from viewer.ui.contrast import QtContrastPanel
from viewer.ui.error_banner import QtErrorBanner, _describe
from viewer.ui.extra_axes import install_extra_axes
from viewer.ui.layer_drawing import QtLayerDrawing, default_contrast
from viewer.ui.menus import QtWindowMenus
from viewer.ui.opening import QtDatasetOpener
from viewer.ui.slice_view import MAX_PLANE_SIDE, QtSliceView
from viewer.ui.status_bar import QtWindowStatus
from viewer.ui.theme import checkbox_style
from viewer.ui.url_progress import QtUrlProgress

if TYPE_CHECKING:  # the parts the window builds on request (imported when it does)
    from viewer.ui.compare.controller import QtCompareController
    from viewer.ui.inspector.panel import QtInspectorPanel
    from viewer.ui.loading import QtBackgroundLoading

#: Makes the window's source from the layers of a dataset (``on_close`` runs when it closes).
SourceFactory = Callable[[Sequence[SourceLayer], Callable[[], None] | None], LayeredSource]


def initial_display(layer: SourceLayer) -> st.LayerDisplay:
    """How a layer is shown when the dataset opens: a segmentation layer half transparent, a
    channel of a composite in its colour (and window, and shown or not, as the dataset says),
    added to the others; any other layer grey over what is below."""
    contrast = default_contrast(layer.dtype, layer.finest.value_range, layer.num_channels)
    if layer.channel is None:
        return st.LayerDisplay(layer.name, layer.category, contrast=contrast,
                               opacity=SEGMENTATION_OPACITY
                               if layer.category == st.SEGMENTATION else 1.0)
    look = layer.channel
    if look.window is not None:
        contrast = replace(contrast, lo=look.window[0], hi=look.window[1])
    contrast = replace(contrast, colormap=look.color or "grey")
    return st.LayerDisplay(layer.name, layer.category, visible=look.active, contrast=contrast,
                           additive=True)


def sync_source(layers: Sequence[SourceLayer],
                on_close: Callable[[], None] | None = None) -> LayeredSource:
    """The default source: every plane read at once on the GUI thread (no cache)."""
    return LayeredSource(layers, on_close=on_close)


#: The contrast dock's width at start: narrow, so that the 2x2 grid gets the room.
CONTRAST_DOCK_WIDTH = 220
#: A segmentation layer's opacity when a dataset opens: the image beneath stays readable.
SEGMENTATION_OPACITY = 0.5
#: The cursor is kept this far (fraction of the view) inside a view after a key move.
EDGE_MARGIN = 0.08
#: Each view's (row, column) in the 2x2 grid; the side panel has (1, 1).
GRID_CELLS = {XY: (0, 0), YZ: (0, 1), XZ: (1, 0)}


class QtMainWindow(QMainWindow):
    """The viewer window.  ``open_path`` opens a dataset; ``set_side_panel`` fills the fourth
    quadrant.  It is a ``viewer.ui.window_host.WindowHost`` to its parts."""

    #: The cursor moved: (x, y, z).
    cursor_changed = Signal(object)
    #: A dataset was opened: its path.
    dataset_opened = Signal(str)
    #: Blocks met while browsing failed to read or verify, or their file is changing: the
    #: new ones, ``{(path, block): FormatError}`` (the inspector lists them as problems).
    blocks_failed = Signal(object)
    #: Data arrived and the planes it touched were fetched again (``planes_complete`` may
    #: hold now).
    planes_updated = Signal()

    def __init__(self, state: ViewerState | None = None,
                 source_factory: SourceFactory = sync_source) -> None:
        super().__init__()
        collector.collect_on_gui_thread()  # Qt objects in cycles die on this thread
        gil.favour_gui_thread()  # the GUI thread waits less for the interpreter lock
        self.state = state or ViewerState()
        self.source_factory = source_factory
        self.source: LayeredSource | None = None
        #: The volume of the first layer's finest mag; its voxels are the window's coordinates.
        self.dataset: Volume | None = None
        self.dataset_path: str | None = None
        #: The dataset open (any format: its layers, mags, voxel size and problems).
        self.opened: Dataset | None = None
        #: The mag of ``dataset`` (its voxel ``p`` covers mag-1 voxels ``p * dataset_mag``).
        self.dataset_mag: Vec3 = (1, 1, 1)
        #: Whether the last opening was given a position and a zoom (a remembered view yields).
        self.opened_with = (False, False)
        #: What went wrong since the dataset shown was opened (a screenshot run prints them).
        self.errors: list[str] = []
        self._failed_blocks: dict[tuple[str, int], FormatError] = {}
        self._last_centers: dict[int, tuple[float, float]] = {}
        # The optional parts the window builds on request (``add_background_loading``,
        # ``add_compare``, ``add_inspector``); None until then.
        #: Background loading of every dataset opened (``viewer.ui.loading``).
        self.loading: QtBackgroundLoading | None = None
        #: Dataset B beside the shown one, the compare modes and menu (``viewer.ui.compare``).
        self.compare: QtCompareController | None = None
        # The parts mounted onto the window by the modules above it, which know the window.
        #: The Layers panel and its dock (``viewer.ui.layers_panel.install_layers_panel``).
        self.layers_panel: QWidget | None = None
        self.layers_dock: QDockWidget | None = None
        #: The window's memory of its layout and datasets' views
        #: (``viewer.ui.memory.install_memory``).
        self.memory: QObject | None = None
        #: The inspector in the fourth quadrant (``viewer.ui.inspector``).
        self.inspector: QtInspectorPanel | None = None
        self.setWindowTitle("wkw-viewer")
        self.setAcceptDrops(True)
        self.resize(1280, 860)

        self.views: dict[int, QtSliceView] = {a: QtSliceView(a, self.state) for a in (XY, XZ, YZ)}
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
        dock = QDockWidget("Contrast", self)
        dock.setObjectName("contrastDock")
        dock.setWidget(self.contrast_panel)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.contrast_dock = dock
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        self.resizeDocks([dock], [CONTRAST_DOCK_WIDTH], Qt.Orientation.Horizontal)

        # The parts.
        self.status = QtWindowStatus(self.statusBar(), self)
        remote_ui.apply_stored_cache_size()
        self.remote_status = remote_ui.QtRemoteStatus(shown_paths=self._shown_paths)
        self.statusBar().addPermanentWidget(self.remote_status)
        self.extra_axes = install_extra_axes(self)  # a slider per time axis, [ and ]
        self.drawing = QtLayerDrawing(self, self.contrast_panel, self)
        self.drawing.mag_shown.connect(self.status.show_mag)
        self.drawing.blocks_failed.connect(self._note_failures)
        collector.defer_while(self.views_loading)
        self.contrast_panel.auto_requested.connect(self.drawing.auto_contrast)
        self.opening = QtDatasetOpener(self)
        self.opening.extent_grown.connect(self._on_extent_grown)
        self.menus = QtWindowMenus(self, self, self.drawing, self.status, self.contrast_dock)
        for view in self.views.values():
            view.hovered.connect(self.status.on_hovered)
            view.plane_wanted.connect(lambda *_: self.drawing.refresh_planes())
            view.message = "No dataset open.\nFile \u25b8 Open, or drop a dataset folder here."
        self.state.subscribe(self._on_state_changed)
        self.setStyleSheet(STYLE + checkbox_style())
        app = QGuiApplication.instance()
        self._watching_focus = isinstance(app, QGuiApplication)
        if isinstance(app, QGuiApplication):
            app.focusWindowChanged.connect(self._on_focus_window_changed)

    # -- the window as a host of its parts (viewer.ui.window_host.WindowHost) ----------------
    def show_message(self, text: str, timeout_ms: int = 0) -> None:
        self.statusBar().showMessage(text, timeout_ms)

    def add_status_widget(self, widget: QWidget, permanent: bool = False) -> None:
        """Add a section to the status bar (``QtWindowStatus.add_widget``)."""
        self.status.add_widget(widget, permanent)

    @property
    def force_finest(self) -> bool:
        """Read every layer at its finest mag whatever the zoom (a comparison is open: its
        differences are voxel for voxel)."""
        return self.drawing.force_finest

    @force_finest.setter
    def force_finest(self, value: bool) -> None:
        self.drawing.force_finest = value

    def refresh_planes(self, force: bool = False, rerender: bool = False) -> set[int]:
        """Fetch the planes that changed (``QtLayerDrawing.refresh_planes``)."""
        return self.drawing.refresh_planes(force, rerender)

    def planes_complete(self) -> bool:
        """Every visible view shows its whole plane of every visible layer."""
        return self.drawing.planes_complete()

    def views_loading(self) -> bool:
        """A dataset is shown and its views are still loading (a jump's blocks are being
        read): the cycle collector waits meanwhile (``collector.defer_while``)."""
        return self.source is not None and not self.drawing.planes_complete()

    def draw_with(self, view: QtSliceView, name: str, plane: Plane) -> Rendered:
        """``view``'s picture with layer ``name``'s plane replaced by ``plane``
        (``QtLayerDrawing.draw_with``: compare's B drawn as A is)."""
        return self.drawing.draw_with(view, name, plane)

    def _on_hovered(self, pos: Vec3 | None) -> None:
        """The mouse is over voxel ``pos`` of a view (compare's B views report here too)."""
        self.status.on_hovered(pos)

    def _shown_paths(self) -> list[str | None]:
        """The paths of what the window shows: A (its folder, and where its volume is read: a
        local properties file's mags may be at URLs), and compare's B when one is open."""
        volume_path = self.dataset.path if self.dataset is not None else None
        return [self.dataset_path, volume_path,
                self.compare.path_b if self.compare is not None else None]

    # -- the optional parts ------------------------------------------------------------------
    def add_background_loading(self, budget_bytes: int | None = None,
                               workers: int = DEFAULT_THREADS) -> QtBackgroundLoading:
        """Read every dataset opened from now on in the background: a ``Loader`` per layer and
        mag on one block cache of ``budget_bytes`` (``viewer.ui.loading``), all on ``workers``
        threads of the dataset's executor, whose status shows in the status bar.  Without it
        planes are read at once on the GUI thread."""
        from viewer.ui.loading import QtBackgroundLoading

        if self.loading is None:
            self.loading = QtBackgroundLoading(self, budget_bytes, workers, parent=self)
            self.source_factory = self.loading.make_source
        return self.loading

    def add_compare(self) -> QtCompareController:
        """Compare with a dataset B: File > Compare with... (Ctrl+B), the Compare menu and
        dock (``viewer.ui.compare``)."""
        from viewer.ui.compare.install import build_compare

        if self.compare is None:
            self.compare = build_compare(self)
        return self.compare

    def add_inspector(self) -> QtInspectorPanel:
        """The inspector in the fourth quadrant, its overlays on the views
        (``viewer.ui.inspector``)."""
        from viewer.ui.inspector.install import install_inspector

        if self.inspector is None:
            self.inspector = install_inspector(self)
        return self.inspector

    def shutdown(self) -> None:
        """Stop the window's background work in order and wait for it: the comparison and
        B, the inspector's scan and reads, the scan of the extent, then the loaders of the
        dataset shown (which close it).  The window stays on screen; ``close`` calls this."""
        if self.compare is not None:
            self.compare.shutdown()
        if self.inspector is not None:
            self.inspector.shutdown(wait=True)
        self.opening.stop()
        if self.source is not None:
            self.source.close()
            self.source = None
        self.opening.close()

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
        """Open a dataset of any format the registry reads (a folder, a file, a URL).  On
        failure the window says why (and keeps what it showed before) and False is returned."""
        path = os.fspath(path)
        progress = QtUrlProgress(self, self.banner, path) if "://" in path else None
        try:
            opening = self.opening.open(path, pos, progress)
        except remote_ui.OpeningCancelled:
            return False  # the person pressed Esc: the window shows what it showed
        except Exception as exc:  # whatever it is, a message in the window, not a crash
            if progress is not None:
                progress.finish()
                progress = None
            self.show_error(f"Cannot open {path}", _describe(exc))
            return False
        finally:
            if progress is not None:
                progress.finish()
        self.set_dataset(opening.layers[0].finest, path, opening.bounds, pos, zoom,
                         opened=opening.dataset, layers=opening.layers)
        self.opening.adopt(opening.scan)
        self.status.show_info(self.opening.scanning)
        if opening.notes:
            self.banner.show_message("Parts of this dataset did not open",
                                     "; ".join(opening.notes))
        self.menus.recent.add(path)
        return True

    def _on_extent_grown(self, bounds: tuple[Vec3, Vec3]) -> None:
        """The background scan found more files: widen the extent; the cursor and the views
        stay where they are."""
        self.state.grow_bounds(bounds)
        self.status.show_info(self.opening.scanning)

    def set_dataset(self, dataset: Volume, path: str, bounds: tuple[Vec3, Vec3],
                    pos: Sequence[int] | None = None, zoom: float | None = None,
                    opened: Dataset | None = None,
                    layers: Sequence[SourceLayer] | None = None) -> None:
        """Show the ``layers`` of ``opened`` (``dataset`` is the first layer's finest mag; a
        declared voxel size gives physical positions, scale bars and the aspect of anisotropic
        voxels), or ``dataset`` alone as one layer."""
        if self.source is not None:
            self.source.close()
        self.opening.stop()
        if self.opened is not None and self.opened is not opened:
            self.opened.close()
        self.opened = opened
        if layers is None:
            layers = [SourceLayer(Path(path).name or "data", {(1, 1, 1): dataset})]
        size: tuple[float, float, float] | None = None
        if opened is not None and opened.voxel_size_declared:
            x, y, z = (float(v) for v in opened.voxel_size)
            size = (x, y, z)
        self.state.set_voxel_size(size, notify=False)  # set_bounds below notifies
        self.dataset = dataset
        self.dataset_path = path
        self.errors = []
        self._failed_blocks = {}
        self.banner.hide()
        self.dataset_mag = layers[0].mag_list[0]
        coarsest = max(max(m) for layer in layers for m in layer.mags)
        for view in self.views.values():
            view.message = ""
            view.layer_planes, view.layer_rendered = {}, {}
            view.max_side = MAX_PLANE_SIDE * coarsest
            view.show_plane(None, None)
        on_close = None if opened is None else opened.close
        self.source = self.source_factory(layers, on_close)
        self.state.set_layers([initial_display(layer) for layer in layers], notify=False)
        self.drawing.start(layers)
        self.drawing.show_active_layer()
        self.state.set_extra_axes(opened.extra_axes if opened is not None
                                  else dataset.extra_axes, notify=False)
        self.state.set_bounds(bounds, pos, zoom if zoom is not None else self.fit_zoom(bounds))
        name = Path(path).name or path
        self.setWindowTitle(f"{name} \u2014 wkw-viewer")
        self.status.show_info(self.opening.scanning)
        self.opened_with = (pos is not None, zoom is not None)
        self.dataset_opened.emit(path)
        if not self.menus.position_field.hasFocus():
            self.views[self.state.focused].setFocus()  # arrows and PgUp/PgDn work at once

    def _show_index(self) -> None:
        """Another element of an extra axis (time point): the same layers read anew at
        ``state.index`` by the same source (what it read ahead at that index is shown at
        once), the cursor, zoom and every layer's look kept."""
        opened = self.opened
        if opened is None or self.source is None:
            return
        try:
            opened.set_index(self.state.index)
        except (KeyError, IndexError) as exc:
            self.show_error("Cannot show that index", str(exc))
            return
        layers, _problems = source_layers(opened)
        layers.sort(key=lambda la: la.category == st.SEGMENTATION)
        shown = {la.name for la in self.state.layers}
        layers = [la for la in layers if la.name in shown]
        if not layers:
            return
        self.source.show_layers(layers)  # its cache and the parts that read this index ahead
        self.dataset = layers[0].finest
        for view in self.views.values():
            view.layer_planes, view.layer_rendered = {}, {}
        self.drawing.start(layers)
        self.drawing.refresh_planes(force=True)
        self.status.show_info(self.opening.scanning)

    def fit_zoom(self, bounds: tuple[Vec3, Vec3]) -> float:
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
        if self.dataset is None:  # the detail once, in the banner; the views name the problem
            for view in self.views.values():
                view.message = f"{title}\n\n(the message above says why)"
                view.update()
        self.statusBar().showMessage(title, 8000)

    def report_exception(self, exc: BaseException) -> None:
        """Last resort for an unexpected exception in a slot: a message, not a crash."""
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        self.show_error("Something went wrong (the window is still usable)", detail)

    def _note_failures(self, errors: Mapping[tuple[str, int], FormatError]) -> None:
        """Blocks of a plane failed to read: say so once per block."""
        new = {k: v for k, v in errors.items() if k not in self._failed_blocks}
        if not new:
            return
        self._failed_blocks.update(new)
        self.blocks_failed.emit(new)
        failed = [e for e in self._failed_blocks.values() if not isinstance(e, FileChangedError)]
        first = failed[0] if failed else next(iter(self._failed_blocks.values()))
        n = len(failed)
        self.errors.append(str(first))
        if failed:
            what = "a block" if n == 1 else f"{n} blocks"
            self.banner.show_message(f"Could not read {what} (shown hatched red in the views)",
                                     _describe(first))
        else:
            self.banner.show_message("A file is being changed by another program (its blocks "
                                     "are hatched amber and read again once it settles)",
                                     _describe(first))

    # -- model -> views ----------------------------------------------------------------------
    def _on_state_changed(self, changes: frozenset[str]) -> None:
        if st.LAYOUT in changes:
            self._apply_layout()
        if st.CURSOR in changes:
            self._keep_cursor_visible()
            self.cursor_changed.emit(self.state.cursor)
            self.menus.show_cursor()
            self.status.show_cursor(self.state.cursor)
        serials = {a: v._image_serial for a, v in self.views.items()}
        centers = dict(self.state.centers)
        if st.INDEX in changes:
            self._show_index()
        if st.LAYERS in changes:
            self.drawing.show_active_layer()
        restyled = bool(changes & {st.CONTRAST, st.LAYERS})  # the same planes, drawn anew
        fetched: set[int] = set()
        if changes & {st.CURSOR, st.CENTER, st.ZOOM, st.DATASET, st.LAYOUT, st.BOUNDS,
                      st.VOXEL_SIZE, st.LAYERS}:
            fetched = self.drawing.refresh_planes(rerender=restyled)
        if restyled:
            self.drawing.rerender_all(skip=fetched)
        if st.CONTRAST in changes:
            self.drawing.histogram_timer.start()
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
        if self.status.hover is not None and changes & {st.CURSOR, st.CENTER, st.ZOOM}:
            for view in self.views.values():  # the voxel under a still mouse may be another
                view.rehover()
            self.status.rehover()

    def data_arrived(self, boxes: Box3 | Sequence[Box3]) -> None:
        """Data inside ``boxes`` (one ``(offset, shape)`` or a list of them) became
        available: re-fetch the planes they touch.  Called on the GUI thread (the loader's Qt
        bridge hops there)."""
        if self.source is None:
            return
        self.drawing.data_arrived(boxes)
        self.status.rehover()
        self.planes_updated.emit()

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

    # -- focus -------------------------------------------------------------------------------
    def _on_focus_window_changed(self, focus: QWindow | None) -> None:
        """A dialog of this window took the keys: when it hides, the window takes them back
        (a window system without a manager does not give them back) and the views have them,
        unless a text field of the window had them."""
        mine = self.windowHandle()
        if (focus is None or mine is None or focus is mine
                or focus.transientParent() is not mine or focus.property("refocusViews")):
            return
        focus.setProperty("refocusViews", True)
        focus.visibleChanged.connect(self._on_dialog_visible_changed)

    def _on_dialog_visible_changed(self, visible: bool) -> None:
        if not visible:
            QTimer.singleShot(0, self, self.focus_views)

    def focus_views(self) -> None:
        """Make the window active and give the focused view the keys (a text field that has
        them keeps them)."""
        if not self.isVisible() or QApplication.activeModalWidget() is not None:
            return
        self.activateWindow()
        widget = QApplication.focusWidget()
        if not isinstance(widget, QLineEdit | QAbstractSpinBox | QTextEdit | QPlainTextEdit):
            self.views[self.state.focused].setFocus()

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
            along, sign = moves[Qt.Key(key)]
            self.state.move_along(along, sign * step)
            event.accept()
            return
        super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        app = QGuiApplication.instance()
        if self._watching_focus and isinstance(app, QGuiApplication):
            self._watching_focus = False
            app.focusWindowChanged.disconnect(self._on_focus_window_changed)
        self.shutdown()
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
