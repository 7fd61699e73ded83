"""Table styling shared by the inspector's tabs: compact whole tables and fast long ones.
GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QSizePolicy,
    QTableView,
    QTableWidget,
)


def compact_table(table: QTableWidget) -> None:
    """A small read-only table shown whole: one text line per row (long cells elided, the
    whole text in the tooltip), narrow columns sized to their contents (``fit_columns``), the
    last one taking the rest of the width, its height that of its rows."""
    table.verticalHeader().hide()
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
    header = table.horizontalHeader()
    for c in range(table.columnCount() - 1):
        header.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
    header.setSectionResizeMode(table.columnCount() - 1, QHeaderView.ResizeMode.Stretch)
    table.installEventFilter(_QtColumnFitter(table))
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideRight)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
    table.setFixedHeight(table.horizontalHeader().sizeHint().height() + 4)


#: The share of a compact table's width one column sized to its contents may take at most:
#: a long value (a URL) is elided rather than pushing the last column out of sight.
COLUMN_SHARE = 0.4


def fit_columns(table: QTableWidget) -> None:
    """Size a compact table's columns but the last to their contents, each at most
    ``COLUMN_SHARE`` of the table's width; the last one takes the rest."""
    header = table.horizontalHeader()
    cap = max(60, int(table.viewport().width() * COLUMN_SHARE))
    for c in range(table.columnCount() - 1):
        if not table.isColumnHidden(c):
            want = max(table.sizeHintForColumn(c), header.sectionSizeHint(c))
            header.resizeSection(c, min(want, cap))


class _QtColumnFitter(QObject):
    """Fits a compact table's columns whenever the table is resized."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and isinstance(watched, QTableWidget):
            fit_columns(watched)
        return False


def fit_table_height(table: QTableWidget) -> None:
    """Make a compact table as tall as its rows (and fit its columns to what it holds)."""
    fit_columns(table)
    rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
    table.setFixedHeight(table.horizontalHeader().sizeHint().height() + rows
                         + 2 * table.frameWidth())


def fast_table(view: QTableView) -> None:
    """Fixed row heights and no content-based sizing: scrolling stays O(visible rows)."""
    view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    view.verticalHeader().setDefaultSectionSize(20)
    view.verticalHeader().hide()
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    view.horizontalHeader().setDefaultSectionSize(80)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setWordWrap(False)
    fit_header_titles(view)


#: Pixels a header section adds around its title (margins, the sort arrow's room).
HEADER_SLACK = 22


def fit_header_titles(view: QTableView) -> None:
    """Keep each column at least as wide as its title, now and whenever the model's columns
    change (a chunk table adds its format's own columns)."""
    header = view.horizontalHeader()
    model = view.model()
    if model is None:
        return

    def fit() -> None:
        metrics = header.fontMetrics()
        for section in range(header.count()):
            title = model.headerData(section, Qt.Orientation.Horizontal)
            need = metrics.horizontalAdvance(str(title or "")) + HEADER_SLACK
            if header.sectionSize(section) < need:
                header.resizeSection(section, need)

    fit()
    model.modelReset.connect(fit)
    model.headerDataChanged.connect(lambda *_: fit())
    model.columnsInserted.connect(lambda *_: fit())
