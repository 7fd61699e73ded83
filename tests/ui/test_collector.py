"""Reference cycles are collected on the GUI thread, never on a worker that happens to
allocate (``viewer.ui.collector``): a Qt object in a cycle must die on its own thread."""

from __future__ import annotations

import gc
import threading
import time

from viewer.ui import collector


class _Witness:
    """Part of a cycle; says on which thread it was collected."""

    died_on: list[int] = []

    def __init__(self) -> None:
        self.me = self  # the cycle

    def __del__(self) -> None:
        _Witness.died_on.append(threading.get_ident())


def _allocate_on_a_worker() -> None:
    def work() -> None:  # far past every generation's threshold: tuples are tracked
        keep = []
        for k in range(200_000):
            keep.append((k, [k]))
            if len(keep) > 1000:
                keep.clear()

    t = threading.Thread(target=work)
    t.start()
    t.join(60)


def test_cycles_die_on_the_gui_thread_not_on_a_worker(qtbot) -> None:
    collector.collect_on_gui_thread()
    assert collector.installed()
    assert not gc.isenabled()
    _Witness.died_on.clear()
    for _ in range(50):
        _Witness()
    _allocate_on_a_worker()  # would have collected them there, with automatic collection
    assert _Witness.died_on == []
    main = threading.get_ident()
    deadline = time.monotonic() + 10 * collector.INTERVAL_MS / 1000 + 5
    while len(_Witness.died_on) < 50 and time.monotonic() < deadline:
        qtbot.wait(collector.INTERVAL_MS)
        for _ in range(1000):  # what a GUI allocates meanwhile, so that a collection is due
            _ = (object(), [])
    assert _Witness.died_on == [main] * 50


def test_collect_if_due_follows_the_thresholds() -> None:
    collector.collect_if_due()
    gc.collect(0)
    assert collector.collect_if_due() == 0  # nothing due right after a collection
    threshold = gc.get_threshold()[0]
    for _ in range(threshold + 10):
        _Witness()
    assert gc.get_count()[0] > threshold
    found = collector.collect_if_due()
    assert found >= threshold  # the witnesses (and their dicts) were found
    assert gc.get_count()[0] < threshold
