"""The inspector panel: a look inside the WKW files of a dataset, from their jump tables.

``QtInspectorPanel`` is a self-contained widget (the fourth quadrant of the main window).  Its
interface to the window is narrow:

- ``set_dataset(dataset)``: inspect a ``wkw.Dataset`` (starts the background file scan).
- ``set_webknossos(wk, window_mag)``: the window shows a webKnossos dataset (whose voxels are
  those of mag ``window_mag``): a layer and a mag combo box at the top pick the mag whose WKW
  dataset is inspected; cursor positions and overlays are scaled between the window's voxels
  and the inspected mag's.
- ``show_cursor((x, y, z))``: the cursor moved; the panel shows the file under it, selects the
  block under it, and updates the overlays and the byte-layout highlights.
- signals ``block_selected(path, morton_index)`` and ``position_requested((x, y, z))``: the user
  picked a block or a file here; the window moves its cursor (and calls ``show_cursor`` back,
  which is then a no-op).
- ``compression_overlay(axis)`` / ``grid_overlays(axis)``: items to add to the slice view whose
  normal is ``axis`` (0 x, 1 y, 2 z); see ``viewer.ui.inspector.overlay`` for coordinates.
- ``shutdown()``: stop background work (call when the window closes).

All file access runs on worker threads of ``viewer.core.inspect`` or a one-thread executor;
results come back through ``QtResultBridge`` (queued), so the GUI thread only formats.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from viewer.core import inspect
from viewer.format import FormatError, wkw
from viewer.format.webknossos import Layer, Mag, WkDataset, mag_name
from viewer.ui.inspector.bridge import QtResultBridge
from viewer.ui.inspector.models import QtFilesModel, QtJumpTableModel
from viewer.ui.inspector.overlay import (
    QtCompressionOverlay,
    QtGridOverlay,
    QtSliceOverlay,
    colormap,
    metric_levels,
)

Vec3 = tuple[int, int, int]
AXIS_NAMES = {2: "XY", 1: "XZ", 0: "YZ"}
AXIS_COLOURS = {2: (230, 60, 60), 1: (60, 200, 60), 0: (80, 120, 255)}
DIFF_BRUSH = QBrush(QColor(255, 215, 120))
SIZES_TAB, LAYOUT_TAB, MAP_TAB = 3, 4, 6
#: Rows of the file table arrive at most this often (each arrival repaints the table).
SCAN_BATCH_SECONDS = 0.25
#: Items listed at most when a histogram bar is clicked.
MAX_LISTED = 2000


class _LoadedFile:
    """What the worker hands back for the current file."""

    def __init__(self, position: Vec3, path: str, report: inspect.HeaderReport | None,
                 table: inspect.BlockTable | None, error: FormatError | None) -> None:
        self.position = position
        self.path = path
        self.report = report
        self.table = table
        self.error = error


class QtInspectorPanel(QWidget):
    """Header, files, jump table, block sizes, byte layout, problems and the compression map of
    a WKW dataset.  GUI thread only."""

    #: The user picked a block here: (file path, Morton index).
    block_selected = Signal(str, int)
    #: The user asked to move the cursor to dataset voxel (x, y, z) (a tuple).
    position_requested = Signal(object)
    #: The current file's header and jump table are shown (its path; "" when absent).
    file_shown = Signal(str)
    #: Every compression overlay shows the planes through the current cursor.
    overlays_updated = Signal()
    #: The file scan ended (number of files).
    scan_finished = Signal(int)
    #: A webKnossos layer and mag are now inspected: (layer name, (x, y, z) mag).
    mag_selected = Signal(str, object)

    def __init__(self, dataset: wkw.Dataset | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.dataset: wkw.Dataset | None = None
        self._bridge = QtResultBridge(self)
        self._bridge.result_arrived.connect(self._on_result)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inspector")
        self._cache = inspect.TableCache()
        self._scan: inspect.FileScan | None = None
        self._decode_cancel: threading.Event | None = None
        self._tokens: dict[str, int] = {}
        self._positions: set[Vec3] = set()
        self._cursor: Vec3 | None = None
        self._file_pos: Vec3 | None = None
        self._loading_pos: Vec3 | None = None
        self._shown: _LoadedFile | None = None
        self._pending_block: int | None = None
        self._syncing = False
        self._metric = inspect.SIZE
        self._overlays: dict[int, QtCompressionOverlay] = {}
        self._overlay_keys: dict[int, Any] = {}
        self._overlays_pending: set[int] = set()
        #: Tabs whose plots wait for the tab to be shown (plots of hidden tabs cost for nothing).
        self._dirty_tabs: set[int] = set()
        self._view_overlays: dict[int, list[QtSliceOverlay]] = {}
        self._extent: tuple[Vec3, Vec3] | None = None
        self._grids: dict[int, tuple[QtGridOverlay, QtGridOverlay]] = {}
        self._hist_edges: np.ndarray[Any, Any] | None = None
        #: The webKnossos dataset whose layers and mags the combo boxes offer (None: plain).
        self.webknossos: WkDataset | None = None
        #: The mag of the window's voxels, and window voxels per inspected voxel per axis.
        self._window_mag: Vec3 = (1, 1, 1)
        self._scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
        #: The window's cursor in its own voxels (re-applied when another mag is picked).
        self._window_cursor: Vec3 | None = None
        self._build()
        if dataset is not None:
            self.set_dataset(dataset)

    # == building the widget ==================================================================
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        self.wk_bar = QWidget()
        bar = QHBoxLayout(self.wk_bar)
        bar.setContentsMargins(0, 0, 0, 0)
        self.layer_combo = QComboBox()
        self.layer_combo.setToolTip("webKnossos layer to inspect")
        self.mag_combo = QComboBox()
        self.mag_combo.setToolTip("mag of the layer to inspect (its own WKW dataset)")
        bar.addWidget(QLabel("layer"))
        bar.addWidget(self.layer_combo, 1)
        bar.addWidget(QLabel("mag"))
        bar.addWidget(self.mag_combo)
        self.layer_combo.currentIndexChanged.connect(self._on_layer_changed)
        self.mag_combo.currentIndexChanged.connect(self._on_mag_changed)
        self.wk_bar.hide()
        layout.addWidget(self.wk_bar)
        top = QHBoxLayout()
        self.title = QLabel("no dataset")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A long path must not widen the quadrant: the label takes the width it is given.
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setFormat("files %v / %m")
        # Showing or hiding the bar must not re-lay out the panel: that repaints every tab
        # page (a 32,768-row table included) for a bar that changed.
        keep = self.progress.sizePolicy()
        keep.setRetainSizeWhenHidden(True)
        self.progress.setSizePolicy(keep)
        self.progress.hide()
        top.addWidget(self.title, 1)
        top.addWidget(self.progress)
        layout.addLayout(top)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.tabBar().setExpanding(False)
        self.tabs.tabBar().setElideMode(Qt.TextElideMode.ElideNone)
        self.tabs.tabBar().setStyleSheet("QTabBar::tab { padding: 4px 8px; }")
        self.tabs.currentChanged.connect(lambda _i: self._update_visible_tab())
        layout.addWidget(self.tabs, 1)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self._build_header_tab(mono)
        self._build_files_tab()
        self._build_blocks_tab()
        self._build_sizes_tab()
        self._build_layout_tab()
        self._build_problems_tab()
        self._build_map_tab()

    def _build_header_tab(self, mono: QFont) -> None:
        w = QWidget()
        v = QVBoxLayout(w)
        v.setContentsMargins(6, 4, 6, 4)
        v.setSpacing(4)
        self.header_path = QLabel("")
        self.header_path.setWordWrap(True)
        self.header_path.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.header_hex = QLabel("")
        self.header_hex.setFont(mono)
        self.header_hex.setWordWrap(True)
        self.header_hex.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.header_hex.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.header_fields = QTableWidget(0, 4)
        self.header_fields.setHorizontalHeaderLabels(["field", "bytes", "raw", "meaning"])
        self.geometry_table = QTableWidget(0, 2)
        self.geometry_table.setHorizontalHeaderLabels(["derived", "value"])
        for table in (self.header_fields, self.geometry_table):
            self._compact_table(table)
        self.header_diffs = QLabel("")
        self.header_diffs.setWordWrap(True)
        v.addWidget(self.header_path)
        v.addWidget(self.header_hex)
        v.addWidget(self.header_fields)
        v.addWidget(self.header_diffs)
        v.addWidget(self.geometry_table)
        v.addStretch(1)
        # The tab scrolls as one page (the tables are as tall as their rows): no nested
        # scroll bars, and never a horizontal one.
        page = QScrollArea()
        page.setWidgetResizable(True)
        page.setFrameShape(QFrame.Shape.NoFrame)
        page.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        page.setWidget(w)
        self.tabs.addTab(page, "Header")

    @staticmethod
    def _compact_table(table: QTableWidget) -> None:
        """A small read-only table shown whole: one text line per row (long cells elided,
        the whole text in the tooltip), narrow columns sized to their contents, the last one
        taking the rest of the width, its height that of its rows."""
        table.verticalHeader().hide()
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
        header = table.horizontalHeader()
        for c in range(table.columnCount() - 1):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(table.columnCount() - 1, QHeaderView.ResizeMode.Stretch)
        table.setWordWrap(False)
        table.setTextElideMode(Qt.TextElideMode.ElideRight)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        table.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        table.setFixedHeight(table.horizontalHeader().sizeHint().height() + 4)

    @staticmethod
    def _fit_table_height(table: QTableWidget) -> None:
        rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
        table.setFixedHeight(table.horizontalHeader().sizeHint().height() + rows
                             + 2 * table.frameWidth())

    def _build_files_tab(self) -> None:
        self.files_model = QtFilesModel()
        self.files_view = QTableView()
        self.files_view.setModel(self.files_model)
        self._fast_table(self.files_view)
        self.files_view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.files_view.setSortingEnabled(True)
        self.files_view.horizontalHeader().resizeSection(0, 120)
        # Mouse and keyboard alike: the current row moving is the user's choice.
        self.files_view.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self._on_file_row_clicked(cur))
        self.tabs.addTab(self.files_view, "Files")

    def _build_blocks_tab(self) -> None:
        w = QWidget()
        v = QVBoxLayout(w)
        row = QHBoxLayout()
        self.blocks_summary = QLabel("")
        self.blocks_summary.setWordWrap(True)
        self.blocks_summary.setSizePolicy(QSizePolicy.Policy.Ignored,
                                          QSizePolicy.Policy.Preferred)
        self.decode_button = QPushButton("Decode all")
        self.decode_button.setToolTip("Decodes every block of this file in the background to "
                                      "flag constant and all-zero blocks")
        self.decode_button.clicked.connect(self._on_decode_clicked)
        row.addWidget(self.blocks_summary, 1)
        row.addWidget(self.decode_button)
        v.addLayout(row)
        self.jump_model = QtJumpTableModel()
        self.jump_view = QTableView()
        self.jump_view.setModel(self.jump_model)
        self._fast_table(self.jump_view)
        # Narrow block coordinates, so that offsets and sizes fit the quadrant.
        for c, width in enumerate((64, 34, 34, 34, 84, 84, 64, 50)):
            self.jump_view.horizontalHeader().resizeSection(c, width)
        self.jump_view.horizontalHeader().setStretchLastSection(True)
        self.jump_view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.jump_view.setSortingEnabled(True)
        self.jump_view.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self._on_block_row_clicked(cur))
        v.addWidget(self.jump_view, 1)
        self.tabs.addTab(w, "Jump table")

    def _build_sizes_tab(self) -> None:
        split = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        v = QVBoxLayout(top)
        v.setContentsMargins(0, 0, 0, 0)
        self.hist_scope = QComboBox()
        self.hist_scope.addItems(["current file", "whole dataset"])
        self.hist_scope.currentIndexChanged.connect(lambda _i: self._update_histogram())
        v.addWidget(self.hist_scope)
        self._hist_box = v
        self.hist_plot: pg.PlotWidget | None = None  # built when first shown
        self.hist_list = QListWidget()
        self.hist_list.itemClicked.connect(self._on_target_item_clicked)
        split.addWidget(top)
        split.addWidget(self.hist_list)
        split.setStretchFactor(0, 3)  # the histogram gets most of the height
        split.setStretchFactor(1, 1)
        self.tabs.addTab(split, "Sizes")

    def _ensure_hist_plot(self) -> pg.PlotWidget:
        """The histogram plot, built on first use (pyqtgraph plots cost to build)."""
        if self.hist_plot is None:
            self.hist_plot = pg.PlotWidget()
            self.hist_plot.setLabel("bottom", "compressed block size", units="B")
            self.hist_plot.setLabel("left", "blocks")
            self.hist_plot.setMouseEnabled(x=False, y=False)
            self.hist_plot.setMinimumHeight(160)  # the list below takes what is left
            self.hist_bars = pg.BarGraphItem(x0=[], x1=[], height=[], brush=(90, 140, 220))
            self.hist_plot.addItem(self.hist_bars)
            self.hist_plot.scene().sigMouseClicked.connect(self._on_histogram_clicked)
            self._hist_box.addWidget(self.hist_plot, 1)
        return self.hist_plot

    def _build_layout_tab(self) -> None:
        w = QWidget()
        v = QVBoxLayout(w)
        self._layout_box = v
        self.layout_plot: pg.PlotWidget | None = None  # built when first shown
        self.layout_marks: dict[int, pg.ScatterPlotItem] = {}
        self.layout_text = QLabel("")
        # One line per plane, clipped rather than wrapped: a word-wrapped label here made the
        # page taller than the quadrant (height for width inside the tab stack).
        self.layout_text.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        v.addWidget(self.layout_text)
        self.tabs.addTab(w, "Byte layout")

    def _ensure_layout_plot(self) -> pg.PlotWidget:
        if self.layout_plot is None:
            self.layout_plot = pg.PlotWidget()
            self.layout_plot.setLabel("bottom", "Morton index")
            self.layout_plot.setLabel("left", "byte offset", units="B")
            self.layout_curve = self.layout_plot.plot([], [],
                                                      pen=pg.mkPen((180, 180, 180), width=1))
            self.layout_curve.setDownsampling(auto=True, method="peak")  # 32,768 points
            self.layout_curve.setClipToView(True)
            for axis, colour in AXIS_COLOURS.items():
                item = pg.ScatterPlotItem(size=4, pen=None, brush=pg.mkBrush(*colour, 200))
                self.layout_plot.addItem(item)
                self.layout_marks[axis] = item
            self._layout_box.insertWidget(0, self.layout_plot, 1)
        return self.layout_plot

    def _build_problems_tab(self) -> None:
        self.problems_list = QListWidget()
        self.problems_list.itemClicked.connect(self._on_target_item_clicked)
        self.tabs.addTab(self.problems_list, "Problems")

    def _build_map_tab(self) -> None:
        w = QWidget()
        v = QVBoxLayout(w)
        self.map_toggle = QCheckBox("compression map on the slice views")
        self.map_toggle.setChecked(False)  # a viewer first: the map is asked for
        self.map_toggle.toggled.connect(self._on_overlay_toggles)
        self.metric_box = QComboBox()
        self.metric_box.addItems(["compressed size", "compression ratio"])
        self.metric_box.currentIndexChanged.connect(self._on_metric_changed)
        self.block_grid_toggle = QCheckBox("block grid")
        self.file_grid_toggle = QCheckBox("file grid")
        for box in (self.block_grid_toggle, self.file_grid_toggle):
            box.toggled.connect(self._on_overlay_toggles)
        v.addWidget(self.map_toggle)
        v.addWidget(self.metric_box)
        v.addWidget(self.block_grid_toggle)
        v.addWidget(self.file_grid_toggle)
        self._map_box = v
        self.colorbar: pg.ColorBarItem | None = None  # built when first shown
        v.addStretch(1)
        self.tabs.addTab(w, "Map")

    def _ensure_colorbar(self) -> pg.ColorBarItem:
        if self.colorbar is None:
            self.colorbar_view = pg.GraphicsLayoutWidget()
            self.colorbar_view.setFixedHeight(80)
            self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(),
                                            interactive=False, orientation="horizontal",
                                            label="bytes")
            self.colorbar_view.addItem(self.colorbar)
            self._map_box.insertWidget(4, self.colorbar_view)
        return self.colorbar

    @staticmethod
    def _fast_table(view: QTableView) -> None:
        """Fixed row heights and no content-based sizing: scrolling stays O(visible rows)."""
        view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        view.verticalHeader().setDefaultSectionSize(20)
        view.verticalHeader().hide()
        view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        view.horizontalHeader().setDefaultSectionSize(80)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        view.setWordWrap(False)

    # == public interface =====================================================================
    def set_dataset(self, dataset: wkw.Dataset | None) -> None:
        """Inspect ``dataset`` (None: nothing).  Starts the background scan of its files."""
        self._stop_work()
        self._cache.clear()
        self.dataset = dataset
        self._positions = set()
        self._file_pos = self._loading_pos = None
        self._shown = None
        self._cursor = None
        self._overlay_keys.clear()
        self._overlays_pending.clear()
        self.files_model.clear(dataset.root if dataset is not None else "")
        self.problems_list.clear()
        self.jump_model.set_table(None)
        self._extent = None
        for ov in self._overlays.values():
            ov.set_plane(None)
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.set_plane(None)
                w.set_grid(0, 0, None)
        if dataset is None:
            self.title.setText("no dataset")
            return
        h = dataset.header
        where = dataset.single_file or dataset.root
        self.title.setText(f"<b>{os.path.basename(os.path.normpath(where))}</b> \u00b7 "
                           f"{h.block_type_name}, {h.dtype} x{h.num_channels}, "
                           f"block {h.block_len}\u00b3, file {h.file_len}\u00b3 blocks")
        self.title.setToolTip(where)
        self._hist_edges = inspect.histogram_edges(h)
        self._update_colorbar()
        self._update_grid_spacing()
        self.progress.setRange(0, 0)
        self.progress.show()
        token = self._next("scan")
        self._scan = inspect.FileScan(
            dataset, lambda batch: self._bridge.deliver("scan", token, batch),
            batch_seconds=SCAN_BATCH_SECONDS)
        self._scan.start()
        cursor = self._window_cursor if self.webknossos is not None else None
        self._show_cursor_at(self._to_inspected(cursor) if cursor is not None else (0, 0, 0))

    # -- webKnossos datasets: one layer and mag at a time ----------------------------------------
    def set_webknossos(self, wk: WkDataset | None, window_mag: Vec3 = (1, 1, 1),
                       layer: str | None = None, mag: Vec3 | None = None) -> None:
        """Offer ``wk``'s layers and mags in the combo boxes and inspect ``layer``/``mag``
        (default: the first color layer, the window's mag if that layer has it, else its
        finest).  ``window_mag``: the mag whose voxels the window's cursor is in.  None hides
        the combo boxes and inspects whatever ``set_dataset`` is given next at scale 1."""
        old = self.webknossos
        if old is not None and old is not wk:
            if self.dataset is not None and wk is None:
                self.set_dataset(None)  # it is one of the old dataset's mags, closed now
            self._stop_work()
            old.close()
        self.webknossos = wk
        self._window_mag = window_mag
        self._window_cursor = None
        self._scale = (1.0, 1.0, 1.0)
        self._apply_scale()
        self.layer_combo.blockSignals(True)
        self.layer_combo.clear()
        if wk is None or not wk.layers:
            self.layer_combo.blockSignals(False)
            self.mag_combo.blockSignals(True)
            self.mag_combo.clear()
            self.mag_combo.blockSignals(False)
            self.wk_bar.hide()
            return
        for item in wk.layers:
            self.layer_combo.addItem(f"{item.name} ({item.category})", item.name)
        names = [item.name for item in wk.layers]
        if layer is None or layer not in names:
            layer = (wk.color_layers or wk.layers)[0].name
        self.layer_combo.setCurrentIndex(names.index(layer))
        self.layer_combo.blockSignals(False)
        self.wk_bar.show()
        self._fill_mags(wk.layer(layer), mag if mag is not None else window_mag)
        self._inspect_selected()

    @property
    def selected_layer(self) -> Layer | None:
        if self.webknossos is None or self.layer_combo.currentIndex() < 0:
            return None
        return self.webknossos.layer(str(self.layer_combo.currentData()))

    @property
    def selected_mag(self) -> Mag | None:
        layer = self.selected_layer
        if layer is None or self.mag_combo.currentIndex() < 0:
            return None
        return layer.mag(tuple(self.mag_combo.currentData()))

    def select_mag(self, layer: str | None = None, mag: Any = None) -> None:
        """Pick ``layer`` (by name) and ``mag`` (any spelling) as the combo boxes would."""
        wk = self.webknossos
        if wk is None:
            return
        if layer is not None:
            names = [item.name for item in wk.layers]
            self.layer_combo.setCurrentIndex(names.index(layer))
        if mag is not None:
            current = self.selected_layer
            assert current is not None
            target = current.mag(mag).mag
            for i in range(self.mag_combo.count()):
                if tuple(self.mag_combo.itemData(i)) == target:
                    self.mag_combo.setCurrentIndex(i)

    def _fill_mags(self, layer: Layer, prefer: Vec3 | None) -> None:
        self.mag_combo.blockSignals(True)
        self.mag_combo.clear()
        chosen = 0
        for i, m in enumerate(layer.mags):
            self.mag_combo.addItem(mag_name(m.mag, False), m.mag)
            if m.mag == prefer:
                chosen = i
        self.mag_combo.setCurrentIndex(chosen)
        self.mag_combo.blockSignals(False)

    def _on_layer_changed(self, _index: int) -> None:
        layer = self.selected_layer
        if layer is None:
            return
        current = self.mag_combo.currentData()
        self._fill_mags(layer, tuple(current) if current is not None else self._window_mag)
        self._inspect_selected()

    def _on_mag_changed(self, _index: int) -> None:
        self._inspect_selected()

    def _inspect_selected(self) -> None:
        """Inspect the WKW dataset of the selected layer and mag (opened now, from its
        header.wkw: cheap); a mag that cannot be opened is shown as a problem."""
        layer, mag = self.selected_layer, self.selected_mag
        if layer is None or mag is None:
            return
        cursor = self._window_cursor
        self._scale = (mag.mag[0] / self._window_mag[0], mag.mag[1] / self._window_mag[1],
                       mag.mag[2] / self._window_mag[2])
        self._apply_scale()
        try:
            dataset = mag.dataset
        except FormatError as exc:
            self.set_dataset(None)
            self.title.setText(f"{layer.name}/{mag.name}: cannot be opened")
            self.problems_list.addItem(QListWidgetItem(f"{mag.path}: {exc}"))
            return
        self._window_cursor = cursor
        self.set_dataset(dataset)
        self.title.setText(f"<b>{layer.name}/{mag_name(mag.mag, False)}</b> · "
                           + self.title.text().split(" · ", 1)[-1])
        self.mag_selected.emit(layer.name, mag.mag)

    def _apply_scale(self) -> None:
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.set_scale(self._scale)

    def _to_inspected(self, window_pos: Vec3) -> Vec3:
        """A window voxel as a voxel of the inspected mag."""
        s = self._scale
        return (int(window_pos[0] // s[0]), int(window_pos[1] // s[1]),
                int(window_pos[2] // s[2]))

    def _to_window(self, pos: Vec3) -> Vec3:
        """An inspected mag voxel as the window voxel at its start (its centre when it covers
        several window voxels)."""
        s = self._scale
        return (int(pos[0] * s[0] + max(s[0] - 1, 0) // 2),
                int(pos[1] * s[1] + max(s[1] - 1, 0) // 2),
                int(pos[2] * s[2] + max(s[2] - 1, 0) // 2))

    def show_cursor(self, position: tuple[int, int, int] | list[int]) -> None:
        """The window's cursor is at its voxel ``position`` (the inspected dataset's voxel
        unless a webKnossos mag other than the window's is inspected): show its file, select
        its block, and update the overlays and byte-layout highlights (work runs in the
        background)."""
        pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
        self._window_cursor = pos
        self._show_cursor_at(self._to_inspected(pos))

    def _show_cursor_at(self, pos: Vec3) -> None:
        """``show_cursor`` in the inspected dataset's own voxels."""
        if self.dataset is None:
            return
        self._cursor = pos
        fpos, index = inspect.block_at(self.dataset.header, pos)
        self._pending_block = index
        if fpos != self._file_pos and fpos != self._loading_pos:
            self._load_file(fpos)
        elif fpos == self._file_pos:
            self._select_block(index)
            self._dirty_tabs.add(LAYOUT_TAB)
            self._update_visible_tab()
        self._refresh_overlays()

    def compression_overlay(self, axis: int) -> QtCompressionOverlay:
        """The compression-map item for the view whose normal is ``axis`` (0 x, 1 y, 2 z).
        Add it to that view's ViewBox (``view_box.addItem(item)``); the panel keeps it up to
        date.  Calling again for the same axis returns the same item."""
        if axis not in self._overlays:
            item = QtCompressionOverlay(axis)
            item.setVisible(self.map_toggle.isChecked())
            self._overlays[axis] = item
            self._overlay_keys.pop(axis, None)
            self._refresh_overlays()
        return self._overlays[axis]

    def grid_overlays(self, axis: int) -> tuple[QtGridOverlay, QtGridOverlay]:
        """(block grid, file grid) items for the view whose normal is ``axis``; add both to the
        view's ViewBox like the compression overlay."""
        if axis not in self._grids:
            block = QtGridOverlay(32, (255, 255, 255, 70))
            files = QtGridOverlay(1024, (255, 200, 0, 160), width=1.5)
            self._grids[axis] = (block, files)
            self._update_grid_spacing()
            self._on_overlay_toggles()
        return self._grids[axis]

    def overlay_items(self, axis: int) -> list[Any]:
        """Every overlay item for the view whose normal is ``axis``."""
        return [self.compression_overlay(axis), *self.grid_overlays(axis)]

    def attach_to_view(self, view: QWidget) -> QtSliceOverlay:
        """Draw the compression map and grids over a QPainter-based slice view (a
        ``QtSliceView``: it needs ``axis``, ``h_axis``, ``v_axis``, ``state.zoom`` and
        ``to_widget``), as a transparent child widget; the view's code is not touched."""
        widget = QtSliceOverlay(view)
        widget.set_scale(self._scale)
        self._view_overlays.setdefault(widget.axis, []).append(widget)
        self._overlay_keys.pop(widget.axis, None)
        self._on_overlay_toggles()
        self._update_grid_spacing()
        self._refresh_overlays()
        return widget

    def _wanted_axes(self) -> list[int]:
        return sorted(set(self._overlays) | set(self._view_overlays))

    def shutdown(self) -> None:
        """Stop the scan and any decoding; release the worker."""
        self._stop_work()
        self._executor.shutdown(wait=False, cancel_futures=True)

    @property
    def current_table(self) -> inspect.BlockTable | None:
        return self._shown.table if self._shown is not None else None

    @property
    def current_path(self) -> str | None:
        return self._shown.path if self._shown is not None else None

    # == background work ======================================================================
    def _next(self, kind: str) -> int:
        self._tokens[kind] = self._tokens.get(kind, 0) + 1
        return self._tokens[kind]

    def _stop_work(self) -> None:
        if self._scan is not None:
            self._scan.cancel()
            self._scan = None
        if self._decode_cancel is not None:
            self._decode_cancel.set()
            self._decode_cancel = None
        for kind in list(self._tokens):
            self._next(kind)

    def _load_file(self, fpos: Vec3) -> None:
        assert self.dataset is not None
        ds = self.dataset
        cache = self._cache
        self._loading_pos = fpos
        if self._decode_cancel is not None:
            self._decode_cancel.set()
            self._decode_cancel = None
        token = self._next("file")
        path = ds.file_path(*fpos)

        def job() -> _LoadedFile:
            if not os.path.exists(path):
                return _LoadedFile(fpos, path, None, None, None)
            try:
                report: inspect.HeaderReport | None = inspect.header_report(
                    path, None if ds.single_file else ds.header)
            except OSError as exc:
                return _LoadedFile(fpos, path, None, None, FormatError(str(exc), path))
            table, error = cache.get(path)
            return _LoadedFile(fpos, path, report, table, error)

        self._bridge.deliver_future("file", token, self._executor.submit(job))

    def _refresh_overlays(self) -> None:
        if self.dataset is None or self._cursor is None or not self._wanted_axes():
            return
        ds = self.dataset
        h = ds.header
        positions = set(self._positions)
        fpos, _ = inspect.block_at(h, self._cursor)
        positions.add(fpos)
        frozen = frozenset(positions)
        for axis in self._wanted_axes():
            index = self._cursor[axis]
            key = (index // h.block_len, self._metric, len(frozen))
            if self._overlay_keys.get(axis) == key:
                continue
            self._overlay_keys[axis] = key
            token = self._next(f"overlay{axis}")
            self._overlays_pending.add(axis)
            metric = self._metric
            cache = self._cache
            self._bridge.deliver_future(
                f"overlay{axis}", token, self._executor.submit(
                    inspect.compression_plane, ds, axis, index, frozen, metric, cache))
        self._update_grid_extent(positions)

    def _on_result(self, kind: str, token: int, payload: Any) -> None:
        if self._tokens.get(kind) != token:
            return  # superseded
        if kind == "scan":
            self._on_scan_batch(payload)
        elif kind == "file":
            if isinstance(payload, BaseException):
                self.header_path.setText(f"error: {payload}")
                return
            self._on_file_loaded(payload)
        elif kind.startswith("overlay"):
            axis = int(kind[len("overlay"):])
            plane = None if isinstance(payload, BaseException) else payload
            if axis in self._overlays:
                self._overlays[axis].set_plane(plane)
                self._overlays[axis].setToolTip(str(payload) if plane is None else "")
            for widget in self._view_overlays.get(axis, []):
                widget.set_plane(plane)
            self._overlays_pending.discard(axis)
            if not self._overlays_pending:
                self.overlays_updated.emit()
        elif kind == "decode":
            self._on_decoded(payload)

    # == the scan =============================================================================
    def _on_scan_batch(self, batch: inspect.ScanBatch) -> None:
        if batch.total is not None:
            # QProgressBar.setValue repaints at once, flushing every other pending paint of
            # the window inside this slot; with updates off it only schedules its repaint.
            self.progress.setUpdatesEnabled(False)
            self.progress.setRange(0, max(batch.total, 1))
            self.progress.setValue(batch.done)
            self.progress.setUpdatesEnabled(True)
        self.files_model.append(batch.rows)
        new_positions = [r.position for r in batch.rows if r.position is not None]
        self._positions.update(new_positions)  # type: ignore[arg-type]
        self._add_problems(batch.rows)
        if batch.finished:
            self.progress.hide()
            self._scan = None
            self._refresh_overlays()
            if self.hist_scope.currentIndex() == 1:
                self._dirty_tabs.add(SIZES_TAB)
                self._update_visible_tab()
            self.scan_finished.emit(batch.total or 0)

    def _add_problems(self, rows: tuple[inspect.FileStats, ...]) -> None:
        if not any(r.problems for r in rows):
            return
        for r in rows:
            if r.problems:
                self._add_problem_items(r.path, r.problems)

    def _add_problem_items(self, path: str, problems: Any) -> None:
        self.problems_list.setUpdatesEnabled(False)
        for p in problems:
            item = QListWidgetItem(str(p))
            item.setData(Qt.ItemDataRole.UserRole, (p.path or path, p.block))
            self.problems_list.addItem(item)
        self.problems_list.setUpdatesEnabled(True)
        self.tabs.setTabText(5, f"Problems ({self.problems_list.count()})")

    # == the current file =====================================================================
    def _on_file_loaded(self, loaded: _LoadedFile) -> None:
        self._shown = loaded
        self._file_pos = loaded.position
        self._loading_pos = None
        self._show_header(loaded)
        self.jump_model.set_table(loaded.table)
        t = loaded.table
        if t is not None:
            sizes = t.sizes
            self.blocks_summary.setText(
                f"{t.num_blocks:,} blocks, {int(sizes.sum()):,} B of blocks; size min "
                f"{int(sizes.min()):,} / median {float(np.median(sizes)):,.0f} / max "
                f"{int(sizes.max()):,} B; {int(np.count_nonzero(t.flags & inspect.PROBLEM_FLAGS))}"
                f" damaged")
        else:
            self.blocks_summary.setText("file absent (sparse: reads as zeros)"
                                        if loaded.error is None else str(loaded.error))
        self.decode_button.setEnabled(t is not None and t.header.is_compressed)
        self._dirty_tabs.update({SIZES_TAB, LAYOUT_TAB})
        self._update_visible_tab()
        if self._pending_block is not None:
            self._select_block(self._pending_block)
        file_row = self.files_model.row_of_path(loaded.path)
        if file_row is not None:
            self._syncing = True
            try:
                self.files_view.selectRow(file_row)
            finally:
                self._syncing = False
        self.file_shown.emit(loaded.path if t is not None else "")

    def _show_header(self, loaded: _LoadedFile) -> None:
        rep = loaded.report
        self.header_fields.setRowCount(0)
        self.geometry_table.setRowCount(0)
        self._fit_table_height(self.header_fields)
        self._fit_table_height(self.geometry_table)
        if rep is None:
            self.header_path.setText(f"{loaded.path}\n" + (
                "absent (sparse dataset: reads as zeros)" if loaded.error is None
                else str(loaded.error)))
            self.header_hex.setText("")
            self.header_diffs.setText("")
            return
        text = rep.path
        if rep.error is not None:
            text += f"\nheader error: {rep.error.reason}"
        elif loaded.error is not None:
            text += f"\nerror: {loaded.error.reason}"
        self.header_path.setText(text)
        self.header_hex.setText("raw: " + rep.hex)
        marked = {inspect.DIFFERENCE_FIELDS[name] for name in rep.differences}
        self.header_fields.setRowCount(len(rep.fields))
        for r, fld in enumerate(rep.fields):
            raw = fld.raw.decode("latin-1") if isinstance(fld.raw, bytes) else str(fld.raw)
            cells = [fld.name, f"{fld.first_byte}..{fld.first_byte + fld.length - 1}", raw,
                     fld.meaning]
            for c, value in enumerate(cells):
                item = QTableWidgetItem(value)
                item.setToolTip(value)
                if fld.name in marked:
                    item.setBackground(DIFF_BRUSH)
                self.header_fields.setItem(r, c, item)
        if rep.differences:
            self.header_diffs.setText("differs from header.wkw (header.wkw vs file): " + "; ".join(
                f"{k} {v}" for k, v in rep.differences.items()))
            self.header_diffs.setStyleSheet("background: rgb(255,215,120)")
        else:
            self.header_diffs.setText("matches header.wkw" if self.dataset is not None
                                      and not self.dataset.single_file else "")
            self.header_diffs.setStyleSheet("")
        self.geometry_table.setRowCount(len(rep.geometry))
        for r, (name, value) in enumerate(rep.geometry):
            self.geometry_table.setItem(r, 0, QTableWidgetItem(name))
            item = QTableWidgetItem(value)
            item.setToolTip(value)
            if "MISMATCH" in value:
                item.setBackground(DIFF_BRUSH)
            self.geometry_table.setItem(r, 1, item)
        self._fit_table_height(self.header_fields)
        self._fit_table_height(self.geometry_table)

    def _select_block(self, index: int) -> None:
        t = self.jump_model.table
        if t is None or not 0 <= index < t.num_blocks:
            return
        row = self.jump_model.row_of_morton(index)
        self._syncing = True
        try:
            mi = self.jump_model.index(row, 0)
            self.jump_view.selectRow(row)
            self.jump_view.scrollTo(mi, QAbstractItemView.ScrollHint.EnsureVisible)
        finally:
            self._syncing = False

    def _update_visible_tab(self) -> None:
        current = self.tabs.currentIndex()
        if current in self._dirty_tabs:
            self._dirty_tabs.discard(current)
            if current == SIZES_TAB:
                self._update_histogram()
            elif current == LAYOUT_TAB:
                self._update_layout_plot()
            elif current == MAP_TAB:
                self._update_colorbar()

    # == histogram ============================================================================
    def _update_histogram(self) -> None:
        edges = self._hist_edges
        if edges is None:
            return
        if self.hist_scope.currentIndex() == 0:
            t = self.current_table
            counts = (np.histogram(t.sizes, bins=edges)[0] if t is not None
                      else np.zeros(len(edges) - 1, dtype=np.int64))
        else:
            counts = np.zeros(len(edges) - 1, dtype=np.int64)
            for r in self.files_model.rows:
                if r.histogram is not None and len(r.histogram) == len(counts):
                    counts += r.histogram
        plot = self._ensure_hist_plot()
        self.hist_bars.setOpts(x0=edges[:-1], x1=edges[1:], height=counts)
        plot.enableAutoRange()
        self.hist_list.clear()

    def _on_histogram_clicked(self, event: Any) -> None:
        edges = self._hist_edges
        if edges is None or self.dataset is None:
            return
        vb = self._ensure_hist_plot().getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        x = vb.mapSceneToView(event.scenePos()).x()
        self.list_histogram_bin(int(np.searchsorted(edges, x, side="right")) - 1)

    def list_histogram_bin(self, bin_index: int) -> None:
        """List the blocks (current file) or files (whole dataset) in histogram bar
        ``bin_index``; clicking an entry goes there."""
        edges = self._hist_edges
        self.hist_list.clear()
        if edges is None or self.dataset is None or not 0 <= bin_index < len(edges) - 1:
            return
        lo, hi = edges[bin_index], edges[bin_index + 1]
        if self.hist_scope.currentIndex() == 0:
            t = self.current_table
            if t is None:
                return
            found = np.flatnonzero((t.sizes >= lo) & (t.sizes < hi))
            for index in found[:MAX_LISTED].tolist():
                x, y, z = t.coords[index].tolist()
                item = QListWidgetItem(f"block {index} ({x}, {y}, {z}): {int(t.sizes[index]):,} B")
                item.setData(Qt.ItemDataRole.UserRole, (t.path, index))
                self.hist_list.addItem(item)
            if len(found) > MAX_LISTED:
                self.hist_list.addItem(f"... {len(found) - MAX_LISTED} more")
        else:
            for r in self.files_model.rows:
                if r.histogram is not None and r.histogram[bin_index] > 0:
                    item = QListWidgetItem(f"{r.path}: {int(r.histogram[bin_index])} blocks")
                    item.setData(Qt.ItemDataRole.UserRole, (r.path, None))
                    self.hist_list.addItem(item)

    # == byte layout ==========================================================================
    def _update_layout_plot(self) -> None:
        self._ensure_layout_plot()
        t = self.current_table
        if t is None:
            self.layout_curve.setData([], [])
            for item in self.layout_marks.values():
                item.setData([], [])
            self.layout_text.setText("")
            return
        self.layout_curve.setData(np.arange(t.num_blocks), t.starts.astype(np.float64))
        self._update_layout_marks()

    def _update_layout_marks(self) -> None:
        t = self.current_table
        if t is None or self._cursor is None or self.dataset is None:
            return
        side = self.dataset.header.file_len_vx
        lines = []
        for axis, item in self.layout_marks.items():
            need = inspect.plane_blocks(t, axis, self._cursor[axis] % side)
            item.setData(need.astype(np.float64), t.starts[need].astype(np.float64))
            runs = inspect.read_runs(t, need)
            span = (int(t.ends[need].max() - t.starts[need].min()) if len(need) else 0)
            lines.append(f"{AXIS_NAMES[axis]} plane {'xyz'[axis]}={self._cursor[axis]}: "
                         f"{len(need):,} blocks, {int(t.sizes[need].sum()):,} B in {runs:,} "
                         f"read(s) over a {span:,} B span")
        self.layout_text.setText("\n".join(lines))

    # == the compression map ==================================================================
    def _on_metric_changed(self, index: int) -> None:
        self._metric = inspect.SIZE if index == 0 else inspect.RATIO
        self._update_colorbar()
        self._overlay_keys.clear()
        self._refresh_overlays()

    def _update_colorbar(self) -> None:
        if self.dataset is None:
            return
        if self.tabs.currentIndex() != MAP_TAB and self.colorbar is None:
            self._dirty_tabs.add(MAP_TAB)
            return
        colorbar = self._ensure_colorbar()
        lo, hi = metric_levels(self._metric, self.dataset.header.block_bytes)
        colorbar.setLevels((lo, hi))
        colorbar.axis.setLabel("bytes per block" if self._metric == inspect.SIZE
                                    else "log2 compression ratio")

    def _on_overlay_toggles(self, *_args: Any) -> None:
        for item in self._overlays.values():
            item.setVisible(self.map_toggle.isChecked())
        for block, files in self._grids.values():
            block.setVisible(self.block_grid_toggle.isChecked())
            files.setVisible(self.file_grid_toggle.isChecked())
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.show_map = self.map_toggle.isChecked()
                w.show_block_grid = self.block_grid_toggle.isChecked()
                w.show_file_grid = self.file_grid_toggle.isChecked()
                w.update()

    def _update_grid_spacing(self) -> None:
        if self.dataset is None:
            return
        h = self.dataset.header
        for block, files in self._grids.values():
            block.set_grid(h.block_len, block.extent)
            files.set_grid(h.file_len_vx, files.extent)
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.set_grid(h.block_len, h.file_len_vx, self._extent)

    def _update_grid_extent(self, positions: set[Vec3]) -> None:
        if self.dataset is None or not positions:
            return
        side = self.dataset.header.file_len_vx
        lo = [min(p[a] for p in positions) * side for a in range(3)]
        hi = [(max(p[a] for p in positions) + 1) * side for a in range(3)]
        extent = ((lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2]))
        if extent != self._extent:
            self._extent = extent
            self._update_grid_spacing()
        for axis, (block, files) in self._grids.items():
            u, v = inspect.IN_PLANE[axis]
            rect = QRectF(lo[u], lo[v], hi[u] - lo[u], hi[v] - lo[v])
            block.set_grid(block.spacing, rect)
            files.set_grid(files.spacing, rect)

    # == user actions =========================================================================
    def _go_to(self, path: str, block: int | None) -> None:
        """Move to ``block`` of the file at ``path`` (its centre when block is None)."""
        if self.dataset is None:
            return
        try:
            fpos = self.dataset.file_position(path)
        except FormatError:
            return
        h = self.dataset.header
        if block is None:
            side = h.file_len_vx
            pos: Vec3 = (fpos[0] * side + side // 2, fpos[1] * side + side // 2,
                         fpos[2] * side + side // 2)
        else:
            pos = inspect.block_center(h, fpos, block)
            self.block_selected.emit(path, int(block))
        self._show_cursor_at(pos)
        window_pos = self._to_window(pos)
        self._window_cursor = window_pos
        self.position_requested.emit(window_pos)

    def _on_block_row_clicked(self, index: QModelIndex) -> None:
        if (self._syncing or not index.isValid() or self._shown is None
                or self.jump_model.table is None):
            return
        self._go_to(self._shown.path, self.jump_model.morton_of_row(index.row()))

    def select_block_row(self, row: int) -> None:
        """Select jump-table row ``row`` as a click would (moves the cursor to its block)."""
        self.jump_view.selectRow(row)

    def _on_file_row_clicked(self, index: QModelIndex) -> None:
        if self._syncing or not index.isValid():
            return
        row = self.files_model.rows[index.row()]
        self._go_to(row.path, None)

    def _on_target_item_clicked(self, item: QListWidgetItem) -> None:
        target = item.data(Qt.ItemDataRole.UserRole)
        if target:
            path, block = target
            self._go_to(path, block)

    def _on_decode_clicked(self) -> None:
        t = self.current_table
        if t is None:
            return
        if self._decode_cancel is not None:
            self._decode_cancel.set()
        cancel = threading.Event()
        self._decode_cancel = cancel
        token = self._next("decode")
        path = t.path
        bridge = self._bridge
        n = t.num_blocks

        def run() -> None:
            try:
                with wkw.File.open(path) as f:
                    for part in inspect.scan_block_contents(f, np.arange(n), cancel):
                        bridge.deliver("decode", token, part)
            except (FormatError, OSError) as exc:
                bridge.deliver("decode", token, exc)

        self.decode_button.setEnabled(False)
        threading.Thread(target=run, name="inspector-decode", daemon=True).start()

    def _on_decoded(self, payload: Any) -> None:
        t = self.current_table
        if isinstance(payload, BaseException):
            self.blocks_summary.setText(f"decoding stopped: {payload}")
            self.decode_button.setEnabled(True)
            return
        if t is None:
            return
        indices, flags, errors = payload
        t.apply_content_flags(indices, flags)
        self.jump_model.flags_changed()
        if errors:
            self._add_problem_items(t.path, errors)
        if len(indices) and int(indices[-1]) == t.num_blocks - 1:
            self.decode_button.setEnabled(True)
            decoded = t.flags & inspect.DECODED
            self.blocks_summary.setText(
                f"{t.num_blocks:,} blocks decoded: "
                f"{int(np.count_nonzero(t.flags & inspect.ALL_ZERO))} all-zero, "
                f"{int(np.count_nonzero((t.flags & inspect.CONSTANT) & ~(t.flags & inspect.ALL_ZERO)))}"
                f" other constant, {int(np.count_nonzero(t.flags & inspect.DECODE_FAILED))} "
                f"failed of {int(np.count_nonzero(decoded))}")


__all__ = ["QtInspectorPanel"]
