"""The inspector's background work on storage units: the scan of a volume's units and the
loading of the unit under the cursor.  GUI thread only; the scan runs in ``UnitScan``'s
worker (a thread, or a child process for big volumes), the unit loads on the executor it is
given, and both come back through a ``QtResultBridge`` (queued)."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any

from PySide6.QtCore import QObject, Signal

from viewer.core import inspect
from viewer.format import Volume
from viewer.ui.inspector.bridge import QtResultBridge
from viewer.ui.inspector.loaded_file import LoadedUnit, Vec3

#: Rows of the unit table arrive at most this often (each arrival repaints the table).
SCAN_BATCH_SECONDS = 0.25
#: The longest a stop that waits gives a cancelled scan to end (it checks between units).
STOP_WAIT_SECONDS = 30.0


class QtUnitJobs(QObject):
    """Starts the scan and unit loads; says what arrived through its signals, only for the
    work asked for last (what ``stop`` or a newer request superseded is dropped)."""

    #: A batch of the scan (an ``inspect.ScanBatch``).
    scan_batch = Signal(object)
    #: The unit asked for is read (a ``LoadedUnit``).
    unit_loaded = Signal(object)
    #: Reading the unit asked for failed outright (why).
    unit_failed = Signal(str)

    def __init__(self, executor: Executor, cache: inspect.TableCache,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._executor = executor
        self._cache = cache
        self._bridge = QtResultBridge(self)
        self._bridge.result_arrived.connect(self._on_result)
        self._tokens: dict[str, int] = {}
        self._scan: inspect.UnitScan | None = None

    def _next(self, kind: str) -> int:
        self._tokens[kind] = self._tokens.get(kind, 0) + 1
        return self._tokens[kind]

    def stop(self, wait: bool = False) -> None:
        """Cancel the scan (with ``wait``: and wait until it ended, at most
        ``STOP_WAIT_SECONDS``); drop whatever is still on its way."""
        if self._scan is not None:
            self._scan.cancel()
            if wait:
                self._scan.wait(STOP_WAIT_SECONDS)
            self._scan = None
        for kind in list(self._tokens):
            self._next(kind)

    def start_scan(self, volume: Volume, reopen: inspect.Reopen | None) -> None:
        """Scan ``volume``'s units (``reopen``: how a child process opens it again)."""
        self.stop()
        token = self._next("scan")
        self._scan = inspect.UnitScan(
            volume, lambda batch: self._bridge.deliver("scan", token, batch),
            batch_seconds=SCAN_BATCH_SECONDS, reopen=reopen)
        self._scan.start()

    def load_unit(self, volume: Volume, position: Vec3, header: Mapping[str, Any]) -> None:
        """Read the unit at unit-grid ``position`` (its header report, against the volume's
        ``header``, and its chunk table); supersedes the unit asked for before."""
        cache = self._cache
        token = self._next("unit")
        path = volume.unit_path(position)

        def job() -> LoadedUnit:
            table, error = cache.get(position)
            if table is None and error is None:
                return LoadedUnit(position, path, None, None, None)
            report = inspect.header_report(volume, path, table, error, header)
            return LoadedUnit(position, table.path if table is not None else path, report,
                              table, error)

        self._bridge.deliver_future("unit", token, self._executor.submit(job))

    def _on_result(self, kind: str, token: int, payload: Any) -> None:
        if self._tokens.get(kind) != token:
            return  # superseded
        if kind == "scan":
            batch: inspect.ScanBatch = payload
            if batch.finished:
                self._scan = None
            self.scan_batch.emit(batch)
        elif isinstance(payload, BaseException):
            self.unit_failed.emit(str(payload))
        else:
            self.unit_loaded.emit(payload)
