"""Virtual table models of the inspector: the chunk table of one storage unit and the volume's
units.

Both hold numpy arrays / row tuples and format a cell only when the view asks for it, so a
32,768-row jump table costs nothing until it scrolls, and rows of the file table are appended in
batches (one ``beginInsertRows`` per batch).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from viewer.core import inspect

Index = QModelIndex | QPersistentModelIndex

#: Role that returns the raw (sortable) value of a cell.
SORT_ROLE = int(Qt.ItemDataRole.UserRole) + 1
PROBLEM_BRUSH = QBrush(QColor(255, 200, 200))
# Plain ints: data() runs once per visible cell and role, comparing enums there is costly.
DISPLAY = int(Qt.ItemDataRole.DisplayRole)
TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
ALIGNMENT = int(Qt.ItemDataRole.TextAlignmentRole)
RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
#: The invalid index: the parent of a flat table's rows (a shared default, never changed).
NO_PARENT = QModelIndex()


class _QtColumnsModel(QAbstractTableModel):
    """A flat table whose columns are the names in ``COLUMNS`` (also its header)."""

    COLUMNS: tuple[str, ...] = ()

    def columnCount(self, parent: Index = NO_PARENT) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.COLUMNS[section]
        return None


class QtJumpTableModel(_QtColumnsModel):
    """One row per chunk of a ``UnitTable``: index in the unit, chunk position in the unit,
    byte range, stored bytes, ratio, flags, then the format's own per-chunk columns
    (``StorageUnit.describe_chunk``, fetched when a row is shown).  Sorting permutes a
    row-order array; the table itself is never copied."""

    COLUMNS = ("index", "cx", "cy", "cz", "offset", "end", "stored bytes", "ratio", "flags")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.table: inspect.UnitTable | None = None
        self.columns: tuple[str, ...] = self.COLUMNS
        self._order: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._row_of: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._extra: dict[int, dict[str, Any]] = {}

    def set_table(self, table: inspect.UnitTable | None) -> None:
        self.beginResetModel()
        self.table = table
        self.columns = self.COLUMNS + (table.chunk_columns if table is not None else ())
        n = 0 if table is None else table.num_chunks
        self._order = np.arange(n, dtype=np.int64)
        self._row_of = np.arange(n, dtype=np.int64)
        self._extra = {}
        self.endResetModel()

    def flags_changed(self) -> None:
        """Content flags were merged into the table: repaint the flags column."""
        if self.table is not None and self.table.num_chunks:
            col = self.columns.index("flags")
            self.dataChanged.emit(self.index(0, col), self.index(self.table.num_chunks - 1, col))

    def index_of_row(self, row: int) -> int:
        """The chunk index shown in ``row``."""
        return int(self._order[row])

    def row_of_index(self, chunk_index: int) -> int:
        """The row showing chunk ``chunk_index``."""
        return int(self._row_of[chunk_index])

    # -- Qt overrides --------------------------------------------------------------------------
    def columnCount(self, parent: Index = NO_PARENT) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section] if 0 <= section < len(self.columns) else None
        return None

    def rowCount(self, parent: Index = NO_PARENT) -> int:
        return 0 if parent.isValid() or self.table is None else self.table.num_chunks

    def _value(self, chunk: int, col: int) -> Any:
        t = self.table
        assert t is not None
        name = self.columns[col]
        if name == "index":
            return chunk
        if name in ("cx", "cy", "cz"):
            return int(t.coords[chunk, "xyz".index(name[1])])
        absent = int(t.flags[chunk]) & (inspect.ABSENT | inspect.STORED_CONSTANT)
        if name == "offset":
            return None if absent else int(t.starts[chunk])
        if name == "end":
            return None if absent else int(t.ends[chunk])
        if name == "stored bytes":
            return None if absent else int(t.sizes[chunk])
        if name == "ratio":
            return None if absent else float(t.ratio[chunk])
        if name == "flags":
            return int(t.flags[chunk])
        extra = self._extra.get(chunk)
        if extra is None:
            extra = self._extra[chunk] = {} if absent else t.describe_chunk(chunk)
        return extra.get(name)

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if self.table is None or role not in (DISPLAY, SORT_ROLE, BACKGROUND, ALIGNMENT):
            return None
        chunk = int(self._order[index.row()])
        col = index.column()
        if role == DISPLAY:
            value = self._value(chunk, col)
            name = self.columns[col]
            if value is None:
                return ""
            if name == "ratio":
                return "inf" if math.isinf(value) else f"{value:.2f}"
            if name == "flags":
                return ", ".join(inspect.flag_names(value))
            if name in ("offset", "end", "stored bytes"):
                return f"{value:,}"
            return str(value)
        if role == SORT_ROLE:
            return self._value(chunk, col)
        if role == BACKGROUND:
            return PROBLEM_BRUSH if int(self.table.flags[chunk]) & inspect.PROBLEM_FLAGS else None
        if role == ALIGNMENT and self.columns[col] != "flags":
            return RIGHT
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        t = self.table
        if t is None or column < 0 or column >= len(self.COLUMNS):
            return  # the format's own columns are fetched per row: not sortable
        name = self.columns[column]
        keys: npt.NDArray[Any]
        if name == "index":
            keys = np.arange(t.num_chunks)
        elif name in ("cx", "cy", "cz"):
            keys = t.coords[:, "xyz".index(name[1])]
        else:
            by_name: dict[str, npt.NDArray[Any]] = {
                "offset": t.starts, "end": t.ends, "stored bytes": t.sizes, "ratio": t.ratio,
                "flags": t.flags}
            keys = by_name[name]
        self.beginResetModel()
        perm = np.argsort(keys, kind="stable").astype(np.int64)
        if order == Qt.SortOrder.DescendingOrder:
            perm = perm[::-1].copy()
        self._order = perm
        self._row_of = np.empty_like(perm)
        self._row_of[perm] = np.arange(len(perm), dtype=np.int64)
        self.endResetModel()


class QtFilesModel(_QtColumnsModel):
    """One row per storage unit (``UnitStats``), appended in batches as a scan streams them in.
    A row's cells are formatted when a view first asks for them (appending a batch costs one
    list extend on the GUI thread, whatever its size).  Sorting is done in the model (a Python
    sort of the rows, fine for tens of thousands)."""

    COLUMNS = ("unit", "compression", "size on disk", "chunks", "min", "median", "max", "ratio",
               "problems")

    def __init__(self, root: str = "", parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.root = root
        self.rows: list[inspect.UnitStats] = []
        #: Formatted cells per row, None until a view asks for the row.
        self._display: list[tuple[str, ...] | None] = []
        self._sort: tuple[int, Qt.SortOrder] | None = None

    def clear(self, root: str = "") -> None:
        self.beginResetModel()
        self.root = root
        self.rows = []
        self._display = []
        self.endResetModel()

    def _format(self, row: inspect.UnitStats) -> tuple[str, ...]:
        out = []
        for col in range(len(self.COLUMNS)):
            value = self._value(row, col)
            if isinstance(value, float):
                out.append("-" if math.isnan(value) else (
                    f"{value:.2f}" if self.COLUMNS[col] == "ratio" else f"{value:,.0f}"))
            elif isinstance(value, int):
                out.append(f"{value:,}")
            else:
                out.append(str(value))
        return tuple(out)

    def append(self, rows: tuple[inspect.UnitStats, ...] | list[inspect.UnitStats]) -> None:
        """Append a batch of rows (one insert notification); a sorted table is re-sorted."""
        if not rows:
            return
        if self._sort is not None:
            self.beginResetModel()
            self.rows.extend(rows)
            self._sort_rows(*self._sort)
            self.endResetModel()
            return
        first = len(self.rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self.rows.extend(rows)
        self._display.extend([None] * len(rows))
        self.endInsertRows()

    def row_of_path(self, path: str) -> int | None:
        for k, r in enumerate(self.rows):
            if r.path == path:
                return k
        return None

    def _display_path(self, path: str) -> str:
        root = self.root.rstrip(os.sep)
        if root and path.startswith(root + os.sep):
            return path[len(root) + 1:]
        return path

    def _value(self, row: inspect.UnitStats, col: int) -> Any:
        return (self._display_path(row.path), row.compression, row.size_on_disk, row.chunk_count,
                row.size_min, row.size_median, row.size_max, row.ratio, row.problem_count)[col]

    # -- Qt overrides --------------------------------------------------------------------------
    def rowCount(self, parent: Index = NO_PARENT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def data(self, index: Index, role: int = DISPLAY) -> Any:
        if role == DISPLAY:
            row = index.row()
            cells = self._display[row]
            if cells is None:
                cells = self._display[row] = self._format(self.rows[row])
            return cells[index.column()]
        if role == BACKGROUND:
            return PROBLEM_BRUSH if self.rows[index.row()].problems else None
        if role == ALIGNMENT:
            return RIGHT if index.column() > 1 else None
        if role == SORT_ROLE:
            return self._value(self.rows[index.row()], index.column())
        if role == TOOLTIP:
            stats = self.rows[index.row()]
            return "\n".join(str(p) for p in stats.problems[:10]) if stats.problems else None
        return None

    def _sort_rows(self, column: int, order: Qt.SortOrder) -> None:
        def key(r: inspect.UnitStats) -> Any:
            v = self._value(r, column)
            return (1, 0) if isinstance(v, float) and math.isnan(v) else (0, v)

        self.rows.sort(key=key, reverse=order == Qt.SortOrder.DescendingOrder)
        self._display = [None] * len(self.rows)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        if column < 0:
            self._sort = None
            return
        self._sort = (column, order)
        self.beginResetModel()
        self._sort_rows(column, order)
        self.endResetModel()
