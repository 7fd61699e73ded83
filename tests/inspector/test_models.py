"""The inspector's table models and the panel's layout, on real scanned files: cells formatted
on demand must equal the scanned values whatever the batches and the sort order, and a progress
bar that appears or goes must not move the tables (a re-layout repaints every row shown)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from viewer.core import inspect
from viewer.format import open_volume, wkw
from viewer.ui.inspector import QtInspectorPanel
from viewer.ui.inspector.models import QtFilesModel


@pytest.fixture()
def many_files(tmp_path: Path) -> Path:
    """27 small LZ4HC files whose compressed sizes differ (a growing share of noise)."""
    root = tmp_path / "many"
    header = wkw.Header(np.uint8, block_len=8, file_len=1, block_type=wkw.BLOCK_TYPE_LZ4HC)
    ds = wkw.Dataset.create(str(root), header)
    side = header.file_len_vx
    rng = np.random.default_rng(7)
    for k in range(27):
        fx, fy, fz = k % 3, (k // 3) % 3, k // 9
        flat = np.zeros(side ** 3, dtype=np.uint8)
        flat[:18 * k] = rng.integers(0, 256, size=18 * k)
        data = flat.reshape(1, side, side, side)
        ds.write((fx * side, fy * side, fz * side), data)
    ds.close()
    return root


def _shown(model: QtFilesModel, row: int) -> list[str]:
    return [model.data(model.index(row, c)) for c in range(model.columnCount())]


def test_files_model_formats_rows_on_demand_across_batches_and_sorts(many_files: Path,
                                                                     qapp) -> None:  # type: ignore[no-untyped-def]
    stats = inspect.scan_all(open_volume(many_files))
    assert len(stats) == 27
    model = QtFilesModel(str(many_files))
    for first, last in ((0, 6), (6, 12), (12, 19), (19, 20)):
        model.append(stats[first:last])
    assert model.rowCount() == 20
    for row, s in enumerate(stats[:20]):
        cells = _shown(model, row)
        assert cells[0] == str(Path(s.path).relative_to(many_files))
        assert cells[2] == f"{s.size_on_disk:,}"
        assert cells[3] == f"{s.chunk_count:,}"
        assert cells[6] == f"{s.size_max:,}"
    max_col = QtFilesModel.COLUMNS.index("max")
    model.sort(max_col, Qt.SortOrder.DescendingOrder)
    model.append(stats[20:])  # rows arriving into a sorted table land in order
    assert model.rowCount() == 27
    shown_max = [int(_shown(model, r)[max_col].replace(",", "")) for r in range(27)]
    assert shown_max == sorted((s.size_max for s in stats), reverse=True)
    assert len(set(shown_max)) > 5  # the fixture's files really differ
    for r in range(27):  # every row's cells belong to the same file after the sort
        path = model.rows[r].path
        assert _shown(model, r)[0] == str(Path(path).relative_to(many_files))
        assert _shown(model, r)[2] == f"{Path(path).stat().st_size:,}"


@pytest.fixture()
def panel(qtbot) -> Iterator[QtInspectorPanel]:  # type: ignore[no-untyped-def]
    p = QtInspectorPanel()
    qtbot.addWidget(p)
    p.resize(900, 700)
    p.tabs.setCurrentIndex(2)
    p.show()
    yield p
    p.shutdown()


def test_progress_bar_does_not_move_the_tables(panel, qtbot) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitExposed(panel)
    QApplication.processEvents()
    before = panel.tabs.geometry()
    panel.progress.show()
    QApplication.processEvents()
    assert panel.tabs.geometry() == before
    panel.progress.hide()
    QApplication.processEvents()
    assert panel.tabs.geometry() == before


def test_item_views_are_not_painted_through_a_style_sheet(panel) -> None:  # type: ignore[no-untyped-def]
    """A style sheet on an ancestor routes every cell of the 32,768-row table through
    QStyleSheetStyle; the tab bar's own style sheet must stay on the tab bar."""
    app_style = QApplication.style()
    assert panel.jump_tab.jump_view.style() is app_style
    assert panel.files_tab.files_view.style() is app_style
    assert panel.tabs.tabBar().styleSheet()
