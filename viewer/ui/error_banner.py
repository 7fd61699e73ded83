"""The error banner above the views, and the words an exception is said in.

``QtErrorBanner`` is the dismissable red strip ``QtMainWindow.show_error`` fills; ``_describe``
turns an exception met while opening a dataset into the banner's detail line.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget


class QtErrorBanner(QFrame):
    """A red strip above the views that says what went wrong, in words; dismissable."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("errorBanner")
        self.setStyleSheet("#errorBanner { background: #5c1d22; border-bottom: 1px solid #a33; }"
                           "QLabel { color: #ffe9e9; }")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QPushButton("Dismiss")
        close.setFlat(True)
        close.setStyleSheet("color: #ffe9e9;")
        close.clicked.connect(self.hide)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 6, 6)
        row.addWidget(self.label, 1)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_message(self, title: str, detail: str) -> None:
        self.label.setText(f"<b>{_escape(title)}</b><br>{_escape(detail)}")
        self.show()

    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, FileNotFoundError):
        return f"no such file or folder: {exc.filename}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename}"
    return str(exc) or type(exc).__name__
