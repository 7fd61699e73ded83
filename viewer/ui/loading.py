"""The Qt side of background loading: the hop to the GUI thread, and the loader's status section.

``QtLoadingBridge`` listens to a ``PlaneSource`` (called on worker threads) and re-emits what
arrived as ``data_arrived(box)`` on the GUI thread.  The hop is a signal connected with an
explicit ``Qt.ConnectionType.QueuedConnection``; boxes that arrive while one hop is pending are
merged into one (their bounding box), so a burst of decoded batches costs one repaint, not
dozens.

``QtLoaderStatus`` is a status-bar section: queue, blocks in flight, cache use against budget,
hit rate, decode MB/s, and a warning when the budget cannot hold what is on screen; its spin
box changes the budget at run time.

``QtBackgroundLoading`` is the window's part that does it (built by
``QtMainWindow.add_background_loading(budget_bytes)``): every dataset the window opens gets a
``LayeredSource`` with a ``Loader`` per layer and mag, all on one block cache, whose bridge
feeds ``window.data_arrived``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QWidget

from viewer.core.cache import BlockCache
from viewer.core.layered import LayeredSource, SourceLayer
from viewer.core.loader import Loader, LoaderStats
from viewer.core.slicing import Box3, PlaneSource
from viewer.core.workers import DEFAULT_THREADS, shared_workers
from viewer.format import Volume

MIB = 1 << 20
STATUS_INTERVAL_MS = 500


def merge_boxes(boxes: list[Box3]) -> Box3:
    """The bounding box of several ``(offset, shape)`` boxes."""
    lo = [min(b[0][a] for b in boxes) for a in range(3)]
    hi = [max(b[0][a] + b[1][a] for b in boxes) for a in range(3)]
    return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))


class QtLoadingBridge(QObject):
    """Carries "data arrived" from the loader's worker threads to the GUI thread.

    Create it on the GUI thread.  ``data_arrived`` is emitted on the GUI thread only.
    """

    #: Data inside this box ``((x, y, z), (w, h, d))`` became available (the bounding box of
    #: everything that arrived since the last hop).
    data_arrived = Signal(object)
    #: The same hop as a list of the boxes that arrived (one per decoded batch): a view can
    #: tell whether it is touched at all, which the bounding box of batches of different
    #: planes cannot say.
    boxes_arrived = Signal(object)
    _arrived_elsewhere = Signal()

    def __init__(self, source: PlaneSource, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._pending: list[Box3] = []
        self._detached = False
        self._arrived_elsewhere.connect(self._on_arrived_elsewhere,
                                        Qt.ConnectionType.QueuedConnection)
        source.add_listener(self._on_worker_data)

    def detach(self) -> None:
        """Ignore anything the source still reports (it is being closed)."""
        with self._lock:
            self._detached = True
            self._pending = []

    def _on_worker_data(self, box: Box3) -> None:
        """Called on a worker thread: queue the box, post one hop if none is pending."""
        with self._lock:
            if self._detached:
                return
            post = not self._pending
            self._pending.append(box)
        if post:
            self._arrived_elsewhere.emit()

    @Slot()
    def _on_arrived_elsewhere(self) -> None:
        with self._lock:
            boxes, self._pending = self._pending, []
        if boxes:
            self.data_arrived.emit(merge_boxes(boxes))
            self.boxes_arrived.emit(boxes)


class QtLoaderStatus(QWidget):
    """Status-bar section for a ``LayeredSource`` of loaders (or none).  GUI thread only."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loader: LayeredSource | None = None
        self.label = QLabel("")
        self.label.setObjectName("loaderStatus")
        self.budget = QSpinBox()
        self.budget.setRange(16, 1 << 20)
        self.budget.setSingleStep(64)
        self.budget.setSuffix(" MB cache")
        self.budget.setToolTip("Budget of the decoded-block cache (changes at once)")
        self.budget.setKeyboardTracking(False)
        self.budget.valueChanged.connect(self._on_budget_changed)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label)
        row.addWidget(self.budget)
        self.timer = QTimer(self)
        self.timer.setInterval(STATUS_INTERVAL_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self.refresh()

    def set_loader(self, loader: LayeredSource | None) -> None:
        self.loader = loader
        if loader is not None and loader.cache is not None:
            self.budget.blockSignals(True)
            self.budget.setValue(max(16, loader.cache.budget_bytes // MIB))
            self.budget.blockSignals(False)
        self.refresh()

    def _on_budget_changed(self, value: int) -> None:
        if self.loader is not None:
            self.loader.set_budget(int(value) * MIB)
            self.refresh()

    @Slot()
    def refresh(self) -> None:
        loader = self.loader
        self.setVisible(loader is not None)
        if loader is None:
            return
        stats = loader.stats()
        self.label.setText(status_text(stats))  # nothing happens for the same text
        details = status_details(stats)
        if self.label.toolTip() != details:
            self.label.setToolTip(details)
        # A style sheet set, even the same one, polishes the label anew and lays the status
        # bar out again: set only when the warning comes or goes.
        style = "color: #e0a020; font-weight: bold;" if stats.over_budget else ""
        if self.label.styleSheet() != style:
            self.label.setStyleSheet(style)


def status_text(stats: LoaderStats) -> str:
    """One line for the status bar."""
    warn = "\u26a0 cache too small for the screen \u00b7 " if stats.over_budget else ""
    return (f"{warn}queue {stats.queued_blocks} \u00b7 reading {stats.in_flight_blocks} \u00b7 "
            f"cache {stats.cache_used_bytes / MIB:.0f}/{stats.cache_budget_bytes / MIB:.0f} MB"
            f" \u00b7 hits {100 * stats.hit_rate:.0f}% \u00b7 {stats.decode_mb_s:.0f} MB/s")


def status_details(stats: LoaderStats) -> str:
    """The tooltip: every figure, with what it means."""
    lines = [
        f"queued: {stats.queued_blocks} blocks in {stats.queued_tasks} batches",
        f"being read: {stats.in_flight_blocks} blocks ({stats.workers} worker threads)",
        f"cache: {stats.cache_used_bytes / MIB:.1f} of {stats.cache_budget_bytes / MIB:.0f} MB, "
        f"{stats.cache_blocks} blocks, {stats.pinned_blocks} on screen "
        f"(peak {stats.peak_cache_bytes / MIB:.1f} MB)",
        f"hit rate: {100 * stats.hit_rate:.1f}% of blocks were cached when they came on screen "
        f"({stats.hits} hits, {stats.misses} misses)",
        f"decoding: {stats.decode_mb_s:.0f} MB/s per busy worker, "
        f"{stats.bytes_decoded / MIB:.0f} MB so far",
        f"prefetch: {stats.prefetch_useful} of {stats.prefetched_blocks} prefetched blocks "
        f"were shown",
        f"generation {stats.generation}, {stats.dropped_tasks} stale batches dropped",
    ]
    if stats.over_budget:
        lines.insert(0, "WARNING: the blocks on screen need more than the cache budget; "
                        "raise it or zoom in")
    return "\n".join(lines)


class LoadingHost(Protocol):
    """What background loading uses of the window."""

    def add_status_widget(self, widget: QWidget, permanent: bool = False) -> None:
        """Add a section to the status bar."""

    def data_arrived(self, boxes: Box3 | Sequence[Box3]) -> None:
        """Data inside ``boxes`` became available (called on the GUI thread)."""


class QtBackgroundLoading(QObject):
    """Gives a window's datasets background loading: a ``LayeredSource`` of ``Loader`` parts
    (one per layer and mag, made when first needed, sharing one cache and its budget), with
    its bridge and status section."""

    def __init__(self, window: LoadingHost, budget_bytes: int | None = None,
                 workers: int = DEFAULT_THREADS, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.budget_bytes = budget_bytes
        self.workers = workers
        self.bridge: QtLoadingBridge | None = None
        self.loader: LayeredSource | None = None
        self.status = QtLoaderStatus()
        window.add_status_widget(self.status, permanent=True)

    def make_source(self, layers: Sequence[SourceLayer],
                    on_close: Callable[[], None] | None = None) -> LayeredSource:
        """A ``source_factory`` for the window: the previous source is closed by the window."""
        if self.bridge is not None:
            self.bridge.detach()
            self.bridge.deleteLater()
        # A budget changed at run time carries over to the next dataset.
        budget = self.loader.cache.budget_bytes if self.loader is not None \
            and self.loader.cache is not None else self.budget_bytes
        cache = BlockCache(budget)
        def part(dataset: Volume, layer: str, mag: tuple[int, int, int]) -> Loader:
            # Every layer and mag of the dataset shares the worker threads of its executor.
            # Prefetch waits for the views to paint a new screen's complete planes
            # (``QtLayerDrawing``: ``LayeredSource.screen_drawn``).
            return Loader(dataset, layer=layer, mag=mag, cache=cache,
                          workers=shared_workers(dataset.executor, self.workers),
                          hold_until_drawn=True)

        source = LayeredSource(layers, part, cache=cache, on_close=on_close)
        bridge = QtLoadingBridge(source, self)
        bridge.boxes_arrived.connect(self.window.data_arrived)
        self.loader, self.bridge = source, bridge
        self.status.set_loader(source)
        return source
