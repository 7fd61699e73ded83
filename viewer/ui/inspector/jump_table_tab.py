"""The inspector's Jump table tab: the current unit's chunk table (a WKW jump table, a zarr
shard index, ...), and decoding its chunks on request.

Part of ``QtInspectorPanel`` (``viewer.ui.inspector.panel``), which mixes it in; its methods
use the panel's state.  GUI thread only."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from PySide6.QtCore import QModelIndex, Qt
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
from viewer.ui.inspector.models import QtJumpTableModel


class JumpTableTabMixin:
    """The Jump table tab of ``QtInspectorPanel``."""

    def _build_blocks_tab(self) -> None:
        w = QWidget()
        v = QVBoxLayout(w)
        row = QHBoxLayout()
        self.blocks_summary = QLabel("")
        self.blocks_summary.setWordWrap(True)
        self.blocks_summary.setSizePolicy(QSizePolicy.Policy.Ignored,
                                          QSizePolicy.Policy.Preferred)
        self.decode_button = QPushButton("Decode all")
        self.decode_button.setToolTip("Decodes every chunk of this unit in the background to "
                                      "flag constant and all-zero chunks")
        self.decode_button.clicked.connect(self._on_decode_clicked)
        row.addWidget(self.blocks_summary, 1)
        row.addWidget(self.decode_button)
        v.addLayout(row)
        self.jump_model = QtJumpTableModel()
        self.jump_view = QTableView()
        self.jump_view.setModel(self.jump_model)
        self._fast_table(self.jump_view)
        # Narrow chunk coordinates, so that offsets and sizes fit the quadrant.
        for c, width in enumerate((64, 34, 34, 34, 84, 84, 64, 50)):
            self.jump_view.horizontalHeader().resizeSection(c, width)
        self.jump_view.horizontalHeader().setStretchLastSection(True)
        self.jump_view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.jump_view.setSortingEnabled(True)
        self.jump_view.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self._on_block_row_clicked(cur))
        v.addWidget(self.jump_view, 1)
        self.tabs.addTab(w, "Chunk table")

    def _select_block(self, index: int) -> None:
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

    def _on_block_row_clicked(self, index: QModelIndex) -> None:
        if (self._syncing or not index.isValid() or self._shown is None
                or self.jump_model.table is None):
            return
        self._go_to(self._shown.path, self.jump_model.index_of_row(index.row()))

    def select_block_row(self, row: int) -> None:
        """Select chunk-table row ``row`` as a click would (moves the cursor to its chunk)."""
        self.jump_view.selectRow(row)

    def _on_decode_clicked(self) -> None:
        t = self.current_table
        volume = self.volume
        if t is None or volume is None:
            return
        if self._decode_cancel is not None:
            self._decode_cancel.set()
        cancel = threading.Event()
        self._decode_cancel = cancel
        token = self._next("decode")
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
                        bridge.deliver("decode", token, part)
                finally:
                    volume.done_with(unit)
                bridge.deliver("decode", token, None)
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
        if payload is None:  # every chunk asked for is decoded
            self.decode_button.setEnabled(True)
            decoded = t.flags & inspect.DECODED
            self.blocks_summary.setText(
                f"{int(np.count_nonzero(decoded)):,} chunks decoded: "
                f"{int(np.count_nonzero(t.flags & inspect.ALL_ZERO))} all-zero, "
                f"{int(np.count_nonzero((t.flags & inspect.CONSTANT) & ~(t.flags & inspect.ALL_ZERO)))}"
                f" other constant, {int(np.count_nonzero(t.flags & inspect.DECODE_FAILED))} "
                f"failed")
            return
        indices, flags, errors = payload
        t.apply_content_flags(indices, flags)
        self.jump_model.flags_changed()
        if errors:
            self._add_problem_items(t.path, errors)
