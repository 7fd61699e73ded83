"""Reference cycles are collected on the GUI thread, never on a worker that happens to
allocate (``viewer.ui.collector``): a Qt object in a cycle must die on its own thread."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
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
    kept: list[tuple[object, list[int]]] = []
    while len(_Witness.died_on) < 50 and time.monotonic() < deadline:
        qtbot.wait(collector.INTERVAL_MS)
        # What a GUI allocates meanwhile, kept alive so that the count of tracked objects
        # passes the threshold and a collection is due (freed at once, they would not count).
        kept.extend((object(), []) for _ in range(1000))
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


CHILD = textwrap.dedent("""
    import sys, threading, time
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget
    from viewer.ui import collector

    app = QApplication([])
    if sys.argv[1] == "on":
        collector.collect_on_gui_thread()
    stop = threading.Event()

    def busy() -> None:  # a worker allocating tracked objects: where collections start
        while not stop.is_set():
            _ = [(i, [i]) for i in range(2000)]
            time.sleep(0.0002)  # let the GUI thread have the interpreter lock in between

    class Cyclic(QWidget):
        def __init__(self) -> None:
            super().__init__()
            self.me = self  # a cycle only the collector frees
            QVBoxLayout(self).addWidget(QLabel("x"))
            self.timer = QTimer(self)
            self.timer.start(1)

    threading.Thread(target=busy, daemon=True).start()
    for _ in range(int(sys.argv[2])):
        w = Cyclic()
        w.show()
        app.processEvents()
        w.hide()
        del w
        app.processEvents()
    stop.set()
    print("ok")
""")


def test_qt_objects_in_cycles_survive_a_busy_worker() -> None:
    """Widgets in reference cycles dropped while a worker thread allocates: with automatic
    collection the worker destroyed them ("Timers cannot be stopped from another thread") and
    the GUI thread crashed (SIGSEGV in 4 runs of 4 of this child with collection left on);
    collected on the GUI thread, the program runs on."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHILD, "on", "2000"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def test_full_collections_wait_for_a_quarter_of_the_long_lived(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With many objects alive (the rows of 100,000 units), ``collect_if_due`` does not walk
    them all each time the oldest generation's count passes its threshold, as the
    interpreter's own rule: only once a quarter as many could have been made since."""
    was_enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    gc.disable()
    try:
        keep = [[k] for k in range(200_000)]  # long-lived, tracked
        gc.set_threshold(50, 2, 2)
        monkeypatch.setattr(collector, "_long_lived", 0)
        gc.collect()
        full = gc.get_stats()[2]["collections"]
        made = []
        for _ in range(80):
            made.extend([k] for k in range(60))  # past the youngest threshold each time
            collector.collect_if_due()
        assert gc.get_stats()[2]["collections"] - full <= 1  # the first one only
        assert collector._long_lived >= len(keep)  # noqa: SLF001 - what the rule counts
    finally:
        collector.thaw()
        gc.set_threshold(*thresholds)
        if was_enabled:
            gc.enable()


class _Loading:
    """A window's "views still loading", as ``defer_while`` is given it."""

    def __init__(self) -> None:
        self.loading = True

    def views_loading(self) -> bool:
        return self.loading


def test_a_due_collection_waits_for_loading_views_at_most_max_defer(qtbot) -> None:
    """While a window's views load (a jump's blocks being decoded), the timer puts a due
    collection off (it would hold the interpreter lock the loader's workers need), for at most
    ``MAX_DEFER_MS``; once they are complete, it collects at the next look; a window gone is
    forgotten."""
    collector.collect_on_gui_thread()
    installed = collector._installed
    assert installed is not None
    others, installed.busy = installed.busy, []  # windows of other tests, if still alive
    window = _Loading()
    collector.defer_while(window.views_loading)
    try:
        _Witness.died_on.clear()
        for _ in range(5):
            _Witness()
        kept = [(object(), []) for _ in range(5 * gc.get_threshold()[0])]  # a collection due
        now = 1000.0
        assert installed.tick(now) is False  # loading: put off
        assert installed.tick(now + collector.MAX_DEFER_MS / 2000) is False
        assert _Witness.died_on == []
        assert installed.tick(now + collector.MAX_DEFER_MS / 1000) is True  # waited enough
        assert _Witness.died_on  # and collected what was due
        window.loading = False
        assert installed.tick(now + 5) is True  # complete: collects at once
        kept.clear()
        window.loading = True
        assert installed.tick(now + 6) is False
        del window
        assert installed.tick(now + 6.1) is True  # the window is gone: nothing to wait for
        assert installed.busy == []
    finally:
        installed.busy = others
        installed.deferred_since = None


def test_many_survivors_of_a_full_collection_are_frozen_until_thawed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """More than ``FREEZE_OVER`` objects in the oldest generation after a collection (a
    scan's rows) are frozen: the full collections after it do not walk them; ``thaw`` gives
    them back, and a cycle that died among them meanwhile is collected by the next full
    collection."""
    was_enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    gc.disable()
    monkeypatch.setattr(collector, "FREEZE_OVER", 20_000)
    monkeypatch.setattr(collector, "_long_lived", 0)
    monkeypatch.setattr(collector, "_frozen", 0)
    monkeypatch.setattr(collector, "_thawed", False)
    frozen_before = gc.get_freeze_count()
    try:
        keep = [[k] for k in range(40_000)]  # long-lived, tracked
        witness = _Witness()
        _Witness.died_on.clear()
        gc.set_threshold(50, 1, 1)
        made: list[list[int]] = []
        for _ in range(20):  # past the youngest threshold each time: older ones come due
            made.extend([k] for k in range(60))
            collector.collect_if_due()
            if gc.get_freeze_count() > frozen_before:
                break
        assert gc.get_freeze_count() - frozen_before >= len(keep)
        assert len(gc.get_objects(generation=2)) < 1000  # what the next full one walks
        del witness  # a cycle among the frozen: not collected while frozen
        gc.collect()
        assert not _Witness.died_on
        collector.thaw()
        assert gc.get_freeze_count() == 0
        for _ in range(40):  # the middle collections freeze nothing until a full one ran
            made.extend([k] for k in range(60))
            collector.collect_if_due()
            if _Witness.died_on:
                break
        assert _Witness.died_on == [threading.get_ident()]
        assert gc.get_freeze_count() >= len(keep)  # what lives is frozen again
    finally:
        collector.thaw()
        gc.set_threshold(*thresholds)
        if was_enabled:
            gc.enable()
