"""The inspector on a webKnossos dataset (opened through the registry, as the neutral
``Dataset``): a layer and a mag combo box pick the volume it looks into; cursor positions are
scaled between the window's voxels and the inspected mag's.

A real dataset on disk (64^3 voxels, mags 1, 2-2-1, 4-4-2, blocks of 8^3, files of 4^3 blocks:
8 files at mag 1, 2 at 2-2-1, 1 at 4-4-2, per layer)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from viewer.core.synthetic import EMVolume
from viewer.format import open_dataset
from viewer.format.webknossos.writer import write_synthetic_dataset
from viewer.ui.inspector import QtInspectorPanel, install_inspector

WAIT = 20000
MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]


@pytest.fixture(scope="module")
def wk_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = str(tmp_path_factory.mktemp("wk_inspect") / "ds")
    write_synthetic_dataset(root, EMVolume(5), shape=(64, 64, 64), mags=MAGS, block_len=8,
                            file_len=4, workers=1)
    return root


@pytest.fixture()
def panel(qtbot):  # type: ignore[no-untyped-def]
    p = QtInspectorPanel()
    qtbot.addWidget(p)
    yield p
    p.shutdown()


def scanned_files(panel: QtInspectorPanel) -> list[str]:
    return sorted(os.path.relpath(r.path, panel.volume.path)
                  for r in panel.files_tab.files_model.rows)


def test_combo_boxes_pick_the_inspected_mag(panel, qtbot, wk_root: str) -> None:
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        panel.set_dataset(open_dataset(wk_root), (1, 1, 1), own=True)
    assert panel.mag_selector.isVisibleTo(panel)
    layers, mags = panel.mag_selector.layer_combo, panel.mag_selector.mag_combo
    assert [layers.itemData(i) for i in range(layers.count())] == ["color", "segmentation"]
    assert [mags.itemText(i) for i in range(mags.count())] == ["1-1-1", "2-2-1", "4-4-2"]
    assert panel.volume.path == os.path.join(wk_root, "color", "1")
    assert len(scanned_files(panel)) == 8
    # the mag combo switches the files table, header and scan to mag 2-2-1
    picked: list[tuple[str, tuple[int, int, int]]] = []
    panel.mag_selected.connect(lambda layer, mag: picked.append((layer, mag)))
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        panel.mag_selector.mag_combo.setCurrentIndex(1)
    assert picked == [("color", (2, 2, 1))]
    assert panel.volume.path == os.path.join(wk_root, "color", "2-2-1")
    assert scanned_files(panel) == [os.path.join("z0", "y0", "x0.wkw"),
                                    os.path.join("z1", "y0", "x0.wkw")]
    assert "color/2-2-1" in panel.title.text()
    # the layer combo keeps the mag and switches to the segmentation layer's files
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        panel.mag_selector.layer_combo.setCurrentIndex(1)
    assert panel.volume.path == os.path.join(wk_root, "segmentation", "2-2-1")
    assert panel.volume.dtype == np.uint32
    assert len(scanned_files(panel)) == 2
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        panel.select_mag(mag="4-4-2")
    assert panel.volume.path == os.path.join(wk_root, "segmentation", "4-4-2")
    assert scanned_files(panel) == [os.path.join("z0", "y0", "x0.wkw")]


def test_cursor_is_scaled_between_window_and_mag(panel, qtbot, wk_root: str) -> None:
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        panel.set_dataset(open_dataset(wk_root), (1, 1, 1), layer="color", mag=(2, 2, 1),
                          own=True)
    # window voxel (40, 10, 50) is mag-2-2-1 voxel (20, 5, 50): file z1/y0/x0, block (2, 0, 2)
    with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
        panel.show_cursor((40, 10, 50))
    assert panel.current_path == os.path.join(wk_root, "color", "2-2-1", "z1", "y0", "x0.wkw")
    # picking a block here moves the window to that block's centre in window voxels
    panel.tabs.setCurrentIndex(2)
    row = panel.jump_tab.jump_model.row_of_index(1)  # block (1, 0, 0) of file z1: mag voxels 8..15
    with qtbot.waitSignal(panel.position_requested, timeout=WAIT) as moved:
        panel.jump_tab.select_block_row(row)
    # mag voxel centre (12, 4, 36) -> window voxel (24 + 0, 8 + 0, 36)
    assert moved.args[0] == (24, 8, 36)


def test_plain_dataset_hides_the_combo_boxes(panel, qtbot, wk_root: str) -> None:
    panel.set_dataset(open_dataset(wk_root), own=True)
    panel.set_dataset(None)
    with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
        panel.set_dataset(open_dataset(os.path.join(wk_root, "color", "4-4-2")), own=True)
    assert not panel.mag_selector.isVisibleTo(panel)
    assert panel.dataset is not None and panel.dataset.format == "wkw"
    panel.show_cursor((1, 1, 1))  # scale 1 again: the plain dataset's own voxels
    qtbot.waitUntil(lambda: panel.current_path is not None, timeout=WAIT)
    assert panel.scale.to_inspected((5, 6, 7)) == (5, 6, 7)
    assert panel.current_path.endswith(os.path.join("4-4-2", "z0", "y0", "x0.wkw"))


main_window = pytest.importorskip("viewer.ui.main_window")


def test_window_opening_a_webknossos_dataset(qtbot, wk_root: str) -> None:
    window = main_window.QtMainWindow()
    qtbot.addWidget(window)
    window.resize(1000, 760)
    panel = install_inspector(window)
    try:
        with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
            assert window.open_path(wk_root, pos=(32, 32, 20), zoom=2.0)
        assert panel.mag_selector.isVisibleTo(panel)
        assert panel.mag_selector.layer_combo.currentData() == "color"
        assert tuple(panel.mag_selector.mag_combo.currentData()) == (1, 1, 1)
        assert Path(panel.volume.path) == Path(wk_root) / "color" / "1"
        with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
            panel.select_mag(mag="2-2-1")
        assert len(panel.files_tab.files_model.rows) == 2
        # the window's cursor (mag-1 voxels) shows the 2-2-1 file holding it
        with qtbot.waitSignal(panel.file_shown, timeout=WAIT):
            window.state.set_cursor((40, 10, 50))
        assert panel.current_path == os.path.join(wk_root, "color", "2-2-1", "z1", "y0",
                                                  "x0.wkw")
        # The compression map of mag 4-4-2 (one file of 16 x 16 x 32 mag voxels) covers the
        # whole 64 x 64 window voxels of the XY view, not just its first 16 x 16.
        window.show()
        qtbot.waitExposed(window)
        with qtbot.waitSignal(panel.scan_finished, timeout=WAIT):
            panel.select_mag(mag="4-4-2")
        view = window.views[2]

        def colour(h: float, v: float) -> tuple[int, int, int]:
            image = view.grab().toImage()
            ratio = image.devicePixelRatio()
            x, y = view.to_widget(h, v)
            c = image.pixelColor(int(x * ratio), int(y * ratio))
            return (c.red(), c.green(), c.blue())

        with qtbot.waitSignal(panel.overlays_updated, timeout=WAIT):
            window.state.set_cursor((32, 32, 40))
        qtbot.wait(200)
        plain = colour(60, 60), colour(8, 8)
        panel.map_tab.map_toggle.setChecked(True)
        qtbot.wait(200)
        mapped = colour(60, 60), colour(8, 8)
        assert mapped[0] != plain[0] and mapped[1] != plain[1], (plain, mapped)
    finally:
        panel.shutdown()
