"""The viewer's model: cursor, zoom, view centres, contrast, layout and focused view.

Qt-free.  The one source of truth for what the window shows: the slice views never talk to each
other; each writes into the state (a click sets the cursor) and redraws when the state says that
something it shows changed.  That is the linked cursor.

Observers are plain callables ``callback(changes)`` where ``changes`` is a frozenset of the
names of what changed (``CURSOR``, ``ZOOM``, ``CENTER``, ``CONTRAST``, ``LAYOUT``, ``FOCUS``,
``DATASET``, ``BOUNDS``, ``VOXEL_SIZE``, ``LAYERS``).  A setter that changes nothing notifies
nobody.

Threading: ``ViewerState`` is not thread-safe; it is created, read, changed and observed on the
GUI thread only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

Vec3 = tuple[int, int, int]

CURSOR = "cursor"
ZOOM = "zoom"
CENTER = "center"
CONTRAST = "contrast"
LAYOUT = "layout"
FOCUS = "focus"
DATASET = "dataset"
BOUNDS = "bounds"  #: the extent grew (a background scan found more files); nothing else moved
VOXEL_SIZE = "voxel_size"  #: the physical size of a shown voxel changed (or became known)
INDEX = "index"  #: the element shown of an extra axis (a time point), or the extra axes
LAYERS = "layers"  #: a layer's display (visibility, opacity, contrast, ids, mag lock) or the list

#: Normal axis of each view (the same numbers as ``viewer.core.slicing``: x 0, y 1, z 2).
XY, XZ, YZ = 2, 1, 0
#: Dataset axes shown horizontally and vertically in each view.  YZ shows z across and y down,
#: so that its rows line up with the XY view's rows in the 2x2 layout (XY | YZ over XZ).
SCREEN_AXES: dict[int, tuple[int, int]] = {XY: (0, 1), XZ: (0, 2), YZ: (2, 1)}

MIN_ZOOM = 1.0 / 16.0
MAX_ZOOM = 64.0
ZOOM_STEP = 1.25

COLORMAPS = ("grey", "viridis", "magma", "inferno", "cividis")


def known_colormap(name: str) -> bool:
    """A colormap by name (``COLORMAPS``) or a colour ``"#RRGGBB"`` (black to it: a channel
    of a composite)."""
    return name in COLORMAPS or bool(re.fullmatch(r"#[0-9A-Fa-f]{6}", name))

Observer = Callable[[frozenset[str]], None]


@dataclass(frozen=True)
class Contrast:
    """How voxel values become colours: values ``lo`` .. ``hi`` span the colormap, raised to
    ``gamma``; ``invert`` flips it; ``channel`` picks the channel of multi-channel data
    (ignored when ``rgb`` shows three uint8 channels as colour)."""

    lo: float = 0.0
    hi: float = 255.0
    gamma: float = 1.0
    invert: bool = False
    colormap: str = "grey"
    channel: int = 0
    rgb: bool = False


#: Layer categories, as webKnossos names them: images, and segment ids.
COLOR = "color"
SEGMENTATION = "segmentation"
CATEGORIES = (COLOR, SEGMENTATION)


@dataclass(frozen=True)
class LayerDisplay:
    """How one layer is shown: in the views or not, its ``opacity`` (0..1) when blended over
    the layers below it, its ``contrast`` (a color layer), and for a segmentation layer the
    ids drawn highlighted: ``selected_id`` (clicked) and ``hovered_id`` (under the mouse).
    ``mag_lock`` pins the mag the views read (``None``: chosen from the zoom); ``additive``
    layers add their colour to what is below (composite channels).  A plain WKW
    dataset is one layer.  ``category`` is ``COLOR`` or ``SEGMENTATION``."""

    name: str
    category: str = COLOR
    visible: bool = True
    opacity: float = 1.0
    contrast: Contrast = Contrast()
    selected_id: int | None = None
    hovered_id: int | None = None
    mag_lock: Vec3 | None = None
    #: Added to the layers below instead of drawn over them (a channel of a composite).
    additive: bool = False

    @property
    def is_segmentation(self) -> bool:
        return self.category == SEGMENTATION


def parse_position(text: str) -> Vec3:
    """A position typed or pasted by a person: ``"x,y,z"``, ``"x y z"``, ``"(x, y, z)"``,
    ``"[x; y; z]"``.  Raises ``ValueError`` with a readable message otherwise."""
    numbers = re.findall(r"-?\d+(?:\.\d*)?", text)
    if len(numbers) != 3:
        raise ValueError(f"a position is three numbers x, y, z, not {text.strip()!r}")
    return tuple(int(round(float(n))) for n in numbers)  # type: ignore[return-value]


def parse_index(texts: str | Sequence[str] | None) -> dict[str, int]:
    """The element of each extra axis a person asked for: ``"t=3"``, ``"t=3,z2=1"``, or a
    list of such (``--index`` given several times).  Raises ``ValueError`` with a readable
    message otherwise."""
    out: dict[str, int] = {}
    items = [texts] if isinstance(texts, str) else list(texts or [])
    for text in items:
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            m = re.fullmatch(r"([^=\s]+)\s*=\s*(\d+)", part)
            if m is None:
                raise ValueError(f"an index is AXIS=N (e.g. t=3), not {part!r}")
            out[m.group(1)] = int(m.group(2))
    return out


def format_index(index: Mapping[str, int]) -> str:
    """``{"t": 3}`` as ``t=3`` (the spelling ``parse_index`` reads)."""
    return ",".join(f"{k}={int(v)}" for k, v in index.items())


def format_position(pos: Sequence[int]) -> str:
    return ", ".join(str(int(p)) for p in pos)


class ViewerState:
    """Cursor, zoom, per-view centres, contrast, layout and focus of one window.

    ``bounds`` is the voxel box ``[lo, hi)`` the dataset occupies; the cursor is kept inside it.
    ``zoom`` is screen pixels per voxel, shared by the three views.  ``centers[axis]`` is the
    dataset point (horizontal, vertical) at the middle of the view with that normal.  ``layout``
    is ``None`` for the 2x2 grid or the normal axis of the one maximised view.

    ``layers`` are the dataset's layers in drawing order (the first at the bottom), each with
    its ``LayerDisplay``; ``active_layer`` names the one the contrast controls edit, and
    ``contrast`` is that layer's contrast (a state without layers keeps one of its own).

    ``voxel_size_nm`` is the physical size (nanometres along x, y, z) of one voxel of the data
    shown, or ``None`` when the dataset does not say (a plain WKW dataset): then everything is
    in voxels and voxels are drawn square.  With a voxel size, ``stretch(axis)`` says how much
    longer than ``zoom`` pixels a voxel is drawn along each screen axis of a view, so that
    anisotropic voxels keep their physical shape; ``zoom`` then counts pixels per smallest
    voxel side, and one nanometre has the same length on screen in every view.

    GUI thread only.
    """

    def __init__(self, bounds: tuple[Vec3, Vec3] = ((0, 0, 0), (1, 1, 1))) -> None:
        self._observers: list[Observer] = []
        self.bounds: tuple[Vec3, Vec3] = bounds
        self.cursor: Vec3 = self._middle()
        self.zoom: float = 1.0
        self.centers: dict[int, tuple[float, float]] = {}
        self._contrast = Contrast()
        self.layers: tuple[LayerDisplay, ...] = ()
        self.active_layer: str | None = None
        self.layout: int | None = None
        self.focused: int = XY
        self.voxel_size_nm: tuple[float, float, float] | None = None
        #: The dataset's extra axes (name -> length) and the element shown of each.
        self.extra_axes: dict[str, int] = {}
        self.index: dict[str, int] = {}
        self.recenter(notify=False)

    # -- extra axes (time, ...) ---------------------------------------------------------------
    def set_extra_axes(self, axes: Mapping[str, int], index: Mapping[str, int] | None = None,
                       notify: bool = True) -> None:
        """A new dataset's extra axes, each at ``index`` (default 0; clamped to its axis)."""
        self.extra_axes = {k: int(n) for k, n in axes.items()}
        given = index or {}
        self.index = {k: min(max(int(given.get(k, 0)), 0), n - 1)
                      for k, n in self.extra_axes.items()}
        if notify:
            self._notify(INDEX)

    def set_index(self, axis: str, value: int) -> None:
        """Show element ``value`` of extra axis ``axis`` (clamped to the axis)."""
        if axis not in self.extra_axes:
            return
        v = min(max(int(value), 0), self.extra_axes[axis] - 1)
        if self.index.get(axis) != v:
            self.index = {**self.index, axis: v}
            self._notify(INDEX)

    def step_index(self, steps: int, axis: str | None = None) -> None:
        """The next (``steps`` > 0) or previous element of ``axis`` (default: the first extra
        axis, the time axis of an OME image)."""
        name = axis if axis is not None else next(iter(self.extra_axes), None)
        if name is not None:
            self.set_index(name, self.index.get(name, 0) + steps)

    # -- observers ---------------------------------------------------------------------------
    def subscribe(self, observer: Observer) -> None:
        self._observers.append(observer)

    def unsubscribe(self, observer: Observer) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    def _notify(self, *changes: str) -> None:
        if not changes:
            return
        which = frozenset(changes)
        for observer in list(self._observers):
            observer(which)

    # -- dataset -----------------------------------------------------------------------------
    def _middle(self) -> Vec3:
        lo, hi = self.bounds
        return tuple((a + b - 1) // 2 for a, b in zip(lo, hi, strict=True))  # type: ignore[return-value]

    def set_bounds(self, bounds: tuple[Vec3, Vec3], cursor: Sequence[int] | None = None,
                   zoom: float | None = None) -> None:
        """A new dataset: new bounds, the cursor at ``cursor`` (default: the middle), every
        view centred on it, and ``zoom`` if given; one notification for all of it."""
        lo, hi = bounds
        self.bounds = (tuple(int(v) for v in lo), tuple(max(int(b), int(a) + 1)  # type: ignore
                                                        for a, b in zip(lo, hi, strict=True)))
        self.cursor = self.clamp(cursor if cursor is not None else self._middle())
        self.recenter(notify=False)
        if zoom is not None:
            self.zoom = min(max(float(zoom), MIN_ZOOM), MAX_ZOOM)
        self._notify(DATASET, CURSOR, CENTER, ZOOM)

    def set_voxel_size(self, voxel_size_nm: Sequence[float] | None, notify: bool = True) -> None:
        """The physical voxel size (nm along x, y, z, each positive) of the data shown, or
        ``None`` for data without one.  ``notify=False`` when a ``set_bounds`` follows (a new
        dataset: one notification for all of it)."""
        new: tuple[float, float, float] | None = None
        if voxel_size_nm is not None:
            if len(voxel_size_nm) != 3 or not all(float(v) > 0 for v in voxel_size_nm):
                raise ValueError(f"a voxel size is three positive lengths, not "
                                 f"{tuple(voxel_size_nm)}")
            new = (float(voxel_size_nm[0]), float(voxel_size_nm[1]), float(voxel_size_nm[2]))
        if new != self.voxel_size_nm:
            self.voxel_size_nm = new
            if notify:
                self._notify(VOXEL_SIZE)

    def stretch(self, axis: int) -> tuple[float, float]:
        """How many times ``zoom`` pixels a voxel spans along the (horizontal, vertical) screen
        axes of the view with normal ``axis``: (1, 1) without a voxel size; else its sides
        over the smallest side of the voxel (e.g. 11.24 x 11.24 x 28 nm: the XZ view draws
        voxels 1 x 2.49 times ``zoom``)."""
        size = self.voxel_size_nm
        if size is None:
            return (1.0, 1.0)
        base = min(size)
        ha, va = SCREEN_AXES[axis]
        return (size[ha] / base, size[va] / base)

    def grow_bounds(self, bounds: tuple[Vec3, Vec3]) -> None:
        """Widen the extent to include ``bounds`` (more of the dataset was found); the cursor,
        the centres and the zoom stay where they are."""
        (lo0, hi0), (lo1, hi1) = self.bounds, bounds
        lo = tuple(min(int(a), int(b)) for a, b in zip(lo0, lo1, strict=True))
        hi = tuple(max(int(a), int(b)) for a, b in zip(hi0, hi1, strict=True))
        if (lo, hi) != self.bounds:
            self.bounds = (lo, hi)  # type: ignore[assignment]
            self._notify(BOUNDS)

    def clamp(self, pos: Sequence[int]) -> Vec3:
        """``pos`` moved to the nearest voxel inside the bounds."""
        lo, hi = self.bounds
        return tuple(min(max(int(p), a), b - 1)  # type: ignore[return-value]
                     for p, a, b in zip(pos, lo, hi, strict=True))

    # -- cursor ------------------------------------------------------------------------------
    def set_cursor(self, pos: Sequence[int]) -> None:
        new = self.clamp(pos)
        if new != self.cursor:
            self.cursor = new
            self._notify(CURSOR)

    def jump_to(self, pos: Sequence[int]) -> None:
        """Move the cursor to ``pos`` and centre every view on it: one notification, so that
        the views fetch and draw their new planes once (not once for the cursor, again for
        the centres)."""
        new = self.clamp(pos)
        moved = new != self.cursor
        self.cursor = new
        before = dict(self.centers)
        self.recenter(notify=False)
        changes = ([CURSOR] if moved else []) + ([CENTER] if before != self.centers else [])
        self._notify(*changes)

    def move_cursor(self, delta: Sequence[int]) -> None:
        self.set_cursor([c + int(d) for c, d in zip(self.cursor, delta, strict=True)])

    def move_along(self, axis: int, steps: int) -> None:
        """Move the cursor ``steps`` voxels along dataset ``axis``."""
        delta = [0, 0, 0]
        delta[axis] = int(steps)
        self.move_cursor(delta)

    # -- zoom and centres --------------------------------------------------------------------
    def set_zoom(self, zoom: float, about: tuple[int, float, float] | None = None) -> None:
        """Set the zoom, clamped to ``[MIN_ZOOM, MAX_ZOOM]``.  With ``about = (axis, h, v)`` the
        dataset point (h, v) of that view stays where it is on screen."""
        zoom = min(max(float(zoom), MIN_ZOOM), MAX_ZOOM)
        if zoom == self.zoom:
            return
        changes = [ZOOM]
        if about is not None:
            axis, h, v = about
            ch, cv = self.centers[axis]
            ratio = self.zoom / zoom
            self.centers[axis] = (h + (ch - h) * ratio, v + (cv - v) * ratio)
            changes.append(CENTER)
        self.zoom = zoom
        self._notify(*changes)

    def zoom_by(self, steps: float, about: tuple[int, float, float] | None = None) -> None:
        self.set_zoom(self.zoom * ZOOM_STEP ** steps, about)

    def set_center(self, axis: int, h: float, v: float) -> None:
        if self.centers.get(axis) != (h, v):
            self.centers[axis] = (float(h), float(v))
            self._notify(CENTER)

    def pan(self, axis: int, dh: float, dv: float) -> None:
        """Shift the view with normal ``axis`` by (dh, dv) voxels."""
        h, v = self.centers[axis]
        self.set_center(axis, h + dh, v + dv)

    def recenter(self, notify: bool = True) -> None:
        """Centre every view on the cursor."""
        before = dict(self.centers)
        for axis, (ha, va) in SCREEN_AXES.items():
            self.centers[axis] = (self.cursor[ha] + 0.5, self.cursor[va] + 0.5)
        if notify and before != self.centers:
            self._notify(CENTER)

    # -- layers ------------------------------------------------------------------------------
    def set_layers(self, layers: Sequence[LayerDisplay], active: str | None = None,
                   notify: bool = True) -> None:
        """A new list of layers (a new dataset), ``active`` (default: the first color layer,
        else the first) taking the contrast controls.  ``notify=False`` when a ``set_bounds``
        follows."""
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise ValueError(f"layer names must be unique, not {names}")
        for layer in layers:
            _check_layer(layer)
        self.layers = tuple(layers)
        if active is None or active not in names:
            colors = [layer.name for layer in layers if not layer.is_segmentation]
            active = colors[0] if colors else (names[0] if names else None)
        self.active_layer = active
        if notify:
            self._notify(LAYERS, CONTRAST)

    def layer(self, name: str) -> LayerDisplay:
        """The display of layer ``name`` (``KeyError`` if there is none)."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"no layer {name!r} (layers: {[la.name for la in self.layers]})")

    def set_layer(self, name: str, **changes: Any) -> None:
        """Change fields of layer ``name``'s ``LayerDisplay`` (visible, opacity, contrast,
        category, selected_id, hovered_id, mag_lock)."""
        old = self.layer(name)
        if "mag_lock" in changes and changes["mag_lock"] is not None:
            changes["mag_lock"] = tuple(int(v) for v in changes["mag_lock"])
        if "opacity" in changes:
            changes["opacity"] = min(max(float(changes["opacity"]), 0.0), 1.0)
        new = replace(old, **changes)
        _check_layer(new)
        if new == old:
            return
        self.layers = tuple(new if la.name == name else la for la in self.layers)
        which = [LAYERS]
        if name == self.active_layer and new.contrast != old.contrast:
            which.append(CONTRAST)
        self._notify(*which)

    def set_active_layer(self, name: str) -> None:
        """The layer the contrast controls edit."""
        self.layer(name)
        if name != self.active_layer:
            self.active_layer = name
            self._notify(LAYERS, CONTRAST)

    def visible_layers(self) -> list[LayerDisplay]:
        """The layers drawn, bottom first."""
        return [layer for layer in self.layers if layer.visible and layer.opacity > 0]

    # -- contrast, layout, focus -------------------------------------------------------------
    @property
    def contrast(self) -> Contrast:
        """The active layer's contrast (the state's own when there are no layers)."""
        if self.active_layer is not None:
            for layer in self.layers:
                if layer.name == self.active_layer:
                    return layer.contrast
        return self._contrast

    def set_contrast(self, **changes: Any) -> None:
        """Change fields of the active layer's ``Contrast`` (lo, hi, gamma, invert, colormap,
        channel, rgb)."""
        if "colormap" in changes and not known_colormap(changes["colormap"]):
            raise ValueError(f"unknown colormap {changes['colormap']!r} (known: {COLORMAPS})")
        old = self.contrast
        new = replace(old, **changes)
        if new.hi <= new.lo:
            new = replace(new, hi=new.lo + (1e-6 if isinstance(new.lo, float) else 1))
        if new == old:
            return
        if self.active_layer is not None and any(la.name == self.active_layer
                                                 for la in self.layers):
            self.set_layer(self.active_layer, contrast=new)
        else:
            self._contrast = new
            self._notify(CONTRAST)

    def set_layout(self, layout: int | None) -> None:
        """``None``: the 2x2 grid; an axis: that view alone, large."""
        if layout != self.layout:
            self.layout = layout
            self._notify(LAYOUT)

    def toggle_maximized(self) -> None:
        self.set_layout(None if self.layout is not None else self.focused)

    def set_focused(self, axis: int) -> None:
        if axis != self.focused:
            self.focused = axis
            self._notify(FOCUS)


def _check_layer(layer: LayerDisplay) -> None:
    if layer.category not in CATEGORIES:
        raise ValueError(f"layer {layer.name!r}: category {layer.category!r} is not one of "
                         f"{CATEGORIES}")
    if not known_colormap(layer.contrast.colormap):
        raise ValueError(f"layer {layer.name!r}: unknown colormap {layer.contrast.colormap!r}")
    if layer.mag_lock is not None and (len(layer.mag_lock) != 3 or min(layer.mag_lock) < 1):
        raise ValueError(f"layer {layer.name!r}: a mag is three factors >= 1, "
                         f"not {layer.mag_lock}")
