"""The inspector panel (header, files, jump table, sizes, byte layout, problems) and its
overlays for the slice views (compression map, block grid, file grid)."""

from viewer.ui.inspector.overlay import QtCompressionOverlay, QtGridOverlay
from viewer.ui.inspector.panel import QtInspectorPanel

__all__ = ["QtInspectorPanel", "QtCompressionOverlay", "QtGridOverlay"]
