"""The hop from the comparison's threads to the GUI thread.

``CompareJob`` calls its callbacks on its own thread, and the voxel search of a mismatching
block runs on a worker; ``QtCompareBridge`` collects what they hand over under a lock and
posts one queued signal per burst (connected with ``Qt.ConnectionType.QueuedConnection``), so
a job that finds ten thousand mismatching blocks costs a few hops, not ten thousand.  On the
GUI thread it re-emits everything in arrival order as ``updated(job_id, Update)``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

from viewer.core.compare import BlockResult, Finding, Summary


@dataclass
class Update:
    """What arrived from one job since the last hop."""

    blocks: list[BlockResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    progress: tuple[int, int] | None = None
    #: The summary when the job ended, or the exception that stopped it.
    finished: Summary | BaseException | None = None


class QtCompareBridge(QObject):
    """Carries job callbacks and worker results to the GUI thread.

    Create it on the GUI thread.  ``job_*`` and ``deliver`` may be called from any thread;
    ``updated`` and ``delivered`` are emitted on the GUI thread only.
    """

    #: ``(job id, Update)``.
    updated = Signal(int, object)
    #: ``(kind, token, payload)`` of a worker result (payload: its value or its exception).
    delivered = Signal(str, int, object)
    _posted = Signal()
    _result_posted = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lock = threading.Lock()
        self._pending: dict[int, Update] = {}
        self._posted.connect(self._on_posted, Qt.ConnectionType.QueuedConnection)
        self._result_posted.connect(self._on_result_posted, Qt.ConnectionType.QueuedConnection)

    # -- any thread ---------------------------------------------------------------------------
    def _add(self, job_id: int, change: Any) -> None:
        with self._lock:
            post = not self._pending
            update = self._pending.setdefault(job_id, Update())
            change(update)
        if post:
            self._posted.emit()

    def job_block(self, job_id: int, block: BlockResult) -> None:
        self._add(job_id, lambda u: u.blocks.append(block))

    def job_finding(self, job_id: int, finding: Finding) -> None:
        self._add(job_id, lambda u: u.findings.append(finding))

    def job_progress(self, job_id: int, done: int, total: int) -> None:
        self._add(job_id, lambda u: setattr(u, "progress", (done, total)))

    def job_finished(self, job_id: int, outcome: Summary | BaseException) -> None:
        self._add(job_id, lambda u: setattr(u, "finished", outcome))

    def deliver(self, kind: str, token: int, payload: Any) -> None:
        self._result_posted.emit((kind, token, payload))

    # -- GUI thread ---------------------------------------------------------------------------
    @Slot()
    def _on_posted(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for job_id, update in pending.items():
            self.updated.emit(job_id, update)

    @Slot(object)
    def _on_result_posted(self, item: tuple[str, int, Any]) -> None:
        self.delivered.emit(*item)
