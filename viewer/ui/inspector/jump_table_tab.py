"""The inspector's Chunk table tab: the current unit's chunk table (a WKW jump table, a zarr
shard index, ...), and decoding its chunks on request.  GUI thread only; the decoding runs on
a thread of its own and comes back through a ``QtResultBridge``."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from viewer.core import inspect
from viewer.format import FormatError
from viewer.ui.inspector.bridge import QtResultBridge
from viewer.ui.inspector.host import InspectorHost
from viewer.ui.inspector.loaded_file import LoadedUnit
from viewer.ui.inspector.models import QtJumpTableModel
from viewer.ui.inspector.state import InspectorState
from viewer.ui.inspector.table_style import fast_table


class QtJumpTableTab(QWidget):
    """The Chunk table tab: a summary line, the "Decode all" button and the table of the
    shown unit's chunks (``jump_model``, ``jump_view``).  The user moving the current row
    sends the cursor to that chunk through ``host``; ``select_chunk`` moves the row without
    that."""

    #: Decoding found damaged chunks: (unit path, the problems).
    problems_found = Signal(str, object)

    def __init__(self, state: InspectorState, host: InspectorHost,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._host = host
        self._syncing = False
        self._bridge = QtResultBridge(self)
        self._bridge.result_arrived.connect(self._on_result)
        self._token = 0
        self._cancel: threading.Event | None = None
        v = QVBoxLayout(self)
        row = QHBoxLayout()
        self.blocks_summary = QLabel("")
        self.blocks_summary.setWordWrap(True)
        self.blocks_summary.setSizePolicy(QSizePolicy.Policy.Ignored,
                                          QSizePolicy.Policy.Preferred)
        self.decode_button = QPushButton("Decode all")
        self.decode_button.setToolTip("Decodes every chunk of this unit in the background to "
                                      "flag constant and all-zero chunks")
        self.decode_button.clicked.connect(self.decode_all)
        row.addWidget(self.blocks_summary, 1)
        row.addWidget(self.decode_button)
        v.addLayout(row)
        self.jump_model = QtJumpTableModel()
        self.jump_view = QTableView()
        self.jump_view.setModel(self.jump_model)
        fast_table(self.jump_view)
        # Narrow chunk coordinates, so that offsets and sizes fit the quadrant.
        for c, width in enumerate((64, 34, 34, 34, 84, 84, 64, 50)):
            self.jump_view.horizontalHeader().resizeSection(c, width)
        self.jump_view.horizontalHeader().setStretchLastSection(True)
        self.jump_view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.jump_view.setSortingEnabled(True)
        self.jump_view.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self._on_row_changed(cur))
        v.addWidget(self.jump_view, 1)

    # -- what the panel tells the tab ---------------------------------------------------------
    def clear(self) -> None:
        """No unit shown (a new volume)."""
        self.jump_model.set_table(None)

    def show_unit(self, loaded: LoadedUnit) -> None:
        """Show ``loaded``'s chunk table and its summary."""
        t = loaded.table
        self.jump_model.set_table(t)
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

    def select_chunk(self, index: int) -> None:
        """Select and scroll to the row of chunk ``index``, without moving the cursor."""
        t = self.jump_model.table
        if t is None or not 0 <= index < t.num_chunks:
            return
        row = self.jump_model.row_of_index(index)
        self._syncing = True
        try:
            mi = self.jump_model.index(row, 0)
            self.jump_view.selectRow(row)
            self.jump_view.scrollTo(mi, QAbstractItemView.ScrollHint.EnsureVisible)
        finally:
            self._syncing = False

    def select_block_row(self, row: int) -> None:
        """Select chunk-table row ``row`` as a click would (moves the cursor to its chunk)."""
        self.jump_view.selectRow(row)

    def stop_decoding(self) -> None:
        """Stop a decoding in progress; what it still sends is dropped."""
        if self._cancel is not None:
            self._cancel.set()
            self._cancel = None
        self._token += 1

    def _on_row_changed(self, index: QModelIndex | QPersistentModelIndex) -> None:
        t = self.jump_model.table
        if self._syncing or not index.isValid() or t is None:
            return
        self._host.go_to(t.path, self.jump_model.index_of_row(index.row()))

    # -- decoding ---------------------------------------------------------------------------
    def decode_all(self) -> None:
        """Decode every stored chunk of the shown unit in the background, to flag constant,
        all-zero and undecodable chunks (the button's action)."""
        t = self._state.table
        volume = self._state.volume
        if t is None or volume is None:
            return
        self.stop_decoding()
        cancel = threading.Event()
        self._cancel = cancel
        token = self._token
        bridge = self._bridge
        position = t.unit
        wanted = np.flatnonzero((t.flags & (inspect.ABSENT | inspect.STORED_CONSTANT)) == 0)

        def run() -> None:
            try:
                unit = volume.open_unit(position)
                if unit is None:
                    raise FormatError("the unit is gone", volume.unit_path(position))
                try:
                    for part in inspect.scan_chunk_contents(unit, wanted, cancel):
                        bridge.deliver("decode", token, (t, part))
                finally:
                    volume.done_with(unit)
                bridge.deliver("decode", token, (t, None))
            except (FormatError, OSError) as exc:
                bridge.deliver("decode", token, (t, exc))

        self.decode_button.setEnabled(False)
        threading.Thread(target=run, name="inspector-decode", daemon=True).start()

    def _on_result(self, _kind: str, token: int, payload: Any) -> None:
        if token != self._token:
            return  # stopped, or another unit is shown
        t: inspect.UnitTable = payload[0]
        part = payload[1]
        if isinstance(part, BaseException):
            self.blocks_summary.setText(f"decoding stopped: {part}")
            self.decode_button.setEnabled(True)
            return
        if part is None:  # every chunk asked for is decoded
            self.decode_button.setEnabled(True)
            decoded = t.flags & inspect.DECODED
            zero = t.flags & inspect.ALL_ZERO
            self.blocks_summary.setText(
                f"{int(np.count_nonzero(decoded)):,} chunks decoded: "
                f"{int(np.count_nonzero(zero))} all-zero, "
                f"{int(np.count_nonzero((t.flags & inspect.CONSTANT) & ~zero))}"
                f" other constant, {int(np.count_nonzero(t.flags & inspect.DECODE_FAILED))} "
                f"failed")
            return
        indices, flags, errors = part
        t.apply_content_flags(indices, flags)
        if self.jump_model.table is t:
            self.jump_model.flags_changed()
        if errors:
            self.problems_found.emit(t.path, errors)
