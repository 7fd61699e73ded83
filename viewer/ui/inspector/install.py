"""Mounting the inspector into the main window, in one call.

``install_inspector(window)`` needs only what ``viewer.ui.main_window.QtMainWindow`` offers:
``set_side_panel(widget)``, ``views`` (normal axis -> ``QtSliceView``), ``state`` (``cursor``,
``set_cursor``), ``opened`` (the ``viewer.format.Dataset`` shown), ``dataset`` (the ``Volume``
whose voxels are the window's), ``dataset_mag``, ``dataset_path``, and the signals
``dataset_opened(path)`` and ``cursor_changed((x, y, z))``.  It puts the panel in the fourth
quadrant, lays the compression map and grids over the three slice views, and links the cursor
both ways.  The entry point's signature is unchanged.

The panel inspects the window's format-neutral ``Dataset`` (``opened``; the panel shares its
volumes and does not close it), or, for a window that keeps none, the dataset of
``dataset_path`` opened here through the registry (``viewer.format.open_dataset``: metadata
only; the panel closes it).  The layer and mag it starts on are the ones the window shows (the
mag whose volume is the window's ``dataset``, else ``dataset_mag``); its combo boxes pick any
other.  Nothing here knows a format.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtWidgets import QApplication

from viewer.format import Dataset, FormatError, open_dataset
from viewer.ui.inspector.panel import QtInspectorPanel

Vec3 = tuple[int, int, int]


def _same_path(a: str, b: str) -> bool:
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _shown_path(window: Any) -> str | None:
    """The path of the array the window shows (its ``dataset``'s root or path), if any."""
    shown = getattr(window, "dataset", None)
    if shown is None:
        return None
    if isinstance(shown, Dataset):
        return None
    for name in ("root", "path"):
        value = getattr(shown, name, None)
        if isinstance(value, str) and value:
            single = getattr(shown, "single_file", None)
            return single if isinstance(single, str) and single else value
    return None


def dataset_of(window: Any, path: str) -> tuple[Dataset, bool] | None:
    """The neutral dataset behind what the window shows and whether it was opened here (the
    panel then closes it); None when nothing is shown or the path does not open."""
    for name in ("opened", "format_dataset", "webknossos"):
        held = getattr(window, name, None)
        if isinstance(held, Dataset):
            return held, False
    held = getattr(window, "dataset", None)
    if isinstance(held, Dataset):
        return held, False
    path = path or getattr(window, "dataset_path", "") or ""
    if not path:
        return None
    try:
        return open_dataset(path), True
    except (FormatError, OSError):
        return None


def shown_layer_and_mag(window: Any, dataset: Dataset) -> tuple[str | None, Vec3]:
    """The layer and mag the window shows: the mag whose path is the window's array, else
    the window's ``dataset_mag`` of the default layer."""
    shown = _shown_path(window)
    if shown is not None:
        for layer in dataset.layers:
            for mag in layer.mags:
                if _same_path(mag.path, shown) or (
                        mag.is_open and _same_path(mag.volume.path, shown)):
                    return layer.name, mag.mag
    window_mag = getattr(window, "dataset_mag", (1, 1, 1))
    try:
        mag = (int(window_mag[0]), int(window_mag[1]), int(window_mag[2]))
    except (TypeError, ValueError, IndexError):
        mag = (1, 1, 1)
    return None, mag


def install_inspector(window: Any) -> QtInspectorPanel:
    """Create the inspector, mount it in ``window`` and wire it; returns the panel."""
    panel = QtInspectorPanel()
    window.set_side_panel(panel)
    for view in window.views.values():
        panel.attach_to_view(view)

    def on_dataset_opened(path: str) -> None:
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
    panel.position_requested.connect(window.state.set_cursor)
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(panel.shutdown)
    if getattr(window, "dataset", None) is not None:
        on_dataset_opened("")
    return panel
