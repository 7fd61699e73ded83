"""Dataset B beside the window's A: opening it, loading its planes, and its own slice views.

``QtSideB`` holds B while the compare mode shows it.  B is any dataset the format registry
opens (``open_b_dataset``: the one place B is opened; its mag is the volume compared with the
window's) and is read through a background ``Loader`` of its own on the window's block cache
(one budget for A and B, B's blocks keyed apart), with the same ``PlaneRequest``s as A's views:
it shows the same cursor, zoom and region, since both follow the one ``ViewerState``.

``planes`` holds B's plane for each of A's visible views (what the picture modes and the hover
compare with); ``views`` are B's own ``QtSliceView``s, one beside each of A's in a splitter,
shown in side by side only.  A file listing in the background gives B's extent (for the
common-extent box).

GUI thread only (B's loader works on its own threads and reports through a
``QtLoadingBridge``).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QSizePolicy, QSplitter

from viewer.core import extent
from viewer.core.compare import VolumeSpec, is_collection
from viewer.core.compare.model import Box
from viewer.core.loader import Loader
from viewer.core.slicing import Box3, Plane, PlaneRequest
from viewer.format import Dataset, FormatError, Mag, Volume, open_dataset, select_mag
from viewer.render.palette import Palette
from viewer.render.plane import Rendered
from viewer.ui.compare.host import CompareHost, describe
from viewer.ui.loading import QtLoadingBridge
from viewer.ui.slice_view import QtSliceView

#: How long the common-extent box may wait on the GUI thread for B's file listing.
EXTENT_WAIT_S = 0.15


def open_b_dataset(path: str, layer: str | None = None,
                   mag: tuple[int, int, int] | None = None) -> tuple[Dataset, Mag, VolumeSpec]:
    """B, opened through the format registry (any format): the dataset, the mag compared with
    the window's (of a dataset of several layers or mags: the layer named ``layer`` when B
    has it, else B's default layer, at ``mag``; of a single array: that array), and the
    ``VolumeSpec`` the comparison job opens it by.  Raises the ``FormatError`` (or
    ``OSError``, ``KeyError`` for a missing mag) that stops it.

    The one place the window opens B: the window's layered source will open B here too."""
    opened = open_dataset(path)
    try:
        if not opened.layers:
            raise FormatError("no layer of this dataset can be read: "
                              + ("; ".join(str(p) for p in opened.problems) or "none"), path)
        if not is_collection(opened):
            chosen, spec = opened.layers[0].finest, VolumeSpec(path)
        else:
            names = [la.name for la in opened.layers]
            chosen = select_mag(opened, layer if layer in names else None, mag)
            spec = VolumeSpec(path, chosen.layer, chosen.mag)
        chosen.volume  # noqa: B018 - opened now: a B that cannot be read is said at once
        return opened, chosen, spec
    except BaseException:
        opened.close()
        raise


class QtSideB(QObject):
    """Dataset B, its loader, its planes and its views.  See the module docstring."""

    #: B's plane for A's view on this axis changed (drawn over that view: repaint it).
    plane_changed = Signal(int)

    def __init__(self, host: CompareHost, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.state = host.state
        #: The path B was opened by; None while no B is open.
        self.path: str | None = None
        #: B's compared volume, and how the comparison job opens it.
        self.volume: Volume | None = None
        self.spec: VolumeSpec | None = None
        self.source: Loader | None = None
        #: B's plane for each of A's visible views, by axis.
        self.planes: dict[int, Plane] = {}
        #: B's own views (shown in side by side), and the splitters holding A's and B's.
        self.views: dict[int, QtSliceView] = {}
        self.splitters: dict[int, QSplitter] = {}
        #: B's views are shown (side by side) and ask for planes of their own.
        self.side_by_side = False
        self._opened: Dataset | None = None
        self._extent: extent.ExtentScan | None = None
        self._bridge: QtLoadingBridge | None = None
        self._wanted: list[PlaneRequest] = []
        self._palette: Palette | None = None
        #: The layer of A that B is compared with (B's planes are drawn in its place).
        self.a_layer = ""
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self.refresh)
        for view in host.views.values():
            view.plane_wanted.connect(lambda _axis: self.schedule_refresh())
            view.picture_changed.connect(self._on_a_picture_changed)

    @property
    def active(self) -> bool:
        """A B is open."""
        return self.source is not None

    # -- opening and closing ------------------------------------------------------------------
    def attach(self, path: str, found: tuple[Dataset, Mag, VolumeSpec]) -> None:
        """Show B: ``found`` is what ``open_b_dataset(path, ...)`` returned (this object closes
        it from now on).  Starts listing B's files and loading the planes A's views show."""
        self.close()
        opened, mag, spec = found
        volume = mag.volume
        self.volume, self._opened, self.spec = volume, opened, spec
        self.path = path
        layers = self.state.layers
        self.a_layer = layers[0].name if layers else mag.layer  # what the window compares
        if not volume.extent_declared:  # a plain WKW dataset: the box of its files
            self._extent = extent.ExtentScan(volume, lambda _bounds, _done: None).start()
        # B's blocks go into A's block cache (one budget for both: B does not double the
        # memory), keyed apart from A's layers; a window reading synchronously has no cache.
        source = self.host.source
        self.source = Loader(volume, layer=("compare B", mag.layer), mag=mag.mag, workers=2,
                             cache=None if source is None else source.cache,
                             close_dataset=False)
        bridge = QtLoadingBridge(self.source, self)
        bridge.data_arrived.connect(self._on_arrived)
        self._bridge = bridge
        self._palette = None
        self._ensure_views()

    def close(self) -> bool:
        """Stop B's loader and listing, close B, empty its views.  True when a B was open."""
        if self._bridge is not None:
            self._bridge.detach()
            self._bridge.deleteLater()
            self._bridge = None
        if self._extent is not None:
            self._extent.cancel()
            self._extent.join()
            self._extent = None
        was = self.source is not None
        if self.source is not None:
            self.source.close()
        if self._opened is not None:
            self._opened.close()
        self.source = None
        self._opened = None
        self.volume = self.spec = None
        self.path = None
        self.forget_planes()
        for view in self.views.values():
            view.show_plane(None, None)
        return was

    def forget_planes(self) -> None:
        """Drop B's planes (another A: they answer requests of the old one)."""
        self.planes = {}
        self._wanted = []

    def _ensure_views(self) -> None:
        """Split every quadrant: A's view left, B's right (B's hidden until side by side)."""
        if self.views:
            return
        for axis, view in self.host.views.items():
            splitter = QSplitter(Qt.Orientation.Horizontal)
            splitter.setObjectName(f"compareSplit{axis}")
            splitter.setChildrenCollapsible(False)
            splitter.setHandleWidth(3)
            splitter.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
            self.host.grid.replaceWidget(view, splitter)
            splitter.addWidget(view)
            b_view = QtSliceView(axis, self.state)
            b_view.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
            # The mouse over B's view says what it says over A's (the window's status bar,
            # compare's A/B values): the voxel under it is the same.
            b_view.hovered.connect(view.hovered)
            b_view.plane_wanted.connect(lambda _axis: self.schedule_refresh())
            splitter.addWidget(b_view)
            b_view.hide()
            self.splitters[axis] = splitter
            self.views[axis] = b_view

    def apply_layout(self, side_by_side: bool) -> None:
        """Quadrants follow the window's layout (one maximised view, or 2x2); B's views show
        in side by side only."""
        self.side_by_side = side_by_side
        for axis, splitter in self.splitters.items():
            splitter.setVisible(self.state.layout is None or self.state.layout == axis)
            b_view = self.views[axis]
            if side_by_side != b_view.isVisibleTo(splitter):
                b_view.setVisible(side_by_side)
                if side_by_side:
                    half = max(splitter.width() // 2, 1)
                    splitter.setSizes([half, half])

    # -- planes -------------------------------------------------------------------------------
    def palette(self) -> Palette:
        """B's pictures: the window's contrast on B's voxel type."""
        dtype = self.volume.dtype if self.volume is not None else np.dtype(np.uint8)
        palette = self._palette
        if palette is None or palette.contrast != self.state.contrast or palette.dtype != dtype:
            palette = self._palette = Palette(self.state.contrast, dtype)
        return palette

    def schedule_refresh(self) -> None:
        """``refresh`` once control returns to the event loop (many causes, one refresh)."""
        self._refresh_timer.start()

    def refresh(self, force: bool = False) -> None:
        """Ask B's loader for the planes A's views show (and B's own views, in side by side)
        and fetch those that changed."""
        if self.source is None:
            return
        host = self.host
        requests: dict[int, PlaneRequest] = {}
        for axis, view in host.views.items():
            if view.isVisibleTo(view.window()) and view.request is not None:
                requests[axis] = view.request
        side: dict[int, PlaneRequest] = {}
        if self.side_by_side:
            for axis, b_view in self.views.items():
                if b_view.isVisibleTo(b_view.window()):
                    req = b_view.wanted_request()
                    if req is not None:
                        side[axis] = req
        wanted: list[PlaneRequest] = []
        for req in (*requests.values(), *side.values()):
            if req not in wanted:
                wanted.append(req)
        if wanted != self._wanted:
            self._wanted = wanted
            focused = requests.get(self.state.focused) or side.get(self.state.focused)
            self.source.set_wanted(wanted, wanted.index(focused) if focused else None,
                                   self.state.cursor)
        for axis, req in requests.items():
            plane = self.planes.get(axis)
            if force or plane is None or plane.request != req:
                self._fetch(axis, req)
        for axis, req in side.items():
            if force or self.views[axis].request != req:
                self._show_view(axis, req)

    def draw(self, axis: int, plane: Plane) -> Rendered:
        """B's ``plane`` as A's view ``axis`` draws A's compared layer: with A's other layers
        over and under it, its contrast and colormap (an identical copy looks identical)."""
        return self.host.draw_with(self.host.views[axis], self.a_layer, plane)

    def rerender(self) -> None:
        """Draw B's views again (the contrast changed)."""
        for axis, b_view in self.views.items():
            if b_view.plane is not None:
                b_view.show_plane(b_view.plane, self.draw(axis, b_view.plane))

    def _on_a_picture_changed(self, axis: int) -> None:
        """A's view ``axis`` drew anew (a layer arrived, its look changed): so does B's, which
        shows A's other layers too."""
        b_view = self.views.get(axis)
        if (self.source is not None and b_view is not None and b_view.plane is not None
                and b_view.isVisibleTo(b_view.window())):
            b_view.show_plane(b_view.plane, self.draw(axis, b_view.plane))

    def _read(self, req: PlaneRequest) -> Plane | None:
        assert self.source is not None
        try:
            return self.source.plane(req)
        except Exception as exc:  # noqa: BLE001  (an unexpected read error must not take the window down)
            self.host.show_error("Cannot read a plane of B", describe(exc))
            return None

    def _fetch(self, axis: int, req: PlaneRequest) -> None:
        plane = self._read(req)
        if plane is None:
            self.planes.pop(axis, None)
        else:
            self.planes[axis] = plane
        self.plane_changed.emit(axis)
        b_view = self.views.get(axis)
        if plane is not None and b_view is not None and b_view.isVisibleTo(b_view.window()) \
                and b_view.request == req:
            self._show_view(axis, req, plane)

    def _show_view(self, axis: int, req: PlaneRequest, plane: Plane | None = None) -> None:
        if plane is None:
            same = self.planes.get(axis)
            plane = same if same is not None and same.request == req else self._read(req)
        if plane is not None:
            self.views[axis].show_plane(plane, self.draw(axis, plane))

    def _on_arrived(self, box: Box3) -> None:
        """B's loader has data inside ``box``: fetch again the planes it touches."""
        if self.source is None:
            return
        for axis in list(self.planes):
            if _touches(self.planes[axis].request, box):
                self._fetch(axis, self.planes[axis].request)
        for axis, b_view in self.views.items():
            req = b_view.request
            if req is not None and b_view.isVisibleTo(b_view.window()) and _touches(req, box) \
                    and self.planes.get(axis) is not b_view.plane:
                self._show_view(axis, req)

    def planes_complete(self) -> bool:
        """B's planes for every visible view are in (nothing of B still loading)."""
        if self.source is None:
            return True
        for axis, view in self.host.views.items():
            if not view.isVisibleTo(view.window()) or view.request is None:
                continue
            plane = self.planes.get(axis)
            if plane is None or plane.request != view.request or not plane.complete:
                return False
        for b_view in self.views.values():
            if b_view.isVisibleTo(b_view.window()) and b_view.plane is not None \
                    and not b_view.plane.complete:
                return False
        return True

    def common_box(self) -> Box | None:
        """Where the extents of A and B overlap (None when they do not, or while B's files
        are still being listed: the status bar says so).  A's extent is the window's (grown by
        its own background listing), B's is its declared one (an array's shape, a layer's box)
        or comes from the listing started when B opened (a plain WKW dataset)."""
        if self.host.dataset is None or self.volume is None:
            return None
        if self.volume.extent_declared:  # an array's shape, a layer's box
            lb, hb = self.volume.bounds
        elif self._extent is None:
            return None
        elif not self._extent.wait(EXTENT_WAIT_S) or self._extent.result is None:
            self.host.statusBar().showMessage(
                "B's files are still being listed; try the common extent again shortly", 5000)
            return None
        else:
            lb, hb = self._extent.result
        la, ha = self.state.bounds
        lo = [max(a, b) for a, b in zip(la, lb, strict=True)]
        hi = [min(a, b) for a, b in zip(ha, hb, strict=True)]
        if any(b <= a for a, b in zip(lo, hi, strict=True)):
            return None
        return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))


def _touches(req: PlaneRequest, box: Box3) -> bool:
    offset, shape = box
    r_off, r_shape = req.box()
    return all(o < ro + rs and ro < o + s
               for o, s, ro, rs in zip(offset, shape, r_off, r_shape, strict=True))


__all__ = ["EXTENT_WAIT_S", "QtSideB", "open_b_dataset"]
