"""A volume's extent without listing every storage unit up front.

A plain WKW dataset says nothing about its size: the extent is the box of the data files (the
volume's storage units) present, and a large dataset may hold 100,000 of them.  So a window
opens with a *provisional* extent (the unit holding the requested position, else the first unit
listed) and an ``ExtentScan`` lists the units (``Volume.iter_units``) on a worker thread,
reporting the growing box as it goes.

``provisional_bounds`` and ``scan_bounds`` are plain functions (any thread).  ``ExtentScan``:
``start``, ``cancel``, ``join`` and ``wait`` are called from the thread that owns it; its
``on_progress(bounds, done)`` callback is called on the scan's own thread (a Qt side must hop to
its GUI thread with a queued signal), never under a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from viewer.format import FormatError, Volume

Vec3 = tuple[int, int, int]
Bounds = tuple[Vec3, Vec3]
#: ``on_progress(bounds, done)``: the box of the files found so far; ``done`` on the last call.
Progress = Callable[[Bounds, bool], None]

#: Report the growing box at most this often (seconds) while scanning.
REPORT_INTERVAL_S = 0.1
#: A listing past this many units is a large dataset (``ExtentScan.wait_small``).
MANY_UNITS = 256


def _box(lo_unit: Sequence[int], hi_unit: Sequence[int], side: Sequence[int]) -> Bounds:
    return ((lo_unit[0] * side[0], lo_unit[1] * side[1], lo_unit[2] * side[2]),
            ((hi_unit[0] + 1) * side[0], (hi_unit[1] + 1) * side[1], (hi_unit[2] + 1) * side[2]))


def provisional_bounds(volume: Volume, pos: Sequence[int] | None = None) -> Bounds:
    """A first extent, found at once: the storage unit holding ``pos`` when it exists, else the
    first unit listed (only the first folders are listed), else one unit at the origin."""
    side = volume.unit_len_vx
    if pos is not None and all(p >= 0 for p in pos):
        cell = (int(pos[0]) // side[0], int(pos[1]) // side[1], int(pos[2]) // side[2])
        try:
            unit = volume.open_unit(cell)
            if unit is not None:
                volume.done_with(unit)
                return _box(cell, cell, side)
        except (FormatError, OSError):
            pass  # a damaged unit there: fall back to the first unit found
    for cell in volume.iter_units():
        return _box(cell, cell, side)
    return (0, 0, 0), (side[0], side[1], side[2])


def scan_bounds(volume: Volume, units: Iterable[Vec3] | None = None,
                on_progress: Progress | None = None,
                cancelled: threading.Event | None = None) -> Bounds | None:
    """The box of every storage unit present (``units``: the listing to use, default
    ``volume.iter_units()``), reporting the box found so far every ``REPORT_INTERVAL_S``;
    None when there is no unit (or when cancelled before the end)."""
    side = volume.unit_len_vx
    lo: list[int] | None = None
    hi: list[int] = [0, 0, 0]
    last = time.monotonic()
    listing = volume.iter_units() if units is None else units
    for count, cell in enumerate(listing, 1):
        if cancelled is not None and cancelled.is_set():
            return None
        if lo is None:
            lo, hi = list(cell), list(cell)
        else:
            for a in range(3):
                if cell[a] < lo[a]:
                    lo[a] = cell[a]
                elif cell[a] > hi[a]:
                    hi[a] = cell[a]
        if on_progress is not None and not count & 255:  # the clock once every 256 units
            now = time.monotonic()
            if now - last >= REPORT_INTERVAL_S:
                last = now
                on_progress(_box(lo, hi, side), False)
    if lo is None:
        return None
    return _box(lo, hi, side)


class ExtentScan:
    """Lists a volume's storage units on a thread of its own and reports the growing extent.

    ``units``: the listing to walk (default ``volume.iter_units()``; tests pass a generator
    they can hold back).  The final report always comes, with ``done=True`` (with the
    provisional box's shape when no file was found), unless the scan was cancelled.
    """

    def __init__(self, volume: Volume, on_progress: Progress,
                 units: Iterable[Vec3] | None = None) -> None:
        self.volume = volume
        self.on_progress = on_progress
        self.units = units
        self.result: Bounds | None = None
        self._cancelled = threading.Event()
        self._done = threading.Event()
        self._decided = threading.Event()  # done, or more than MANY_UNITS units listed
        self._thread = threading.Thread(target=self._run, name="wkw-extent-scan", daemon=True)

    def start(self) -> ExtentScan:
        self._thread.start()
        return self

    def _counted(self) -> Iterator[Vec3]:
        listing = self.volume.iter_units() if self.units is None else self.units
        for count, cell in enumerate(listing, 1):
            if count == MANY_UNITS:
                self._decided.set()
            yield cell

    def _run(self) -> None:
        try:
            found = scan_bounds(self.volume, self._counted(), self.on_progress,
                                self._cancelled)
        except OSError:
            found = None  # the folder went away: the provisional extent stays
        except BaseException:
            self._decided.set()
            raise
        if self._cancelled.is_set():
            self._done.set()
            self._decided.set()
            return
        if found is None:
            side = self.volume.unit_len_vx
            found = ((0, 0, 0), (side[0], side[1], side[2]))
        self.result = found
        self._done.set()
        self._decided.set()
        self.on_progress(found, True)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the scan finished (True) or ``timeout`` seconds passed (False)."""
        return self._done.wait(timeout)

    def wait_small(self, timeout: float | None = None) -> bool:
        """Wait until the scan finished or listed more than ``MANY_UNITS`` units (a large
        dataset, not worth waiting for) or ``timeout`` passed; True when it finished."""
        self._decided.wait(timeout)
        return self._done.is_set()

    def cancel(self) -> None:
        """Stop at the next file; no further report."""
        self._cancelled.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def thread(self) -> threading.Thread:
        return self._thread


__all__ = ["ExtentScan", "provisional_bounds", "scan_bounds"]
