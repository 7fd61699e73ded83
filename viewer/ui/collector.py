"""Python's cycle collector, run on the GUI thread only.

The interpreter collects reference cycles on whichever thread allocates past its threshold: a
loader worker, the inspector's scan thread, a compare job's thread.  When a cycle it breaks
holds a Qt object (a closed window's widgets, a model, a timer), that object's C++ destructor
runs on the worker while the GUI thread may be using it, and Qt objects must die on their own
thread.  A CI run of the suite crashed that way (SIGSEGV in the GUI thread's event loop while
the inspector's scan thread was inside a list comprehension, where a collection can start),
and so does every run of a few thousand widgets in cycles beside a thread that allocates
(``tests/ui/test_collector.py``; Qt first says "Timers cannot be stopped from another
thread").

``collect_on_gui_thread()`` turns automatic collection off for the process and collects from a
timer on the GUI thread instead, each generation when the interpreter would have (its
thresholds, ``gc.get_threshold()``), at most ``INTERVAL_MS`` late.  It first collects once and
freezes what is alive then (``gc.freeze``: the modules, Qt's wrappers, the window), so that the
full collections that follow look at what was made since, not at the whole program (a frozen
object is never collected; what start-up made is kept for the life of the process anyway).
Reference counting frees everything that is not in a cycle at once, as before; only cycles
wait for the timer.
``collect_if_due()`` does one such step now (the test suite calls it between tests, when no
event loop runs).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QObject, QTimer

#: How often the GUI thread looks whether a collection is due.
INTERVAL_MS = 50

_installed: QObject | None = None


#: Objects in the oldest generation after the last full collection (``collect_if_due``).
_long_lived = 0


def collect_if_due() -> int:
    """Collect the oldest generation whose count passed its threshold (as the interpreter
    does on allocation); the number of objects found unreachable, 0 when none was due.  As
    the interpreter, a full collection waits until the objects made since the last one could
    be a quarter of those that lived through it: a window holding the rows of 100,000 units
    would otherwise walk them all every few seconds, a stall that grows with the dataset."""
    global _long_lived
    counts = gc.get_count()
    thresholds = gc.get_threshold()
    due = -1
    for generation in range(3):
        if thresholds[generation] and counts[generation] > thresholds[generation]:
            due = generation
        else:
            break
    if due == 2 and counts[2] * thresholds[0] * thresholds[1] < _long_lived // 4:
        due = 1
    if due < 0:
        return 0
    found = gc.collect(due)
    if due == 2:
        _long_lived = len(gc.get_objects(generation=2))
    return found


class _GuiThreadCollector(QObject):
    """The timer's owner, a child of the application (so it lives on the GUI thread)."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(INTERVAL_MS)
        self._timer.timeout.connect(collect_if_due)
        self._timer.start()


def collect_on_gui_thread() -> None:
    """Collect cycles on the GUI thread from now on (see the module docstring).  Call it on
    the GUI thread once the application exists; calling it again does nothing."""
    global _installed
    app = QCoreApplication.instance()
    if app is None or _installed is not None:
        return
    _installed = _GuiThreadCollector(app)
    gc.disable()
    gc.collect()
    gc.freeze()


def installed() -> bool:
    """Whether collection was moved to the GUI thread."""
    return _installed is not None


__all__ = ["INTERVAL_MS", "collect_if_due", "collect_on_gui_thread", "installed"]
