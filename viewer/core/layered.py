"""The layers and mags of a dataset as one source of planes: what the window reads through.

A webKnossos dataset has layers (color, segmentation), each stored at several mags; a plain WKW
dataset is one layer with one mag.  ``LayeredSource`` keeps one ``PlaneSource`` per (layer, mag)
(a background ``Loader`` in the window, all sharing one block cache and its budget; created when
first needed) and answers a view's mag-1 ``PlaneRequest`` for a layer with a
``multires.ComposedPlane``:

* **The mag** comes from the zoom: for each view the caller says how many mag-1 voxels one
  screen pixel spans along x, y and z (``voxels_per_px``), and ``multires.choose_mag_xyz`` picks
  the coarsest mag that still gives a voxel per pixel, or the layer's locked mag.
* **Placeholders**: while the chosen mag loads, up to ``PLACEHOLDERS`` coarser mags of the same
  layer are asked for the same plane, and ``multires.compose`` draws what they have in the cache
  scaled up underneath.  A coarse plane's blocks are read right after the screen's: its loader
  holds them (``Loader.set_wanted(deferred=True)``) until every chosen plane is complete, then
  reads them before any prefetch; so the next move (zooming in, the next slices, which a coarse
  voxel spans too) finds them cached, while the screen's own blocks never wait behind them.
* **Arrivals**: a part's listener reports boxes in its mag's voxels; they are passed on in mag-1
  voxels, so the window re-fetches the views they touch as it does for a single dataset.
* **Time points** (extra axes, ``Volume.extra_axes``): the planes on screen are also wanted, at
  low priority, at the previous and next element of the first extra axis, by parts of their
  own (``Loader.set_wanted(ahead=True)``: held behind the screen, not pinned, not announced),
  like neighbouring slices.  Their blocks are keyed by that element (``Loader.cache_layer``)
  in the shared cache, so ``show_layers`` (the same layers at another element) finds them
  there and shows a prefetched time point complete at once; the part of the new element is
  the neighbour's, kept running, and the parts of the old element stay as its neighbours.

Threads: like ``PlaneSource``: ``set_wanted``, ``plane``, ``add_listener``, ``set_budget`` and
``close`` on one thread (the GUI thread); ``stats`` and ``wait_idle`` from any; listeners are
called on the parts' worker threads.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import partial
from typing import Any

import numpy as np

from viewer.core import multires
from viewer.core.blockkeys import layer_at
from viewer.core.cache import BlockCache
from viewer.core.loader import Loader, LoaderStats
from viewer.core.multires import ComposedPlane, MagPlaneRequest
from viewer.core.slicing import (
    Box3,
    DataArrived,
    PlaneRequest,
    PlaneSource,
    SyncPlaneSource,
)
from viewer.format import Dataset, FormatError, Volume
from viewer.format.channels import channel_volume
from viewer.format.dataset import ChannelInfo

log = logging.getLogger(__name__)

Vec3 = tuple[int, int, int]
#: A part's name: (layer, mag, the layer part of its block keys: name and extra-axes index).
PartKey = tuple[str, Vec3, Any]
#: Makes the source of one (layer, mag): ``make_part(dataset, layer name, mag)``.
PartFactory = Callable[[Volume, str, Vec3], PlaneSource]

#: Coarser mags asked for as placeholders under a view (the nearest ones: the best picture).
PLACEHOLDERS = 2
#: Composed planes kept beyond the ones on screen (each holds a snapshot of a loading plane).
SPARE_PLANES = 3
#: Plans remembered (a plane's request, zoom and lock seen again: no mag choice to redo).
PLAN_MEMO = 256
#: The ``LoaderStats`` counters a retired part leaves behind in the source's ``stats``.
RETIRED_COUNTS = ("hits", "misses", "blocks_read", "bytes_decoded", "decode_seconds",
                  "decode_cpu_seconds", "prefetched_blocks", "prefetch_useful", "dropped_tasks")
#: Voxels per pixel assumed for a plane asked for without ``set_wanted`` having said so.
ONE_TO_ONE = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class SourceLayer:
    """One layer as the source reads it: its ``name``, ``category`` (``color`` or
    ``segmentation``) and the volume of each of its mags (mag-1 voxel coordinates are
    ``mag * voxel`` of a mag's; all mags of a layer share voxel type and channels)."""

    name: str
    mags: Mapping[Vec3, Volume]
    category: str = "color"
    #: A channel of a composite (``composite_layers``): how it looks at first, and the layer
    #: it is a channel of.
    channel: ChannelInfo | None = None
    composite: str | None = None

    def __post_init__(self) -> None:
        if not self.mags:
            raise ValueError(f"layer {self.name!r} has no mag to read")

    @property
    def mag_list(self) -> list[Vec3]:
        """The mags, finest first."""
        return sorted(self.mags, key=lambda m: (m[0] * m[1] * m[2], m))

    @property
    def finest(self) -> Volume:
        return self.mags[self.mag_list[0]]

    @property
    def dtype(self) -> np.dtype[Any]:
        """One channel's numpy type (the same for every mag)."""
        return self.finest.dtype

    @property
    def num_channels(self) -> int:
        return self.finest.num_channels


@dataclass(frozen=True)
class _Plan:
    """What a view's plane of a layer is read from: the chosen mag and the placeholders."""

    chosen: MagPlaneRequest
    placeholders: tuple[MagPlaneRequest, ...]


def _sync_part(dataset: Volume, layer: str, mag: Vec3) -> PlaneSource:
    return SyncPlaneSource(dataset)


class LayeredSource:
    """Planes of every layer of a dataset, each at the mag its view's zoom calls for.

    ``make_part`` builds the source of one (layer, mag) (default: synchronous reads).
    ``cache``: the block cache the parts share, if any (for ``stats`` and the budget).
    ``on_close`` runs after every part closed (e.g. closing the webKnossos dataset).
    ``prefetch``: let the parts prefetch around what they show (off: they read the screen and
    its placeholders only).  ``time_ahead``: read the screen's planes ahead at the previous
    and next element of the first extra axis (with ``prefetch``)."""

    def __init__(self, layers: Sequence[SourceLayer], make_part: PartFactory | None = None, *,
                 cache: BlockCache | None = None,
                 on_close: Callable[[], None] | None = None, prefetch: bool = True,
                 time_ahead: bool = True) -> None:
        if not layers:
            raise ValueError("a source needs at least one layer")
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise ValueError(f"layer names must be unique, not {names}")
        self.layers: dict[str, SourceLayer] = {layer.name: layer for layer in layers}
        self.primary = names[0]
        self.cache = cache
        self._make_part = make_part or _sync_part
        self._on_close = on_close
        self.prefetch = prefetch
        self.time_ahead = time_ahead
        #: The parts of the layers' volumes (at the shown element of their extra axes), and
        #: every live part, those reading ahead at neighbouring elements too.
        self._parts: dict[tuple[str, Vec3], PlaneSource] = {}
        self._all: dict[PartKey, PlaneSource] = {}
        #: Parts reading the screen's planes ahead at neighbouring elements of an extra axis.
        self._ahead: set[PartKey] = set()
        #: The counters of the parts retired so far (their work still counts in ``stats``).
        self._retired: dict[str, float] = {}
        self._axis = _first_axis(layers)
        self._listeners: list[DataArrived] = []
        self._plans: dict[tuple[str, PlaneRequest], _Plan] = {}
        self._vpp: dict[PlaneRequest, tuple[float, float, float]] = {}
        self._vpp_by_axis: dict[int, tuple[float, float, float]] = {}
        self._locks: dict[str, Vec3 | None] = {}
        self._plan_memo: OrderedDict[tuple[Any, ...], _Plan] = OrderedDict()
        self._composed: OrderedDict[tuple[str, PlaneRequest], tuple[Any, tuple[Any, ...],
                                                                     ComposedPlane]] = \
            OrderedDict()
        self._wanted: tuple[PlaneRequest, ...] = ()
        self._visible: tuple[str, ...] = tuple(names)
        #: Parts that only hold placeholders now (their reads wait for the screen's).
        self._deferred: set[tuple[str, Vec3]] = set()
        #: Whether each wanted (layer, request) has its chosen mag's plane complete.
        self._chosen_complete: dict[tuple[str, PlaneRequest], bool] = {}
        self._closed = False

    # -- layers and mags ----------------------------------------------------------------------
    def part(self, layer: str, mag: Vec3) -> PlaneSource:
        """The source of ``layer`` at ``mag`` (made on first use, or the one that read it
        ahead at this element of the extra axes)."""
        key = (layer, mag)
        part = self._parts.get(key)
        if part is None:
            part = self._part_of(layer, mag, self.layers[layer].mags[mag])
            self._parts[key] = part
        return part

    def _part_of(self, layer: str, mag: Vec3, volume: Volume | Callable[[], Volume],
                 index: Mapping[str, int] | None = None) -> PlaneSource:
        """The live part of ``volume`` (``layer`` at ``mag``, at the volume's element of its
        extra axes, or at ``index`` for a volume made only when the part is: a callable),
        made when there is none.  Its arrivals are passed on only while it is the part shown
        (``_parts``)."""
        if isinstance(volume, Volume):
            index = volume.extra_index
        assert index is not None
        key: PartKey = (layer, mag, layer_at(layer, index))
        part = self._all.get(key)
        if part is not None:
            return part
        if not isinstance(volume, Volume):
            volume = volume()
        made = self._make_part(volume, layer, mag)
        fu, fv, fw = mag
        listeners, shown = self._listeners, self._parts

        def arrived(box: Box3, f: Vec3 = (fu, fv, fw)) -> None:  # a worker thread
            if shown.get((layer, mag)) is not made:
                return
            (ox, oy, oz), (sx, sy, sz) = box
            scaled: Box3 = ((ox * f[0], oy * f[1], oz * f[2]),
                            (sx * f[0], sy * f[1], sz * f[2]))
            for callback in list(listeners):
                callback(scaled)

        made.add_listener(arrived)
        self._all[key] = made
        return made

    def show_layers(self, layers: Sequence[SourceLayer]) -> None:
        """Show ``layers`` from now on: the same layers (by name) at another element of their
        extra axes (another time point).  The parts that read it ahead become the parts shown;
        the ones shown so far read on as neighbours or retire at the next ``set_wanted``, their
        blocks staying in the cache.  The caller asks for the planes again (``set_wanted``)."""
        if not layers:
            raise ValueError("a source needs at least one layer")
        self.layers = {layer.name: layer for layer in layers}
        self.primary = layers[0].name
        self._axis = _first_axis(layers)
        self._parts.clear()  # in place: the parts' listeners look it up
        self._plans = {}
        self._plan_memo.clear()
        self._composed.clear()
        self._chosen_complete = {}
        self._deferred = set()
        self._ahead = set()
        self._wanted = ()

    def _neighbours(self, layer: str, mag: Vec3) -> list[dict[str, int]]:
        """The previous and next element of the first extra axis from ``layer``'s at ``mag``,
        those that exist (none for a layer without that axis)."""
        volume = self.layers[layer].mags[mag]
        axis = self._axis
        n = volume.extra_axes.get(axis, 0) if axis is not None else 0
        if n < 2 or axis is None:
            return []
        index = volume.extra_index
        return [{**index, axis: i} for i in (index.get(axis, 0) + 1, index.get(axis, 0) - 1)
                if 0 <= i < n]

    @property
    def parts(self) -> dict[tuple[str, Vec3], PlaneSource]:
        """The parts made so far, by (layer, mag)."""
        return dict(self._parts)

    def plan(self, layer: str, request: PlaneRequest) -> _Plan:
        """The mag ``request`` of ``layer`` is read from now, and its placeholders."""
        plan = self._plans.get((layer, request))
        if plan is None:
            vpp = self._vpp.get(request) or self._vpp_by_axis.get(request.axis, ONE_TO_ONE)
            plan = self._make_plan(layer, request, vpp)
        return plan

    def chosen_mag(self, layer: str, request: PlaneRequest) -> Vec3:
        return self.plan(layer, request).chosen.mag

    def _make_plan(self, layer: str, request: PlaneRequest,
                   vpp: tuple[float, float, float]) -> _Plan:
        lock = self._locks.get(layer)
        key = (layer, request, vpp, lock)
        plan = self._plan_memo.get(key)
        if plan is not None:
            return plan
        mags = self.layers[layer].mag_list
        if len(mags) == 1:  # a plain WKW dataset: nothing to choose
            plan = _Plan(multires.to_mag(request, mags[0]), ())
        else:
            chosen = multires.choose_mag_xyz(mags, request.axis, vpp, lock)
            coarser = multires.placeholder_mags(mags, chosen)[:PLACEHOLDERS]
            plan = _Plan(multires.to_mag(request, chosen),
                         tuple(multires.to_mag(request, m) for m in coarser))
        self._plan_memo[key] = plan
        while len(self._plan_memo) > PLAN_MEMO:
            self._plan_memo.popitem(last=False)
        return plan

    # -- the PlaneSource protocol -------------------------------------------------------------
    def add_listener(self, callback: DataArrived) -> None:
        """``callback(box)`` with ``box`` in mag-1 voxels, whichever layer or mag it came in."""
        self._listeners.append(callback)

    def set_wanted(self, wanted: Sequence[PlaneRequest], focused: int | None,
                   cursor: tuple[int, int, int], *,
                   voxels_per_px: Sequence[tuple[float, float, float]] | None = None,
                   layers: Mapping[str, Vec3 | None] | None = None) -> None:
        """The planes on screen (mag-1 requests), ``voxels_per_px[i]`` the mag-1 voxels one
        screen pixel of ``wanted[i]``'s view spans along x, y, z, and the layers drawn with
        their locked mag (``None``: chosen by zoom; default: every layer, none locked)."""
        if self._closed:
            return
        wanted = tuple(wanted)
        vpps = [tuple(float(v) for v in p) for p in voxels_per_px] if voxels_per_px \
            else [ONE_TO_ONE] * len(wanted)
        if len(vpps) != len(wanted):
            raise ValueError("one voxels_per_px entry per wanted plane")
        if layers is None:
            layers = {name: None for name in self.layers}
        self._visible = tuple(name for name in self.layers if name in layers)
        self._locks = {name: (tuple(int(v) for v in lock)  # type: ignore[misc]
                              if lock is not None else None) for name, lock in layers.items()}
        self._vpp = {}
        for req, vpp in zip(wanted, vpps, strict=True):
            self._vpp[req] = vpp  # type: ignore[assignment]
            self._vpp_by_axis[req.axis] = vpp  # type: ignore[assignment]
        self._wanted = wanted
        self._plans = {}
        order = list(range(len(wanted)))
        if focused is not None and 0 <= focused < len(wanted):
            order.remove(focused)
            order.insert(0, focused)
        # Per part: its chosen planes (focused view first), then its placeholder planes.
        chosen: dict[tuple[str, Vec3], list[PlaneRequest]] = {}
        under: dict[tuple[str, Vec3], list[PlaneRequest]] = {}
        focus_of: dict[tuple[str, Vec3], int] = {}
        for name in self._visible:
            for i in order:
                req = wanted[i]
                plan = self._make_plan(name, req, self._vpp[req])
                self._plans[(name, req)] = plan
                key = (name, plan.chosen.mag)
                if i == focused and key not in focus_of:
                    focus_of[key] = len(chosen.get(key, []))
                chosen.setdefault(key, []).append(plan.chosen.request)
                for p in plan.placeholders:
                    under.setdefault((name, p.mag), []).append(p.request)
        for key in set(chosen) | set(under) | set(self._parts):
            own = chosen.get(key, [])
            extra = [r for r in under.get(key, []) if r not in own]
            if not own and not extra and key not in self._parts:
                continue
            part = self.part(*key)
            if hasattr(part, "prefetch_enabled"):
                # prefetch around what is shown only, not around placeholders
                part.prefetch_enabled = self.prefetch and bool(own)
            mag = key[1]
            mag_cursor = (cursor[0] // mag[0], cursor[1] // mag[1], cursor[2] // mag[2])
            planes = list(dict.fromkeys(own + extra))
            if not own and planes and isinstance(part, Loader):
                # Only placeholders here: read right after the screen's blocks, not with them.
                part.set_wanted(planes, None, mag_cursor, deferred=True)
                self._deferred.add(key)
            else:
                part.set_wanted(planes, focus_of.get(key), mag_cursor)
                self._deferred.discard(key)
        self._chosen_complete = {key: False for key in self._plans}
        self._want_ahead(chosen, cursor)
        self._trim()

    def _want_ahead(self, chosen: Mapping[tuple[str, Vec3], list[PlaneRequest]],
                    cursor: tuple[int, int, int]) -> None:
        """The chosen planes at the neighbouring elements of the first extra axis, read ahead
        at low priority (background parts only); parts neither shown nor ahead now retire."""
        ahead: set[PartKey] = set()
        if self.prefetch and self.time_ahead and self.cache is not None:
            for (name, mag), planes in chosen.items():
                mag_cursor = (cursor[0] // mag[0], cursor[1] // mag[1], cursor[2] // mag[2])
                volume = self.layers[name].mags[mag]
                for index in self._neighbours(name, mag):
                    try:  # the volume at the neighbour, made only with its part
                        part = self._part_of(name, mag, partial(volume.at_index, index), index)
                    except (FormatError, KeyError, IndexError) as exc:
                        log.warning("layer %s: no element %s: %s", name, index, exc)
                        continue
                    if not isinstance(part, Loader):
                        continue
                    part.prefetch_enabled = False  # the planes alone, not around them
                    part.set_wanted(list(dict.fromkeys(planes)), None, mag_cursor, ahead=True)
                    ahead.add((name, mag, part.cache_layer))
        self._ahead = ahead
        shown = {id(p) for p in self._parts.values()}
        for key, part in list(self._all.items()):
            if key not in ahead and id(part) not in shown:
                del self._all[key]
                if isinstance(part, Loader):
                    done = part.stats()
                    for name in RETIRED_COUNTS:
                        self._retired[name] = self._retired.get(name, 0) + getattr(done, name)
                    part.close(retire=True)
                else:
                    part.close()

    def plane(self, request: PlaneRequest, layer: str | None = None) -> ComposedPlane:
        """``layer``'s plane (default: the first layer) at the mag its view reads now, what is
        still loading drawn from a coarser mag when one has it.  While nothing arrived since
        the last call, the same object comes back (the caller can skip redrawing)."""
        name = layer if layer is not None else self.primary
        plan = self.plan(name, request)
        chosen = self.part(name, plan.chosen.mag).plane(plan.chosen.request)
        under: tuple[Any, ...] = ()
        if not chosen.complete:
            under = tuple(self.part(name, p.mag).plane(p.request) for p in plan.placeholders)
        elif self._chosen_complete.get((name, request)) is False:
            self._chosen_complete[(name, request)] = True
            if all(self._chosen_complete.values()):
                self._release_deferred()
        key = (name, request)
        hit = self._composed.get(key)
        if hit is not None and hit[0] is chosen and len(hit[1]) == len(under) \
                and all(a is b for a, b in zip(hit[1], under, strict=True)) \
                and hit[2].mag_request == plan.chosen:
            self._composed.move_to_end(key)
            return hit[2]
        # ``under`` is empty once the chosen mag is complete: no placeholders beneath it then
        placed = list(zip(plan.placeholders, under, strict=False))
        composed = multires.compose((plan.chosen, chosen), placed)
        self._composed[key] = (chosen, under, composed)
        self._composed.move_to_end(key)
        self._trim()
        return composed

    def screen_drawn(self) -> None:
        """The caller drew every plane it asked for complete: the parts' prefetch held behind
        the screen (``Loader(hold_until_drawn=True)``) may start.  GUI thread."""
        _release(list(self._parts.values()))

    def _release_deferred(self) -> None:
        """The screen is complete: the placeholder reads held behind it, and the reads ahead
        at the neighbouring time points, may start."""
        held = [self._parts.get(key) for key in self._deferred]
        _release(held + [self._all.get(key) for key in self._ahead])

    def close(self) -> None:
        """Close every part (joining their workers), then run ``on_close``."""
        if self._closed:
            return
        self._closed = True
        for part in self._all.values():
            part.close()
        self._parts.clear()
        self._all.clear()
        self._composed.clear()
        self._listeners.clear()
        if self._on_close is not None:
            self._on_close()

    def _trim(self) -> None:
        keep = len(self._wanted) * len(self._visible) + SPARE_PLANES
        while len(self._composed) > keep:
            self._composed.popitem(last=False)

    # -- loaders: budget, statistics, waiting -------------------------------------------------
    def set_budget(self, budget_bytes: int) -> None:
        if self.cache is not None:
            self.cache.set_budget(budget_bytes)

    def stats(self) -> LoaderStats:
        """The parts' ``LoaderStats`` added up (the cache figures are the shared cache's)."""
        shared = self.cache.stats() if self.cache is not None else None
        parts = [p.stats(shared) if isinstance(p, Loader) else p.stats()
                 for p in list(self._all.values()) if hasattr(p, "stats")]
        values: dict[str, Any] = {}
        for f in fields(LoaderStats):
            if f.name == "over_budget":
                values[f.name] = any(s.over_budget for s in parts)
            elif f.name in ("cache_used_bytes", "cache_budget_bytes", "cache_blocks",
                            "pinned_blocks", "peak_cache_bytes"):
                values[f.name] = max((getattr(s, f.name) for s in parts), default=0)
            else:
                values[f.name] = sum(getattr(s, f.name) for s in parts) if parts else 0
                values[f.name] += type(values[f.name])(self._retired.get(f.name, 0))
        if shared is not None:
            c = shared
            values.update(cache_used_bytes=c.used_bytes, cache_budget_bytes=c.budget_bytes,
                          cache_blocks=c.blocks, pinned_blocks=c.pinned_blocks,
                          peak_cache_bytes=c.peak_used_bytes, over_budget=c.pinned_over_budget)
        return LoaderStats(**values)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every part is idle (tests, benchmarks)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for part in list(self._all.values()):
            wait = getattr(part, "wait_idle", None)
            if wait is None:
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not wait(left):
                return False
        return True

    @property
    def threads(self) -> list[Any]:
        return [t for p in list(self._all.values()) for t in getattr(p, "threads", [])]


def _first_axis(layers: Sequence[SourceLayer]) -> str | None:
    """The extra axis that ``[`` / ``]`` step (the first one of the first layer having any)."""
    for layer in layers:
        for axis in layer.finest.extra_axes:
            return axis
    return None


#: Channel colours when the dataset names none: two channels as magenta and green (told apart
#: by people who do not tell red from green), more as red, green, blue, then the mixtures.
TWO_CHANNEL_COLORS = ("#FF00FF", "#00FF00")
CHANNEL_COLORS = ("#FF0000", "#00FF00", "#0000FF", "#FF00FF", "#00FFFF", "#FFFF00", "#FFFFFF")


def is_rgb(dtype: np.dtype[Any], num_channels: int) -> bool:
    """Three or four uint8 channels: a colour image (RGB, RGBA), shown as such."""
    return bool(dtype == np.uint8 and num_channels in (3, 4))


def composite_layers(layer: SourceLayer, info: Sequence[ChannelInfo] = ()) -> list[SourceLayer]:
    """A color layer of several channels (not RGB) as one layer per channel, each reading
    only its channel (``viewer.format.channels.channel_volume``: the channel's own chunks
    where they are stored apart), with its look from ``info`` (OME ``omero``) or the standard
    colours.  Any other layer: itself."""
    n = layer.num_channels
    if layer.category != "color" or n < 2 or is_rgb(layer.dtype, n):
        return [layer]
    colors = TWO_CHANNEL_COLORS if n == 2 else CHANNEL_COLORS
    out: list[SourceLayer] = []
    names: set[str] = set()
    for c in range(n):
        given = info[c] if c < len(info) else ChannelInfo()
        look = ChannelInfo(given.label, given.color or colors[c % len(colors)], given.window,
                           given.active)
        name = f"{layer.name}/{look.label or f'c{c}'}"
        if name in names:
            name = f"{name} ({c})"
        names.add(name)
        out.append(SourceLayer(name, {m: channel_volume(v, c) for m, v in layer.mags.items()},
                               layer.category, look, layer.name))
    return out


def source_layers(dataset: Dataset) -> tuple[list[SourceLayer], list[FormatError]]:
    """The layers of a dataset (any format) as the source reads them (each mag's volume opened
    now; a layer of channels as one layer per channel, ``composite_layers``), and the problems
    of those that cannot be read: a layer without mags, a mag whose folder or header is
    missing or does not match the layer (that mag is left out, the layer's other mags still
    open), a layer in a format not supported yet."""
    out: list[SourceLayer] = []
    problems: list[FormatError] = []
    for layer in dataset.layers:
        mags: dict[Vec3, Volume] = {}
        for mag in layer.mags:
            try:
                mags[mag.mag] = mag.volume
            except FormatError as exc:
                problems.append(exc)
        if mags:
            out.extend(composite_layers(SourceLayer(layer.name, mags, layer.category),
                                        layer.channel_info))
    return out, problems


def decoded_needed_bytes(source: LayeredSource, layer: str,
                         requests: Sequence[PlaneRequest]) -> int:
    """The bytes of the distinct blocks of the chosen mags that ``requests`` of ``layer``
    touch: what showing them needs decoded at the least (whole blocks), for comparing with
    what the loaders decoded."""
    seen: set[tuple[Vec3, tuple[int, int, int]]] = set()
    total = 0
    for req in requests:
        mreq = source.plan(layer, req).chosen
        ds = source.layers[layer].mags[mreq.mag]
        b = np.asarray(ds.chunk_shape)
        (ox, oy, oz), (sx, sy, sz) = mreq.request.box()
        lo = np.array([ox, oy, oz]) // b
        hi = -(-(np.array([ox + sx, oy + sy, oz + sz])) // b)
        for bx in range(max(int(lo[0]), 0), int(hi[0])):
            for by in range(max(int(lo[1]), 0), int(hi[1])):
                for bz in range(max(int(lo[2]), 0), int(hi[2])):
                    if (mreq.mag, (bx, by, bz)) not in seen:
                        seen.add((mreq.mag, (bx, by, bz)))
                        total += ds.chunk_nbytes
    return total


def _release(parts: Sequence[object]) -> None:
    """Let the held work of the loaders among ``parts`` start (``Loader.release_hold``)."""
    for part in parts:
        if isinstance(part, Loader):
            part.release_hold()


__all__ = ["LayeredSource", "SourceLayer", "PartFactory", "PLACEHOLDERS", "source_layers",
           "composite_layers", "is_rgb", "CHANNEL_COLORS", "TWO_CHANNEL_COLORS",
           "decoded_needed_bytes"]
