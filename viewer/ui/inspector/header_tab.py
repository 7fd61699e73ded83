"""The inspector's Header tab: the current unit's header bytes and fields (the format's own,
from ``StorageUnit.describe()``), its differences from the volume's header, the geometry, and
the volume's header itself (``Volume.info().header``).  GUI thread only."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from viewer.ui.inspector.loaded_file import LoadedUnit
from viewer.ui.inspector.state import InspectorState
from viewer.ui.inspector.table_style import compact_table, fit_table_height

DIFF_BRUSH = QBrush(QColor(255, 215, 120))


class QtHeaderTab(QScrollArea):
    """The Header tab: one page that scrolls as a whole (its tables are as tall as their
    rows: no nested scroll bars, and never a horizontal one).  Reads ``state``'s volume
    header; ``show_unit`` shows a unit."""

    def __init__(self, state: InspectorState, mono: QFont, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
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
        self.volume_table = QTableWidget(0, 2)
        self.volume_table.setHorizontalHeaderLabels(["volume header", "value"])
        for table in (self.header_fields, self.geometry_table, self.volume_table):
            compact_table(table)
        self.header_diffs = QLabel("")
        self.header_diffs.setWordWrap(True)
        v.addWidget(self.header_path)
        v.addWidget(self.header_hex)
        v.addWidget(self.header_fields)
        v.addWidget(self.header_diffs)
        v.addWidget(self.geometry_table)
        v.addWidget(self.volume_table)
        v.addStretch(1)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(w)

    def show_volume_header(self) -> None:
        """The volume's own header (``state.volume_header``, e.g. header.wkw), once per
        volume."""
        rows = [(str(k), str(v)) for k, v in self._state.volume_header.items()]
        self.volume_table.setRowCount(len(rows))
        for r, (name, value) in enumerate(rows):
            self.volume_table.setItem(r, 0, QTableWidgetItem(name))
            item = QTableWidgetItem(value)
            item.setToolTip(value)
            self.volume_table.setItem(r, 1, item)
        fit_table_height(self.volume_table)

    def show_error(self, text: str) -> None:
        """The current unit could not be read at all: say why."""
        self.header_path.setText(f"error: {text}")

    def _mark_diffs(self, marked: bool) -> None:
        """Colour the differences line (or not).  A style sheet set, even the same one,
        polishes the label anew and lays the tab out again: set only when it changes."""
        style = "background: rgb(255,215,120)" if marked else ""
        if self.header_diffs.styleSheet() != style:
            self.header_diffs.setStyleSheet(style)

    def _volume_header_name(self) -> str:
        """What the differences are against: the volume's header file when it names one."""
        named = self._state.volume_header_file()
        return os.path.basename(named) if named else "the volume's header"

    def show_unit(self, loaded: LoadedUnit) -> None:
        """Show ``loaded``'s header: its path, raw bytes, fields, differences from the
        volume's header (marked), and geometry."""
        rep = loaded.report
        self.header_fields.setRowCount(0)
        self.geometry_table.setRowCount(0)
        fit_table_height(self.header_fields)
        fit_table_height(self.geometry_table)
        if rep is None:
            self.header_path.setText(f"{loaded.path}\n" + (
                "absent (sparse: reads as the fill value)" if loaded.error is None
                else str(loaded.error)))
            self.header_hex.setText("")
            self.header_diffs.setText("")
            return
        text = rep.path
        if rep.error is not None:
            text += f"\nerror: {rep.error.reason}"
        self.header_path.setText(text)
        self.header_hex.setText("raw: " + rep.hex if rep.raw else "")
        marked = rep.marked_fields
        # Fields described rather than read at byte offsets (a remote unit): no bytes column.
        self.header_fields.setColumnHidden(1, not any(f.bytes_text for f in rep.fields))
        self.header_fields.setRowCount(len(rep.fields))
        for r, fld in enumerate(rep.fields):
            raw = fld.raw.decode("latin-1") if isinstance(fld.raw, bytes) else str(fld.raw)
            cells = [fld.name, fld.bytes_text, raw, fld.meaning]
            for c, value in enumerate(cells):
                item = QTableWidgetItem(value)
                item.setToolTip(value)
                if fld.name in marked:
                    item.setBackground(DIFF_BRUSH)
                self.header_fields.setItem(r, c, item)
        against = self._volume_header_name()
        if rep.differences:
            self.header_diffs.setText(f"differs from {against} ({against} vs unit): " + "; ".join(
                f"{k} {v}" for k, v in rep.differences.items()))
            self._mark_diffs(True)
        else:
            own = self._state.volume_header_file() == rep.path  # a lone file: nothing to match
            self.header_diffs.setText(f"matches {against}" if rep.error is None and not own
                                      else "")
            self._mark_diffs(False)
        self.geometry_table.setRowCount(len(rep.geometry))
        for r, (name, value) in enumerate(rep.geometry):
            self.geometry_table.setItem(r, 0, QTableWidgetItem(name))
            item = QTableWidgetItem(value)
            item.setToolTip(value)
            if "MISMATCH" in value:
                item.setBackground(DIFF_BRUSH)
            self.geometry_table.setItem(r, 1, item)
        fit_table_height(self.header_fields)
        fit_table_height(self.geometry_table)
