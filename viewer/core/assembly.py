"""Plane assembly: the planes a loader hands out, cut from cached blocks.

``PlaneAssembler`` keeps one ``PlaneEntry`` per ``PlaneRequest`` asked for (the ones on screen
and ``SPARE_PLANES`` more): the plane's voxels and status so far, and the blocks still missing.
Each ``fill`` copies the newly cached blocks in (one numpy slice per block, whole blocks'
status in one scatter) and looks only at the blocks still missing, so a plane the user keeps
looking at costs nothing to redraw; ``snapshot`` hands out a ``Plane`` (the same object while
nothing arrived since).

The four looks of a pixel come from the block's cached value and its storage unit's state:
a cached array is ``Status.DATA`` (real zeros included), ``ABSENT`` (a chunk the unit does not
store) or an absent unit is ``Status.ABSENT`` (the fill value), a cached ``FormatError`` or an
unreadable unit is ``Status.FAILED`` (the error kept in ``Plane.errors``), or ``CHANGING`` when
the error is a file another program is changing (``FileChangedError``), anything else stays
``Status.PENDING``.

Pure numpy work on the caller's arrays: no lock, no I/O.  Threads: one (the loader's owner,
the GUI thread).
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Collection, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core import prefetch
from viewer.core.cache import ABSENT, BlockKey, BlockValue
from viewer.core.slicing import IN_PLANE, Plane, PlaneRequest, Status, look_of
from viewer.format import FileChangedError, FormatError
from viewer.format.native import planes as native_planes

Vec3 = tuple[int, int, int]
#: Assembled planes kept beyond the ones on screen.
SPARE_PLANES = 8
#: Plane layouts remembered.
LAYOUTS = 64


@dataclass
class PlaneEntry:
    """One plane being assembled: its layout, its blocks' cache keys (aligned with the
    layout's rows), the voxels and status so far, the rows still missing, the errors met."""

    layout: prefetch.PlaneLayout
    keys: list[BlockKey]
    data: npt.NDArray[Any]
    status: npt.NDArray[np.uint8]
    missing: list[int]
    errors: dict[tuple[str, int], FormatError] = field(default_factory=dict)
    #: The ``Plane`` last handed out, while nothing arrived since (asked again: the same one).
    shown: Plane | None = None
    #: The owner's count of finished reads when the missing blocks were last looked up (-1:
    #: never): while it has not moved, nothing new can be in the cache for them.
    looked: int = -1


class PlaneAssembler:
    """The planes of one volume being assembled (see the module docstring).

    ``chunk``: the block shape; ``channels``, ``dtype``: of the voxels; ``fill_value``: what an
    absent chunk reads as; ``unit_path``: a storage unit's path for errors that name none."""

    def __init__(self, chunk: Vec3, channels: int, dtype: np.dtype[Any],
                 fill_value: int | float, unit_path: Callable[[Vec3], str]) -> None:
        self.chunk = chunk
        self.channels = channels
        self.dtype = dtype
        self.fill_value = fill_value
        self.unit_path = unit_path
        self._planes: OrderedDict[PlaneRequest, PlaneEntry] = OrderedDict()
        self._layouts: OrderedDict[PlaneRequest, prefetch.PlaneLayout] = OrderedDict()

    def layout(self, request: PlaneRequest) -> prefetch.PlaneLayout:
        """The blocks ``request`` crosses (remembered for the last ``LAYOUTS`` requests)."""
        lay = self._layouts.get(request)
        if lay is None:
            lay = prefetch.plane_layout(request, self.chunk)
            self._layouts[request] = lay
            while len(self._layouts) > LAYOUTS:
                self._layouts.popitem(last=False)
        return lay

    def get(self, request: PlaneRequest) -> PlaneEntry | None:
        """The entry of ``request`` (marked most recently used), or None."""
        entry = self._planes.get(request)
        if entry is not None:
            self._planes.move_to_end(request)
        return entry

    def add(self, request: PlaneRequest, keys: list[BlockKey]) -> PlaneEntry:
        """A new entry for ``request`` whose blocks have the cache keys ``keys``: every pixel
        on the blocks pending, the rest (negative coordinates) absent."""
        lay = self.layout(request)
        shape = request.shape
        data = np.zeros((self.channels, *shape), dtype=self.dtype, order="F")
        status = np.full(shape, Status.ABSENT, dtype=np.uint8, order="F")
        if len(lay):  # the blocks tile the request's non-negative part
            status[int(lay.u0.min()):, int(lay.v0.min()):] = Status.PENDING
        entry = PlaneEntry(lay, keys, data, status, list(range(len(lay))))
        self._planes[request] = entry
        return entry

    def fill(self, entry: PlaneEntry, values: Sequence[BlockValue | None],
             bad_units: Collection[Vec3], unit_state: Callable[[Vec3], Any]) -> None:
        """Copy the blocks of ``entry.missing`` that are known now into the plane: ``values``
        are their cached values (None: not cached); a block not cached whose storage unit is in
        ``bad_units`` takes the unit's look from ``unit_state(unit)`` (None: absent, a
        ``FormatError``: unreadable).  What stays unknown stays missing."""
        missing = entry.missing
        if len(values) != len(missing):
            raise ValueError(f"{len(values)} values for {len(missing)} missing blocks")
        still: list[int] = []
        pairs: Sequence[tuple[int, BlockValue | None]]
        if not bad_units:
            # No unit is known bad (the common case): the blocks not cached stay missing, told
            # apart in one pass; what follows sees only what arrived.
            still = [k for k, value in zip(missing, values, strict=True) if value is None]
            if len(still) == len(missing):
                return
            pairs = [(k, value) for k, value in zip(missing, values, strict=True)
                     if value is not None]
        else:
            pairs = list(zip(missing, values, strict=True))
        lay = entry.layout
        full = lay.full
        # Whole blocks' arrays (nearly all that arrives) are copied in one go below; the loop
        # sees the rest: blocks cut by the plane's edge, absent or failed ones, bad units.
        whole = [k for k, value in pairs if type(value) is np.ndarray and full[k]]
        if len(whole) == len(pairs):
            arrays: list[npt.NDArray[Any]] = [value for _, value in pairs]  # type: ignore[misc]
            pairs = []
        else:
            arrays = [value for k, value in pairs if type(value) is np.ndarray and full[k]]
            pairs = [(k, value) for k, value in pairs
                     if not (type(value) is np.ndarray and full[k])]
        axis, depth = lay.request.axis, lay.depth
        u0, u1, v0, v1 = lay.u0.tolist(), lay.u1.tolist(), lay.v0.tolist(), lay.v1.tolist()
        bu0, bv0 = lay.bu0.tolist(), lay.bv0.tolist()
        data, status = entry.data, entry.status
        keys = entry.keys
        for k, value in pairs:
            if value is None:
                key = keys[k]
                if key[2] not in bad_units:
                    still.append(k)
                    continue
                state = unit_state(key[2])
                if state is None:
                    status[u0[k]:u1[k], v0[k]:v1[k]] = Status.ABSENT
                elif isinstance(state, FormatError):
                    status[u0[k]:u1[k], v0[k]:v1[k]] = look_of(state)
                    entry.errors[(state.path or self.unit_path(key[2]), state.block or 0)] = state
                else:
                    still.append(k)
                continue
            if value is ABSENT:
                if self.fill_value:
                    data[:, u0[k]:u1[k], v0[k]:v1[k]] = self.fill_value
                status[u0[k]:u1[k], v0[k]:v1[k]] = Status.ABSENT
                continue
            if isinstance(value, FormatError):
                key = keys[k]
                status[u0[k]:u1[k], v0[k]:v1[k]] = look_of(value)
                entry.errors[(value.path or self.unit_path(key[2]), key[3])] = value
                continue
            assert isinstance(value, np.ndarray)
            w, h = u1[k] - u0[k], v1[k] - v0[k]
            a, b = bu0[k], bv0[k]
            if axis == 2:
                part = value[:, a:a + w, b:b + h, depth]
            elif axis == 1:
                part = value[:, a:a + w, depth, b:b + h]
            else:
                part = value[:, depth, a:a + w, b:b + h]
            data[:, u0[k]:u1[k], v0[k]:v1[k]] = part
            status[u0[k]:u1[k], v0[k]:v1[k]] = Status.DATA
        if whole:
            scatter_blocks(data, status, lay, whole, arrays)
        if len(still) != len(entry.missing):  # a block's look changed
            entry.shown = None
        entry.missing = still

    def forget(self, stale: Container[BlockKey]) -> None:
        """The blocks ``stale`` are to be read again (their file was changing): every plane
        that holds one takes it as missing again (keeping its look until it arrives) and
        drops the errors of changing files it met."""
        for entry in self._planes.values():
            rows = [k for k, key in enumerate(entry.keys) if key in stale]
            if not rows:
                continue
            if not entry.missing:  # complete: its arrays were handed out read-only
                entry.data = entry.data.copy(order="F")
                entry.status = entry.status.copy(order="F")
            missing = set(entry.missing)
            entry.missing = sorted(missing.union(rows))
            entry.errors = {k: e for k, e in entry.errors.items()
                            if not isinstance(e, FileChangedError)}
            entry.shown = None

    def snapshot(self, entry: PlaneEntry) -> Plane:
        """The plane as assembled so far: the same ``Plane`` as last time while nothing
        changed (a view can skip redrawing); once complete, its arrays read-only and no longer
        copied."""
        if entry.shown is not None:
            return entry.shown
        if not entry.missing:
            entry.data.flags.writeable = False
            entry.status.flags.writeable = False
            plane = Plane(entry.layout.request, entry.data, entry.status, entry.errors)
        else:
            plane = Plane(entry.layout.request, entry.data.copy(order="F"),
                          entry.status.copy(order="F"), dict(entry.errors))
        # Known without scanning the status: a block still missing is a PENDING pixel.
        plane.__dict__["complete"] = not entry.missing
        entry.shown = plane
        return plane

    def complete(self, requests: Sequence[PlaneRequest]) -> bool:
        """Every plane of ``requests`` was assembled and has all its blocks."""
        planes = self._planes
        for req in requests:
            entry = planes.get(req)
            if entry is None or entry.missing:
                return False
        return True

    def trim(self, wanted: Sequence[PlaneRequest]) -> None:
        """Forget planes beyond ``wanted`` and the ``SPARE_PLANES`` most recently asked."""
        keep = set(wanted)
        spare = [r for r in self._planes if r not in keep]
        for req in spare[:max(0, len(spare) - SPARE_PLANES)]:
            del self._planes[req]

    def clear(self) -> None:
        self._planes.clear()


def scatter_blocks(data: npt.NDArray[Any], status: npt.NDArray[np.uint8],
                   lay: prefetch.PlaneLayout, rows: list[int],
                   blocks: list[npt.NDArray[Any]]) -> None:
    """Copy the plane's slice of whole blocks ``blocks`` (each ``(C, X, Y, Z)``, one per
    layout row of ``rows``, each filling a whole block-sized rectangle) into the plane: the
    values by the native plane assembly in one call without the interpreter lock
    (``viewer.format.native.planes``, where it was built), else the slices cut by one C-level
    ``map`` and one slice assignment per block; the
    status of all of them in one scatter through a block-grid view when the blocks sit on a
    grid starting at the plane's corner (always, for requests snapped to the block size):
    about half the cost of two slice assignments per block (docs/performance.md)."""
    bu, bv = lay.bu, lay.bv
    u0 = lay.u0[rows]
    v0 = lay.v0[rows]
    depth = lay.depth
    axis = lay.request.axis
    u_axis, v_axis = IN_PLANE[axis]
    if not native_planes.scatter(data, blocks, 1 + axis, depth, 1 + u_axis, 1 + v_axis, bu, bv,
                                 u0, v0):
        everything = slice(None)
        cut = operator.itemgetter((everything, everything, everything, depth) if axis == 2 else
                                  (everything, everything, depth) if axis == 1 else
                                  (everything, depth))
        for part, a, e in zip(map(cut, blocks), u0.tolist(), v0.tolist(), strict=True):
            data[:, a:a + bu, e:e + bv] = part
    if (u0 % bu == 0).all() and (v0 % bv == 0).all():
        nu, nv = status.shape[0] // bu, status.shape[1] // bv
        tu, tv = status.strides
        grid = np.lib.stride_tricks.as_strided(status, (bu, nu, bv, nv),
                                               (tu, tu * bu, tv, tv * bv), writeable=True)
        grid[:, u0 // bu, :, v0 // bv] = Status.DATA
        return
    for a, e in zip(u0.tolist(), v0.tolist(), strict=True):
        status[a:a + bu, e:e + bv] = Status.DATA


__all__ = ["PlaneAssembler", "PlaneEntry", "scatter_blocks", "SPARE_PLANES"]
