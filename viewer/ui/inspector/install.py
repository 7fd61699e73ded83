"""Mounting the inspector into the main window, in one call.

``install_inspector(window)`` needs only what ``viewer.ui.main_window.QtMainWindow`` offers:
``set_side_panel(widget)``, ``views`` (normal axis -> ``QtSliceView``), ``dataset``, ``state``
(``cursor``, ``set_cursor``), and the signals ``dataset_opened(path)`` and
``cursor_changed((x, y, z))``.  It puts the panel in the fourth quadrant, lays the compression
map and grids over the three slice views, and links the cursor both ways.

When the window opened a webKnossos dataset (or layer folder), the panel gets it too (the
window's ``webknossos`` attribute when it has one, else opened here from ``dataset_path``: one
JSON file) with the mag the window shows, so its layer and mag combo boxes can pick any other.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtWidgets import QApplication

from viewer.format import FormatError
from viewer.format.webknossos import WkDataset, is_webknossos_dataset
from viewer.ui.inspector.panel import QtInspectorPanel

Vec3 = tuple[int, int, int]


def webknossos_of(window: Any, path: str) -> tuple[WkDataset, str | None, Vec3] | None:
    """The webKnossos dataset behind the window's dataset, the layer and the mag it shows
    (None when the window shows a plain WKW dataset or the properties do not open)."""
    dataset = getattr(window, "dataset", None)
    if dataset is None or dataset.single_file is not None:
        return None
    wk = getattr(window, "webknossos", None)
    if not isinstance(wk, WkDataset):
        path = path or getattr(window, "dataset_path", "") or ""
        if not path or not os.path.exists(path) or not is_webknossos_dataset(path):
            return None
        try:
            wk = WkDataset(path)
        except (FormatError, OSError):
            return None
    shown = os.path.normcase(os.path.abspath(dataset.root))
    for layer in wk.layers:
        for mag in layer.mags:
            if os.path.normcase(os.path.abspath(mag.path)) == shown:
                return wk, layer.name, mag.mag
    return wk, None, (1, 1, 1)


def install_inspector(window: Any) -> QtInspectorPanel:
    """Create the inspector, mount it in ``window`` and wire it; returns the panel."""
    panel = QtInspectorPanel()
    window.set_side_panel(panel)
    for view in window.views.values():
        panel.attach_to_view(view)

    def on_dataset_opened(path: str) -> None:
        found = webknossos_of(window, path)
        if found is None:
            panel.set_webknossos(None)
            panel.set_dataset(window.dataset)
        else:
            wk, layer, mag = found
            panel.set_webknossos(wk, mag, layer=layer, mag=mag)
        panel.show_cursor(window.state.cursor)

    window.dataset_opened.connect(on_dataset_opened)
    window.cursor_changed.connect(panel.show_cursor)
    panel.position_requested.connect(window.state.set_cursor)
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(panel.shutdown)
    if getattr(window, "dataset", None) is not None:
        on_dataset_opened("")
    return panel
