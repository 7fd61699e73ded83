"""Side docks of the main window: a panel in a vertically scrolling holder, docked on the right
and tabbed with the Contrast dock (the Layers and Compare panels live there)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QFrame, QMainWindow, QScrollArea, QWidget

#: Pixels the holder adds beyond the panel and its scroll bar (the bar is drawn a little
#: wider than its size hint under the window's style sheet).
SLACK = 6


def dock_beside_contrast(window: QMainWindow, title: str, name: str, panel: QWidget
                         ) -> QDockWidget:
    """Put ``panel`` in a dock ``title`` (object name ``name``) on ``window``'s right, tabbed
    with ``window.contrast_dock`` when it has one; movable, floatable and closable.  The
    panel scrolls vertically and keeps to the dock's width."""
    holder = QScrollArea()
    holder.setObjectName(f"{name}Holder")
    holder.setWidgetResizable(True)
    holder.setFrameShape(QFrame.Shape.NoFrame)
    holder.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    holder.setWidget(panel)
    # The holder scrolls only vertically: it must be as wide as the panel's narrowest layout,
    # or the panel's right side (buttons, fields) is cut off.
    holder.setMinimumWidth(panel.minimumSizeHint().width()
                           + holder.verticalScrollBar().sizeHint().width() + SLACK)
    dock = QDockWidget(title, window)
    dock.setObjectName(name)
    dock.setWidget(holder)
    dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                     | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                     | QDockWidget.DockWidgetFeature.DockWidgetClosable)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    contrast_dock = getattr(window, "contrast_dock", None)
    if isinstance(contrast_dock, QDockWidget):
        window.tabifyDockWidget(contrast_dock, dock)
    return dock
