"""The inspector panel on real WKW files, opened through the format registry like the window
does (pytest-qt, offscreen)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from inspector_data import BLOCK_LEN, FILE_LEN, SIDE, damage_jump_table, parse_independently
from PySide6.QtCore import QPoint, Qt

from viewer.core import inspect
from viewer.format import Volume, open_dataset, wkw
from viewer.ui.inspector import QtInspectorPanel
from viewer.ui.inspector.models import SORT_ROLE, QtJumpTableModel
from viewer.ui.inspector.overlay import colormap
from viewer.ui.slice_view import BACKGROUND

WAIT = 20000


@pytest.fixture()
def panel(qtbot) -> Iterator[QtInspectorPanel]:  # type: ignore[no-untyped-def]
    p = QtInspectorPanel()
    qtbot.addWidget(p)
    p.resize(900, 700)
    p.show()
    yield p
    p.shutdown()


def open_in(panel: QtInspectorPanel, qtbot, root: Path) -> Volume:  # type: ignore[no-untyped-def]
    with qtbot.waitSignals([panel.file_shown, panel.scan_finished], timeout=WAIT):
        panel.set_dataset(open_dataset(root), own=True)
    assert panel.volume is not None
    return panel.volume


@pytest.mark.parametrize("which", ["known_dataset", "reference_dataset"])
def test_shows_header_and_jump_table_of_a_known_file(panel, qtbot, which: str,
                                                     request: pytest.FixtureRequest) -> None:
    root: Path = request.getfixturevalue(which)
    open_in(panel, qtbot, root)
    path = root / "z0" / "y0" / "x0.wkw"
    truth = parse_independently(path)
    assert panel.current_path == str(path)
    # Header: the raw bytes in hex, each field as stored.
    header = panel.header_tab
    assert header.header_hex.text() == "raw: " + truth["raw16"].hex(" ")  # type: ignore[union-attr]
    shown = {header.header_fields.item(r, 0).text(): header.header_fields.item(r, 2).text()
             for r in range(header.header_fields.rowCount())}
    assert shown == {"magic": "WKW", "version": "1", "perDimLog2": str(truth["per_dim"]),
                     "blockType": "3", "voxelType": "1", "voxelSize": "1",
                     "dataOffset": str(truth["data_offset"])}
    assert header.header_diffs.text() == "matches header.wkw"
    volume_header = {header.volume_table.item(r, 0).text(): header.volume_table.item(r, 1).text()
                     for r in range(header.volume_table.rowCount())}
    assert volume_header["block_len"] == str(BLOCK_LEN)  # header.wkw, as Volume.info() says
    assert volume_header["file_len"] == str(FILE_LEN)
    # Jump table: one row per block, sizes and ranges as the file's bytes say.
    model = panel.jump_tab.jump_model
    cols = QtJumpTableModel.COLUMNS
    assert model.rowCount() == FILE_LEN ** 3 == len(truth["sizes"])  # type: ignore[arg-type]
    for row in range(model.rowCount()):
        def cell(name: str, role: int = SORT_ROLE, row: int = row) -> object:
            return model.data(model.index(row, cols.index(name)), role)
        assert cell("index") == row
        assert cell("stored bytes") == truth["sizes"][row]  # type: ignore[index]
        assert cell("offset") == truth["starts"][row]  # type: ignore[index]
        assert cell("end") == truth["ends"][row]  # type: ignore[index]
        assert cell("stored bytes", Qt.ItemDataRole.DisplayRole) == f"{truth['sizes'][row]:,}"  # type: ignore[index]
    x, y, z = (model.data(model.index(8, cols.index(c)), SORT_ROLE) for c in ("cx", "cy", "cz"))
    assert (x, y, z) == (2, 0, 0)  # Morton index 8 is block (2, 0, 0)


def test_selecting_a_row_moves_the_cursor_and_the_cursor_selects_the_row(panel, qtbot,
                                                                         known_dataset) -> None:
    open_in(panel, qtbot, known_dataset)
    panel.tabs.setCurrentIndex(2)
    view = panel.jump_tab.jump_view
    rect = view.visualRect(panel.jump_tab.jump_model.index(1, 0))
    selected: list[tuple[str, int]] = []
    requested: list[object] = []
    panel.block_selected.connect(lambda path, index: selected.append((path, index)))
    panel.position_requested.connect(requested.append)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert selected == [(str(known_dataset / "z0" / "y0" / "x0.wkw"), 1)]
    assert requested == [(BLOCK_LEN + BLOCK_LEN // 2, BLOCK_LEN // 2, BLOCK_LEN // 2)]
    # The keyboard moves along the table, and the cursor with it: row 2 is block (0, 1, 0).
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert selected[-1] == (str(known_dataset / "z0" / "y0" / "x0.wkw"), 2)
    assert requested[-1] == (BLOCK_LEN // 2, BLOCK_LEN + BLOCK_LEN // 2, BLOCK_LEN // 2)

    # Moving the cursor into the other file shows that file and selects the block under it.
    with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
        panel.show_cursor((SIDE + 2 * BLOCK_LEN + 1, BLOCK_LEN + 1, 0))
    assert panel.current_path == str(known_dataset / "z0" / "y0" / "x1.wkw")
    selected_rows = [i.row() for i in view.selectionModel().selectedRows()]
    assert selected_rows == [int(wkw.morton.encode(2, 1, 0))]
    # Within the same file, the selection follows at once.
    panel.show_cursor((SIDE + 1, 1, 3 * BLOCK_LEN))
    assert [i.row() for i in view.selectionModel().selectedRows()] == [
        int(wkw.morton.encode(0, 0, 3))]


def test_sorting_the_jump_table_by_size(panel, qtbot, known_dataset) -> None:
    open_in(panel, qtbot, known_dataset)
    truth = parse_independently(known_dataset / "z0" / "y0" / "x0.wkw")
    panel.jump_tab.jump_view.sortByColumn(QtJumpTableModel.COLUMNS.index("stored bytes"),
                                 Qt.SortOrder.DescendingOrder)
    top = panel.jump_tab.jump_model.index_of_row(0)
    assert top == int(np.argmax(truth["sizes"]))  # type: ignore[arg-type]
    assert top == 1  # the random block


def pixel_at(view, image, h: float, v: float) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    """The colour the grabbed ``image`` of ``view`` shows at data (h, v)."""
    x, y = view.to_widget(h, v)
    ratio = image.devicePixelRatio()
    c = image.pixelColor(int(x * ratio), int(y * ratio))
    return (c.red(), c.green(), c.blue())


def test_compression_overlay_colours_incompressible_and_zero_blocks_apart(panel, qtbot,
                                                                          known_dataset,
                                                                          slice_view) -> None:
    open_in(panel, qtbot, known_dataset)
    # The XY view of the program, cursor away from the blocks looked at (its cross is drawn).
    view = slice_view(2, ((0, 0, 0), (2 * SIDE, SIDE, SIDE)), (SIDE, SIDE // 2, 3), zoom=6.0)
    panel.map_tab.map_toggle.setChecked(True)
    panel.attach_to_view(view)
    with qtbot.waitSignal(panel.overlays_updated, timeout=WAIT):
        panel.show_cursor((0, 0, 3))
    image = view.grab().toImage()
    b = BLOCK_LEN
    random_px = pixel_at(view, image, b + b / 2, b / 2)  # block (1, 0): random bytes
    zero_px = pixel_at(view, image, b / 2, b / 2)  # block (0, 0): zeros
    other_zero = pixel_at(view, image, 2 * b + b / 2, b + b / 2)  # block (2, 1): zeros
    distance = sum(abs(a - c) for a, c in zip(random_px, zero_px, strict=True))
    assert distance > 150, (random_px, zero_px)
    assert zero_px == other_zero
    # The toggle hides the map: the view's own background shows.
    panel.map_tab.map_toggle.setChecked(False)
    image = view.grab().toImage()
    hidden = pixel_at(view, image, b + b / 2, b / 2)
    assert hidden == BACKGROUND.getRgb()[:3]


def test_ratio_metric_reverses_the_colours(panel, qtbot, known_dataset, slice_view) -> None:
    open_in(panel, qtbot, known_dataset)
    view = slice_view(2, ((0, 0, 0), (2 * SIDE, SIDE, SIDE)), (0, 0, 3))
    overlay = panel.attach_to_view(view)
    with qtbot.waitSignal(panel.overlays_updated, timeout=WAIT):
        panel.show_cursor((0, 0, 3))
    # The map's pixels as the XY view draws them: rows along y, so chunk (u, v) is [v, u].
    size_image = np.array(overlay.pixels)
    with qtbot.waitSignal(panel.overlays_updated, timeout=WAIT):
        panel.map_tab.metric_box.setCurrentIndex(1)
    assert overlay.plane is not None and overlay.plane.metric == inspect.RATIO
    ratio_image = np.array(overlay.pixels)
    lut = colormap().getLookupTable(0.0, 1.0, 256, alpha=False)
    # Random block: the top of the size scale and the bottom of the ratio scale (ratio ~1).
    assert size_image[0, 1, :3].tolist() == lut[255].tolist()
    assert ratio_image[0, 1, :3].tolist() == lut[0].tolist()
    # Zero block: near the bottom of the size scale, well up the ratio scale.
    assert size_image[0, 0, :3].tolist() != lut[255].tolist()
    assert ratio_image[0, 0, :3].tolist() != lut[0].tolist()


def test_files_table_fills_and_selecting_a_file_moves_into_it(panel, qtbot,
                                                              known_dataset) -> None:
    open_in(panel, qtbot, known_dataset)
    rows = panel.files_tab.files_model.rows
    assert sorted(r.position for r in rows) == [(0, 0, 0), (1, 0, 0)]  # type: ignore[type-var]
    for r in rows:
        truth = parse_independently(Path(r.path))
        assert r.size_max == max(truth["sizes"])  # type: ignore[type-var]
        assert r.size_on_disk == truth["file_size"]
    row = next(k for k, r in enumerate(rows) if r.position == (1, 0, 0))
    panel.tabs.setCurrentIndex(1)
    rect = panel.files_tab.files_view.visualRect(panel.files_tab.files_model.index(row, 0))
    with qtbot.waitSignal(panel.position_requested, timeout=WAIT) as blocker:
        qtbot.mouseClick(panel.files_tab.files_view.viewport(), Qt.MouseButton.LeftButton,
                         pos=rect.center())
    assert blocker.args == [(SIDE + SIDE // 2, SIDE // 2, SIDE // 2)]


def test_problems_are_listed_and_one_click_from_their_block(panel, qtbot,
                                                            known_dataset) -> None:
    path = known_dataset / "z0" / "y0" / "x1.wkw"
    ends = parse_independently(path)["ends"]
    damage_jump_table(path, {5: ends[4]})  # type: ignore[index]  # block 5: zero length
    open_in(panel, qtbot, known_dataset)
    assert panel.problems_tab.problems_list.count() >= 1
    item = panel.problems_tab.problems_list.item(0)
    assert "block 5" in item.text() and "zero length" in item.text()
    with qtbot.waitSignal(panel.block_selected, timeout=WAIT) as blocker:
        panel.problems_tab.problems_list.open_item(item)
    assert blocker.args == [str(path), 5]
    qtbot.waitUntil(lambda: panel.current_path == str(path), timeout=WAIT)
    flags_col = QtJumpTableModel.COLUMNS.index("flags")
    model = panel.jump_tab.jump_model
    assert model.data(model.index(model.row_of_index(5), flags_col)) == "zero length"


def test_histogram_bar_lists_its_blocks(panel, qtbot, known_dataset) -> None:
    open_in(panel, qtbot, known_dataset)
    table = panel.current_table
    assert table is not None
    edges = inspect.histogram_edges(table.chunk_nbytes)
    random_bin = int(np.searchsorted(edges, table.sizes[1], side="right")) - 1
    panel.sizes_tab.list_histogram_bin(random_bin)
    listed = panel.sizes_tab.hist_list
    texts = [listed.item(k).text() for k in range(listed.count())]
    assert texts == [f"chunk 1 (1, 0, 0): {int(table.sizes[1]):,} B"]
    panel.tabs.setCurrentIndex(3)  # plots of hidden tabs are drawn when shown
    heights = panel.sizes_tab.hist_plot.counts
    assert int(np.sum(heights)) == FILE_LEN ** 3
    plot = panel.sizes_tab.hist_plot  # a click on the bar lists it too
    area = plot.plot_rect()
    middle = (edges[random_bin] + edges[random_bin + 1]) / 2
    x = area.left() + (middle - edges[0]) / (edges[-1] - edges[0]) * area.width()
    panel.sizes_tab.hist_list.clear()
    qtbot.mouseClick(plot, Qt.MouseButton.LeftButton, pos=QPoint(int(x), int(area.center().y())))
    assert [listed.item(k).text() for k in range(listed.count())] == texts


def test_decoding_on_request_flags_blocks_and_lists_broken_ones(panel, qtbot,
                                                               known_dataset) -> None:
    path = known_dataset / "z0" / "y0" / "x0.wkw"
    start = parse_independently(path)["starts"][2]  # type: ignore[index]
    raw = bytearray(path.read_bytes())
    raw[start:start + 4] = b"\xff\xff\xff\xff"  # block 2 no longer decodes
    path.write_bytes(bytes(raw))
    open_in(panel, qtbot, known_dataset)
    assert panel.problems_tab.problems_list.count() == 0  # the scan decodes nothing
    table = panel.current_table
    assert table is not None and not (table.flags & inspect.DECODED).any()  # nothing decoded yet
    panel.jump_tab.decode_button.click()
    qtbot.waitUntil(lambda: bool((table.flags & inspect.DECODED).all()), timeout=WAIT)
    assert table.flags[0] & inspect.ALL_ZERO
    assert not table.flags[1] & inspect.CONSTANT
    assert table.flags[2] & inspect.DECODE_FAILED
    assert panel.problems_tab.problems_list.count() == 1
    assert "block 2" in panel.problems_tab.problems_list.item(0).text()


def test_byte_layout_highlights_the_blocks_each_plane_needs(panel, qtbot, known_dataset) -> None:
    open_in(panel, qtbot, known_dataset)
    panel.show_cursor((BLOCK_LEN + 1, 2 * BLOCK_LEN + 1, 3 * BLOCK_LEN + 1))
    panel.tabs.setCurrentIndex(4)  # the plot is built and filled when its tab is shown
    truth = parse_independently(known_dataset / "z0" / "y0" / "x0.wkw")

    def coords(m: int) -> tuple[int, int, int]:  # Morton: x bit 0, then y, then z
        c = [0, 0, 0]
        for bit in range(6):
            c[bit % 3] |= ((m >> bit) & 1) << (bit // 3)
        return (c[0], c[1], c[2])

    for axis, layer in ((2, 3), (1, 2), (0, 1)):
        xs, ys = panel.layout_tab.layout_marks[axis].getData()
        expected = [m for m in range(FILE_LEN ** 3) if coords(m)[axis] == layer]
        assert xs.astype(int).tolist() == expected
        assert ys.astype(int).tolist() == [truth["starts"][m] for m in expected]  # type: ignore[index]
    assert "XY plane z=25: 16 chunks" in panel.layout_tab.layout_text.text()


def test_map_tab_colour_bar_spans_the_metric(panel, qtbot, known_dataset) -> None:
    open_in(panel, qtbot, known_dataset)
    panel.tabs.setCurrentIndex(6)
    assert panel.map_tab.colorbar is not None
    assert tuple(panel.map_tab.colorbar.levels()) == (0.0, float(BLOCK_LEN ** 3))
    panel.map_tab.metric_box.setCurrentIndex(1)
    assert tuple(panel.map_tab.colorbar.levels()) == (0.0, 8.0)


def test_a_file_that_does_not_open_is_shown_with_its_error(panel, qtbot, known_dataset) -> None:
    path = known_dataset / "z0" / "y0" / "x0.wkw"
    path.write_bytes(path.read_bytes()[:100])  # truncated inside the jump table
    open_in(panel, qtbot, known_dataset)
    assert panel.jump_tab.jump_model.rowCount() == 0
    assert "truncated" in panel.header_tab.header_path.text()
    # the header itself is shown
    assert panel.header_tab.header_hex.text().startswith("raw: 57 4b 57")
    assert "truncated" in panel.jump_tab.blocks_summary.text()
    problems = panel.problems_tab.problems_list
    texts = [problems.item(k).text() for k in range(problems.count())]
    assert any("truncated" in t and "x0.wkw" in t for t in texts)
