"""Running a comparison job on a thread of its own: ``start()``, then ``wait()``.

Shared by ``CompareJob`` and ``WkCompareJob``.  The thread runs the job's ``run()``; an error
that stops it has no caller on that thread, so it is kept and raised again by ``wait()``.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class BackgroundRun(Generic[T]):
    """``run()`` on a background thread.  ``start`` and ``wait`` may be called from any
    thread (``wait`` by one thread at a time); subclasses set ``summary`` and implement
    ``run``."""

    #: The name of the thread (shown by debuggers and ``threading.enumerate``).
    thread_name = "wkw-job"
    summary: T

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def run(self) -> T:
        raise NotImplementedError

    def start(self) -> None:
        """Run the job on a background thread; ``wait()`` returns its summary."""
        if self._thread is not None:
            raise RuntimeError("the job was already started")
        self._thread = threading.Thread(target=self._run_caught, name=self.thread_name,
                                        daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> T | None:
        """The summary once the background run ended (None on timeout); re-raises the error
        that stopped it (e.g. a dataset that cannot be opened)."""
        if self._thread is None:
            raise RuntimeError("the job was not started")
        self._thread.join(timeout)
        if self._thread.is_alive():
            return None
        if self._error is not None:
            raise self._error
        return self.summary

    def _run_caught(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # noqa: BLE001  (handed to wait(): a thread has no caller)
            self._error = exc
