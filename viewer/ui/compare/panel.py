"""The Compare dock: B, the modes, the tolerance, the background comparison and its results.

``QtComparePanel`` shows what ``QtCompareController`` and its comparison run
(``controller.run``) hold and drives them: mode buttons (with their keys), the tolerance, the
box to compare, a progress bar with Cancel, the summary (blocks compared, mismatching blocks
and voxels, max |A - B|, first mismatch), the structural findings and named diagnoses, and the
list of mismatching blocks (``QtMismatchModel``; a click moves the cursor there).  GUI thread
only.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QCheckBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from viewer.core.compare import DIAGNOSIS, DIFFERENCE, BlockResult, Summary
from viewer.core.compare.model import Box, json_number
from viewer.ui.compare import modes
from viewer.ui.compare.controller import QtCompareController
from viewer.ui.compare.modes import MODE_KEYS
from viewer.ui.compare.run import QtComparisonRun, parse_box

SEVERITY_COLORS = {DIFFERENCE: "#ff6b6b", DIAGNOSIS: "#ffb347"}
MAX_FINDINGS_SHOWN = 30
_ROOT = QModelIndex()


def _num(v: Any) -> str:
    v = json_number(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return "\u2013" if v is None else str(v)


class QtMismatchModel(QAbstractTableModel):
    """The mismatching blocks found so far (rows grow as the comparison streams them)."""

    HEADERS = ("#", "x, y, z", "voxels", "max |A\u2212B|", "file \u00b7 block")

    def __init__(self, run: QtComparisonRun) -> None:
        super().__init__()
        self.run = run
        self._rows = 0

    def sync(self) -> None:
        """Follow ``run.results``: append new rows, or reset when it was cleared."""
        n = len(self.run.results)
        if n < self._rows:
            self.beginResetModel()
            self._rows = n
            self.endResetModel()
        elif n > self._rows:
            self.beginInsertRows(QModelIndex(), self._rows, n - 1)
            self._rows = n
            self.endInsertRows()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.run.results):
            return None
        r: BlockResult = self.run.results[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return str(index.row() + 1)
            if col == 1:
                return ", ".join(str(p) for p in r.position)
            if col == 2:
                return "damaged" if r.error is not None else _num(r.voxels_different)
            if col == 3:
                return "\u2013" if r.error is not None else _num(r.max_abs_diff)
            return f"{r.file} \u00b7 {r.morton_index}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return r.error or (f"block {r.morton_index} of {r.file}, first voxel "
                               f"{r.position}: {r.voxels_different} voxels differ, "
                               f"max |A\u2212B| {_num(r.max_abs_diff)}")
        if role == Qt.ItemDataRole.ForegroundRole and r.error is not None:
            return QColor(255, 107, 107)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (0, 2, 3):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class QtComparePanel(QWidget):
    """The Compare dock's content.  ``open_b_requested`` is handled by the caller (a file
    dialog)."""

    def __init__(self, controller: QtCompareController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        run = self.run = controller.run
        self.setObjectName("comparePanel")
        column = QVBoxLayout(self)
        column.setContentsMargins(8, 6, 8, 6)
        column.setSpacing(6)

        self.names = QLabel()
        self.names.setTextFormat(Qt.TextFormat.RichText)
        self.names.setWordWrap(True)
        column.addWidget(self.names)
        row = QHBoxLayout()
        self.open_button = QPushButton("Compare with\u2026")
        self.close_button = QPushButton("Close B")
        row.addWidget(self.open_button)
        row.addWidget(self.close_button)
        column.addLayout(row)

        column.addWidget(_heading("View"))
        grid = QGridLayout()
        grid.setSpacing(3)
        self.mode_buttons: dict[str, QToolButton] = {}
        self.mode_group = QButtonGroup(self)
        self.mode_group.setExclusive(True)
        for n, mode in enumerate(modes.MODES):
            button = QToolButton()
            button.setText(modes.MODE_NAMES[mode])
            button.setCheckable(True)
            button.setToolTip(f"{modes.MODE_NAMES[mode]} ({MODE_KEYS[mode]})")
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
            button.clicked.connect(lambda *_, m=mode: controller.set_mode(m))
            self.mode_group.addButton(button)
            grid.addWidget(button, n // 2, n % 2)
            self.mode_buttons[mode] = button
        column.addLayout(grid)
        self.mode_hint = QLabel()
        self.mode_hint.setWordWrap(True)
        self.mode_hint.setObjectName("compareHint")
        column.addWidget(self.mode_hint)

        row = QHBoxLayout()
        row.addWidget(QLabel("Tolerance |A\u2212B| \u2264"))
        self.tolerance = QDoubleSpinBox()
        self.tolerance.setRange(0.0, 1e12)
        self.tolerance.setDecimals(3)
        self.tolerance.setKeyboardTracking(False)
        self.tolerance.setToolTip("Differences up to this count as equal (mask, comparison)")
        self.tolerance.valueChanged.connect(self._on_tolerance_changed)
        row.addWidget(self.tolerance, 1)
        column.addLayout(row)
        self.show_blocks = QCheckBox("Outline mismatching blocks")
        self.show_blocks.setChecked(True)
        self.show_blocks.toggled.connect(controller.set_show_blocks)
        column.addWidget(self.show_blocks)

        column.addWidget(_heading("Whole dataset"))
        self.box = QLineEdit()
        self.box.setPlaceholderText("box x,y,z,w,h,d (empty: everything)")
        self.box.setToolTip("Compare only this box (voxels); empty: every file of A and B")
        self.box.returnPressed.connect(self.start)
        row = QHBoxLayout()
        row.addWidget(self.box, 1)
        self.box_menu = QMenu(self)
        self.screen_action = self.box_menu.addAction("On screen (what the views show)")
        self.screen_action.triggered.connect(lambda *_: self._fill_box(controller.screen_box()))
        self.common_action = self.box_menu.addAction("Common extent (files of A and B overlap)")
        self.common_action.triggered.connect(lambda *_: self._fill_box(controller.common_box()))
        self.all_action = self.box_menu.addAction("Everything (every file of A and B)")
        self.all_action.triggered.connect(lambda *_: self._fill_box(None))
        self.box_button = QToolButton()
        self.box_button.setText("Box \u25be")
        self.box_button.setToolTip("Fill in a box: on screen, the common extent, everything")
        self.box_button.setMenu(self.box_menu)
        self.box_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        row.addWidget(self.box_button)
        column.addLayout(row)
        row = QHBoxLayout()
        self.start_button = QPushButton("Compare (F5)")
        self.start_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel (Esc)")
        self.cancel_button.clicked.connect(lambda *_: run.cancel())
        row.addWidget(self.start_button)
        row.addWidget(self.cancel_button)
        column.addLayout(row)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        column.addWidget(self.progress)
        self.summary = QLabel()
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.summary)
        self.findings = QLabel()
        self.findings.setTextFormat(Qt.TextFormat.RichText)
        self.findings.setWordWrap(True)
        self.findings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.findings)

        row = QHBoxLayout()
        self.list_title = QLabel("Mismatching blocks")
        row.addWidget(self.list_title, 1)
        self.prev_button = QToolButton()
        self.prev_button.setText("\u25c0 P")
        self.prev_button.setToolTip("Previous mismatch (P)")
        self.prev_button.clicked.connect(lambda *_: run.previous_mismatch())
        self.next_button = QToolButton()
        self.next_button.setText("N \u25b6")
        self.next_button.setToolTip("Next mismatch (N)")
        self.next_button.clicked.connect(lambda *_: run.next_mismatch())
        row.addWidget(self.prev_button)
        row.addWidget(self.next_button)
        column.addLayout(row)
        self.model = QtMismatchModel(run)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(20)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        # Fixed widths: sizing columns to their contents would visit every row (thousands).
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        metrics = self.table.fontMetrics()
        for section, sample in enumerate(("0000", "0000, 0000, 0000", "00000", "000.00")):
            header.resizeSection(section, metrics.horizontalAdvance(sample) + 16)
        self.table.setAlternatingRowColors(True)
        self.table.setMinimumHeight(120)
        self.table.clicked.connect(self._on_row_clicked)
        self.table.activated.connect(self._on_row_clicked)
        column.addWidget(self.table, 1)

        self.open_button.setToolTip("Open dataset B (Ctrl+B)")
        self.close_button.clicked.connect(lambda *_: controller.close_b())
        controller.b_changed.connect(lambda *_: self.refresh())
        controller.mode_changed.connect(lambda *_: self.refresh())
        run.results_changed.connect(self._on_results_changed)
        run.job_started.connect(lambda: self.refresh())
        run.job_finished.connect(lambda *_: self.refresh())
        run.selection_changed.connect(self._on_selection_changed)
        self.setStyleSheet(PANEL_STYLE)
        self.refresh()

    # -- actions ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the comparison over the box typed (everything when empty)."""
        try:
            box = parse_box(self.box.text())
        except ValueError as exc:
            self.box.setStyleSheet("border: 1px solid #d44;")
            self.box.setToolTip(str(exc))
            return
        self.box.setStyleSheet("")
        self.controller.start_comparison(box)

    def _fill_box(self, box: Box | None) -> None:
        self.box.setText("" if box is None else ", ".join(str(v) for v in (*box[0], *box[1])))
        self.box.setStyleSheet("")

    def _on_tolerance_changed(self, value: float) -> None:
        self.controller.set_tolerance(value)
        self.refresh()

    def _on_row_clicked(self, index: QModelIndex) -> None:
        if index.isValid():
            self.run.go_to_mismatch(index.row())

    def _on_selection_changed(self, row: int) -> None:
        if 0 <= row < self.model.rowCount():
            index = self.model.index(row, 0)
            if self.table.currentIndex().row() != row:
                self.table.selectRow(row)
            self.table.scrollTo(index)

    def _on_results_changed(self) -> None:
        self.model.sync()
        self.refresh()

    # -- showing ------------------------------------------------------------------------------
    def refresh(self) -> None:
        c, run = self.controller, self.run
        active = c.active
        a_path = c.window.dataset_path or "(none)"
        if active:
            self.names.setText(
                f"<span style='color:#78afff'><b>A</b></span> {html.escape(c.name_a)}<br>"
                f"<span style='color:#f5a623'><b>B</b></span> {html.escape(c.name_b)}")
            self.names.setToolTip(f"A: {a_path}\nB: {c.path_b}")
        else:
            self.names.setText("<span style='color:#9a9ca3'>No dataset B. Open one to compare "
                               "it with the dataset shown (same cursor and zoom).</span>")
            self.names.setToolTip("")
        self.close_button.setEnabled(active)
        for mode, button in self.mode_buttons.items():
            button.setEnabled(active)
            button.setChecked(mode == c.mode)
        self.mode_hint.setText(self._hint())
        self.tolerance.setEnabled(active)
        for widget in (self.box, self.box_button):
            widget.setEnabled(active)
        self.start_button.setEnabled(active and not run.running)
        self.cancel_button.setEnabled(active and run.running)
        done, total = run.progress
        self.progress.setVisible(active)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(min(done, max(total, 1)))
        if run.running:
            self.progress.setFormat(f"{done:,} / {total:,} blocks  %p%" if total else
                                    "checking the structure\u2026")
        elif run.summary is not None and run.summary.cancelled:
            self.progress.setFormat(f"cancelled at {done:,} / {total:,} blocks")
        elif run.summary is not None:
            self.progress.setFormat(f"{done:,} blocks compared")
        else:
            self.progress.setFormat("")
        self.summary.setText(self._summary_html() if active else "")
        self.findings.setText(self._findings_html() if active else "")
        n = len(run.results)
        self.list_title.setText(f"Mismatching blocks ({n:,})" if n else "Mismatching blocks")
        self.prev_button.setEnabled(n > 0)
        self.next_button.setEnabled(n > 0)
        self.table.setEnabled(active)

    def _hint(self) -> str:
        c = self.controller
        if not c.active:
            return ""
        return {
            modes.A_ONLY: "A alone; the outlines mark the blocks that differ.",
            modes.SIDE: "A left, B right in every view; both follow the cursor and zoom.",
            modes.FLICKER: f"Showing <b>{'B' if c.showing_b else 'A'}</b>. Press <b>B</b> to "
                       "flip between A and B.",
            modes.SWIPE: "A left of the divider, B right; drag the divider.",
            modes.DIFFERENCE: "A\u2212B: <span style='color:#ff5838'>red A&gt;B</span>, "
                          "<span style='color:#4696ff'>blue A&lt;B</span>, black equal; "
                          f"levels \u00b1{c.level:g} (the largest on screen).",
            modes.MASK: "<span style='color:#ffd21f'>Yellow</span>: |A\u2212B| above the "
                    "tolerance; grey: A.",
        }[c.mode]

    def _summary_html(self) -> str:
        run = self.run
        if run.error is not None:
            return (f"<span style='color:#ff6b6b'><b>Could not compare:</b> "
                    f"{html.escape(str(run.error))}</span>")
        s: Summary | None = run.summary
        if s is None:
            if not run.running:
                return ""
            n = len(run.results)
            return (f"Comparing\u2026 {n:,} mismatching block{'s' if n != 1 else ''} so far."
                    if n else "Comparing\u2026")
        if s.equal:
            verdict = "<span style='color:#7bd88f'><b>\u2714 Equal</b></span>"
        elif not s.comparable:
            verdict = ("<span style='color:#ff6b6b'><b>\u2716 Not comparable</b></span> "
                       "(see the structure below)")
        elif s.cancelled:
            verdict = "<span style='color:#e0a020'><b>Cancelled</b></span> (partial results)"
        else:
            verdict = "<span style='color:#ff6b6b'><b>\u2716 Different</b></span>"
        first = s.first_mismatch
        where = "" if s.box is None else (" in box " + ",".join(str(v) for v in
                                                                 (*s.box[0], *s.box[1])))
        rows = [
            ("blocks compared", f"{s.blocks_compared:,} of {s.blocks_total:,}{where}"),
            ("mismatching blocks", f"{len(s.mismatching_blocks):,}"
             + (f" ({s.damaged_blocks} damaged)" if s.damaged_blocks else "")),
            ("voxels different", f"{s.voxels_different:,}"),
            ("max |A\u2212B|", _num(s.max_abs_diff)),
            ("first mismatch", "\u2013" if first is None else
             f"{', '.join(str(p) for p in first.position)}<br>"
             f"<span style='color:#9a9ca3'>{html.escape(first.file)}</span>"),
            ("tolerance", _num(s.tolerance)),
            ("time", f"{s.elapsed:.2f} s"),
        ]
        table = "".join(f"<tr><td style='color:#9a9ca3'>{k}</td><td>{v}</td></tr>"
                        for k, v in rows)
        return f"{verdict}<table cellspacing=2>{table}</table>"

    def _findings_html(self) -> str:
        """Named diagnoses first (the likely cause), then structural differences, then
        information."""
        findings = self.run.findings
        if not findings:
            return ""
        order = {DIAGNOSIS: 0, DIFFERENCE: 1}
        ranked = sorted(findings, key=lambda f: order.get(f.severity, 2))
        items = []
        for f in ranked[:MAX_FINDINGS_SHOWN]:
            colour = SEVERITY_COLORS.get(f.severity, "#9a9ca3")
            label = {DIFFERENCE: "difference", DIAGNOSIS: "likely cause"}.get(f.severity,
                                                                              "info")
            text = html.escape(f.message)
            if f.severity == DIAGNOSIS:
                text = f"<b>{text}</b>"
            items.append(f"<p style='margin:3px 0'><span style='color:{colour}'><b>{label}"
                         f"</b></span>&nbsp; {text}</p>")
        more = len(findings) - MAX_FINDINGS_SHOWN
        if more > 0:
            items.append(f"<p style='color:#9a9ca3'>\u2026 and {more} more</p>")
        return "<b>Structure and diagnoses</b>" + "".join(items)


def _heading(text: str) -> QLabel:
    label = QLabel(text.upper())
    label.setObjectName("compareHeading")
    return label


PANEL_STYLE = """
#compareHeading { color: #8a8d96; font-size: 10px; font-weight: bold; padding-top: 4px;
  letter-spacing: 1px; }
#compareHint { color: #a8aab1; }
QToolButton { background: #2f3137; border: 1px solid #3d3f47; border-radius: 3px;
  padding: 3px 6px; }
QToolButton::menu-indicator { image: none; }
QToolButton:checked { background: #3d5a8a; border-color: #5d7fb8; color: #ffffff; }
QToolButton:disabled, QPushButton:disabled { color: #6a6c73; }
QProgressBar { background: #1a1b1e; border: 1px solid #3a3c44; border-radius: 3px;
  text-align: center; height: 16px; }
QProgressBar::chunk { background: #3d5a8a; }
QTableView { background: #1c1d21; alternate-background-color: #212227; gridline-color: #2c2e34;
  selection-background-color: #3d5a8a; border: 1px solid #2c2e34; }
QHeaderView::section { background: #2a2b30; color: #b8bac0; border: none; padding: 2px 4px; }
"""
