"""A dataset's extent without listing every file up front.

A plain WKW dataset says nothing about its size: the extent is the box of the data files present,
and a large dataset may hold 100,000 of them.  So a window opens with a *provisional* extent (the
file holding the requested position, else the first file found walking the z/y/x folders in
sorted order) and an ``ExtentScan`` lists the files on a worker thread, reporting the growing
box as it goes.

``provisional_bounds`` and ``scan_bounds`` are plain functions (any thread).  ``ExtentScan``:
``start``, ``cancel``, ``join`` and ``wait`` are called from the thread that owns it; its
``on_progress(bounds, done)`` callback is called on the scan's own thread (a Qt side must hop to
its GUI thread with a queued signal), never under a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence

from viewer.format import FormatError, wkw

Vec3 = tuple[int, int, int]
Bounds = tuple[Vec3, Vec3]
#: ``on_progress(bounds, done)``: the box of the files found so far; ``done`` on the last call.
Progress = Callable[[Bounds, bool], None]

#: Report the growing box at most this often (seconds) while scanning.
REPORT_INTERVAL_S = 0.1


def _box(lo_file: Sequence[int], hi_file: Sequence[int], side: int) -> Bounds:
    return ((lo_file[0] * side, lo_file[1] * side, lo_file[2] * side),
            ((hi_file[0] + 1) * side, (hi_file[1] + 1) * side, (hi_file[2] + 1) * side))


def provisional_bounds(dataset: wkw.Dataset, pos: Sequence[int] | None = None) -> Bounds:
    """A first extent, found at once: the file holding ``pos`` when it exists, else the first
    data file in sorted z/y/x order (only the first folders are listed), else one file at the
    origin."""
    side = dataset.file_len_vx
    if pos is not None and all(p >= 0 for p in pos):
        cell = tuple(int(p) // side for p in pos)
        try:
            if dataset.single_file is None and \
                    dataset.get_file(cell[0], cell[1], cell[2]) is not None:
                return _box(cell, cell, side)
        except (FormatError, OSError):
            pass  # a damaged file there: fall back to the first file found
    for path in dataset.list_files():
        try:
            cell = dataset.file_position(path)
        except FormatError:
            continue
        return _box(cell, cell, side)
    return (0, 0, 0), (side, side, side)


def scan_bounds(dataset: wkw.Dataset, paths: Iterable[str] | None = None,
                on_progress: Progress | None = None,
                cancelled: threading.Event | None = None) -> Bounds | None:
    """The box of every data file present (``paths``: the listing to use, default
    ``dataset.list_files()``), reporting the box found so far every ``REPORT_INTERVAL_S``;
    None when there is no data file (or when cancelled before the end)."""
    side = dataset.file_len_vx
    lo: list[int] | None = None
    hi: list[int] = [0, 0, 0]
    last = time.monotonic()
    for path in dataset.list_files() if paths is None else paths:
        if cancelled is not None and cancelled.is_set():
            return None
        try:
            cell = dataset.file_position(path)
        except FormatError:
            continue
        if lo is None:
            lo, hi = list(cell), list(cell)
        else:
            for a in range(3):
                if cell[a] < lo[a]:
                    lo[a] = cell[a]
                elif cell[a] > hi[a]:
                    hi[a] = cell[a]
        now = time.monotonic()
        if on_progress is not None and now - last >= REPORT_INTERVAL_S:
            last = now
            on_progress(_box(lo, hi, side), False)
    if lo is None:
        return None
    return _box(lo, hi, side)


class ExtentScan:
    """Lists a dataset's files on a thread of its own and reports the growing extent.

    ``paths``: the listing to walk (default ``dataset.list_files()``; tests pass a generator
    they can hold back).  The final report always comes, with ``done=True`` (with the
    provisional box's shape when no file was found), unless the scan was cancelled.
    """

    def __init__(self, dataset: wkw.Dataset, on_progress: Progress,
                 paths: Iterable[str] | None = None) -> None:
        self.dataset = dataset
        self.on_progress = on_progress
        self.paths = paths
        self.result: Bounds | None = None
        self._cancelled = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wkw-extent-scan", daemon=True)

    def start(self) -> ExtentScan:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            found = scan_bounds(self.dataset, self.paths, self.on_progress, self._cancelled)
        except OSError:
            found = None  # the folder went away: the provisional extent stays
        if self._cancelled.is_set():
            self._done.set()
            return
        if found is None:
            side = self.dataset.file_len_vx
            found = ((0, 0, 0), (side, side, side))
        self.result = found
        self._done.set()
        self.on_progress(found, True)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the scan finished (True) or ``timeout`` seconds passed (False)."""
        return self._done.wait(timeout)

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
