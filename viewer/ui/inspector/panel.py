"""The inspector panel: a look inside the storage units of a volume, from their chunk tables.

Any format the registry opens (``viewer.format``): the "units" are WKW files, zarr shards, N5
chunk files...; a unit's chunk table (a WKW jump table, a shard index) is what the Chunk
table tab shows.  ``QtInspectorPanel`` is a self-contained widget (the fourth quadrant of the
main window).  Its interface to the window is narrow:

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
- ``attach_to_view(view)``: draw the compression map and the grids over a slice view.
- ``shutdown()``: stop background work (call when the window closes).

The panel composes its parts, each a class in its own module: the tabs (``QtHeaderTab``,
``QtFilesTab``, ``QtJumpTableTab``, ``QtSizesTab``, ``QtByteLayoutTab``, ``QtProblemsTab``,
``QtMapTab``, ``QtWhatIfTab``), the layer and mag selector (``QtMagSelector``) and the overlays
(``QtOverlaySet``), and the background work on units (``QtUnitJobs``).  The tabs read the one
``InspectorState`` the panel writes, and ask for a cursor move through the ``InspectorHost``
protocol (``go_to``), which the panel implements; they never reach into the panel or the
window.  This module holds what joins them: the state's changes and who hears of them.

All unit access runs on worker threads of ``viewer.core.inspect`` or a one-thread executor;
results come back through ``QtResultBridge`` (queued), so the GUI thread only formats.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSizePolicy,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from viewer.core import advise, inspect
from viewer.format import Dataset, FormatError, Mag, Volume, mag_name, parse_mag
from viewer.ui import collector
from viewer.ui.inspector.byte_layout_tab import QtByteLayoutTab
from viewer.ui.inspector.files_tab import QtFilesTab
from viewer.ui.inspector.header_tab import QtHeaderTab
from viewer.ui.inspector.jump_table_tab import QtJumpTableTab
from viewer.ui.inspector.loaded_file import LoadedUnit, Vec3
from viewer.ui.inspector.mag_selector import QtMagSelector
from viewer.ui.inspector.map_tab import QtMapTab
from viewer.ui.inspector.overlay import OverlayView, QtSliceOverlay
from viewer.ui.inspector.overlay_set import QtOverlaySet
from viewer.ui.inspector.problems_tab import QtProblemsTab
from viewer.ui.inspector.scale import MagScale
from viewer.ui.inspector.sizes_tab import QtSizesTab
from viewer.ui.inspector.state import InspectorState
from viewer.ui.inspector.unit_jobs import QtUnitJobs
from viewer.ui.inspector.what_if_tab import QtWhatIfTab

#: The scan's progress bar shows a new count at most this often (milliseconds).
PROGRESS_EVERY_MS = 250


class QtInspectorPanel(QWidget):
    """Header, units, chunk table, chunk sizes, byte layout, problems and the compression map
    of one volume of a dataset.  GUI thread only.  Implements ``InspectorHost`` for its
    tabs."""

    #: The user picked a chunk here: (unit path, chunk index in the unit).
    block_selected = Signal(str, int)
    #: The user asked to move the cursor to window voxel (x, y, z) (a tuple).
    position_requested = Signal(object)
    #: The current unit's header and chunk table are shown (its path; "" when absent).
    file_shown = Signal(str)
    #: The read of the unit under the cursor ended (shown or failed): ``loading_unit`` is
    #: False now unless another was asked for meanwhile.
    unit_done = Signal()
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
        #: ``shutdown`` was called: the panel takes no more work.
        self.is_shut_down = False
        #: What the tabs show (this panel is its only writer).
        self.state = InspectorState()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inspector")
        self._cache = inspect.TableCache()
        self._jobs = QtUnitJobs(self._executor, self._cache, self)
        #: Unit path -> unit-grid position, of every unit scanned or shown.
        self._unit_of_path: dict[str, Vec3] = {}
        #: Blocks the window met that failed (or whose file is changing), by (path, block):
        #: listed in the Problems tab while their volume is inspected.
        self._met: dict[tuple[str, int], FormatError] = {}
        self._file_pos: Vec3 | None = None
        self._loading_pos: Vec3 | None = None
        self._pending_block: int | None = None
        self._unit_reads = 0  # reads of the unit under the cursor asked for and not ended
        #: The mag of the window's voxels, and window voxels per inspected voxel.
        self._window_mag: Vec3 = (1, 1, 1)
        self.scale = MagScale()
        #: The window's cursor in its own voxels (re-applied when another mag is picked).
        self._window_cursor: Vec3 | None = None
        self.overlays = QtOverlaySet(self.state, self._executor, self._cache, self)
        self.overlays.updated.connect(self.overlays_updated)
        #: Tabs whose plots wait for the tab to be shown (plots of hidden tabs cost for
        #: nothing), and how each is redrawn.
        self._stale: set[QWidget] = set()
        #: The scan's count not shown yet (done, total): the bar shows a new count at most
        #: every ``PROGRESS_EVERY_MS`` (each showing repaints it and its parents' backdrop,
        #: and a large scan sends tens of batches a second).
        self._progress_due: tuple[int, int] | None = None
        self._progress_timer = QTimer(self)
        self._progress_timer.setObjectName("scanProgress")
        self._progress_timer.setSingleShot(True)
        self._progress_timer.setInterval(PROGRESS_EVERY_MS)
        self._progress_timer.timeout.connect(self._show_progress)
        self._build()
        self._jobs.scan_batch.connect(self._on_scan_batch)
        self._jobs.unit_loaded.connect(self._on_file_loaded)
        self._jobs.unit_failed.connect(self._on_unit_failed)
        self._lazy: dict[QWidget, Callable[[], None]] = {
            self.sizes_tab: self.sizes_tab.refresh, self.layout_tab: self.layout_tab.refresh,
            self.map_tab: self.map_tab.refresh}
        if dataset is not None:
            self.set_dataset(dataset)

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        self.mag_selector = QtMagSelector()
        self.mag_selector.changed.connect(self._inspect_selected)
        layout.addWidget(self.mag_selector)
        top = QHBoxLayout()
        self.title = QLabel("no dataset")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A long path must not widen the quadrant: the label takes the width it is given and
        # wraps its text there.
        self.title.setWordWrap(True)
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
        # In a quadrant narrower than the tabs (a compare dock beside it), arrows scroll them
        # rather than the bar widening the panel past the quadrant's edge.
        self.tabs.tabBar().setUsesScrollButtons(True)
        # Short names and narrow padding: every tab shows in a quadrant of a 1024-pixel screen.
        self.tabs.tabBar().setStyleSheet("QTabBar::tab { padding: 4px 5px; }")
        layout.addWidget(self.tabs, 1)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.header_tab = QtHeaderTab(self.state, mono)
        self.files_tab = QtFilesTab(self)
        self.jump_tab = QtJumpTableTab(self.state, self)
        self.sizes_tab = QtSizesTab(self.state, self)
        self.layout_tab = QtByteLayoutTab(self.state)
        self.problems_tab = QtProblemsTab(self)
        self.map_tab = QtMapTab(self.state)
        self.what_if_tab = QtWhatIfTab(self.state)
        for page, name, tip in (
                (self.header_tab, "Header", "The header of the storage unit under the cursor"),
                (self.files_tab, "Units", "Every storage unit of the volume (files, shards)"),
                (self.jump_tab, "Chunks", "The chunk table of the unit under the cursor"),
                (self.sizes_tab, "Sizes", "Stored sizes of the unit's chunks"),
                (self.layout_tab, "Bytes", "Where each chunk lies in its unit (byte layout)"),
                (self.problems_tab, "Problems", "What is damaged or could not be read"),
                (self.map_tab, "Map", "A compression map over the slice views"),
                (self.what_if_tab, "What if",
                 "How big and how fast this volume would be under other codecs and chunkings")):
            self.tabs.setTabToolTip(self.tabs.addTab(page, name), tip)
        self.jump_tab.problems_found.connect(self.problems_tab.add_problems)
        self.problems_tab.count_changed.connect(self._on_problem_count)
        self.map_tab.metric_changed.connect(self._on_metric_changed)
        self.map_tab.shown_changed.connect(self.overlays.set_shown)
        self.what_if_tab.savings_chosen.connect(self._on_savings_chosen)
        self.tabs.currentChanged.connect(lambda _i: self._refresh_current())

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
        self._set_scale(MagScale())
        prefer = parse_mag(mag) if mag is not None else None
        if not self.mag_selector.fill(dataset, layer, prefer, self._window_mag):
            self._set_volume(None)
            if dataset is not None:
                self.title.setText(f"{dataset.path}: no layer that opened")
                for p in dataset.problems:
                    self.problems_tab.add_text(str(p))
            return
        self._inspect_selected()

    def select_mag(self, layer: str | None = None, mag: Any = None) -> None:
        """Pick ``layer`` (by name) and ``mag`` (any spelling) as the combo boxes would."""
        self.mag_selector.select(layer, mag)

    def show_cursor(self, position: tuple[int, int, int] | list[int]) -> None:
        """The window's cursor is at its voxel ``position``: show the unit holding it (in the
        inspected mag), select its chunk, and update the overlays and byte-layout highlights
        (work runs in the background)."""
        pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
        self._window_cursor = pos
        self._show_cursor_at(self.scale.to_inspected(pos))

    def attach_to_view(self, view: OverlayView) -> QtSliceOverlay:
        """Draw the compression map and grids over a slice view widget (a ``QtSliceView``;
        see ``OverlayView`` for what it needs), as a transparent child widget; the view's code
        is not touched."""
        return self.overlays.attach(view)

    def go_to(self, path: str, chunk: int | None) -> None:
        """Move to chunk ``chunk`` of the unit at ``path`` (its centre when chunk is None):
        the tabs' ``InspectorHost`` service.  Emits ``block_selected`` (for a chunk) and
        ``position_requested``."""
        volume = self.state.volume
        if volume is None:
            return
        upos = self._unit_position(path)
        if upos is None:
            return
        if chunk is None:
            pos = inspect.unit_center(volume, upos)
        else:
            pos = inspect.chunk_center(volume, upos, chunk)
            self.block_selected.emit(path, int(chunk))
        self._show_cursor_at(pos)
        window_pos = self.scale.to_window(pos)
        self._window_cursor = window_pos
        self.position_requested.emit(window_pos)

    def note_block_errors(self, errors: Mapping[tuple[str, int], FormatError]) -> None:
        """Blocks the window met while browsing failed to read, decode or verify, or their
        file is changing (``{(path, block): error}``): the Problems tab lists those of the
        inspected volume at once, the others when their volume is inspected."""
        self._met.update(errors)
        volume = self.state.volume
        if volume is None:
            return
        for err in errors.values():
            self._list_met(volume, err)
        self._note_browsed()

    def _list_met(self, volume: Volume, err: FormatError) -> None:
        """List ``err`` (a block met while browsing) if it is of ``volume``; its row goes to
        its chunk (unit and index from the chunk position the error names)."""
        path = err.path or ""
        root = volume.path.rstrip("/\\")
        if path != root and not path.startswith((root + "/", root + os.sep)):
            return
        chunk: int | None = err.block
        grid = err.chunk
        if grid is not None and len(grid) == 3:
            units, indices = volume.locate(np.asarray([grid], dtype=np.int64))
            u = units[0]
            self._unit_of_path.setdefault(path, (int(u[0]), int(u[1]), int(u[2])))
            chunk = int(indices[0]) if math.prod(volume.unit_shape) > 1 else None
        self.problems_tab.add_problem(f"{type(err).__name__}: {err}", path, chunk)

    def _note_browsed(self) -> None:
        volume = self.state.volume
        if volume is None:
            return
        root = volume.path.rstrip("/\\")
        mine = [e for e in self._met.values() if (e.path or "") == root
                or (e.path or "").startswith((root + "/", root + os.sep))]
        self.problems_tab.set_check(
            "browse", "chunks read while browsing (" + (f"{len(mine)} failed or changing"
                                                       if mine else "none failed") + ")")

    def shutdown(self, wait: bool = False) -> None:
        """Stop the scan and any decoding; release the worker (and the dataset when the
        panel opened it).  With ``wait``, return once the scan and the worker have ended (a
        program about to exit: no thread left inside a decoder)."""
        self.is_shut_down = True
        self._stop_work(wait)
        self.what_if_tab.stop()
        self._executor.shutdown(wait=wait, cancel_futures=True)
        if self._own_dataset and self.dataset is not None:
            self._own_dataset = False
            self.dataset.close()

    @property
    def volume(self) -> Volume | None:
        """The volume inspected (one mag of one layer of ``dataset``)."""
        return self.state.volume

    @property
    def current_table(self) -> inspect.UnitTable | None:
        return self.state.table

    @property
    def current_path(self) -> str | None:
        return self.state.shown.path if self.state.shown is not None else None

    @property
    def current_mag(self) -> Mag | None:
        """The mag inspected (None when nothing is)."""
        return self.mag_selector.selected_mag

    # == the volume inspected =================================================================
    def _inspect_selected(self) -> None:
        """Inspect the volume of the selected layer and mag (opened now: its metadata only);
        a mag that cannot be opened is shown as a problem."""
        layer, mag = self.mag_selector.selected_layer, self.mag_selector.selected_mag
        if layer is None or mag is None or self.dataset is None:
            return
        self._set_scale(MagScale.between(self._window_mag, mag.mag))
        try:
            volume = mag.volume
        except FormatError as exc:
            self._set_volume(None)
            self.title.setText(f"{layer.name}/{mag.name}: cannot be opened")
            self.problems_tab.add_text(f"{mag.path}: {exc}")
            return
        label = f"{layer.name}/{mag_name(mag.mag, False)}" \
            if not self.mag_selector.isHidden() else ""
        self.state.segmentation = layer.category == "segmentation"
        reopen = inspect.Reopen(self.dataset.path, layer.name, mag.mag,
                                inspect.Reopen.index_of(volume))
        self._set_volume(volume, reopen, label)
        self.mag_selected.emit(layer.name, mag.mag)

    def _set_scale(self, scale: MagScale) -> None:
        self.scale = scale
        self.overlays.set_scale(scale.factors)

    def _set_volume(self, volume: Volume | None, reopen: inspect.Reopen | None = None,
                    label: str = "") -> None:
        """Inspect ``volume`` (None: nothing).  Starts the background scan of its units."""
        self._stop_work()
        self._cache.reset(volume)
        st = self.state
        st.volume, st.shown, st.cursor = volume, None, None
        st.clear_units()
        st.reopen, st.savings = reopen, None
        if volume is None:
            st.segmentation = False
        self.what_if_tab.volume_changed()
        self._unit_of_path = {}
        self._file_pos = self._loading_pos = None
        self.files_tab.clear(volume.path if volume is not None else "")
        self.problems_tab.clear()
        if volume is not None:
            self.problems_tab.set_check("structure", "the dataset's metadata and this mag's "
                                        "layout when opened")
            if self.dataset is not None:
                for p in self.dataset.problems:
                    self.problems_tab.add_text(f"{type(p).__name__}: {p}")
            for err in self._met.values():
                self._list_met(volume, err)
            self._note_browsed()
            self.problems_tab.set_check("scan", "the storage-unit scan (running)")
        self.jump_tab.clear()
        self.sizes_tab.volume_changed()
        self.overlays.reset()
        # The rows of the volume before are let go: what the collector froze with them (see
        # ``viewer.ui.collector``) is looked at again.
        collector.thaw()
        if volume is None:
            self.title.setText("no dataset")
            st.volume_header = {}
            self.header_tab.show_volume_header()
            return
        try:
            info = volume.info()
            st.volume_header, compression = dict(info.header), info.compression
        except FormatError:
            st.volume_header, compression = {}, "?"
        self.header_tab.show_volume_header()
        c, u = volume.chunk_shape, volume.unit_shape
        name = os.path.basename(os.path.normpath(volume.path)) if "://" not in volume.path \
            else volume.path.rstrip("/").rsplit("/", 1)[-1]
        prefix = f"<b>{label}</b> \u00b7 " if label else ""
        self.title.setText(f"{prefix}<b>{name}</b> \u00b7 {volume.format} {compression}, "
                           f"{volume.dtype} x{volume.num_channels}, chunk "
                           f"{c[0]}\u00d7{c[1]}\u00d7{c[2]}, unit "
                           f"{u[0]}\u00d7{u[1]}\u00d7{u[2]} chunks")
        self.title.setToolTip(volume.path)
        self._mark_stale(self.map_tab)
        self._progress_due = None
        self._progress_timer.stop()
        self.progress.setRange(0, 0)
        self.progress.show()
        self._jobs.start_scan(volume, reopen)
        cursor = self._window_cursor
        self._show_cursor_at(self.scale.to_inspected(cursor) if cursor is not None
                             else (0, 0, 0))

    def _show_cursor_at(self, pos: Vec3) -> None:
        """``show_cursor`` in the inspected volume's own voxels."""
        volume = self.state.volume
        if volume is None:
            return
        self.state.cursor = pos
        upos, index = inspect.chunk_at(volume, pos)
        self._pending_block = index
        if upos != self._file_pos and upos != self._loading_pos:
            self._loading_pos = upos
            self.jump_tab.stop_decoding()
            self._unit_reads += 1
            self._jobs.load_unit(volume, upos, self.state.volume_header)
        elif upos == self._file_pos:
            self.jump_tab.select_chunk(index)
            self._mark_stale(self.layout_tab)
        self.overlays.refresh()

    def _unit_position(self, path: str) -> Vec3 | None:
        found = self._unit_of_path.get(path)
        shown = self.state.shown
        if found is None and shown is not None and shown.path == path:
            found = shown.position
        return found

    # == tabs =================================================================================
    def _mark_stale(self, *tabs: QWidget) -> None:
        """``tabs`` show something old: redraw the shown one now, the others when shown."""
        self._stale.update(tabs)
        self._refresh_current()

    def _refresh_current(self) -> None:
        current = self.tabs.currentWidget()
        if current in self._stale:
            self._stale.discard(current)
            self._lazy[current]()

    def _on_problem_count(self, count: int) -> None:
        self.tabs.setTabText(self.tabs.indexOf(self.problems_tab),
                             f"Problems ({count})" if count else "Problems")

    def _on_savings_chosen(self, savings: advise.SavingsSource) -> None:
        """The What if tab's candidate: the Map draws its savings."""
        self.state.savings = savings
        self.map_tab.show_savings()
        self.overlays.metric_changed()
        self._mark_stale(self.map_tab)

    def _on_metric_changed(self, metric: str) -> None:
        self.state.metric = metric
        self._mark_stale(self.map_tab)
        self.overlays.metric_changed()

    # == background work ======================================================================
    def _stop_work(self, wait: bool = False) -> None:
        self._jobs.stop(wait)
        self._unit_reads = 0  # a read on its way is dropped
        self.jump_tab.stop_decoding()
        self.overlays.stop()

    def _on_scan_batch(self, batch: inspect.ScanBatch) -> None:
        if batch.total is not None and not batch.finished:
            self._progress_due = (batch.done, batch.total)
            if not self._progress_timer.isActive():
                self._show_progress()
        self.files_tab.append(batch.rows)
        self.state.add_units(batch.rows, batch.histograms_summed)
        for r in batch.rows:
            if r.position is not None:
                self._unit_of_path[r.path] = r.position
        self.problems_tab.add_rows(batch.rows)
        if batch.total is not None:
            self.problems_tab.set_check(
                "scan", f"{batch.done} of {batch.total} storage units scanned (index, sizes)"
                if not batch.finished else
                f"all {batch.total} storage units scanned (index, sizes)")
        if batch.finished:
            self._progress_due = None
            self._progress_timer.stop()
            self.progress.hide()
            self.overlays.refresh()
            if self.sizes_tab.whole_volume:
                self._mark_stale(self.sizes_tab)
            self.scan_finished.emit(batch.total or 0)

    def _show_progress(self) -> None:
        """Show the scan's latest count, if not shown yet; the next one waits its turn."""
        if self._progress_due is None:
            return
        done, total = self._progress_due
        self._progress_due = None
        # QProgressBar.setValue repaints at once, flushing every other pending paint of the
        # window inside this slot; with updates off it only schedules its repaint.
        self.progress.setUpdatesEnabled(False)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setUpdatesEnabled(True)
        self._progress_timer.start()

    @property
    def loading_unit(self) -> bool:
        """The unit under the cursor is being read (``unit_done`` says when it ends)."""
        return self._unit_reads > 0

    def _on_unit_failed(self, why: str) -> None:
        self.header_tab.show_error(why)
        self._unit_ended()

    def _unit_ended(self) -> None:
        self._unit_reads = 0  # the jobs deliver only the read asked for last
        self.unit_done.emit()

    def _on_file_loaded(self, loaded: LoadedUnit) -> None:
        self.state.shown = loaded
        self._file_pos = loaded.position
        self._loading_pos = None
        self._unit_of_path[loaded.path] = loaded.position
        self.header_tab.show_unit(loaded)
        self.jump_tab.show_unit(loaded)
        self._mark_stale(self.sizes_tab, self.layout_tab)
        if self._pending_block is not None:
            self.jump_tab.select_chunk(self._pending_block)
        self.files_tab.select_path(loaded.path)
        self.file_shown.emit(loaded.path if loaded.table is not None else "")
        self._unit_ended()


__all__ = ["QtInspectorPanel"]
