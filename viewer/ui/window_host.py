"""What the main window offers the parts it holds and the panels mounted onto it.

``WindowHost`` is the small typed seam between ``viewer.ui.main_window.QtMainWindow`` and its
parts (the status bar, the menus, the layer drawing, the loading, the window memory): the model,
the slice views, what is open, and the three services they call back (say what went wrong, say
something in the status bar, open a path).  A part is handed the window as a ``WindowHost`` and
reaches for nothing else; the window satisfies it structurally (checked by mypy where the window
hands itself over).  GUI thread only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from viewer.core.layered import LayeredSource
from viewer.core.state import ViewerState
from viewer.format import Dataset, Volume
from viewer.ui.slice_view import QtSliceView

Vec3 = tuple[int, int, int]


class WindowHost(Protocol):
    """The window as its parts see it."""

    @property
    def state(self) -> ViewerState:
        """The one model every view follows."""

    @property
    def views(self) -> Mapping[int, QtSliceView]:
        """The slice views by their normal axis (XY, XZ, YZ)."""

    @property
    def dataset(self) -> Volume | None:
        """The first layer's finest mag: its voxels are the window's coordinates."""

    @property
    def dataset_path(self) -> str | None:
        """The path or URL the shown dataset was opened from."""

    @property
    def dataset_mag(self) -> Vec3:
        """The mag of ``dataset`` (its voxel ``p`` covers mag-1 voxels ``p * dataset_mag``)."""

    @property
    def opened(self) -> Dataset | None:
        """The dataset shown (its layers, mags, voxel size, problems)."""

    @property
    def source(self) -> LayeredSource | None:
        """Where the views' planes come from (None: nothing open)."""

    def show_error(self, title: str, detail: str) -> None:
        """Say in the window what went wrong; the window stays usable."""

    def show_message(self, text: str, timeout_ms: int = 0) -> None:
        """A passing message in the status bar."""

    def focus_views(self) -> None:
        """Make the window active and give the focused view the keys (after a dialog)."""

    def open_path(self, path: str | os.PathLike[str], pos: Sequence[int] | None = None,
                  zoom: float | None = None) -> bool:
        """Open a dataset; False (after saying why in the window) when it cannot be."""
