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
wait for the timer.  Once the oldest generation holds more than ``FREEZE_OVER`` objects after a
collection (the rows of a scan of 100,000 units arriving), they are frozen too: a full
collection walking them all would hold the GUI thread for longer than a frame, and they live
as long as their volume is inspected.  It is looked at after each middle or full collection,
so no full collection walks much more than ``FREEZE_OVER`` objects.  ``thaw()`` (the
inspector calls it when it drops a volume's rows) gives them back to the oldest generation,
so that the next full collection looks at everything once more (and frees whatever cycles
died among them meanwhile) and what still lives is frozen again.
``collect_if_due()`` does one such step now (the test suite calls it between tests, when no
event loop runs).

A collection holds the interpreter lock for its whole length, and the loader's workers need it
between their decodes: a collection due while a window's views are still loading their planes
(right after a jump) waits until they are complete (``defer_while``), at most
``MAX_DEFER_MS``.
"""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QObject, QTimer

#: How often the GUI thread looks whether a collection is due.
INTERVAL_MS = 50
#: The longest a due collection waits for loading views (``defer_while``).
MAX_DEFER_MS = 1000

_installed: _GuiThreadCollector | None = None


#: Objects in the oldest generation after the last full collection (``collect_if_due``),
#: those frozen since included.
_long_lived = 0
#: More objects than this in the oldest generation after a collection are frozen.
FREEZE_OVER = 20_000


def collect_if_due() -> int:
    """Collect the oldest generation whose count passed its threshold (as the interpreter
    does on allocation); the number of objects found unreachable, 0 when none was due.  As
    the interpreter, a full collection waits until the objects made since the last one could
    be a quarter of those that lived through it: a window holding the rows of 100,000 units
    would otherwise walk them all every few seconds, a stall that grows with the dataset."""
    global _long_lived, _thawed
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
    if due >= 1:
        alive = len(gc.get_objects(generation=2))
        if due == 2:
            _long_lived = alive + _frozen
            _thawed = False
        if alive > FREEZE_OVER and not _thawed:
            _freeze(alive)
            _long_lived = max(_long_lived, _frozen)
    return found


#: Objects ``collect_if_due`` froze (the start-up freeze not counted).
_frozen = 0
#: ``thaw`` was called and no full collection ran since: nothing is frozen until one did
#: (it frees the cycles that died among what was frozen).
_thawed = False


def _freeze(count: int) -> None:
    global _frozen
    gc.freeze()
    _frozen += count


def thaw() -> None:
    """Give the objects ``collect_if_due`` froze back to the oldest generation (the
    start-up's too) and let the next full collection come as soon as the thresholds say:
    it looks at everything once, then what lives is frozen again.  Call it when many
    long-lived objects were let go (a volume's scan rows).  Nothing when none was frozen."""
    global _frozen, _thawed, _long_lived
    if _frozen:
        _frozen, _thawed, _long_lived = 0, True, 0
        gc.unfreeze()


class _GuiThreadCollector(QObject):
    """The timer's owner, a child of the application (so it lives on the GUI thread)."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        #: What says a window is loading its views (weakly held: a window closed is gone).
        self.busy: list[weakref.WeakMethod[Callable[[], bool]]] = []
        #: Since when (``time.monotonic``) collections have been put off, or None.
        self.deferred_since: float | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(INTERVAL_MS)
        self._timer.timeout.connect(self._on_timeout)
        self._timer.start()

    def _on_timeout(self) -> None:
        self.tick(time.monotonic())

    def tick(self, now: float) -> bool:
        """One look of the timer at ``now``: collect what is due, unless a window is loading
        and collections have been put off for less than ``MAX_DEFER_MS``.  Whether it
        looked (False: put off)."""
        live = [ref for ref in self.busy if ref() is not None]
        self.busy = live
        if any(_called(ref) for ref in live):
            if self.deferred_since is None:
                self.deferred_since = now
            if (now - self.deferred_since) * 1000 < MAX_DEFER_MS:
                return False
        self.deferred_since = None
        collect_if_due()
        return True


def _called(ref: weakref.WeakMethod[Callable[[], bool]]) -> bool:
    method = ref()
    return bool(method is not None and method())


def defer_while(busy: Callable[[], bool]) -> None:
    """Put due collections off while ``busy()`` (a bound method, held weakly: e.g. a
    window's "views still loading"), at most ``MAX_DEFER_MS`` in a row.  GUI thread, after
    ``collect_on_gui_thread``."""
    if _installed is not None:
        _installed.busy.append(weakref.WeakMethod(busy))


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


__all__ = ["FREEZE_OVER", "INTERVAL_MS", "MAX_DEFER_MS", "collect_if_due", "collect_on_gui_thread",
           "defer_while", "installed", "thaw"]
