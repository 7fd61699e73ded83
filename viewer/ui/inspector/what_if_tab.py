"""The inspector's What if tab: how big and how fast the inspected volume would be under
other codecs and chunkings (``viewer.core.advise``), run in the background.

Run re-encodes a sample of the volume's chunks (or every chunk) in a child process (a
``viewer.core.jobs.Job`` of an ``AdviseWork``: the window's GIL stays free), with progress
and cancel; the candidates come as a table and as the size / decode speed plot
(``QtAdvisePlot``) with the best trade-offs marked.  "Colour the Map" hands the selected
candidate's per-chunk savings to the panel (``savings_chosen``), which draws them on the
slice views; asked during a run, the Map follows the chunks measured so far (redrawn every
``LIVE_SECONDS``) and then the finished projection.
GUI thread only; the job's messages hop here through a ``QtResultBridge``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from viewer.core.advise import (
    AdviseProgress,
    AdviseRequest,
    AdviseWork,
    ChunkRow,
    Report,
    SavingsSource,
    ShapeMap,
    human_bytes,
    run_advice,
)
from viewer.core.jobs import Emit, Job, JobCancelled
from viewer.ui.advise_plot import QtAdvisePlot
from viewer.ui.inspector.bridge import QtResultBridge
from viewer.ui.inspector.state import InspectorState

#: Seconds between redraws of the Map while it follows a run's chunks.
LIVE_SECONDS = 1.0
#: Table columns.
COLUMNS = ("candidate", "projected", "95 % interval", "vs today", "vs raw", "enc MB/s",
           "dec MB/s", "error")


class QtWhatIfTab(QWidget):
    """The What if tab (see the module docstring): ``run_button``, ``cancel_button``,
    ``sample_box`` (fraction), ``all_box`` (every chunk), ``progress``, ``summary``,
    ``table``, ``plot`` and ``map_button``; ``report`` is the last run's."""

    #: A run ended: the ``Report`` (None: cancelled or failed; ``summary`` says why).
    finished = Signal(object)
    #: The user asked for the Map coloured by a candidate's savings: a ``SavingsSource``.
    savings_chosen = Signal(object)

    def __init__(self, state: InspectorState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self.report: Report | None = None
        #: Whether the last run ran in a child process (else on a thread of this one).
        self.used_process = False
        self._job: Job[Report] | None = None
        self._thread: threading.Thread | None = None
        self._token = 0
        self._live: dict[tuple[int, int, int], tuple[float, tuple[int, ...]]] = {}
        #: The Map follows the chunks measured so far (asked for during a run), redrawn at
        #: most every ``LIVE_SECONDS``; when was it last.
        self._following = False
        self._live_drawn = 0.0
        self._bridge = QtResultBridge(self)
        self._bridge.result_arrived.connect(self._on_result)
        # The tab never widens the inspector's quadrant (its buttons and plot are cut instead):
        # the other tabs' texts must stay whole beside a compare dock on a 1024-pixel screen.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        v = QVBoxLayout(self)
        row = QHBoxLayout()
        row.addWidget(QLabel("sample"))
        self.sample_box = QDoubleSpinBox()
        self.sample_box.setRange(0.1, 100.0)
        self.sample_box.setDecimals(1)
        self.sample_box.setSuffix(" %")
        self.sample_box.setValue(5.0)
        row.addWidget(self.sample_box)
        self.all_box = QCheckBox("all")
        self.all_box.setToolTip("Every chunk: exact figures instead of a sample's estimates")
        row.addWidget(self.all_box)
        self.run_button = QPushButton("Run")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m chunks")
        self.progress.hide()
        row.addWidget(self.progress, 1)
        v.addLayout(row)
        self.summary = QLabel("Run re-encodes a sample of the chunks with other codecs and "
                              "projects the size and speed of each.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        v.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        split.addWidget(self.table)
        self.plot = QtAdvisePlot()
        split.addWidget(self.plot)
        v.addWidget(split, 1)
        self.map_button = QPushButton("Map the savings")
        self.map_button.setToolTip("Colour the Map by what the selected candidate would save "
                                   "in each chunk")
        self.map_button.setEnabled(False)
        self.map_button.clicked.connect(self._on_map_clicked)
        v.addWidget(self.map_button)

    # -- running -----------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def request(self) -> AdviseRequest:
        """What Run asks for, from the controls and the inspected volume."""
        st = self._state
        return AdviseRequest(fraction=self.sample_box.value() / 100.0,
                             exhaustive=self.all_box.isChecked(),
                             segmentation=st.segmentation, reopen=st.reopen)

    def run(self) -> None:
        """Start a run on ``state.volume`` (stopping one under way)."""
        volume = self._state.volume
        if volume is None:
            return
        self.stop()
        self._token += 1
        token = self._token
        request = self.request()
        self._live = {}
        self._following = False

        def local(emit: Emit, cancelled: threading.Event) -> Report:
            return run_advice(volume, request, emit, cancelled)

        reopen = self._state.reopen
        job: Job[Report] = Job(AdviseWork(reopen, request) if reopen is not None else local,
                               lambda m: self._bridge.deliver("message", token, m),
                               use_process=reopen is not None, name="what-if", local=local)
        self._job = job

        def work() -> None:
            try:
                payload: Any = job.run()
            except BaseException as exc:  # noqa: BLE001 - shown in the tab, never lost
                payload = exc
            self._bridge.deliver("done", token, payload)

        self._thread = threading.Thread(target=work, name="what-if", daemon=True)
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)
        self.progress.show()
        self.summary.setText("reading the chunk tables...")
        self._thread.start()

    def cancel(self) -> None:
        """Stop the run under way (its child process is killed)."""
        if self._job is not None:
            self._job.kill()

    def stop(self) -> None:
        """Cancel and forget the run under way (a new volume, the window closing)."""
        self._token += 1
        job, thread = self._job, self._thread
        self._job = self._thread = None
        if job is not None:
            job.kill()
        if thread is not None:
            thread.join(timeout=5.0)
        self._idle()

    def volume_changed(self) -> None:
        """``state.volume`` changed: stop, clear."""
        self.stop()
        self.report = None
        self.table.setRowCount(0)
        self.plot.show_report(None)
        self.map_button.setEnabled(False)
        self.summary.setText("Run re-encodes a sample of the chunks with other codecs and "
                             "projects the size and speed of each.")

    def _idle(self) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.hide()

    def _on_result(self, kind: str, token: int, payload: Any) -> None:
        if token != self._token:
            return  # a run that was stopped
        if kind == "message":
            self._on_message(payload)
            return
        if self._job is not None:
            self.used_process = self._job.used_process
        self._job = self._thread = None
        self._idle()
        if isinstance(payload, Report):
            self.show_report(payload)
            if self._following:  # the Map followed the run: now the finished projection's
                self._following = False
                self._on_map_clicked()
            self.finished.emit(payload)
            return
        if isinstance(payload, JobCancelled):
            self.summary.setText("cancelled")
        else:
            self.summary.setText(f"the run failed: {payload}")
        self.finished.emit(None)

    def _on_message(self, message: Any) -> None:
        if not isinstance(message, AdviseProgress):
            return
        if message.stage == "survey":
            self.summary.setText(f"reading the chunk tables: {message.done} units")
            return
        self.progress.setUpdatesEnabled(False)
        self.progress.setRange(0, max(1, message.total or 0))
        self.progress.setValue(message.done)
        self.progress.setUpdatesEnabled(True)
        self.summary.setText("re-encoding chunks...")
        for row in message.rows:
            if row.shape == 0 and row.sizes is not None:
                self._live[row.grid] = (row.current, row.sizes)
        if message.rows:
            self.map_button.setEnabled(True)
            now = time.monotonic()
            if self._following and now - self._live_drawn >= LIVE_SECONDS:
                self._live_drawn = now
                self._on_map_clicked()

    # -- showing -----------------------------------------------------------------------------------
    def show_report(self, report: Report) -> None:
        """The candidates of ``report`` in the table (smallest first) and the plot."""
        self.report = report
        rec = report.recommendation
        head = (f"today {report.encoding}, {human_bytes(report.stored_bytes)}; "
                + ("every present chunk re-encoded: exact" if report.exhaustive else
                   f"{report.sampled_chunks} of {report.present_chunks} chunks sampled"))
        if rec.index is not None:
            head += (f"<br><b>recommended: {report.projections[rec.index].candidate.label}"
                     f"</b>: {rec.reason}")
        self.summary.setText(head)
        order = sorted(range(len(report.projections)),
                       key=lambda i: report.projections[i].projected_bytes)
        self.table.setRowCount(len(order))
        for r, i in enumerate(order):
            p = report.projections[i]
            exact = p.interval[1] <= p.interval[0]
            cells = (
                ("\u2605 " if i == rec.index else "") + p.candidate.label
                + (" *" if i in report.pareto else ""),
                human_bytes(p.projected_bytes),
                "exact" if exact else
                f"{human_bytes(p.interval[0])} - {human_bytes(p.interval[1])}",
                f"{100 * p.ratio_to_current:.0f} %", f"{100 * p.ratio_to_raw:.0f} %",
                f"{p.encode_mb_s:.0f}", f"{p.decode_mb_s:.0f}",
                "lossless" if p.lossless else
                f"max {p.max_abs_error:.3g}, PSNR {p.psnr:.1f} dB")
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, i)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        if order:
            first = order.index(rec.index) if rec.index is not None else 0
            self.table.selectRow(first)
        self.plot.show_report(report)
        self.map_button.setEnabled(bool(order))

    def selected_index(self) -> int | None:
        """The projection index of the selected row (None: none)."""
        items = self.table.selectedItems()
        if not items:
            return None
        value = items[0].data(Qt.ItemDataRole.UserRole)
        return int(value) if value is not None else None

    def savings_source(self) -> SavingsSource | None:
        """The selected candidate's per-chunk savings (from the finished run), or, during a
        run, the first candidate's on the chunks measured so far."""
        volume = self._state.volume
        if volume is None:
            return None
        report = None if self.running else self.report
        index = self.selected_index()
        if report is not None and index is not None:
            for m in report.maps:
                if index in m.candidates:
                    return SavingsSource(m, m.candidates.index(index), volume.chunk_nbytes,
                                         report.projections[index].candidate.label)
        if self._live:
            grids = np.asarray(list(self._live), np.int64)
            current = np.asarray([v[0] for v in self._live.values()], np.float64)
            sizes = np.asarray([v[1] for v in self._live.values()], np.float32)
            chunks = ShapeMap(tuple(volume.chunk_shape), grids, current,  # type: ignore[arg-type]
                              sizes, np.ones(len(grids), np.bool_),
                              tuple(range(sizes.shape[1])))
            return SavingsSource(chunks, 0, volume.chunk_nbytes, "measured so far")
        return None

    def _on_map_clicked(self) -> None:
        if self.running:
            self._following = True
            self._live_drawn = time.monotonic()
        source = self.savings_source()
        if source is not None:
            self.savings_chosen.emit(source)


__all__ = ["QtWhatIfTab", "ChunkRow"]
