"""The hop from inspector worker threads to the GUI thread.

Workers (``viewer.core.inspect``) hand plain data to ``QtResultBridge.deliver`` from any thread;
the bridge re-emits it as ``result_arrived`` on the GUI thread through a queued connection, so
no worker ever touches a widget and no callback re-enters the caller.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal


class QtResultBridge(QObject):
    """Re-emits ``(kind, token, payload)`` tuples on the GUI thread, in arrival order."""

    _posted = Signal(object)
    #: ``(kind, token, payload)`` where payload is the worker's value or the exception it raised.
    result_arrived = Signal(str, int, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._posted.connect(self._on_posted, Qt.ConnectionType.QueuedConnection)

    def deliver(self, kind: str, token: int, payload: Any) -> None:
        """Any thread: queue ``payload`` for the GUI thread."""
        self._posted.emit((kind, token, payload))

    def deliver_future(self, kind: str, token: int, future: Future[Any]) -> None:
        """Deliver a future's result (or its exception) when it finishes."""
        def done(fut: Future[Any]) -> None:
            try:
                payload: Any = fut.result()
            except BaseException as exc:  # delivered, shown by the panel, never swallowed
                payload = exc
            self.deliver(kind, token, payload)

        future.add_done_callback(done)

    def _on_posted(self, item: tuple[str, int, Any]) -> None:
        self.result_arrived.emit(*item)
