"""The window's side of remote datasets (issue 16): File > Open URL..., opening a URL without
freezing the window, and a status-bar section with the network counters (the window adds
it, telling it which paths it shows).

``open_dataset(path)`` is the registry's, except that for a URL the requests (detection, the
metadata, every mag's header) run on a thread while the GUI thread keeps handling events; it
returns when they are done, which the requests' timeouts bound.  ``QtRemoteStatus`` shows, once
anything remote was read: requests in flight (and queued), bytes fetched, throughput, the
on-disk cache's hits, and errors with the last one (its HTTP status).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QEventLoop, QTimer, Slot
from PySide6.QtWidgets import QInputDialog, QLabel, QLineEdit, QWidget

from viewer.format import is_url, registry
from viewer.format.dataset import Dataset

STATUS_INTERVAL_MS = 500
MIB = 1 << 20


def open_dataset(path: str) -> Dataset:
    """``registry.open_dataset``; for a URL on a thread, the window staying responsive."""
    if not is_url(path):
        return registry.open_dataset(path)
    done = threading.Event()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            opened = registry.open_dataset(path)
            mags = [m for layer in opened.layers for m in layer.mags]
            if mags:
                with ThreadPoolExecutor(min(8, len(mags))) as pool:
                    list(pool.map(lambda m: m.check(), mags))  # headers fetched here
            box["dataset"] = opened
        except BaseException as exc:  # noqa: BLE001 - re-raised on the GUI thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="wkw-open-url", daemon=True).start()
    loop = QEventLoop()
    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(lambda: loop.quit() if done.is_set() else None)
    timer.start()
    while not done.is_set():
        loop.exec()
    timer.stop()
    if "error" in box:
        raise box["error"]
    result: Dataset = box["dataset"]
    return result


def choose_url(parent: QWidget | None, open_path: Callable[[str], object],
               recent: Sequence[str] = ()) -> None:
    """File > Open URL...: ask for a URL (offering the last one of ``recent``) and open it."""
    url, ok = QInputDialog.getText(
        parent, "Open URL",
        "URL of a dataset (http://, https://, s3://, gs://): a webKnossos dataset, a WKW "
        "dataset or file, a zarr array or group, an N5 dataset", QLineEdit.EchoMode.Normal,
        _last_url(recent))
    url = url.strip()
    if ok and url:
        open_path(url)


def _last_url(recent: Sequence[str]) -> str:
    for item in recent:
        if is_url(item):
            return str(item)
    return "https://"


class QtRemoteStatus(QLabel):
    """The network counters in the status bar (hidden until something remote is read)."""

    def __init__(self, parent: QWidget | None = None,
                 shown_paths: Callable[[], Sequence[str | None]] | None = None) -> None:
        super().__init__(parent)
        #: The paths of what the window shows: the section shows when one is a URL (None:
        #: whenever anything remote was read).
        self.shown_paths = shown_paths
        self.setObjectName("remoteStatus")
        self.timer = QTimer(self)
        self.timer.setInterval(STATUS_INTERVAL_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        self.refresh()

    @Slot()
    def refresh(self) -> None:
        from viewer.format import remote_stats

        s = remote_stats()
        shown = s.stores > 0 and (self.shown_paths is None or self._reads_remote())
        self.setVisible(shown)
        if not shown:
            return
        text = (f"net {s.in_flight} in flight" + (f" (+{s.queued} queued)" if s.queued else "")
                + f" \u00b7 {s.bytes_fetched / MIB:.1f} MB \u00b7 {s.bytes_per_s / MIB:.1f} MB/s")
        if s.errors:
            text += f" \u00b7 {s.errors} errors"
            if s.last_error:
                text += f" ({s.last_error})"
        self.setText(text)
        self.setStyleSheet("color: #d04040;" if s.errors else "")
        self.setToolTip("\n".join([
            f"requests: {s.requests} made, {s.in_flight} on the wire, {s.queued} waiting",
            f"fetched: {s.bytes_fetched / MIB:.1f} MB ({s.bytes_per_s / MIB:.2f} MB/s over the "
            "last seconds)",
            f"on-disk cache: {s.cache_hits} ranges served ({s.cache_bytes / MIB:.1f} MB)",
            f"errors: {s.errors} requests failed after their retries"
            + (f"; last: {s.last_error}" if s.last_error else ""),
        ]))

    def _reads_remote(self) -> bool:
        """Whether the window shows a dataset read over the network (A, or compare's B)."""
        paths = self.shown_paths() if self.shown_paths is not None else []
        return any(isinstance(p, str) and is_url(p) for p in paths)
