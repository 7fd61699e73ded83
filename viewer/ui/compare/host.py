"""What the compare mode needs of the window that holds it: ``CompareHost``.

The compare mode is an object of its own (``QtCompareController``, built by
``install.build_compare``); it reaches the window only through the members listed here, so
that the window can be rebuilt from composed parts as long as it still offers them.
``as_host`` checks a window at install time and names whatever it lacks.

GUI thread only.
"""

from __future__ import annotations

from typing import Protocol, cast

from PySide6.QtCore import QObject, SignalInstance
from PySide6.QtWidgets import QGridLayout, QMenuBar, QStatusBar, QWidget

from viewer.core.cache import BlockCache
from viewer.core.slicing import Plane
from viewer.core.state import ViewerState
from viewer.format import Dataset, Volume
from viewer.render.plane import Rendered
from viewer.ui.slice_view import QtSliceView


class SharedCache(Protocol):
    """The window's plane source, as far as B's loader shares its block cache."""

    @property
    def cache(self) -> BlockCache | None: ...


class CompareHost(Protocol):
    """The window's members the compare mode uses (``QtMainWindow`` has them all)."""

    #: The one viewer state both A's and B's views follow.
    @property
    def state(self) -> ViewerState: ...

    #: A's three slice views by normal axis; compare draws over them and splits their quadrants.
    @property
    def views(self) -> dict[int, QtSliceView]: ...

    #: The layout holding the views (each view is replaced by a splitter: A | B).
    @property
    def grid(self) -> QGridLayout: ...

    #: The compared volume of A (the mag the window's coordinates are in), its path and the
    #: dataset it belongs to (a dataset of several layers or mags: ``dataset_mag`` of its first).
    @property
    def dataset(self) -> Volume | None: ...

    @property
    def dataset_path(self) -> str | None: ...

    @property
    def opened(self) -> Dataset | None: ...

    @property
    def dataset_mag(self) -> tuple[int, int, int]: ...

    #: The window's plane source (B's blocks go into its block cache), None before a dataset.
    @property
    def source(self) -> SharedCache | None: ...

    #: A's views read their finest mag while set (B is compared voxel for voxel).
    force_finest: bool

    #: Emitted with the path when the window opened another dataset A.
    @property
    def dataset_opened(self) -> SignalInstance: ...

    def show_error(self, title: str, detail: str) -> None: ...

    #: ``view``'s picture with layer ``name``'s plane replaced by ``plane``: B drawn as A is
    #: (the same layers over and under it, contrast, colormaps, opacities).
    def draw_with(self, view: QtSliceView, name: str, plane: Plane) -> Rendered: ...

    def refresh_planes(self, force: bool = False, rerender: bool = False) -> set[int]: ...

    def add_status_widget(self, widget: QWidget, permanent: bool = False) -> None: ...

    def statusBar(self) -> QStatusBar: ...

    def menuBar(self) -> QMenuBar: ...

    def installEventFilter(self, watched: QObject, /) -> None: ...


#: The members ``as_host`` looks for (those of ``CompareHost``).
MEMBERS = ("state", "views", "grid", "dataset", "dataset_path", "opened", "dataset_mag",
           "source", "force_finest", "dataset_opened", "show_error", "draw_with", "refresh_planes",
           "add_status_widget", "statusBar", "menuBar", "installEventFilter")


def as_host(window: QWidget) -> CompareHost:
    """``window`` as a ``CompareHost``; a ``TypeError`` naming the members it lacks."""
    missing = [name for name in MEMBERS if not hasattr(window, name)]
    if missing:
        raise TypeError(f"{type(window).__name__} cannot hold the compare mode: it has no "
                        + ", ".join(missing))
    return cast(CompareHost, window)


def describe(exc: BaseException) -> str:
    """An exception as the detail line of ``CompareHost.show_error``."""
    if isinstance(exc, FileNotFoundError):
        return f"no such file or folder: {exc.filename or exc}"
    return str(exc) or type(exc).__name__


__all__ = ["MEMBERS", "CompareHost", "SharedCache", "as_host", "describe"]
