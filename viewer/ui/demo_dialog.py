"""Generating the demo dataset with a progress dialog, the window staying responsive.

The generation runs on a worker thread (``viewer.core.demo.build_demo``: numpy and files only,
itself on two threads); its progress (called on that worker thread) reaches the dialog through a
small QObject whose signals are queued to the GUI thread.  The worker never touches a widget.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from PySide6.QtCore import QEventLoop, QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox, QProgressDialog, QWidget

from viewer.core import demo


class QtDemoProgress(QObject):
    """Hop from the generating thread to the GUI thread."""

    progressed = Signal(int, int)
    finished = Signal(object)  # the demo's Path, or the exception


def ensure_demo_with_progress(parent: QWidget | None = None) -> Path | None:
    """The demo dataset's folder, generated first (with a progress dialog) when missing.
    Returns None when generation failed (after saying why) or was cancelled."""
    path = demo.default_demo_path(os.environ.get(demo.CACHE_ENV))
    if demo.is_complete(path):
        return path
    x, y, z = demo.DEMO_SHAPE
    what = (f"synthetic EM, {x} \u00d7 {y} \u00d7 {z} voxels, color and segmentation, "
            f"{len(demo.DEMO_MAGS)} mags")
    dialog = QProgressDialog(f"Generating the demo dataset ({what})\u2026", "", 0, 1, parent)
    dialog.setWindowTitle("wkw-viewer")
    dialog.setCancelButton(None)
    dialog.setMinimumDuration(0)
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    bridge = QtDemoProgress()
    loop = QEventLoop()
    result: list[object] = []

    def on_progress(done: int, total: int) -> None:
        dialog.setMaximum(total)
        dialog.setValue(done)
        dialog.setLabelText(f"Generating the demo dataset ({what}): file {done} of {total}")

    def on_finished(outcome: object) -> None:
        result.append(outcome)
        loop.quit()

    bridge.progressed.connect(on_progress, Qt.ConnectionType.QueuedConnection)
    bridge.finished.connect(on_finished, Qt.ConnectionType.QueuedConnection)

    def work() -> None:
        try:
            outcome: object = demo.build_demo(path, lambda d, t: bridge.progressed.emit(d, t))
        except Exception as exc:  # reported in the window, not lost on the thread
            outcome = exc
        bridge.finished.emit(outcome)

    thread = threading.Thread(target=work, name="demo-generator", daemon=True)
    dialog.show()
    thread.start()
    loop.exec()
    thread.join()
    dialog.close()
    outcome = result[0]
    if isinstance(outcome, Exception):
        QMessageBox.warning(parent, "wkw-viewer",
                            f"Could not generate the demo dataset in {path}:\n{outcome}")
        return None
    return Path(str(outcome))
