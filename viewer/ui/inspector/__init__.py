"""The inspector panel (header, units, chunk table, sizes, byte layout, problems, map) and its
overlay on the slice views (compression map, chunk grid, unit grid)."""

from viewer.ui.inspector.install import InspectorWindow, install_inspector
from viewer.ui.inspector.overlay import QtSliceOverlay
from viewer.ui.inspector.panel import QtInspectorPanel

__all__ = [
    "InspectorWindow",
    "QtInspectorPanel",
    "QtSliceOverlay",
    "install_inspector",
]
