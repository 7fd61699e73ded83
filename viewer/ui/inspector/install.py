"""Mounting the inspector into the main window, in one call.

``install_inspector(window)`` needs only what ``InspectorWindow`` lists, all of which
``viewer.ui.main_window.QtMainWindow`` offers: ``set_side_panel(widget)``, ``views`` (normal
axis -> slice view), ``state`` (``cursor``, ``set_cursor``), ``opened`` (the
``viewer.format.Dataset`` shown), ``dataset`` (the ``Volume`` whose voxels are the window's),
``dataset_mag``, ``dataset_path``, and the signals ``dataset_opened(path)``,
``cursor_changed((x, y, z))`` and ``blocks_failed({(path, block): FormatError})`` (blocks met
while browsing that failed or whose file is changing: the Problems tab lists them).  It puts
the panel in the fourth quadrant, lays the compression map and grids over the three slice
views, and links the cursor both ways.

The panel inspects the window's format-neutral ``Dataset`` (``opened``; the panel shares its
volumes and does not close it), or, for a window that keeps none, the dataset of
``dataset_path`` opened here through the registry (``viewer.format.open_dataset``: metadata
only; the panel closes it).  The layer and mag it starts on are the ones the window shows (the
mag whose volume is the window's ``dataset``, else ``dataset_mag``); its combo boxes pick any
other.  Nothing here knows a format.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from PySide6.QtCore import QCoreApplication, QTimer, SignalInstance
from PySide6.QtWidgets import QWidget

from viewer.format import Dataset, FormatError, Volume, open_dataset
from viewer.ui.inspector.loaded_file import Vec3
from viewer.ui.inspector.overlay import OverlayView
from viewer.ui.inspector.panel import QtInspectorPanel


class CursorState(Protocol):
    """The window's viewer state as the inspector uses it."""

    @property
    def cursor(self) -> Vec3: ...
    def set_cursor(self, pos: Sequence[int]) -> None: ...


class InspectorWindow(Protocol):
    """What the inspector uses of the window (see the module docstring)."""

    @property
    def views(self) -> Mapping[int, OverlayView]: ...
    @property
    def state(self) -> CursorState: ...
    @property
    def opened(self) -> Dataset | None: ...
    @property
    def dataset(self) -> Volume | None: ...
    @property
    def dataset_mag(self) -> Vec3: ...
    @property
    def dataset_path(self) -> str | None: ...
    @property
    def dataset_opened(self) -> SignalInstance: ...
    @property
    def cursor_changed(self) -> SignalInstance: ...
    @property
    def blocks_failed(self) -> SignalInstance: ...
    def set_side_panel(self, widget: QWidget) -> None: ...


def _same_path(a: str, b: str) -> bool:
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def dataset_of(window: InspectorWindow, path: str) -> tuple[Dataset, bool] | None:
    """The neutral dataset behind what the window shows and whether it was opened here (the
    panel then closes it); None when nothing is shown or the path does not open."""
    if window.opened is not None:
        return window.opened, False
    path = path or window.dataset_path or ""
    if not path:
        return None
    try:
        return open_dataset(path), True
    except (FormatError, OSError):
        return None


def shown_layer_and_mag(window: InspectorWindow, dataset: Dataset) -> tuple[str | None, Vec3]:
    """The layer and mag the window shows: the mag whose path is the window's array, else
    the window's ``dataset_mag`` of the default layer."""
    shown = window.dataset.path if window.dataset is not None else ""
    if shown:
        for layer in dataset.layers:
            for mag in layer.mags:
                if _same_path(mag.path, shown) or (
                        mag.is_open and _same_path(mag.volume.path, shown)):
                    return layer.name, mag.mag
    m = window.dataset_mag
    return None, (int(m[0]), int(m[1]), int(m[2]))


#: How long after a dataset opened the panel takes it (a timer, see ``install_inspector``).
TAKE_AFTER_MS = 1


def install_inspector(window: InspectorWindow) -> QtInspectorPanel:
    """Create the inspector, mount it in ``window`` and wire it; returns the panel."""
    panel = QtInspectorPanel()
    window.set_side_panel(panel)
    for view in window.views.values():
        panel.attach_to_view(view)

    pending: list[str] = []

    def on_dataset_opened(path: str) -> None:
        # The panel takes the dataset in a later turn of the event loop: opening returns and
        # the window paints without waiting for the panel's start (its scan, its first unit).
        # A timer of 1 ms, not 0: a zero timer is a posted event, run in the same pass as the
        # paint and the other events opening posted (one long stall); a timer runs after
        # them, once the event loop has been round.  Then a second timer, started when the
        # first fires: the timers due with the first (the window's own, a heartbeat) run
        # before the panel starts, which is then a turn of its own, not one stall with the
        # first paint.  Datasets opened one after another before that turn: only the last
        # is inspected.
        if not pending:
            QTimer.singleShot(TAKE_AFTER_MS, panel, one_turn_later)
        pending[:] = [path]

    def one_turn_later() -> None:
        QTimer.singleShot(TAKE_AFTER_MS, panel, take_dataset)

    def take_dataset() -> None:
        if not pending or panel.is_shut_down:
            return
        inspect_dataset(pending.pop())

    def inspect_dataset(path: str) -> None:
        found = dataset_of(window, path)
        if found is None:
            panel.set_dataset(None)
            return
        dataset, own = found
        layer, mag = shown_layer_and_mag(window, dataset)
        panel.set_dataset(dataset, mag, layer=layer, mag=mag, own=own)
        panel.show_cursor(window.state.cursor)

    window.dataset_opened.connect(on_dataset_opened)
    window.cursor_changed.connect(panel.show_cursor)
    window.blocks_failed.connect(panel.note_block_errors)
    panel.position_requested.connect(window.state.set_cursor)
    app = QCoreApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(panel.shutdown)
    if window.dataset is not None:
        inspect_dataset("")
    return panel
