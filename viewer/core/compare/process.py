"""A ``CompareJob`` in a child process, so the window's GIL stays free.

A comparison that finds many differing blocks runs thousands of small numpy operations per
second; on threads of the window's own process they would hold its GIL, and every Python
callback of the GUI thread (a paint, a slot) would wait for it: a window that stutters for
seconds.  ``CompareProcess`` runs the same job as a ``viewer.core.jobs.Job`` of a
``CompareWork`` (the child opens the sides by path, layer and mag through the format registry:
any format) and calls the same callbacks a ``CompareJob`` would, from the messages the child
streams back (progress, batches of mismatching blocks, findings), then returns its summary or
raises its error.  Cancel asks the child to cancel its job, which still reports the partial
summary; a child that cannot start, or dies without a word, is replaced by the same work on
the calling thread.

Threads: ``run`` on one thread (the caller's job thread), ``cancel`` from any thread;
callbacks come on the thread that calls ``run``.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from viewer.core.compare.job import CompareJob
from viewer.core.compare.model import BlockResult, Box, Finding, Summary
from viewer.core.compare.sides import VolumeSpec
from viewer.core.jobs import Emit, Job


@dataclass(frozen=True)
class CompareWork:
    """A comparison as a ``viewer.core.jobs`` work: emits ``("progress", done, total)``,
    ``("blocks", [BlockResult, ...])`` and ``("finding", Finding)``; returns the summary."""

    a: VolumeSpec
    b: VolumeSpec
    box: Box | None = None
    tolerance: float = 0.0
    workers: int = 2

    def __call__(self, emit: Emit, cancelled: threading.Event) -> Summary:
        pending: list[BlockResult] = []
        job: CompareJob | None = None

        def flush() -> None:
            if job is not None and cancelled.is_set():
                job.cancel()
            if pending:
                emit(("blocks", list(pending)))
                pending.clear()

        def progress(done: int, total: int) -> None:
            flush()
            emit(("progress", done, total))

        def finding(f: Finding) -> None:
            flush()
            emit(("finding", f))

        job = CompareJob(self.a, self.b, self.box, self.tolerance, self.workers,
                         on_progress=progress, on_block=pending.append, on_finding=finding)
        if cancelled.is_set():
            job.cancel()
        summary = job.run()
        flush()
        return summary


class CompareProcess:
    """Same constructor arguments, ``run``, ``cancel`` and callbacks as ``CompareJob``
    (the sides by path or ``VolumeSpec``, not open volumes)."""

    def __init__(self, a: str | VolumeSpec, b: str | VolumeSpec, box: Box | None = None,
                 tolerance: float = 0.0,
                 on_progress: Callable[[int, int], None] | None = None,
                 on_block: Callable[[BlockResult], None] | None = None,
                 on_finding: Callable[[Finding], None] | None = None) -> None:
        if tolerance < 0:
            raise ValueError(f"tolerance must be non-negative, not {tolerance}")
        if box is not None and (min(box[1]) <= 0 or min(box[0]) < 0):
            raise ValueError(f"box must have a non-negative offset and a positive size: {box}")
        self.a = a if isinstance(a, VolumeSpec) else VolumeSpec(a)
        self.b = b if isinstance(b, VolumeSpec) else VolumeSpec(b)
        self.box, self.tolerance = box, float(tolerance)
        self.on_progress = on_progress
        self.on_block = on_block
        self.on_finding = on_finding
        self._job: Job[Summary] = Job(CompareWork(self.a, self.b, box, self.tolerance),
                                      self._on_message, name="compare")

    @property
    def used_process(self) -> bool:
        """Whether the last ``run`` used a child process (False: the fallback on this
        thread)."""
        return self._job.used_process

    @property
    def _proc(self) -> subprocess.Popen[bytes] | None:
        """The child while it runs; None once it was waited for (as the window's tests check
        on closing)."""
        return self._job._proc

    def cancel(self) -> None:
        """Ask the comparison to stop; it still reports what it compared."""
        self._job.cancel()

    def run(self) -> Summary:
        """Compare in the child and return its summary; raises what stopped the comparison
        (e.g. a dataset that cannot be opened)."""
        return self._job.run()

    def _on_message(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "progress" and self.on_progress is not None:
            self.on_progress(message[1], message[2])
        elif kind == "blocks" and self.on_block is not None:
            for block in message[1]:
                self.on_block(block)
        elif kind == "finding" and self.on_finding is not None:
            self.on_finding(message[1])


__all__ = ["CompareProcess", "CompareWork"]
