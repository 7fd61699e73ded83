"""Waiting on the GUI thread for a condition that signals bring about, without polling.

``wait_until(done, signals, timeout_s)`` runs a local event loop until ``done()`` holds,
checking it after each emission of one of ``signals`` (and once before), or until the time-out;
it returns whether ``done()`` holds.  ``--screenshot`` waits this way for the planes, the
inspector and compare's B.  GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer, SignalInstance


def wait_until(done: Callable[[], bool], signals: Sequence[SignalInstance],
               timeout_s: float) -> bool:
    """Process events until ``done()`` holds (checked after every emission of ``signals``) or
    ``timeout_s`` passed; whether it holds."""
    app = QCoreApplication.instance()
    if app is not None:
        app.processEvents()  # what is already posted (a resize, a queued arrival) first
    if done():
        return True
    loop = QEventLoop()

    def check(*_: object) -> None:
        if done():
            loop.quit()

    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(loop.quit)
    for signal in signals:
        signal.connect(check)
    try:
        timer.start(max(1, int(timeout_s * 1000)))
        if not done():
            loop.exec()
    finally:
        timer.stop()
        for signal in signals:
            signal.disconnect(check)
    return done()
