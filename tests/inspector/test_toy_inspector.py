"""The inspector on the test-only toy format (one ``.npy`` file per chunk, chunks of
16 x 8 x 4 voxels): units, chunk table, header, sizes, map and problems through the volume
interface alone, the proof that nothing above ``viewer.format`` knows WKW."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from toyformat import write_toy

from viewer.core import inspect
from viewer.format import open_dataset, open_volume
from viewer.ui.inspector import QtInspectorPanel
from viewer.ui.inspector.models import SORT_ROLE

WAIT = 20000
CHUNK = (16, 8, 4)
ABSENT = (1, 0, 0)


@pytest.fixture()
def toy(tmp_path: Path) -> Path:
    data = np.zeros((1, 40, 16, 10), dtype=np.uint16)
    data[:, :16] = np.random.default_rng(5).integers(0, 60000, size=(1, 16, 16, 10))
    return Path(write_toy(tmp_path / "toy", data, CHUNK, skip=[ABSENT]))


@pytest.fixture()
def panel(qtbot) -> Iterator[QtInspectorPanel]:  # type: ignore[no-untyped-def]
    p = QtInspectorPanel()
    qtbot.addWidget(p)
    p.resize(900, 700)
    p.show()
    yield p
    p.shutdown()


def open_in(panel: QtInspectorPanel, qtbot, root: Path) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignals([panel.file_shown, panel.scan_finished], timeout=WAIT):
        panel.set_dataset(open_dataset(root), own=True)


def test_units_chunk_table_and_header_of_the_toy_format(panel, qtbot, toy: Path) -> None:
    open_in(panel, qtbot, toy)
    files = sorted(str(p) for p in (toy / "c").iterdir())
    assert sorted(r.path for r in panel.files_tab.files_model.rows) == files
    assert not panel.mag_selector.isVisibleTo(panel)  # one layer, one mag
    assert "toy npy" in panel.title.text() and "chunk 16\u00d78\u00d74" in panel.title.text()
    assert panel.current_path == str(toy / "c" / "0.0.0.npy")
    model = panel.jump_tab.jump_model
    assert model.rowCount() == 1
    cols = model.columns
    assert cols[-1] == "encoding"  # the format's own per-chunk column (describe_chunk)
    row = {c: model.data(model.index(0, k), SORT_ROLE) for k, c in enumerate(cols)}
    assert row["stored bytes"] == os.path.getsize(toy / "c" / "0.0.0.npy")
    assert row["offset"] == 0 and row["encoding"] == "npy"
    header = panel.header_tab
    geometry = {header.geometry_table.item(r, 0).text(): header.geometry_table.item(r, 1).text()
                for r in range(header.geometry_table.rowCount())}
    assert geometry["format"] == "toy"
    assert geometry["chunk shape"] == "16 x 8 x 4 voxels"
    assert header.header_hex.text() == ""  # the toy format has no header bytes to show
    volume_header = {header.volume_table.item(r, 0).text(): header.volume_table.item(r, 1).text()
                     for r in range(header.volume_table.rowCount())}
    assert volume_header["chunk_shape"] == "[16, 8, 4]"


def test_absent_chunk_and_non_cubic_map(panel, qtbot, toy: Path, slice_view) -> None:
    open_in(panel, qtbot, toy)
    with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
        panel.show_cursor((20, 1, 1))  # chunk (1, 0, 0): absent
    assert panel.current_table is None
    assert "absent" in panel.jump_tab.blocks_summary.text()
    bounds = ((0, 0, 0), (40, 16, 10))
    overlay = panel.attach_to_view(slice_view(2, bounds, (1, 1, 2)))  # XY
    side = panel.attach_to_view(slice_view(0, bounds, (1, 1, 2)))  # YZ
    with qtbot.waitSignal(panel.overlays_updated, timeout=WAIT):
        panel.show_cursor((1, 1, 2))  # the XY plane through z chunk 0
    plane = overlay.plane
    assert plane is not None and plane.chunk_size == (16, 8)
    assert plane.values.shape == (3, 2)  # ceil(40/16) x ceil(16/8) chunks on the XY plane
    assert np.isnan(plane.values[1, 0])  # the absent chunk
    assert plane.values[0, 0] == os.path.getsize(toy / "c" / "0.0.0.npy")
    assert plane.values[2, 1] == os.path.getsize(toy / "c" / "2.1.0.npy")
    block, unit = overlay.grid_spacing()
    assert block == (16, 8)
    assert side.grid_spacing()[0] == (8, 4)


def test_decoding_finds_a_damaged_toy_chunk(panel, qtbot, toy: Path) -> None:
    bad = toy / "c" / "0.0.0.npy"
    bad.write_bytes(b"damaged")
    open_in(panel, qtbot, toy)
    assert panel.problems_tab.problems_list.count() == 0  # structure only: nothing decoded yet
    table = panel.current_table
    assert table is not None
    panel.jump_tab.decode_button.click()
    qtbot.waitUntil(lambda: bool(table.flags[0] & inspect.DECODED), timeout=WAIT)
    assert table.flags[0] & inspect.DECODE_FAILED
    qtbot.waitUntil(lambda: panel.problems_tab.problems_list.count() == 1, timeout=WAIT)
    assert str(bad) in panel.problems_tab.problems_list.item(0).text()


def test_scan_of_the_toy_format_in_a_child_process(toy: Path) -> None:
    volume = open_volume(toy)
    done = threading.Event()
    rows: list[inspect.UnitStats] = []

    def on_batch(batch: inspect.ScanBatch) -> None:
        rows.extend(batch.rows)
        if batch.finished:
            done.set()

    scan = inspect.UnitScan(volume, on_batch, use_process=True, reopen=inspect.Reopen(str(toy)))
    scan.PROCESS_THRESHOLD = 0
    scan.start()
    assert done.wait(60)
    assert len(rows) == len(list((toy / "c").iterdir()))
    assert all(r.compression == "npy" and r.chunk_count == 1 for r in rows)


main_window = pytest.importorskip("viewer.ui.main_window")


def test_the_window_shows_the_toy_format_in_the_inspector(qtbot, toy: Path) -> None:  # type: ignore[no-untyped-def]
    from viewer.ui.inspector import install_inspector

    window = main_window.QtMainWindow()
    qtbot.addWidget(window)
    window.resize(1000, 760)
    panel = install_inspector(window)
    try:
        with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
            assert window.open_path(str(toy), pos=(1, 1, 1))
        assert panel.dataset is window.opened  # the window's dataset, shared, not reopened
        assert panel.volume is window.dataset
        with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
            window.state.set_cursor((33, 9, 5))  # chunk (2, 1, 1)
        assert panel.current_path == str(toy / "c" / "2.1.1.npy")
        # a row of the Units table moves the window's cursor to that unit's centre
        panel.tabs.setCurrentIndex(1)
        row = panel.files_tab.files_model.row_of_path(str(toy / "c" / "0.1.1.npy"))
        assert row is not None
        with qtbot.waitSignal(panel.position_requested, timeout=WAIT) as moved:
            panel.files_tab.files_view.selectRow(row)
        assert moved.args[0] == (8, 8 + 4, 4 + 2) == window.state.cursor
    finally:
        panel.shutdown()
