"""The window's side of remote datasets: File > Open URL..., opening a URL without
freezing the window, a status-bar section with the network counters (the window adds it,
telling it which paths it shows), and File > Remote Cache... (the size of the on-disk cache of
fetched bytes, a setting kept with the window's).

``open_dataset(path)`` is the registry's, except that for a URL the requests (detection, the
metadata, every mag's header) run on a thread while the GUI thread keeps handling events; it
returns when they are done, which the requests' timeouts bound.  ``QtRemoteStatus`` shows, once
anything remote was read: requests in flight (and queued), bytes fetched, throughput, the
on-disk cache's hits, and errors with the last one (its HTTP status).

The cache size setting (``remote/cache_mb``, MiB, default 4096) is applied when the window is
made; ``--remote-cache-mb`` or ``WKW_VIEWER_REMOTE_CACHE_MB`` win over it for their run.  The
dialog shows the cache's folder and what it holds, and can empty it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QEventLoop, Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from viewer.format import (
    apply_remote_cache_setting,
    clear_remote_cache,
    is_url,
    registry,
    remote_cache_info,
    set_remote_cache_mb,
)
from viewer.format.dataset import Dataset
from viewer.format.executor import Executor
from viewer.ui import settings

STATUS_INTERVAL_MS = 500
#: How often opening a local path looks whether its thread is done.
LOCAL_TICK_MS = 2
MIB = 1 << 20
#: The window's setting: MiB of the on-disk cache of fetched bytes (default: the remote
#: configuration's, 4096).
CACHE_KEY = "remote/cache_mb"


class OpeningCancelled(Exception):
    """The person stopped opening a URL (Esc) before it answered."""


def open_dataset(path: str, waiting: Callable[[float], bool] | None = None,
                 executor: Executor | None = None) -> Dataset:
    """``registry.open_dataset``; for a URL on a thread, the window staying responsive.
    ``waiting(seconds)`` is called about every 20 ms while a URL is being opened (say so on
    screen); when it returns False, ``OpeningCancelled`` is raised at once and whatever the
    thread opens later is closed.  A local path opens on a thread too (detection reads a few
    files, and the first open imports the formats: a tenth of a second or more that the
    window would not answer for), looked at every ``LOCAL_TICK_MS``.  ``executor``: the
    opener's, which the dataset runs its background work on (default: one of its own)."""
    remote = is_url(path)
    done = threading.Event()
    box: dict[str, Any] = {}
    lock = threading.Lock()

    def work() -> None:
        try:
            opened = registry.open_dataset(path, executor=executor)
            mags = [m for layer in opened.layers for m in layer.mags] if remote else []
            if mags:
                with ThreadPoolExecutor(min(8, len(mags))) as pool:
                    list(pool.map(lambda m: m.check(), mags))  # headers fetched here
            with lock:
                if box.get("cancelled"):
                    opened.close()  # nobody waits for it any more
                else:
                    box["dataset"] = opened
        except BaseException as exc:  # noqa: BLE001 - re-raised on the GUI thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="wkw-open-url" if remote else "wkw-open",
                     daemon=True).start()
    began = time.monotonic()
    loop = QEventLoop()
    timer = QTimer()
    timer.setInterval(20 if remote else LOCAL_TICK_MS)

    def tick() -> None:
        if done.is_set() or (waiting is not None and not waiting(time.monotonic() - began)):
            loop.quit()

    timer.timeout.connect(tick)
    timer.start()
    if waiting is not None:
        waiting(0.0)  # at once, before the first tick
    while not done.is_set():
        loop.exec()
        if not done.is_set():  # the person cancelled
            with lock:
                box["cancelled"] = True
                finished = box.pop("dataset", None)  # came in just now: not wanted either
            if finished is not None:
                finished.close()
            timer.stop()
            raise OpeningCancelled(f"stopped opening {path}")
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
            f"on-disk cache: {s.cache_hits} ranges served ({s.cache_bytes / MIB:.1f} MB); "
            "File > Remote Cache... sets its size",
            f"read-ahead stopped as the cursor moved on: {s.cancelled} requests",
            f"errors: {s.errors} requests failed after their retries"
            + (f"; last: {s.last_error}" if s.last_error else ""),
        ]))

    def _reads_remote(self) -> bool:
        """Whether the window shows a dataset read over the network (A, or compare's B; A at
        a URL, or a local properties file whose mags are at URLs)."""
        paths = self.shown_paths() if self.shown_paths is not None else []
        return any(isinstance(p, str) and is_url(p) for p in paths)


def stored_cache_mb() -> int | None:
    """The cache size kept in the settings (None: none kept, or settings off)."""
    store = settings.open_settings()
    if store is None:
        return None
    value = store.value(CACHE_KEY)
    try:
        return max(0, int(str(value))) if value is not None else None
    except ValueError:
        return None


class QtRemoteCacheDialog(QDialog):
    """File > Remote Cache...: the on-disk cache's size (MiB), folder, use, and emptying it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Remote Cache")
        info = remote_cache_info()
        form = QFormLayout(self)
        about = QLabel("Bytes read over the network (HTTP, S3, GCS) are kept on disk, so that "
                       "a second visit costs no request; the least recently used go first.")
        about.setWordWrap(True)
        form.addRow(about)
        self.size_box = QSpinBox()
        self.size_box.setRange(0, 1 << 22)
        self.size_box.setSingleStep(512)
        self.size_box.setSuffix(" MB")
        self.size_box.setValue(info.budget_bytes // MIB)
        self.size_box.setToolTip("Bytes read over the network are kept on disk up to this "
                                 "size, so a second visit costs no request (0: no cache)")
        form.addRow("Size", self.size_box)
        folder = QLabel(info.folder)
        folder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Folder", folder)
        self.used = QLabel()
        form.addRow("Holds", self.used)
        self.clear_button = QPushButton("Empty the Cache")
        self.clear_button.clicked.connect(self._on_clear)
        form.addRow("", self.clear_button)
        note = "" if settings.enabled() else "Settings are off: the size holds for this run. "
        if info.size_from_run:
            note += ("This run's size comes from --remote-cache-mb or "
                     "WKW_VIEWER_REMOTE_CACHE_MB; a size set here applies now and is kept for "
                     "later runs.")
        if note:
            label = QLabel(note)
            label.setWordWrap(True)
            form.addRow(label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self._show_used(info.used_bytes)

    def _show_used(self, used: int) -> None:
        self.used.setText(f"{used / MIB:.1f} MB")

    @Slot()
    def _on_clear(self) -> None:
        clear_remote_cache()
        self._show_used(remote_cache_info().used_bytes)

    def apply(self) -> None:
        """Keep the size chosen (in the settings) and use it from now on."""
        mb = int(self.size_box.value())
        store = settings.open_settings()
        if store is not None:
            store.setValue(CACHE_KEY, mb)
        set_remote_cache_mb(mb)


def apply_stored_cache_size() -> None:
    """Use the cache size kept in the settings (unless this run set one)."""
    apply_remote_cache_setting(stored_cache_mb())


def choose_cache(parent: QWidget | None) -> None:
    """File > Remote Cache...: show the dialog; OK applies and keeps the size."""
    dialog = QtRemoteCacheDialog(parent)
    if dialog.exec() == QDialog.DialogCode.Accepted:
        dialog.apply()

