"""``wait_until``: the GUI thread waits on signals for a condition (``--screenshot``'s waits),
returning as soon as it holds, and gives up at its time-out."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from viewer.ui.waiting import wait_until


class Ticker(QObject):
    ticked = Signal()


def test_returns_when_a_signal_brings_the_condition_about(qapp) -> None:
    ticker = Ticker()
    count = []
    ticker.ticked.connect(lambda: count.append(1))
    for ms in (20, 40, 60, 5000):  # the fourth would come only if the wait went on
        timer = QTimer(ticker)
        timer.setSingleShot(True)
        timer.timeout.connect(ticker.ticked.emit)
        timer.start(ms)
    assert wait_until(lambda: len(count) >= 3, [ticker.ticked], timeout_s=30.0)
    assert len(count) == 3  # the third tick ended the wait


def test_a_condition_that_holds_already_does_not_wait(qapp) -> None:
    ticker = Ticker()
    assert wait_until(lambda: True, [ticker.ticked], timeout_s=30.0)


def test_gives_up_at_the_time_out_and_disconnects(qapp) -> None:
    ticker = Ticker()
    checks = []

    def done() -> bool:
        checks.append(1)
        return False

    assert not wait_until(done, [ticker.ticked], timeout_s=0.05)
    before = len(checks)
    ticker.ticked.emit()  # no longer connected: the condition is not checked again
    assert len(checks) == before
