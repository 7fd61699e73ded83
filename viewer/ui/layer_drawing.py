"""How the layers' planes become the views' pictures: tell the source which planes are on
screen, fetch each visible layer's plane, render it by category (``blend.render_layer``), bring
the layers onto one pixel grid, blend them, and hand the result to the view; plus the contrast
controls, the histogram and the mag shown, which follow the active layer.

``QtLayerDrawing`` is held by the window (``viewer.ui.main_window``), which calls
``refresh_planes`` when the views' planes may have changed, ``data_arrived`` when the loader
brought data, and ``start`` when a dataset opens.  It reads the source and the views through the
window's ``WindowHost`` and reports through its signals: ``mag_shown`` (the status bar's mag
text), ``layer_mags_shown`` (each layer's mag on screen, for the layers panel), ``mags_listed``
(the mags each layer has, when a dataset opens) and ``blocks_failed``.  GUI thread only.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QObject, QTimer, Signal

from viewer.core import state as st
from viewer.core.layered import LayeredSource, SourceLayer, is_rgb
from viewer.core.multires import ComposedPlane
from viewer.core.slicing import IN_PLANE, Box3, Plane, PlaneRequest, Status
from viewer.core.state import SCREEN_AXES, XY, XZ, YZ
from viewer.render.blend import PaletteCache, composite, render_layer
from viewer.render.levels import histogram, robust_range
from viewer.render.plane import Rendered
from viewer.ui.contrast import QtContrastPanel
from viewer.ui.error_banner import _describe
from viewer.ui.slice_view import QtSliceView
from viewer.ui.window_host import WindowHost

Vec3 = tuple[int, int, int]
#: How long after the last change the histogram of the screen is computed.
HISTOGRAM_DELAY_MS = 150
#: The longest the histogram waits for views still loading (``on_histogram_due``).
HISTOGRAM_MAX_DEFER_MS = 1000


class QtLayerDrawing(QObject):
    """Draws the layers of the window's views and keeps the contrast controls on the active
    layer."""

    #: The status bar's mag text: "layer: mag 2-2-1" (empty: every layer has one mag).
    mag_shown = Signal(str)
    #: {layer name: the mag the focused view shows of it (None: unknown)}.
    layer_mags_shown = Signal(object)
    #: {layer name: the mags it has, finest first}: a dataset was opened.
    mags_listed = Signal(object)
    #: {(path, block): error}: blocks of a plane just drawn that failed to read.
    blocks_failed = Signal(object)

    def __init__(self, host: WindowHost, contrast_panel: QtContrastPanel,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.state = host.state
        self.contrast_panel = contrast_panel
        #: Each layer's (dtype of one channel, channel count), by name.
        self.layer_types: dict[str, tuple[np.dtype[Any], int]] = {}
        #: Read every layer at its finest mag whatever the zoom (a comparison is open: its
        #: differences are voxel for voxel).
        self.force_finest = False
        #: The first auto-contrast is still to come (a dataset that is not uint8).
        self.auto_pending = False
        #: Each layer's palette as last drawn (``blend.render_layer`` keeps it current).
        self._palettes: PaletteCache = {}
        #: The palettes of the planes ``draw_with`` draws in place of a layer's (compare's B).
        self._b_palettes: PaletteCache = {}
        self._palettes_b_others: PaletteCache = {}
        #: The layer whose voxel type and channels the contrast controls are set up for.
        self._contrast_for: str | None = None
        self._wanted_key: tuple[Any, ...] = ()
        self._wanted: list[PlaneRequest] = []
        self.histogram_timer = QTimer(self)
        self.histogram_timer.setSingleShot(True)
        self.histogram_timer.setInterval(HISTOGRAM_DELAY_MS)
        self.histogram_timer.timeout.connect(self.on_histogram_due)
        #: The source was told of a new screen whose complete planes were not painted yet:
        #: its prefetch waits for them (``LayeredSource.screen_drawn``).
        self.drawn_pending = False
        #: Bumped with every new screen told to the source (a release of prefetch scheduled
        #: for an older one is dropped).
        self._screen = 0
        #: Since when (``time.monotonic``) the histogram has waited for loading views.
        self.histogram_deferred_since: float | None = None
        for view in host.views.values():
            view.painted.connect(self.on_painted)

    def start(self, layers: Sequence[SourceLayer]) -> None:
        """A dataset of ``layers`` opens (its source is the host's already): forget what was
        drawn of the previous one."""
        self._wanted = []
        self._wanted_key = ()
        self.layer_types = {layer.name: (layer.dtype, layer.num_channels) for layer in layers}
        self._palettes = {}
        self._b_palettes = {}
        self._palettes_b_others = {}
        self._contrast_for = None  # a new dataset: set the controls up for its active layer
        self.auto_pending = (layers[0].finest.dtype != np.uint8
                             and layers[0].finest.value_range is None
                             and layers[0].category != st.SEGMENTATION)
        self.mags_listed.emit({layer.name: layer.mag_list for layer in layers})

    # -- which planes --------------------------------------------------------------------------
    def visible_axes(self) -> list[int]:
        layout = self.state.layout
        return [a for a in (XY, XZ, YZ) if layout is None or layout == a]

    def planes_complete(self) -> bool:
        """Every visible view shows its whole plane of every visible layer, each at the mag
        its zoom calls for (nothing still loading, no coarse placeholder left)."""
        for axis in self.visible_axes():
            view = self.host.views[axis]
            if view.plane is None:
                continue
            if not all(p.complete for p in (view.layer_planes or {"": view.plane}).values()):
                return False
        return True

    def refresh_planes(self, force: bool = False, rerender: bool = False) -> set[int]:
        """Fetch the planes that changed (all with ``force``) and tell the source what is on
        screen: the planes, how many voxels a pixel spans in each view (which mag it reads)
        and the layers drawn with their locked mags.  ``rerender``: what is fetched is drawn
        anew even if no plane changed (the look did).  Returns the views fetched."""
        source = self.host.source
        if source is None:
            return set()
        views = self.host.views
        requests: dict[int, PlaneRequest] = {}
        for axis in self.visible_axes():
            req = views[axis].wanted_request()
            if req is not None:
                requests[axis] = req
        wanted = list(requests.values())
        vpp = [views[a].voxels_per_pixel() for a in requests]
        layers = {la.name: (source.layers[la.name].mag_list[0] if self.force_finest
                            else la.mag_lock) for la in self.shown_layers()}
        key = (tuple(wanted), tuple(vpp), tuple(layers.items()))
        mags_changed = key[1:] != self._wanted_key[1:]
        if key != self._wanted_key or wanted != self._wanted:
            self._wanted_key = key
            self._wanted = wanted
            focused = list(requests).index(self.state.focused) \
                if self.state.focused in requests else None
            source.set_wanted(wanted, focused, self.state.cursor, voxels_per_px=vpp,
                              layers=layers)
            self.drawn_pending = True
            self._screen += 1
        fetched = set()
        for axis, req in requests.items():
            view = views[axis]
            if force or mags_changed or req != view.request:
                self.fetch(view, req, rerender=rerender)
                fetched.add(axis)
        if fetched:
            self._maybe_auto_contrast()
            self.histogram_timer.start()
            self.show_mag()
        return fetched

    def on_painted(self, axis: int) -> None:
        """A view painted: once every visible view paints its complete planes of a new
        screen, the source's prefetch may start (it waited so as not to take the interpreter
        lock and a core from the rendering and painting of the screen's last blocks), once
        the event loop has handled what this pass brought (the other views' paints, the
        status bar): prefetch planning holds the interpreter lock for milliseconds."""
        source = self.host.source
        if not self.drawn_pending or source is None or not self.planes_complete():
            return
        if all(self.host.views[a].picture_painted for a in self.visible_axes()):
            self.drawn_pending = False
            screen = self._screen
            QTimer.singleShot(0, self, lambda: self._release_prefetch(source, screen))

    def _release_prefetch(self, source: LayeredSource, screen: int) -> None:
        """``on_painted``'s release, unless another screen (or source) came meanwhile."""
        if source is self.host.source and screen == self._screen and not self.drawn_pending:
            source.screen_drawn()

    def data_arrived(self, boxes: Box3 | Sequence[Box3]) -> None:
        """Data inside ``boxes`` (one ``(offset, shape)`` or a list of them) became
        available: re-fetch the planes they touch."""
        if self.host.source is None:
            return
        listed = [cast(Box3, boxes)] if boxes and isinstance(boxes[0][0], int) \
            else cast(Sequence[Box3], boxes)
        for view in self.host.views.values():
            req = view.request
            if req is None:
                continue
            r_off, r_shape = req.box()
            if any(all(o < ro + rs and ro < o + s
                       for o, s, ro, rs in zip(offset, shape, r_off, r_shape, strict=True))
                   for offset, shape in listed):
                self.fetch(view, req)
        self._maybe_auto_contrast()
        self.histogram_timer.start()

    # -- drawing -------------------------------------------------------------------------------
    def shown_layers(self) -> list[st.LayerDisplay]:
        """The layers drawn, bottom first; when every layer is hidden, the active one (drawn
        black, so that the cursor still has a plane to show and its values)."""
        source = self.host.source
        layers = [la for la in self.state.visible_layers()
                  if source is not None and la.name in source.layers]
        if layers:
            return layers
        active = self.state.active_layer
        return [la for la in self.state.layers if la.name == active][:1]

    def _maybe_auto_contrast(self) -> None:
        """The first auto-contrast of a dataset that is not uint8, once its planes are in."""
        if self.auto_pending and self.planes_complete():
            self.auto_pending = False
            self.auto_contrast()

    def fetch(self, view: QtSliceView, request: PlaneRequest, rerender: bool = False) -> None:
        """Get ``view``'s plane of every layer drawn, render and blend them, and show the
        result.  Nothing is redrawn when no plane changed (the source hands back the same
        objects) and nor did the way they are drawn, unless ``rerender``."""
        source = self.host.source
        assert source is not None
        shown = self.shown_layers()
        try:
            planes: dict[str, Plane] = {la.name: source.plane(request, la.name) for la in shown}
        except Exception as exc:  # an unexpected read error must not take the window down
            self.host.show_error("Cannot read a plane", _describe(exc))
            view.show_plane(None, None)
            view.layer_planes, view.layer_rendered = {}, {}
            view.request = request
            return
        drawn = tuple(shown) if self.state.visible_layers() else ()
        if (not rerender and view.request == request and view.rendered is not None
                and view.drawn_layers == drawn
                and len(planes) == len(view.layer_planes)
                and all(view.layer_planes.get(n) is p for n, p in planes.items())):
            return  # the source says nothing of it arrived since: nothing to redraw
        main = on_finest_grid(planes, self.state.active_layer)
        rendered = self._render(view, shown, planes, drawn, main)
        view.layer_planes = planes
        view.drawn_layers = drawn
        view.show_plane(main, rendered)
        for plane in planes.values():
            if plane.errors:
                self.blocks_failed.emit(plane.errors)
        if view.axis == self.state.focused:
            self.show_mag()

    def _render(self, view: QtSliceView, shown: list[st.LayerDisplay],
                planes: Mapping[str, Plane], drawn: tuple[st.LayerDisplay, ...],
                main: Plane) -> Rendered:
        """The layers' planes rendered and blended, bottom first, on ``main``'s pixel grid
        (layers read at coarser mags are scaled onto it).  One opaque color layer is rendered
        straight (re-rendering only what arrived since its last version)."""
        previous = view.layer_rendered
        out: dict[str, Rendered] = {}
        if not drawn:  # every layer hidden
            plane = next(iter(planes.values()))
            u, v = plane.status.shape
            shape = (u, v) if SCREEN_AXES[view.axis][0] == IN_PLANE[view.axis][0] else (v, u)
            view.layer_rendered = {}
            return Rendered(np.full(shape, 0xFF000000, np.uint32))
        for la in drawn:
            plane = planes[la.name]
            old = previous.get(la.name)
            if old is not None and (old.plane is None or old.plane.factors != plane.factors):
                old = None
            out[la.name] = render_layer(plane, la, self._palettes, old)
        view.layer_rendered = out
        if len(drawn) == 1 and drawn[0].opacity >= 1.0 and not drawn[0].is_segmentation:
            return out[drawn[0].name]
        return Rendered(composite([(regrid(out[la.name].argb(), planes[la.name], main,
                                           view.axis), la.opacity, la.additive)
                                   for la in drawn]))

    def draw_with(self, view: QtSliceView, name: str, plane: Plane) -> Rendered:
        """What ``view``'s layers look like with layer ``name``'s plane replaced by ``plane``:
        compare's B drawn as A is, with the same layers over and under it and the same
        contrast, colormaps and opacities.  The other layers' pixels are those ``view`` shows
        when it shows ``plane``'s request, else read from the source for that request."""
        display = next((la for la in self.state.layers if la.name == name), None)
        if display is None:  # not a layer of A: A's active look
            display = st.LayerDisplay(name, st.COLOR, contrast=self.state.contrast)
        drawn = [la for la in self.shown_layers() if la.visible or la.name == name] \
            if self.state.visible_layers() else []
        if not any(la.name == name for la in drawn):
            return render_layer(plane, display, self._b_palettes)
        source = self.host.source
        same = view.request == plane.request
        planes: dict[str, Plane] = {name: plane}
        out: dict[str, Rendered] = {}
        for la in drawn:
            if la.name == name:
                out[name] = render_layer(plane, la, self._b_palettes)
            elif same and la.name in view.layer_rendered and la.name in view.layer_planes:
                planes[la.name], out[la.name] = view.layer_planes[la.name], \
                    view.layer_rendered[la.name]
            elif source is not None:
                try:
                    planes[la.name] = source.plane(plane.request, la.name)
                except Exception:  # noqa: BLE001 - A's own drawing says what failed
                    continue
                out[la.name] = render_layer(planes[la.name], la, self._palettes_b_others)
        drawn = [la for la in drawn if la.name in out]
        if len(drawn) == 1 and drawn[0].opacity >= 1.0 and not drawn[0].is_segmentation:
            return out[name]
        main = on_finest_grid(planes, self.state.active_layer)
        return Rendered(composite([(regrid(out[la.name].argb(), planes[la.name], main,
                                           view.axis), la.opacity, la.additive)
                                   for la in drawn]))

    def rerender_all(self, skip: Collection[int] = ()) -> None:
        """Draw every view's planes anew (the look changed), but those in ``skip`` (views
        just fetched and drawn already)."""
        for axis, view in self.host.views.items():
            if axis not in skip and view.request is not None and self.host.source is not None:
                self.fetch(view, view.request, rerender=True)

    def show_active_layer(self) -> None:
        """Point the contrast controls at the active layer's voxel type and channels (greyed
        out for a segmentation layer: its ids have colours of their own)."""
        active = self.state.active_layer
        segmentation = any(la.name == active and la.is_segmentation for la in self.state.layers)
        self.contrast_panel.setEnabled(not segmentation)
        self.contrast_panel.setToolTip("A segmentation layer is drawn with a colour per id: "
                                       "make a color layer active (Layers panel) to change "
                                       "its contrast" if segmentation else "")
        found = self.layer_types.get(active or "")
        if found is None or self._contrast_for == active:
            return
        self._contrast_for = self.state.active_layer
        dtype, channels = found
        rgb = is_rgb(dtype, channels)
        self.contrast_panel.set_channels(channels, rgb)
        self.contrast_panel.set_integer_levels(dtype.kind in "iu")

    def show_mag(self) -> None:
        """Name in the status bar the mag the focused view shows of the active layer."""
        view = self.host.views.get(self.state.focused)
        plane = view.layer_planes.get(self.state.active_layer or "", view.plane) \
            if view is not None else None
        label = plane.label if isinstance(plane, ComposedPlane) else None
        if view is not None:
            self.layer_mags_shown.emit({name: _chosen_mag(layer_plane)
                                        for name, layer_plane in view.layer_planes.items()})
        opened = self.host.opened
        if label is None or opened is None or all(len(la.mags) < 2 for la in opened.layers):
            self.mag_shown.emit("")
            return
        self.mag_shown.emit(f"{self.state.active_layer}: {label}")

    # -- histogram and contrast of the active layer -----------------------------------------
    def screen_values(self) -> npt.NDArray[Any] | None:
        """The values of the shown channel(s) on screen, DATA pixels only, flattened."""
        parts: list[npt.NDArray[Any]] = []
        c = self.state.contrast
        active = self.state.active_layer or ""
        for axis in self.visible_axes():
            view = self.host.views[axis]
            plane = view.layer_planes.get(active, view.plane)
            if plane is None:
                continue
            # Only the part of the plane inside the view (the request is snapped outward).
            ranges = dict(zip(SCREEN_AXES[axis], view.visible_range(), strict=True))
            origin, factors = plane.image_origin, plane.factors
            cut = []
            for k, a in enumerate(IN_PLANE[axis]):
                lo = (int(np.floor(ranges[a][0])) - origin[k]) // factors[k]
                hi = -(-(int(np.ceil(ranges[a][1])) - origin[k]) // factors[k])
                cut.append(slice(max(lo, 0), max(hi, 0)))
            channels = plane.data[:3] if c.rgb else \
                plane.data[min(c.channel, plane.data.shape[0] - 1)][None]
            ok = plane.status[cut[0], cut[1]] == Status.DATA
            parts.extend(ch[cut[0], cut[1]][ok] for ch in channels)
        if not parts:
            return None
        return np.concatenate(parts)

    def on_histogram_due(self) -> None:
        """Show the histogram of the screen; while views are still loading (a jump), put it
        off (at most ``HISTOGRAM_MAX_DEFER_MS``): the fetch that completes them starts the
        timer again, so a histogram of the partial screen would be made again at once, and
        meanwhile its work holds the interpreter lock the loader's workers need."""
        if not self.planes_complete():
            now = time.monotonic()
            if self.histogram_deferred_since is None:
                self.histogram_deferred_since = now
            if (now - self.histogram_deferred_since) * 1000 < HISTOGRAM_MAX_DEFER_MS:
                self.histogram_timer.start()
                return
        self.histogram_deferred_since = None
        values = self.screen_values()
        if values is None or values.size == 0:
            self.contrast_panel.histogram.set_histogram(np.zeros(0), np.array([0.0, 1.0]))
            return
        counts, edges = histogram(values)
        self.contrast_panel.histogram.set_histogram(counts, edges)

    def auto_contrast(self) -> None:
        """Levels from robust percentiles (0.5 %, 99.5 %) of the data on screen."""
        values = self.screen_values()
        if values is None:
            return
        found = robust_range(values)
        if found is not None:
            self.state.set_contrast(lo=found[0], hi=found[1])


def default_contrast(dtype: np.dtype[Any], value_range: tuple[float, float] | None = None,
                     num_channels: int = 1) -> st.Contrast:
    """How a layer starts out: the value range its format declares (a VDS), else the full
    range of uint8, 0..1 for other types until the first auto-contrast; three or four uint8
    channels (RGB, RGBA) as colour."""
    rgb = is_rgb(dtype, num_channels)
    if value_range is not None and value_range[1] > value_range[0]:
        return st.Contrast(lo=float(value_range[0]), hi=float(value_range[1]), rgb=rgb)
    hi = 255.0 if dtype == np.uint8 else 1.0
    return st.Contrast(lo=0.0, hi=hi, rgb=rgb)


def _chosen_mag(plane: Plane) -> Vec3 | None:
    """The mag a plane was read at (None: a plane of one mag, which does not say)."""
    return plane.mags[0] if isinstance(plane, ComposedPlane) and plane.mags else None


def on_finest_grid(planes: Mapping[str, Plane], active: str | None) -> Plane:
    """The plane whose pixel grid the layers are blended on: the active layer's when no other
    layer was read at a finer mag, else the finest one (layers of one dataset may have
    different mags, or be read at different ones)."""
    first = planes.get(active or "") or next(iter(planes.values()))
    finest = min(planes.values(), key=lambda p: p.factors[0] * p.factors[1])
    return first if first.factors == finest.factors else finest


def regrid(argb: npt.NDArray[np.uint32], plane: Plane, target: Plane, axis: int
           ) -> npt.NDArray[np.uint32]:
    """A layer's rendered pixels (screen orientation) of ``plane`` on ``target``'s pixel grid
    (nearest neighbour; the same array when the grids agree)."""
    if (plane.factors == target.factors and plane.image_origin == target.image_origin
            and plane.status.shape == target.status.shape):
        return argb
    index = []
    for k in (0, 1):
        mag1 = target.image_origin[k] + np.arange(target.status.shape[k]) * target.factors[k]
        i = (mag1 - plane.image_origin[k]) // plane.factors[k]
        index.append(np.clip(i, 0, plane.status.shape[k] - 1))
    iu, iv = index
    if SCREEN_AXES[axis][0] == IN_PLANE[axis][0]:  # rows along v
        return np.ascontiguousarray(argb[iv[:, None], iu[None, :]])
    return np.ascontiguousarray(argb[iu[:, None], iv[None, :]])
