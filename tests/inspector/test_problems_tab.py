"""The Problems tab lists every problem the program knows of for the inspected layer: a chunk
of a damaged N5 dataset (written by tensorstore) that the views hatch red is listed as the
window meets it, and its row goes to the chunk; a healthy dataset says what was checked and
that nothing was found (pytest-qt, offscreen)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

main_window = pytest.importorskip("viewer.ui.main_window")
pytest.importorskip("tensorstore")

from viewer.ui.inspector import install_inspector  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "n5"))
from n5_writers import source, write_tensorstore  # noqa: E402

WAIT = 30000
SHAPE = (24, 16, 16)
BLOCK = (8, 8, 8)


@pytest.fixture()
def window(qtbot):  # type: ignore[no-untyped-def]
    w = main_window.QtMainWindow()
    qtbot.addWidget(w)
    w.resize(1100, 800)
    yield w
    w.side_panel.shutdown()


def _dataset(root: Path) -> Path:
    path = root / "n5"
    write_tensorstore(path, source(SHAPE, "uint16", seed=4, empty_corner=False), BLOCK,
                      {"type": "gzip"})
    return path


def test_a_chunk_the_views_hatch_red_is_listed_and_goes_to_its_chunk(
        window: Any, qtbot: Any, tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    bad = path / "1" / "1" / "0"
    raw = bad.read_bytes()
    mid = 16 + (len(raw) - 16) // 2
    bad.write_bytes(raw[:mid] + raw[mid + 14:])  # 14 bytes deleted inside the gzip stream
    panel = install_inspector(window)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        assert window.open_path(str(path), pos=(2, 2, 2))
    tab = panel.problems_tab
    window.state.set_cursor((12, 12, 2))  # the views now cross the damaged chunk
    qtbot.waitUntil(lambda: tab.problems_list.count() > 0, timeout=WAIT)
    texts = [tab.problems_list.item(r).text() for r in range(tab.problems_list.count())]
    assert any(str(bad) in t and "ChecksumError" in t for t in texts), texts
    assert "1 problem" in tab.summary.text()
    assert "Problems (1)" in panel.tabs.tabText(panel.tabs.indexOf(tab))
    # activating the row goes to the chunk
    window.state.set_cursor((1, 1, 1))
    row = next(r for r, t in enumerate(texts) if str(bad) in t)
    tab.problems_list.open_item(tab.problems_list.item(row))
    x, y, z = window.state.cursor
    assert 8 <= x < 16 and 8 <= y < 16 and 0 <= z < 8


def test_a_healthy_dataset_says_what_was_checked(window: Any, qtbot: Any,
                                                 tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    panel = install_inspector(window)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        assert window.open_path(str(path), pos=(12, 12, 2))
    tab = panel.problems_tab
    text = tab.summary.text()
    assert tab.problems_list.count() == 0
    assert text.startswith("No problems found. Checked:"), text
    assert "storage units scanned" in text and "while browsing" in text, text
