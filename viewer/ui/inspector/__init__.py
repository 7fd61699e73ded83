"""The inspector panel (header, files, jump table, sizes, byte layout, problems) and its
overlays for the slice views (compression map, block grid, file grid)."""

from viewer.ui.inspector.install import install_inspector
from viewer.ui.inspector.overlay import QtCompressionOverlay, QtGridOverlay, QtSliceOverlay
from viewer.ui.inspector.panel import QtInspectorPanel

__all__ = [
    "QtInspectorPanel",
    "QtCompressionOverlay",
    "QtGridOverlay",
    "QtSliceOverlay",
    "install_inspector",
]
