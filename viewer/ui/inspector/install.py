"""Mounting the inspector into the main window, in one call.

``install_inspector(window)`` needs only what ``viewer.ui.main_window.QtMainWindow`` offers:
``set_side_panel(widget)``, ``views`` (normal axis -> ``QtSliceView``), ``dataset``, ``state``
(``cursor``, ``set_cursor``), and the signals ``dataset_opened(path)`` and
``cursor_changed((x, y, z))``.  It puts the panel in the fourth quadrant, lays the compression
map and grids over the three slice views, and links the cursor both ways.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QApplication

from viewer.ui.inspector.panel import QtInspectorPanel


def install_inspector(window: Any) -> QtInspectorPanel:
    """Create the inspector, mount it in ``window`` and wire it; returns the panel."""
    panel = QtInspectorPanel()
    window.set_side_panel(panel)
    for view in window.views.values():
        panel.attach_to_view(view)

    def on_dataset_opened(_path: str) -> None:
        panel.set_dataset(window.dataset)
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
