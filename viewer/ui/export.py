"""File ▸ Export View…: the focused view, or all views as laid out in the window, as a PNG
at screen resolution or twice it.

At 2x the views are drawn anew at twice their pixel density (the data at the finer scale a
2x screen would show, crisp lines and text), not an upscaled screenshot.  What it needs of the
window is ``ExportHost``.  GUI thread only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QPainter, QPixmap
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from viewer.core.slicing import VIEW_NAMES
from viewer.core.state import ViewerState
from viewer.ui.slice_view import BACKGROUND, QtSliceView

FOCUSED, ALL = "focused", "all"


class ExportHost(Protocol):
    """The window's members the export uses (``QtMainWindow`` has them)."""

    @property
    def state(self) -> ViewerState: ...

    @property
    def views(self) -> Mapping[int, QtSliceView]: ...

    @property
    def dataset_path(self) -> str | None: ...

    def show_message(self, text: str, timeout_ms: int = 0) -> None: ...

    def show_error(self, title: str, detail: str) -> None: ...


def render_views(window: ExportHost, which: str = FOCUSED, scale: int = 1) -> QPixmap:
    """The focused view (``FOCUSED``) or every visible view in its place (``ALL``), drawn at
    ``scale`` (1 or 2) times the screen's pixels."""
    views = window.views
    if which == FOCUSED:
        chosen = [views[window.state.focused]]
    else:
        chosen = [v for v in views.values() if v.isVisible()]
    if not chosen:
        raise ValueError("no view is shown")

    def place(view: QtSliceView) -> QRect:
        """Where ``view`` lies in the window (the top-level widget holding the views)."""
        return QRect(view.mapTo(view.window(), QPoint(0, 0)), view.size())

    area = place(chosen[0])
    for view in chosen[1:]:
        area = area.united(place(view))
    pixmap = QPixmap(area.width() * scale, area.height() * scale)
    pixmap.setDevicePixelRatio(scale)
    pixmap.fill(BACKGROUND)
    for view in chosen:
        view.render_scale = float(scale)
        try:
            at = place(view).topLeft() - area.topLeft()
            painter = QPainter(pixmap)
            view.render(painter, at)
            painter.end()
        finally:
            view.render_scale = 1.0
            view.update()
    return pixmap


def export_view(window: ExportHost, path: str, which: str = FOCUSED, scale: int = 1) -> bool:
    """Write ``render_views`` to ``path`` as PNG; False (and a message) when it cannot."""
    try:
        image = render_views(window, which, scale).toImage()
    except ValueError as exc:
        window.show_message(f"Nothing to export: {exc}", 6000)
        return False
    image.setDevicePixelRatio(1.0)
    from viewer.format import atomic  # beside the target, then renamed over it: never torn

    tmp = atomic.temp_name(path)
    try:
        # (the stub asks for bytes, PySide6 6.11 takes only str)
        if not image.save(tmp, "PNG"):  # type: ignore[call-overload]
            raise OSError("the PNG could not be written")
        atomic.commit_file(tmp, path)
    except OSError as exc:
        atomic.discard(tmp)
        window.show_error("Could not export the view", f"cannot write {path}: {exc}")
        return False
    window.show_message(f"exported {image.width()} \u00d7 {image.height()} pixels "
                                   f"to {path}", 6000)
    return True


class QtExportDialog(QDialog):
    """Which views, which resolution; then a file name."""

    def __init__(self, window: ExportHost) -> None:
        super().__init__(window if isinstance(window, QWidget) else None)
        self.setWindowTitle("Export View")
        column = QVBoxLayout(self)
        column.addWidget(QLabel("What to export"))
        name = VIEW_NAMES[window.state.focused]
        self.focused = QRadioButton(f"The focused view ({name})")
        self.all = QRadioButton("All views, as laid out in the window")
        self.focused.setChecked(True)
        column.addWidget(self.focused)
        column.addWidget(self.all)
        column.addWidget(QLabel("Resolution"))
        self.single = QRadioButton("Screen (1\u00d7)")
        self.double = QRadioButton("Twice the screen's (2\u00d7)")
        self.single.setChecked(True)
        for group, choices in ((QButtonGroup(self), (self.focused, self.all)),
                               (QButtonGroup(self), (self.single, self.double))):
            for button in choices:
                group.addButton(button)
        column.addWidget(self.single)
        column.addWidget(self.double)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        column.addWidget(buttons)

    @property
    def which(self) -> str:
        return ALL if self.all.isChecked() else FOCUSED

    @property
    def scale(self) -> int:
        return 2 if self.double.isChecked() else 1


def choose_and_export(window: ExportHost) -> None:
    """The menu entry: the dialog, a file name, the PNG."""
    dialog = QtExportDialog(window)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return
    name = (window.dataset_path or "view").rstrip("/").split("/")[-1] or "view"
    parent = window if isinstance(window, QWidget) else None
    path, _ = QFileDialog.getSaveFileName(parent, "Export view as PNG", f"{name}.png",
                                          "PNG images (*.png)")
    if path:
        if not path.lower().endswith(".png"):
            path += ".png"
        export_view(window, path, dialog.which, dialog.scale)


__all__ = ["ALL", "FOCUSED", "ExportHost", "QtExportDialog", "choose_and_export", "export_view",
           "render_views"]
