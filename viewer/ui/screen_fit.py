"""Keep a top-level window inside the screen it opens on.

``fit_to_screen`` sizes a window to at most the screen's available geometry (the desktop
without panels and docks), less the window frame once the window system has drawn one, and
moves it so that its frame lies inside that geometry.  The program calls it for the first
window (its default size may be larger than a small screen) and after restoring a remembered
geometry (saved on another, larger screen).  GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, QTimer
from PySide6.QtGui import QGuiApplication, QScreen
from PySide6.QtWidgets import QWidget


def _screen_of(window: QWidget) -> QScreen | None:
    """The screen the window is on (before it shows: the one holding its centre, or the
    primary)."""
    screen = QGuiApplication.screenAt(window.geometry().center())
    if screen is None:
        screen = window.screen()
    return screen if screen is not None else QGuiApplication.primaryScreen()


def fit_to_screen(window: QWidget, wanted: QSize | None = None) -> None:
    """Resize ``window`` to ``wanted`` (default: its size now) or less, so that its frame fits
    the available geometry of its screen, and move it inside that geometry."""
    screen = _screen_of(window)
    if screen is None:
        return
    room = screen.availableGeometry()
    frame = window.frameGeometry()
    inner = window.geometry()
    # What the window system's frame adds (0 before the window shows).
    extra_w = max(0, frame.width() - inner.width())
    extra_h = max(0, frame.height() - inner.height())
    size = wanted if wanted is not None else window.size()
    width = max(1, min(size.width(), room.width() - extra_w))
    height = max(1, min(size.height(), room.height() - extra_h))
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
    frame = window.frameGeometry()
    x = min(max(frame.x(), room.x()), room.x() + room.width() - frame.width())
    y = min(max(frame.y(), room.y()), room.y() + room.height() - frame.height())
    x, y = max(x, room.x()), max(y, room.y())
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)


def inside_screen(window: QWidget) -> bool:
    """Whether ``window``'s frame lies inside its screen's available geometry."""
    screen = _screen_of(window)
    if screen is None:
        return True
    return QRect(screen.availableGeometry()).contains(window.frameGeometry())


def fit_after_show(window: QWidget) -> None:
    """Fit again once the window shows (its frame is known then): at once, and once more when
    the event loop has run (a window manager adds the frame a moment after showing)."""
    fit_to_screen(window)
    for delay_ms in (0, 300):  # the window as context: no call once it is gone
        QTimer.singleShot(delay_ms, window, lambda: fit_to_screen(window))
