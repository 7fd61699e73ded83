"""The inspector panel: a look inside the storage units of a volume, from their chunk tables.

Any format the registry opens (``viewer.format``): the "units" are WKW files, zarr shards, N5
chunk files...; a unit's chunk table (a WKW jump table, a shard index) is what the Jump table
tab shows.  ``QtInspectorPanel`` is a self-contained widget (the fourth quadrant of the main
window).  Its interface to the window is narrow:

- ``set_dataset(dataset, window_mag, layer=None, mag=None)``: inspect a format-neutral
  ``viewer.format.Dataset`` (the window's voxels are those of mag ``window_mag``).  When the
  dataset has more than one layer or mag, a layer and a mag combo box at the top pick the mag
  whose volume is inspected; cursor positions and overlays are scaled between the window's
  voxels and the inspected mag's.  Starts the background scan of the volume's units.
- ``show_cursor((x, y, z))``: the cursor moved; the panel shows the unit under it, selects the
  chunk under it, and updates the overlays and the byte-layout highlights.
- signals ``block_selected(path, chunk_index)`` and ``position_requested((x, y, z))``: the user
  picked a chunk or a unit here; the window moves its cursor (and calls ``show_cursor`` back,
  which is then a no-op).
- ``compression_overlay(axis)`` / ``grid_overlays(axis)``: items to add to the slice view whose
  normal is ``axis`` (0 x, 1 y, 2 z); see ``viewer.ui.inspector.overlay`` for coordinates.
- ``shutdown()``: stop background work (call when the window closes).

All unit access runs on worker threads of ``viewer.core.inspect`` or a one-thread executor;
results come back through ``QtResultBridge`` (queued), so the GUI thread only formats.

This module holds the composition (state, signals, public interface, background work); each
tab or area is a mixin in its own module: ``header_tab``, ``files_tab``, ``jump_table_tab``,
``sizes_tab``, ``byte_layout_tab``, ``problems_tab``, ``map_tab``, ``mag_selector``, with
``table_style`` (shared table sizing), ``loaded_file`` and ``tab_index``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
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
from viewer.format import Dataset, FormatError, Mag, Volume
from viewer.ui.inspector.bridge import QtResultBridge
from viewer.ui.inspector.byte_layout_tab import ByteLayoutTabMixin
from viewer.ui.inspector.files_tab import FilesTabMixin
from viewer.ui.inspector.header_tab import HeaderTabMixin
from viewer.ui.inspector.jump_table_tab import JumpTableTabMixin
from viewer.ui.inspector.loaded_file import Vec3, _LoadedUnit
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

#: Rows of the unit table arrive at most this often (each arrival repaints the table).
SCAN_BATCH_SECONDS = 0.25


class QtInspectorPanel(HeaderTabMixin, FilesTabMixin, JumpTableTabMixin, SizesTabMixin,
                       ByteLayoutTabMixin, ProblemsTabMixin, MapTabMixin, MagSelectorMixin,
                       TableStyleMixin, QWidget):
    """Header, units, chunk table, chunk sizes, byte layout, problems and the compression map
    of one volume of a dataset.  GUI thread only."""

    #: The user picked a chunk here: (unit path, chunk index in the unit).
    block_selected = Signal(str, int)
    #: The user asked to move the cursor to window voxel (x, y, z) (a tuple).
    position_requested = Signal(object)
    #: The current unit's header and chunk table are shown (its path; "" when absent).
    file_shown = Signal(str)
    #: Every compression overlay shows the planes through the current cursor.
    overlays_updated = Signal()
    #: The unit scan ended (number of units).
    scan_finished = Signal(int)
    #: A layer and mag are now inspected: (layer name, (x, y, z) mag).
    mag_selected = Signal(str, object)

    def __init__(self, dataset: Dataset | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: The dataset whose layers and mags the combo boxes offer.
        self.dataset: Dataset | None = None
        self._own_dataset = False
        #: The volume inspected (one mag of one layer of ``dataset``).
        self.volume: Volume | None = None
        self._volume_header: Mapping[str, Any] = {}
        self._reopen: inspect.Reopen | None = None
        self._bridge = QtResultBridge(self)
        self._bridge.result_arrived.connect(self._on_result)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inspector")
        self._cache = inspect.TableCache()
        self._scan: inspect.UnitScan | None = None
        self._decode_cancel: threading.Event | None = None
        self._tokens: dict[str, int] = {}
        self._positions: set[Vec3] = set()
        #: Unit path -> unit-grid position, of every unit scanned or shown.
        self._unit_of_path: dict[str, Vec3] = {}
        self._cursor: Vec3 | None = None
        self._file_pos: Vec3 | None = None
        self._loading_pos: Vec3 | None = None
        self._shown: _LoadedUnit | None = None
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
        self.progress.setFormat("units %v / %m")
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
    def set_dataset(self, dataset: Dataset | None, window_mag: Vec3 = (1, 1, 1),
                    layer: str | None = None, mag: Any = None, own: bool = False) -> None:
        """Inspect ``dataset`` (None: nothing): ``layer`` (default: the first color layer) at
        ``mag`` (default: the window's mag if that layer has it, else its finest).
        ``window_mag``: the mag whose voxels the window's cursor is in.  ``own``: the panel
        closes the dataset when it is replaced (it opened it)."""
        old = self.dataset
        if old is not None and old is not dataset:
            self._set_volume(None)
            if self._own_dataset:
                old.close()
        self.dataset = dataset
        self._own_dataset = own and dataset is not None
        self._window_mag = (int(window_mag[0]), int(window_mag[1]), int(window_mag[2]))
        self._window_cursor = None
        self._scale = (1.0, 1.0, 1.0)
        self._apply_scale()
        self._fill_layers(dataset, layer, mag)

    def select_mag(self, layer: str | None = None, mag: Any = None) -> None:
        """Pick ``layer`` (by name) and ``mag`` (any spelling) as the combo boxes would."""
        ds = self.dataset
        if ds is None:
            return
        if layer is not None:
            names = [item.name for item in ds.layers]
            self.layer_combo.setCurrentIndex(names.index(layer))
        if mag is not None:
            current = self.selected_layer
            assert current is not None
            target = current.mag(mag).mag
            for i in range(self.mag_combo.count()):
                if tuple(self.mag_combo.itemData(i)) == target:
                    self.mag_combo.setCurrentIndex(i)

    def _set_volume(self, volume: Volume | None, reopen: inspect.Reopen | None = None,
                    label: str = "") -> None:
        """Inspect ``volume`` (None: nothing).  Starts the background scan of its units."""
        self._stop_work()
        self._cache.reset(volume)
        self.volume = volume
        self._reopen = reopen
        self._positions = set()
        self._unit_of_path = {}
        self._file_pos = self._loading_pos = None
        self._shown = None
        self._cursor = None
        self._overlay_keys.clear()
        self._overlays_pending.clear()
        self.files_model.clear(volume.path if volume is not None else "")
        self.problems_list.clear()
        self.tabs.setTabText(5, "Problems")
        self.jump_model.set_table(None)
        self._extent = None
        for ov in self._overlays.values():
            ov.set_plane(None)
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.set_plane(None)
                w.set_grid((0, 0, 0), (0, 0, 0), None)
        if volume is None:
            self.title.setText("no dataset")
            self._volume_header = {}
            self._show_volume_header()
            return
        try:
            info = volume.info()
            self._volume_header, compression = dict(info.header), info.compression
        except FormatError:
            self._volume_header, compression = {}, "?"
        self._show_volume_header()
        c, u = volume.chunk_shape, volume.unit_shape
        name = os.path.basename(os.path.normpath(volume.path)) if "://" not in volume.path \
            else volume.path.rstrip("/").rsplit("/", 1)[-1]
        prefix = f"<b>{label}</b> \u00b7 " if label else ""
        self.title.setText(f"{prefix}<b>{name}</b> \u00b7 {volume.format} {compression}, "
                           f"{volume.dtype} x{volume.num_channels}, chunk "
                           f"{c[0]}\u00d7{c[1]}\u00d7{c[2]}, unit "
                           f"{u[0]}\u00d7{u[1]}\u00d7{u[2]} chunks")
        self.title.setToolTip(volume.path)
        self._hist_edges = inspect.histogram_edges(volume.chunk_nbytes)
        self._update_colorbar()
        self._update_grid_spacing()
        self.progress.setRange(0, 0)
        self.progress.show()
        token = self._next("scan")
        self._scan = inspect.UnitScan(
            volume, lambda batch: self._bridge.deliver("scan", token, batch),
            batch_seconds=SCAN_BATCH_SECONDS, reopen=reopen)
        self._scan.start()
        cursor = self._window_cursor
        self._show_cursor_at(self._to_inspected(cursor) if cursor is not None else (0, 0, 0))

    def show_cursor(self, position: tuple[int, int, int] | list[int]) -> None:
        """The window's cursor is at its voxel ``position``: show the unit holding it (in the
        inspected mag), select its chunk, and update the overlays and byte-layout highlights
        (work runs in the background)."""
        pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
        self._window_cursor = pos
        self._show_cursor_at(self._to_inspected(pos))

    def _show_cursor_at(self, pos: Vec3) -> None:
        """``show_cursor`` in the inspected volume's own voxels."""
        if self.volume is None:
            return
        self._cursor = pos
        upos, index = inspect.chunk_at(self.volume, pos)
        self._pending_block = index
        if upos != self._file_pos and upos != self._loading_pos:
            self._load_file(upos)
        elif upos == self._file_pos:
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
        """(chunk grid, unit grid) items for the view whose normal is ``axis``; add both to
        the view's ViewBox like the compression overlay."""
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
        """Stop the scan and any decoding; release the worker (and the dataset when the
        panel opened it)."""
        self._stop_work()
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._own_dataset and self.dataset is not None:
            self._own_dataset = False
            self.dataset.close()

    @property
    def current_table(self) -> inspect.UnitTable | None:
        return self._shown.table if self._shown is not None else None

    @property
    def current_path(self) -> str | None:
        return self._shown.path if self._shown is not None else None

    @property
    def current_mag(self) -> Mag | None:
        """The mag inspected (None when nothing is)."""
        return self.selected_mag

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

    def _load_file(self, upos: Vec3) -> None:
        """Load the unit at unit-grid position ``upos`` (header report and chunk table) in
        the background."""
        assert self.volume is not None
        volume = self.volume
        cache = self._cache
        header = self._volume_header
        self._loading_pos = upos
        if self._decode_cancel is not None:
            self._decode_cancel.set()
            self._decode_cancel = None
        token = self._next("file")
        path = volume.unit_path(upos)

        def job() -> _LoadedUnit:
            table, error = cache.get(upos)
            if table is None and error is None:
                return _LoadedUnit(upos, path, None, None, None)
            report = inspect.header_report(volume, path, table, error, header)
            return _LoadedUnit(upos, table.path if table is not None else path, report, table,
                               error)

        self._bridge.deliver_future("file", token, self._executor.submit(job))

    def _refresh_overlays(self) -> None:
        if self.volume is None or self._cursor is None or not self._wanted_axes():
            return
        volume = self.volume
        positions = set(self._positions)
        upos, _ = inspect.chunk_at(volume, self._cursor)
        positions.add(upos)
        frozen = frozenset(positions)
        for axis in self._wanted_axes():
            index = self._cursor[axis]
            key = (index // volume.chunk_shape[axis], self._metric, len(frozen))
            if self._overlay_keys.get(axis) == key:
                continue
            self._overlay_keys[axis] = key
            token = self._next(f"overlay{axis}")
            self._overlays_pending.add(axis)
            metric = self._metric
            cache = self._cache
            self._bridge.deliver_future(
                f"overlay{axis}", token, self._executor.submit(
                    inspect.compression_plane, volume, axis, index, frozen, metric, cache))
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
        for r in batch.rows:
            if r.position is not None:
                self._positions.add(r.position)
                self._unit_of_path[r.path] = r.position
        self._add_problems(batch.rows)
        if batch.finished:
            self.progress.hide()
            self._scan = None
            self._refresh_overlays()
            if self.hist_scope.currentIndex() == 1:
                self._dirty_tabs.add(SIZES_TAB)
                self._update_visible_tab()
            self.scan_finished.emit(batch.total or 0)

    # == the current unit =====================================================================
    def _on_file_loaded(self, loaded: _LoadedUnit) -> None:
        self._shown = loaded
        self._file_pos = loaded.position
        self._loading_pos = None
        self._unit_of_path[loaded.path] = loaded.position
        self._show_header(loaded)
        self.jump_model.set_table(loaded.table)
        t = loaded.table
        if t is not None:
            stored = t.stored
            sizes = t.sizes[stored]
            damaged = int(np.count_nonzero(t.flags & inspect.PROBLEM_FLAGS))
            if len(sizes):
                self.blocks_summary.setText(
                    f"{t.num_chunks:,} chunks ({len(sizes):,} stored), {int(sizes.sum()):,} B "
                    f"stored; size min {int(sizes.min()):,} / median "
                    f"{float(np.median(sizes)):,.0f} / max {int(sizes.max()):,} B; "
                    f"{damaged} damaged")
            else:
                self.blocks_summary.setText(f"{t.num_chunks:,} chunks, none stored; "
                                            f"{damaged} damaged")
        else:
            self.blocks_summary.setText("unit absent (sparse: reads as the fill value)"
                                        if loaded.error is None else str(loaded.error))
        self.decode_button.setEnabled(t is not None and bool(
            np.any((t.flags & (inspect.ABSENT | inspect.STORED_CONSTANT)) == 0)))
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
    def _unit_position(self, path: str) -> Vec3 | None:
        found = self._unit_of_path.get(path)
        if found is None and self._shown is not None and self._shown.path == path:
            found = self._shown.position
        return found

    def _go_to(self, path: str, block: int | None) -> None:
        """Move to chunk ``block`` of the unit at ``path`` (its centre when block is None)."""
        if self.volume is None:
            return
        upos = self._unit_position(path)
        if upos is None:
            return
        if block is None:
            pos = inspect.unit_center(self.volume, upos)
        else:
            pos = inspect.chunk_center(self.volume, upos, block)
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
