"""Opening a dataset for the window: which layers can be read, the box they span, and, for a
dataset that does not declare its extent (a plain WKW dataset), the background scan of its
storage units that grows it.

``QtDatasetOpener.open(path, pos)`` opens the dataset (a URL on a thread, the window staying
responsive: ``viewer.ui.remote.open_dataset``) and returns an ``Opening``, or raises; the window
then shows it and hands the opening's scan back with ``adopt``.  While the scan of the shown
dataset finds more files, ``extent_grown(bounds)`` is emitted on the GUI thread (the scan's
reports hop there through ``QtExtentBridge``).  GUI thread only, but for ``QtExtentBridge.report``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from viewer.core import extent
from viewer.core.layered import SourceLayer, source_layers
from viewer.core.state import Vec3
from viewer.format import Dataset, Volume
from viewer.format.executor import Executor
from viewer.ui import remote as remote_ui

#: How long opening waits for the file scan before it shows a provisional extent (a dataset of
#: a few hundred files is listed in far less: it opens with its whole extent at once; one of
#: more files is not waited for past its first ``extent.MANY_UNITS`` files).
QUICK_EXTENT_S = 0.15
#: The least time between two growths of a provisional extent shown (``QtExtentBridge``).
MIN_GROWTH_GAP_S = 0.5


class QtExtentBridge(QObject):
    """Carries an ``ExtentScan``'s reports from its thread to the GUI thread (queued).  A
    report holds the box of every file found so far, so reports that pile up while the GUI
    thread is busy are delivered as the last one only (each delivery redraws the views).

    A growth is delivered at most once every ``min_gap_s`` (the last report of a scan, with
    ``done``, at once): each one refreshes every view's planes and repaints the window, and
    the first second of a large dataset's listing would otherwise bring one every
    ``extent.REPORT_INTERVAL_S``.  Reports are delivered by a timer (1 ms at the least), so a
    growth runs in a turn of the event loop of its own, not in the pass of posted events that
    also brings the dataset's arrival and its first paint."""

    #: (scan, bounds, done): the files found so far span ``bounds``.
    extent_found = Signal(object, object, bool)
    _posted = Signal()

    def __init__(self, parent: QObject | None = None, min_gap_s: float = MIN_GROWTH_GAP_S
                 ) -> None:
        super().__init__(parent)
        #: The least time between two deliveries of growths not ``done``.
        self.min_gap_s = min_gap_s
        self._lock = threading.Lock()
        self._latest: tuple[extent.ExtentScan, extent.Bounds, bool] | None = None
        self._delivered: float | None = None  # time.monotonic() of the last delivery
        self._hold = QTimer(self)
        self._hold.setObjectName("extentGrowth")
        self._hold.setSingleShot(True)
        self._hold.timeout.connect(self._deliver)
        self._posted.connect(self._on_posted, Qt.ConnectionType.QueuedConnection)

    @property
    def holding(self) -> bool:
        """A report waits for its timer (``min_gap_s`` since the last delivery, 1 ms at the
        least)."""
        return self._hold.isActive()

    def hold_from_now(self) -> None:
        """Count the gap before the next growth from now (a dataset was just shown)."""
        self._delivered = time.monotonic()
        if self._hold.isActive():
            self._hold.start(max(1, math.ceil(self.min_gap_s * 1000)))

    def report(self, scan: extent.ExtentScan, bounds: extent.Bounds, done: bool) -> None:
        """Called on the scan's thread."""
        with self._lock:
            waiting = self._latest is not None
            self._latest = (scan, bounds, done)
        if not waiting or done:
            self._posted.emit()

    def _on_posted(self) -> None:
        with self._lock:
            latest = self._latest
        if latest is None:
            return
        wait = 0.0
        if not latest[2] and self._delivered is not None:
            wait = self._delivered + self.min_gap_s - time.monotonic()
        if latest[2] or not self._hold.isActive():
            self._hold.start(max(1, math.ceil(wait * 1000)))

    def _deliver(self) -> None:
        self._hold.stop()
        with self._lock:
            latest, self._latest = self._latest, None
        if latest is not None:
            self._delivered = time.monotonic()
            self.extent_found.emit(*latest)


@dataclass
class Opening:
    """A dataset opened and not shown yet."""

    #: The dataset (any format: its layers, mags, voxel size and problems).
    dataset: Dataset
    #: The layers that can be read, color layers first.
    layers: list[SourceLayer]
    #: The box they span, in mag-1 voxels (provisional while ``scan`` runs).
    bounds: tuple[Vec3, Vec3]
    #: The scan still growing ``bounds`` (None: they are final).
    scan: extent.ExtentScan | None = None
    #: What did not open (layers, mags), as sentences.
    notes: list[str] = field(default_factory=list)


class QtDatasetOpener(QObject):
    """Opens datasets and follows the extent scan of the one shown."""

    #: The scan of the dataset shown found more files: they span these (lo, hi) bounds.
    extent_grown = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        #: The scan of the dataset shown (None: its extent is final).
        self.scan: extent.ExtentScan | None = None
        #: Test hook: the file listing the extent scan walks (default ``list_files``).
        self.extent_listing: Callable[[Volume], Any] | None = None
        self._bridge = QtExtentBridge(self)
        self._bridge.extent_found.connect(self._on_extent_found)  # on the GUI thread
        self._executor: Executor | None = None

    @property
    def executor(self) -> Executor:
        """The background threads of every dataset this window opens (its loaders' workers,
        parallel decodes, the remote stores and their requests), owned by the window: a
        dataset opened again finds its stores' sizes and listings still known.  Made on first
        use, closed by ``close``."""
        if self._executor is None or self._executor.closed:
            self._executor = Executor(name="window")
        return self._executor

    def close(self) -> None:
        """Stop the extent scan and the window's background threads (after the datasets that
        use them were closed)."""
        self.stop()
        if self._executor is not None:
            self._executor.close()
            self._executor = None

    @property
    def scanning(self) -> bool:
        """The files of the dataset shown are still being listed (its extent may grow)."""
        return self.scan is not None

    def open(self, path: str, pos: Sequence[int] | None = None,
             waiting: Callable[[float], bool] | None = None) -> Opening:
        """Open ``path``; raises (after closing what it opened) when nothing can be shown.
        ``waiting``: see ``viewer.ui.remote.open_dataset`` (a URL's progress and cancel)."""
        opened = remote_ui.open_dataset(path, waiting, self.executor)  # on a thread
        try:
            return self._open_layers(opened, pos)
        except BaseException:
            opened.close()
            raise

    def adopt(self, scan: extent.ExtentScan | None) -> None:
        """``scan`` grows the extent of the dataset now shown (its reports are queued: they
        come after this, the first growth ``MIN_GROWTH_GAP_S`` after the dataset was shown:
        not among its first paint, the inspector's start and its first unit)."""
        self.scan = scan
        if scan is not None:
            self._bridge.hold_from_now()

    def stop(self, scan: extent.ExtentScan | None = None) -> None:
        """Stop ``scan`` (default: the shown dataset's)."""
        scan = scan or self.scan
        if scan is not None:
            scan.cancel()
            scan.join(2.0)
        if scan is self.scan:
            self.scan = None

    def _on_extent_found(self, scan: extent.ExtentScan, bounds: extent.Bounds,
                         done: bool) -> None:
        if scan is not self.scan:
            return  # a scan of a dataset no longer shown
        if done:
            self.scan = None
        self.extent_grown.emit(bounds)

    def _open_layers(self, opened: Dataset, pos: Sequence[int] | None) -> Opening:
        """The layers of ``opened`` that can be read (color layers first), the box they span
        in mag-1 voxels, and the extent scan still growing it (a single layer whose extent is
        not declared, such as a plain WKW dataset: see ``_find_extent``); what did not open is
        noted."""
        notes = [str(p) for p in opened.problems]
        layers, problems = source_layers(opened)
        notes.extend(str(p) for p in problems)
        if not layers:
            raise ValueError("no layer of this dataset can be read"
                             + (f": {'; '.join(notes)}" if notes else ""))
        layers.sort(key=lambda la: la.category == "segmentation")  # stable: colors first
        described = [opened.layer(la.composite or la.name) for la in layers]
        if len(layers) == 1 and not described[0].extent_declared:
            bounds, scan = self._find_extent(layers[0].finest, pos)
            return Opening(opened, layers, bounds, scan, notes)
        boxes = [d.bounding_box for d in described]
        boxes = [b for b in boxes if not b.is_empty] or boxes
        lo = tuple(min(b.top_left[a] for b in boxes) for a in range(3))
        hi = tuple(max(b.top_left[a] + b.size[a] for b in boxes) for a in range(3))
        return Opening(opened, layers, (lo, hi), None, notes)  # type: ignore[arg-type]

    def _find_extent(self, dataset: Volume, pos: Sequence[int] | None
                     ) -> tuple[tuple[Vec3, Vec3], extent.ExtentScan | None]:
        """The extent of a volume that does not declare it, and the scan still growing it
        (None when it is final).  The storage units are listed on a thread; a small dataset's
        listing ends while we wait a moment, a large one opens with a provisional extent
        (``extent.provisional_bounds``)."""
        listing = self.extent_listing(dataset) if self.extent_listing is not None else None
        bridge = self._bridge
        scan = extent.ExtentScan(dataset, lambda b, done: bridge.report(scan, b, done), listing)
        scan.start()
        if scan.wait_small(QUICK_EXTENT_S) and scan.result is not None:
            return scan.result, None
        try:
            return extent.provisional_bounds(dataset, pos), scan
        except BaseException:
            self.stop(scan)
            raise
