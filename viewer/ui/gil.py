"""The interpreter lock's switch interval in a process with a window.

The GUI thread gives up the interpreter lock at many calls (into Qt, numpy, a lock) and must
take it back each time.  While a background thread runs Python (a listing, results being
unpickled, a scan's bookkeeping), the interpreter hands the lock over only at the end of its
switch interval, 5 ms by default: a slot that releases the lock a dozen times then waits tens
of milliseconds for no work of its own (the event loop's longest stalls while a large dataset
is listed and scanned).  ``favour_gui_thread()`` shortens the interval for the process; the
background threads are then interrupted more often, costing them a little throughput, which a
window (latency first) trades gladly.  Command-line runs keep the interpreter's default.
"""

from __future__ import annotations

import sys

#: Seconds a thread runs before one waiting for the interpreter lock gets it.
SWITCH_INTERVAL_S = 0.001


def favour_gui_thread() -> None:
    """Shorten the switch interval to ``SWITCH_INTERVAL_S`` (never lengthen it)."""
    if sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)


__all__ = ["SWITCH_INTERVAL_S", "favour_gui_thread"]
