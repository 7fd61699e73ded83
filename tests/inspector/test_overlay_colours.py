"""The compression overlay's colours: viridis from pyqtgraph, read once, before any dataset."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from viewer.ui.inspector import overlay


def test_overlay_colours_are_pyqtgraphs_viridis_read_once() -> None:
    overlay.colormap_lut.cache_clear()
    values = np.array([[0.0, 100.0, np.nan], [4096.0, 9000.0, 2048.0]])
    got = overlay.colourise(values, "size", 4096)
    lut = pg.colormap.get("viridis").getLookupTable(0.0, 1.0, 256, alpha=True)
    norm = np.clip(np.nan_to_num(values) / 4096, 0, 1)
    want = lut[np.round(norm * 255).astype(int)].astype(np.uint8)
    want[..., 3] = np.where(np.isnan(values), 0, overlay.OVERLAY_ALPHA)
    assert np.array_equal(got, want)
    assert overlay.colormap_lut() is overlay.colormap_lut()
    assert not overlay.colormap_lut().flags.writeable
    overlay.colourise(values, "ratio", 4096)[0, 0, 0] = 1  # its own array, not the table


def test_the_overlays_read_their_colours_when_made(qtbot) -> None:  # type: ignore[no-untyped-def]
    from viewer.ui.inspector.panel import QtInspectorPanel

    overlay.colormap_lut.cache_clear()
    panel = QtInspectorPanel()
    qtbot.addWidget(panel)
    assert overlay.colormap_lut.cache_info().currsize == 1
    panel.shutdown()
