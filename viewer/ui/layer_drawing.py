"""How the layers' planes become a view's picture: fetch each visible layer's plane from the
source, render it by category (``blend.render_layer``), bring the layers onto one pixel grid,
blend them, and hand the result to the view; plus the contrast controls, histogram and mag
label, which follow the active layer.

``LayerDrawingMixin`` is a part of ``QtMainWindow`` (viewer.ui.main_window): its methods run on
the window (GUI thread) and use what the window holds (``state``, ``source``, ``views``,
``layer_types``, ``contrast_panel``, ``mag_label``).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from viewer.core import state as st
from viewer.core.slicing import IN_PLANE, Plane, PlaneRequest, Status
from viewer.core.state import SCREEN_AXES
from viewer.render.blend import blend, render_layer
from viewer.render.levels import histogram, robust_range
from viewer.render.palette import Palette
from viewer.render.plane import Rendered
from viewer.ui.error_banner import _describe
from viewer.ui.slice_view import QtSliceView


class LayerDrawingMixin:
    """Draws the layers of ``QtMainWindow``'s views."""

    def _shown_layers(self) -> list[st.LayerDisplay]:
        """The layers drawn, bottom first; when every layer is hidden, the active one (drawn
        black, so that the cursor still has a plane to show and its values)."""
        layers = [la for la in self.state.visible_layers()
                  if self.source is not None and la.name in self.source.layers]
        if layers:
            return layers
        active = self.state.active_layer
        return [la for la in self.state.layers if la.name == active][:1]

    def _maybe_auto_contrast(self) -> None:
        """The first auto-contrast of a dataset that is not uint8, once its planes are in."""
        if self._auto_pending and self.planes_complete():
            self._auto_pending = False
            self.auto_contrast()

    def _fetch(self, view: QtSliceView, request: PlaneRequest, rerender: bool = False) -> None:
        """Get ``view``'s plane of every layer drawn, render and blend them, and show the
        result.  Nothing is redrawn when no plane changed (the source hands back the same
        objects) and nor did the way they are drawn, unless ``rerender``."""
        assert self.source is not None
        shown = self._shown_layers()
        try:
            planes = {la.name: self.source.plane(request, la.name) for la in shown}
        except Exception as exc:  # an unexpected read error must not take the window down
            self.show_error("Cannot read a plane", _describe(exc))
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
                self._note_failures(plane.errors)
        if view.axis == self.state.focused:
            self._show_mag()

    def _render(self, view: QtSliceView, shown: list[st.LayerDisplay],
                planes: dict[str, Plane], drawn: tuple[st.LayerDisplay, ...],
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
        return Rendered(blend([(regrid(out[la.name].argb(), planes[la.name], main, view.axis),
                                la.opacity) for la in drawn]))

    def _get_palette(self) -> Palette:
        """The active layer's palette as its views draw it (the compare overlay uses it)."""
        palette = self._palettes.get(self.state.active_layer or "")
        if isinstance(palette, Palette) and palette.contrast == self.state.contrast:
            return palette
        if self._palette is None or self._palette.contrast != self.state.contrast:
            dtype = self.dataset.dtype if self.dataset is not None else np.dtype(np.uint8)
            self._palette = Palette(self.state.contrast, dtype)
        return self._palette

    def _rerender_all(self, skip: Collection[int] = ()) -> None:
        """Draw every view's planes anew (the look changed), but those in ``skip`` (views
        just fetched and drawn already)."""
        for axis, view in self.views.items():
            if axis not in skip and view.request is not None and self.source is not None:
                self._fetch(view, view.request, rerender=True)

    def _show_active_layer(self) -> None:
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
        rgb = channels == 3 and dtype == np.uint8
        self.contrast_panel.set_channels(channels, rgb)
        self.contrast_panel.set_integer_levels(dtype.kind in "iu")

    def _show_mag(self) -> None:
        """Name in the status bar the mag the focused view shows of the active layer."""
        view = self.views.get(self.state.focused)
        plane = view.layer_planes.get(self.state.active_layer or "", view.plane) \
            if view is not None else None
        label = getattr(plane, "label", None)
        panel = getattr(self, "layers_panel", None)
        if panel is not None and view is not None:
            for name, layer_plane in view.layer_planes.items():
                mags = getattr(layer_plane, "mags", None)
                panel.set_shown_mag(name, mags[0] if mags else None)
        if label is None or self.opened is None or \
                all(len(layer.mags) < 2 for layer in self.opened.layers):
            self.mag_label.setText("")
            return
        self.mag_label.setText(f"{self.state.active_layer}: {label}")

    # -- histogram and contrast of the active layer -----------------------------------------
    def _screen_values(self) -> np.ndarray | None:
        """The values of the shown channel(s) on screen, DATA pixels only, flattened."""
        parts = []
        c = self.state.contrast
        active = self.state.active_layer or ""
        for axis in self._visible_axes():
            view = self.views[axis]
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

    def _on_histogram_due(self) -> None:
        values = self._screen_values()
        if values is None or values.size == 0:
            self.contrast_panel.histogram.set_histogram(np.zeros(0), np.array([0.0, 1.0]))
            return
        counts, edges = histogram(values)
        self.contrast_panel.histogram.set_histogram(counts, edges)

    def auto_contrast(self) -> None:
        """Levels from robust percentiles (0.5 %, 99.5 %) of the data on screen."""
        values = self._screen_values()
        if values is None:
            return
        found = robust_range(values)
        if found is not None:
            self.state.set_contrast(lo=found[0], hi=found[1])


def default_contrast(dtype: np.dtype[Any], value_range: tuple[float, float] | None = None,
                     num_channels: int = 1) -> st.Contrast:
    """How a layer starts out: the value range its format declares (a VDS), else the full
    range of uint8, 0..1 for other types until the first auto-contrast; three uint8 channels
    as colour."""
    rgb = num_channels == 3 and dtype == np.uint8
    if value_range is not None and value_range[1] > value_range[0]:
        return st.Contrast(lo=float(value_range[0]), hi=float(value_range[1]), rgb=rgb)
    hi = 255.0 if dtype == np.uint8 else 1.0
    return st.Contrast(lo=0.0, hi=hi, rgb=rgb)


def on_finest_grid(planes: dict[str, Plane], active: str | None) -> Plane:
    """The plane whose pixel grid the layers are blended on: the active layer's when no other
    layer was read at a finer mag, else the finest one (layers of one dataset may have
    different mags, or be read at different ones)."""
    first = planes.get(active or "") or next(iter(planes.values()))
    finest = min(planes.values(), key=lambda p: p.factors[0] * p.factors[1])
    return first if first.factors == finest.factors else finest


def regrid(argb: np.ndarray, plane: Plane, target: Plane, axis: int) -> np.ndarray:
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
