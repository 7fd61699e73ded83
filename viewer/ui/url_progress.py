"""What the window shows while a URL opens (a server that does not answer may take seconds):
at once, the views' banner and the status bar say what is being opened and for how long, and
Esc stops it.

``QtUrlProgress(window, url)`` is the ``waiting`` callback of ``viewer.ui.remote.open_dataset``
(called about every 20 ms: True while opening should go on).  While it lives it watches the
application's keys for Esc (before any shortcut: compare's Esc cancels a comparison otherwise);
``finish()`` stops watching and takes the banner down.  GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QMainWindow

from viewer.ui.error_banner import QtErrorBanner

#: How often (seconds) the elapsed time shown is updated.
STEP_S = 0.1


class QtUrlProgress(QObject):
    """The progress and the Esc of one URL being opened in ``window``."""

    def __init__(self, window: QMainWindow, banner: QtErrorBanner, url: str) -> None:
        super().__init__(window)
        self.window = window
        self.banner = banner
        self.url = url
        #: Esc was pressed: opening stops.
        self.cancelled = False
        self._shown = -1.0
        app = QApplication.instance()
        self._app = app if isinstance(app, QApplication) else None
        if self._app is not None:
            self._app.installEventFilter(self)

    def __call__(self, seconds: float) -> bool:
        if seconds == 0.0 or seconds - self._shown >= STEP_S:
            self._shown = seconds
            detail = f"{self.url}: waiting for an answer, {seconds:.1f} s (Esc stops)"
            self.banner.show_message("Opening a URL\u2026", detail)
            self.window.statusBar().showMessage(f"opening {self.url}\u2026 {seconds:.1f} s "
                                                "(Esc stops)")
        return not self.cancelled

    def finish(self) -> None:
        """Opening ended (opened, failed or stopped): stop watching the keys and say so."""
        if self._app is not None:
            self._app.removeEventFilter(self)
            self._app = None
        if "Opening a URL" in self.banner.text():
            self.banner.hide()
        self.window.statusBar().clearMessage()
        if self.cancelled:
            self.window.statusBar().showMessage(f"stopped opening {self.url}", 6000)
        self.deleteLater()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) \
                and isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape:
            self.cancelled = True
            event.accept()
            return True
        return False
