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

This module holds the composition (state, signals, public interface, background work); each
tab or area is a mixin in its own module: ``header_tab``, ``files_tab``, ``jump_table_tab``,
``sizes_tab``, ``byte_layout_tab``, ``problems_tab``, ``map_tab``, ``mag_selector``, with
``table_style`` (shared table sizing), ``loaded_file`` and ``tab_index``.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidgetItem,
    QProgressBar,
    QSizePolicy,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from viewer.core import inspect
from viewer.format import FormatError, wkw
from viewer.format.webknossos import WkDataset
from viewer.ui.inspector.bridge import QtResultBridge
from viewer.ui.inspector.byte_layout_tab import ByteLayoutTabMixin
from viewer.ui.inspector.files_tab import FilesTabMixin
from viewer.ui.inspector.header_tab import HeaderTabMixin
from viewer.ui.inspector.jump_table_tab import JumpTableTabMixin
from viewer.ui.inspector.loaded_file import Vec3, _LoadedFile
from viewer.ui.inspector.mag_selector import MagSelectorMixin
from viewer.ui.inspector.map_tab import MapTabMixin
from viewer.ui.inspector.overlay import (
    QtCompressionOverlay,
    QtGridOverlay,
    QtSliceOverlay,
)
from viewer.ui.inspector.problems_tab import ProblemsTabMixin
from viewer.ui.inspector.sizes_tab import SizesTabMixin
from viewer.ui.inspector.tab_index import LAYOUT_TAB, MAP_TAB, SIZES_TAB
from viewer.ui.inspector.table_style import TableStyleMixin

#: Rows of the file table arrive at most this often (each arrival repaints the table).
SCAN_BATCH_SECONDS = 0.25


class QtInspectorPanel(HeaderTabMixin, FilesTabMixin, JumpTableTabMixin, SizesTabMixin,
                       ByteLayoutTabMixin, ProblemsTabMixin, MapTabMixin, MagSelectorMixin,
                       TableStyleMixin, QWidget):
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
        self._build_mag_selector(layout)
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




    def _on_target_item_clicked(self, item: QListWidgetItem) -> None:
        target = item.data(Qt.ItemDataRole.UserRole)
        if target:
            path, block = target
            self._go_to(path, block)




__all__ = ["QtInspectorPanel"]
