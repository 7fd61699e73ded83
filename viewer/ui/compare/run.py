"""The whole-dataset comparison of A and B, and the mismatching blocks it finds.

``QtComparisonRun`` runs a ``viewer.core.compare.CompareJob`` on a thread of its own (plus its
two pool threads), or for a large comparison the same job in a child process
(``CompareProcess``: the numpy work would hold this process's GIL and stall the window); the
job's callbacks hop to the GUI thread through ``QtCompareBridge``.  Mismatching blocks stream
into ``results`` and become the outlines the overlays draw (``block_rects``);
``go_to_mismatch`` moves the cursor to the largest difference inside a block (found on a
worker thread).  A run is cancelled and joined when another dataset is opened and when the
window closes.  The module's functions are what the run hands to its threads (``_run_job``,
``find_voxel``), the size that decides where it runs, and the box parser of the panel.

GUI thread only (the job's and the worker's callables excepted, which only call the bridge).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QObject, Signal

from viewer.core.compare import (
    BlockResult,
    CompareJob,
    Finding,
    Summary,
    VolumeSpec,
    abs_difference,
)
from viewer.core.compare.model import Box
from viewer.core.slicing import IN_PLANE, PlaneRequest
from viewer.core.state import SCREEN_AXES, ViewerState
from viewer.format import FormatError, Volume
from viewer.ui.compare.bridge import QtCompareBridge, Update
from viewer.ui.compare.host import describe
from viewer.ui.compare.remote import CompareProcess

Vec3 = tuple[int, int, int]
#: Comparisons of more voxel bytes than this run in a child process.
PROCESS_THRESHOLD_BYTES = 32 << 20


def find_voxel(a: VolumeSpec | Volume, b: VolumeSpec | Volume, block: BlockResult,
               chunk_shape: Vec3, tolerance: float) -> Vec3 | None:
    """The voxel of ``block`` (a box of ``chunk_shape`` at its position) with the largest
    ``|A - B|`` above ``tolerance`` (the first such in x, y, z order), or None when the block
    cannot be read.  Sides named by ``VolumeSpec`` are opened (through the registry) and
    closed here.  Runs on a worker."""
    opened: list[Volume] = []
    try:
        volumes = []
        for side in (a, b):
            if isinstance(side, Volume):
                volumes.append(side)
            else:
                vol = side.open()
                opened.append(vol)
                volumes.append(vol)
        va = np.moveaxis(volumes[0].read(block.position, chunk_shape), 0, -1)
        vb = np.moveaxis(volumes[1].read(block.position, chunk_shape), 0, -1)
    except (FormatError, OSError, KeyError):
        return None
    finally:
        for vol in opened:
            vol.close()
    if va.shape[-1] != vb.shape[-1]:
        va, vb = va[..., :1], vb[..., :1]
    if va.dtype != vb.dtype:
        va, vb = va.astype(np.float64), vb.astype(np.float64)
    d = abs_difference(va, vb).max(axis=-1)
    d = np.where(d > tolerance, d, 0)
    if not np.any(d):
        return None
    flat = int(np.argmax(np.transpose(d, (2, 1, 0))))  # first in x, then y, then z order
    z, y, x = np.unravel_index(flat, (d.shape[2], d.shape[1], d.shape[0]))
    p = block.position
    return (p[0] + int(x), p[1] + int(y), p[2] + int(z))


def parse_box(text: str) -> Box | None:
    """``"x,y,z,w,h,d"`` (any separators) as a box; empty text: None (everything)."""
    numbers = re.findall(r"-?\d+", text)
    if not numbers:
        return None
    if len(numbers) != 6:
        raise ValueError(f"a box is six numbers x, y, z, w, h, d, not {text.strip()!r}")
    v = [int(n) for n in numbers]
    if min(v[:3]) < 0 or min(v[3:]) <= 0:
        raise ValueError("a box needs a non-negative offset and a positive size")
    return ((v[0], v[1], v[2]), (v[3], v[4], v[5]))


def compared_bytes(volume: Volume, bounds: tuple[Vec3, Vec3], box: Box | None) -> int:
    """The voxel bytes of A a comparison over ``box`` (None: all of ``bounds``) reads."""
    lo, hi = bounds
    shape = [b - a for a, b in zip(lo, hi, strict=True)] if box is None else list(box[1])
    return (int(shape[0]) * int(shape[1]) * int(shape[2]) * int(volume.num_channels)
            * int(volume.dtype.itemsize))


class QtComparisonRun(QObject):
    """The background comparison and its results.  See the module docstring."""

    #: A comparison started.
    job_started = Signal()
    #: New results arrived (blocks, findings, progress) from the running comparison, or they
    #: were cleared.
    results_changed = Signal()
    #: The comparison ended: its Summary, or the exception that stopped it.
    job_finished = Signal(object)
    #: The selected mismatching block (index into ``results``).
    selection_changed = Signal(int)
    #: The outlines of the mismatching blocks changed (blocks arrived, cleared, selected).
    outlines_changed = Signal()

    def __init__(self, state: ViewerState, show_error: Callable[[str, str], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.show_error = show_error
        self.bridge = QtCompareBridge(self)
        self.bridge.updated.connect(self._on_job_update)
        self.bridge.delivered.connect(self._on_delivered)
        self.job: CompareJob | CompareProcess | None = None
        #: Run comparisons in a child process: None decides by size, True / False force it.
        self.use_process: bool | None = None
        self.job_id = 0
        self.running = False
        self._job_thread: threading.Thread | None = None
        self._old_threads: list[threading.Thread] = []
        #: The sides and the tolerance of the comparison the results come from.
        self._sides: tuple[VolumeSpec, VolumeSpec] | None = None
        self.tolerance = 0.0
        self.results: list[BlockResult] = []
        self.findings: list[Finding] = []
        self.progress: tuple[int, int] = (0, 0)
        self.summary: Summary | None = None
        self.error: BaseException | None = None
        self.box: Box | None = None
        #: A's chunk shape: a mismatching block covers ``position + [0, chunk_shape)``.
        self.chunk_shape: Vec3 = (0, 0, 0)
        self._positions = np.zeros((0, 3), dtype=np.int64)
        self._damaged = np.zeros(0, dtype=bool)
        self.selected: int | None = None
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="wkw-compare-ui")
        self._token = 0
        self._rects: dict[int, tuple[Any, ...]] = {}
        self._closed = False

    @property
    def block_len(self) -> int:
        """The blocks' smallest side in voxels (0 before a comparison)."""
        return min(self.chunk_shape)

    def block_rects(self, axis: int, request: PlaneRequest
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_],
                               tuple[int, int, int, int] | None]:
        """The mismatching blocks the plane of ``request`` cuts, as screen-oriented dataset
        rectangles ``(h0, v0, h1, v1)``, whether each is damaged, and the selected block's
        rectangle (None when it is not on this plane).  The same blocks as
        ``viewer.core.compare.mismatch_rects``, vectorised for tens of thousands of blocks."""
        key = (request, len(self.results), self.selected, self.chunk_shape)
        cached = self._rects.get(axis)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2], cached[3]
        c = self.chunk_shape
        p = self._positions
        empty = (np.zeros((0, 4), dtype=np.int64), np.zeros(0, dtype=bool), None)
        if min(c) <= 0 or len(p) == 0:
            self._rects[axis] = (key, *empty)
            return empty
        u, v = IN_PLANE[axis]
        h_axis, v_axis = SCREEN_AXES[axis]
        index = request.index
        cut = ((p[:, axis] <= index) & (index < p[:, axis] + c[axis])
               & (p[:, u] + c[u] > request.lo[0]) & (p[:, u] < request.hi[0])
               & (p[:, v] + c[v] > request.lo[1]) & (p[:, v] < request.hi[1]))
        hv = p[cut][:, [h_axis, v_axis]]
        rects = np.concatenate([hv, hv + np.asarray([c[h_axis], c[v_axis]])], axis=1)
        damaged = self._damaged[cut]
        selected = None
        if self.selected is not None and self.selected < len(p) and cut[self.selected]:
            s = p[self.selected]
            selected = (int(s[h_axis]), int(s[v_axis]), int(s[h_axis]) + c[h_axis],
                        int(s[v_axis]) + c[v_axis])
        self._rects[axis] = (key, rects, damaged, selected)
        return rects, damaged, selected

    # == the background comparison ==============================================================
    def start(self, a: VolumeSpec, b: VolumeSpec, box: Box | None, tolerance: float,
              chunk_shape: Vec3, nbytes: int) -> bool:
        """Compare ``a`` and ``b`` block by block in the background (over ``box``, or
        everything) with ``tolerance``; a running comparison is cancelled first.
        ``chunk_shape``: A's (what a mismatching block covers); ``nbytes``: the voxel bytes
        compared (``compared_bytes``), which decide whether it runs in a child process."""
        if self._closed:
            return False
        self.abandon()
        self.clear()
        self.job_id += 1
        job_id = self.job_id
        bridge = self.bridge
        callbacks: dict[str, Any] = {
            "on_progress": lambda done, total: bridge.job_progress(job_id, done, total),
            "on_block": lambda r: bridge.job_block(job_id, r),
            "on_finding": lambda f: bridge.job_finding(job_id, f)}
        try:
            if self._in_child_process(nbytes):
                job: CompareJob | CompareProcess = CompareProcess(
                    a, b, box, tolerance, **callbacks)
            else:
                job = CompareJob(a, b, box=box, tolerance=tolerance, workers=2, **callbacks)
        except ValueError as exc:
            self.show_error("Cannot start the comparison", str(exc))
            return False
        self.box = box
        self._sides = (a, b)
        self.tolerance = tolerance
        self.chunk_shape = chunk_shape
        self.job = job
        self.running = True
        thread = threading.Thread(target=_run_job, args=(job, job_id, bridge),
                                  name="wkw-compare-ui-job", daemon=True)
        self._job_thread = thread
        thread.start()
        self.job_started.emit()
        return True

    def _in_child_process(self, nbytes: int) -> bool:
        """Large comparisons run in a child process (``CompareProcess``: the numpy work
        would hold this process's GIL and stall the window); small ones on a thread, where
        they end before a child would have started.  ``use_process`` overrides."""
        if self.use_process is not None:
            return self.use_process
        if getattr(sys, "frozen", False):
            return False
        return nbytes > PROCESS_THRESHOLD_BYTES

    def cancel(self, wait: bool = False) -> None:
        """Stop the comparison after the chunks already running (it still reports what it
        compared).  ``wait``: join its thread and those of earlier cancelled comparisons."""
        if self.job is not None:
            self.job.cancel()
        if wait:
            for thread in (*self._old_threads, self._job_thread):
                if thread is not None:
                    thread.join()
            self._old_threads = []
            self._job_thread = None

    def abandon(self) -> None:
        """Cancel the comparison without waiting and ignore whatever it still reports (its
        thread is joined later: at the next ``cancel(wait=True)`` or on ``shutdown``)."""
        if self.job is not None:
            self.job.cancel()
        if self._job_thread is not None:
            self._old_threads = [t for t in self._old_threads if t.is_alive()]
            self._old_threads.append(self._job_thread)
            self._job_thread = None
        self.job = None
        self.job_id += 1
        self.running = False

    def clear(self) -> None:
        """Forget the results (the comparison they came from is gone)."""
        self.results = []
        self.findings = []
        self.progress = (0, 0)
        self.summary = None
        self.error = None
        self.selected = None
        self._positions = np.zeros((0, 3), dtype=np.int64)
        self._damaged = np.zeros(0, dtype=bool)
        self._rects.clear()
        self.results_changed.emit()
        self.outlines_changed.emit()

    def _on_job_update(self, job_id: int, update: Update) -> None:
        if job_id != self.job_id or self._closed:
            return  # a cancelled job's last words
        if update.blocks:
            self.results.extend(update.blocks)
            self._positions = np.concatenate(
                [self._positions, np.asarray([r.position for r in update.blocks],
                                             dtype=np.int64).reshape(-1, 3)])
            self._damaged = np.concatenate(
                [self._damaged, np.asarray([r.error is not None for r in update.blocks],
                                           dtype=bool)])
        self.findings.extend(update.findings)
        if update.progress is not None:
            self.progress = update.progress
        finished = update.finished
        if finished is not None:
            self.running = False
            if isinstance(finished, Summary):
                self.summary = finished
                if finished.chunk_shape is not None:
                    self.chunk_shape = finished.chunk_shape
                self.progress = (finished.blocks_compared, finished.blocks_total)
            else:
                self.error = finished
                self.show_error("The comparison stopped", describe(finished))
        self.results_changed.emit()
        if update.blocks:
            self.outlines_changed.emit()
        if finished is not None:
            self.job_finished.emit(finished)

    # == navigation =============================================================================
    def go_to_mismatch(self, index: int) -> None:
        """Select mismatching block ``index`` and move the cursor to its largest difference
        (its first voxel when it cannot be read)."""
        if not self.results:
            return
        index %= len(self.results)
        self.selected = index
        self.selection_changed.emit(index)
        self.outlines_changed.emit()
        block = self.results[index]
        self._token += 1
        token = self._token
        if self._sides is None or self._closed:
            return
        a, b = self._sides
        future = self._executor.submit(find_voxel, a, b, block, self.chunk_shape,
                                       self.tolerance)

        def done(f: Future[Vec3 | None]) -> None:
            try:
                payload: Any = f.result()
            except BaseException as exc:  # noqa: BLE001  (handed over: the cursor goes to the block)
                payload = exc
            self.bridge.deliver("voxel", token, (block, payload))

        future.add_done_callback(done)

    def next_mismatch(self) -> None:
        self.go_to_mismatch(0 if self.selected is None else self.selected + 1)

    def previous_mismatch(self) -> None:
        self.go_to_mismatch(-1 if self.selected is None else self.selected - 1)

    def _on_delivered(self, kind: str, token: int, payload: Any) -> None:
        if kind != "voxel" or token != self._token or self._closed:
            return
        block, found = payload
        if isinstance(found, tuple):
            pos = found
        else:
            pos = tuple(p + max(c // 2, 0)
                        for p, c in zip(block.position, self.chunk_shape, strict=True))
        self.state.set_cursor(pos)
        self.state.recenter()

    def threads(self) -> list[threading.Thread]:
        """The threads this run started that are still alive (for tests)."""
        alive = []
        for thread in (*self._old_threads, self._job_thread):
            if thread is not None and thread.is_alive():
                alive.append(thread)
        return alive

    def shutdown(self) -> None:
        """Cancel and join the comparison and the voxel search: no thread left."""
        if self._closed:
            return
        self.abandon()
        self.cancel(wait=True)
        self._closed = True
        self._executor.shutdown(wait=True, cancel_futures=True)


def _run_job(job: CompareJob | CompareProcess, job_id: int, bridge: QtCompareBridge) -> None:
    """The comparison's thread: run the job, hand its end to the GUI thread."""
    try:
        outcome: Summary | BaseException = job.run()
    except BaseException as exc:  # noqa: BLE001  (handed to the window, which says what happened)
        outcome = exc
    bridge.job_finished(job_id, outcome)


__all__ = ["PROCESS_THRESHOLD_BYTES", "QtComparisonRun", "compared_bytes", "find_voxel",
           "parse_box"]
