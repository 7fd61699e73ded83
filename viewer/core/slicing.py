"""Orthogonal planes of a dataset: the one way views get their pixels.

A view asks for a ``PlaneRequest`` (normal axis, index along it, in-plane box) and gets back a
``Plane``: the voxels as ``(C, U, V)`` plus a per-pixel ``status`` saying, for every pixel, which
of the four looks it has (real data, not loaded yet, file absent, block failed).  In-plane axes
are the two remaining axes in increasing order: XY (normal z) -> (x, y); XZ (normal y) -> (x, z);
YZ (normal x) -> (y, z).

``read_plane`` answers synchronously; the background loader answers the same request from its
cache at once and fills in the rest later.  Both return ``Plane``.  Qt-free; any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from viewer.format import FileChangedError, FormatError, Volume

#: Normal axis of each view, and the in-plane axes (u, v) it shows.
XY, XZ, YZ = 2, 1, 0
IN_PLANE: dict[int, tuple[int, int]] = {XY: (0, 1), XZ: (0, 2), YZ: (1, 2)}
VIEW_NAMES = {XY: "XY", XZ: "XZ", YZ: "YZ"}


class Status(IntEnum):
    """The looks of a pixel; never confused with one another."""

    DATA = 0  #: real data (real zeros included)
    PENDING = 1  #: not loaded yet
    ABSENT = 2  #: the chunk or its storage unit does not exist (sparse): the fill value
    FAILED = 3  #: the block could not be read; see ``Plane.errors``
    #: the block's file is being changed by another program (a ``FileChangedError``, see
    #: ``Plane.errors``): read again once it settles
    CHANGING = 4


@dataclass(frozen=True)
class PlaneRequest:
    """A plane: normal ``axis`` (0 x, 1 y, 2 z), voxel ``index`` along it, and the in-plane box
    ``[lo, hi)`` in (u, v) voxel coordinates."""

    axis: int
    index: int
    lo: tuple[int, int]
    hi: tuple[int, int]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.hi[0] - self.lo[0], self.hi[1] - self.lo[1])

    def box(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """The request as a 3-D ``(offset, shape)`` with thickness 1 along the normal."""
        offset = [0, 0, 0]
        shape = [1, 1, 1]
        offset[self.axis] = self.index
        u, v = IN_PLANE[self.axis]
        offset[u], offset[v] = self.lo
        shape[u], shape[v] = self.shape
        return (tuple(offset), tuple(shape))  # type: ignore[return-value]


@dataclass
class Plane:
    """The answer to a ``PlaneRequest``.  ``data`` is ``(C, U, V)``; ``status`` is ``(U, V)``
    uint8 of ``Status`` values; ``errors`` maps ``(file path, block index)`` to the error.

    A plane read at a coarser mag (``viewer.core.multires``) has fewer pixels than the request:
    each spans ``factors`` requested voxels along (u, v), and its first pixel starts at voxel
    ``origin`` (``request.lo`` when None).  ``pixel_index`` maps a requested voxel to a pixel.

    A plane is a snapshot: a source never changes its arrays after handing it out (a later
    answer is a new ``Plane``), so what is derived from them is computed once."""

    request: PlaneRequest
    data: npt.NDArray[Any]
    status: npt.NDArray[np.uint8]
    errors: dict[tuple[str, int], FormatError] = field(default_factory=dict)
    factors: tuple[int, int] = (1, 1)
    origin: tuple[int, int] | None = None

    @property
    def image_origin(self) -> tuple[int, int]:
        """The (u, v) voxel at which the plane's first pixel starts."""
        return self.origin if self.origin is not None else self.request.lo

    def pixel_index(self, u: int, v: int) -> tuple[int, int] | None:
        """The (u, v) index into ``data``/``status`` of in-plane voxel (u, v), or None when
        the plane does not hold it."""
        ou, ov = self.image_origin
        fu, fv = self.factors
        iu, iv = (u - ou) // fu, (v - ov) // fv
        if 0 <= iu < self.status.shape[0] and 0 <= iv < self.status.shape[1]:
            return iu, iv
        return None

    @cached_property
    def complete(self) -> bool:
        """Nothing on this plane is still waiting to load.  (Asked several times per repaint,
        and a scan of the status of a whole view is not free: worked out once.)"""
        return not bool(np.any(self.status == Status.PENDING))


def read_plane(volume: Volume, request: PlaneRequest) -> Plane:
    """Read a plane synchronously, storage unit by unit; a damaged unit or chunk marks its
    pixels FAILED (with the error kept) instead of failing the whole plane."""
    offset, shape = request.box()
    vol = np.zeros((volume.num_channels, *shape), dtype=volume.dtype, order="F")
    if volume.fill_value:
        vol[...] = volume.fill_value
    status = np.zeros(shape, dtype=np.uint8)
    errors: dict[tuple[str, int], FormatError] = {}
    side = volume.unit_len_vx
    first = [max(o, 0) // s for o, s in zip(offset, side, strict=True)]
    last = [(o + n - 1) // s for o, n, s in zip(offset, shape, side, strict=True)]
    for fz in range(first[2], last[2] + 1):
        for fy in range(first[1], last[1] + 1):
            for fx in range(first[0], last[0] + 1):
                origin = (fx * side[0], fy * side[1], fz * side[2])
                lo = [max(o, g) for o, g in zip(offset, origin, strict=True)]
                hi = [min(o + n, g + s)
                      for o, n, g, s in zip(offset, shape, origin, side, strict=True)]
                region = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, offset, strict=True))
                try:
                    unit = volume.open_unit((fx, fy, fz))
                    if unit is None:
                        status[region] = Status.ABSENT
                        continue
                    volume.done_with(unit)
                    part = volume.read(lo, [b - a for a, b in zip(lo, hi, strict=True)])
                    vol[(slice(None), *region)] = part
                except FormatError as exc:
                    status[region] = look_of(exc)
                    errors[(exc.path or volume.unit_path((fx, fy, fz)), exc.block or 0)] = exc
    data = np.moveaxis(vol, 1 + request.axis, -1)[..., 0]
    return Plane(request, data, np.moveaxis(status, request.axis, -1)[..., 0], errors)


def look_of(error: FormatError) -> Status:
    """The look of a block whose read ended in ``error``: ``CHANGING`` for a file another
    program is changing (``FileChangedError``), else ``FAILED``."""
    return Status.CHANGING if isinstance(error, FileChangedError) else Status.FAILED


Box3 = tuple[tuple[int, int, int], tuple[int, int, int]]
"""A voxel box as ``(offset, shape)`` in dataset coordinates."""

DataArrived = Callable[[Box3], None]


class PlaneSource(Protocol):
    """Where views get their planes: the synchronous reader now, the background loader later.

    Called from the GUI thread only.  ``plane`` never waits for the disk in an asynchronous
    source: it returns what is there now, the rest marked ``Status.PENDING``, and calls every
    listener (from any thread: the ui layer hops to the GUI thread) with the box of data that
    arrived since.
    """

    def set_wanted(self, wanted: Sequence[PlaneRequest], focused: int | None,
                   cursor: tuple[int, int, int]) -> None:
        """The planes on screen now (``focused`` indexes the focused view's request).  Each call
        supersedes the last: queued work for planes no longer wanted may be dropped."""

    def plane(self, request: PlaneRequest) -> Plane:
        """The plane as far as it is available now."""

    def add_listener(self, callback: DataArrived) -> None:
        """Call ``callback(box)`` whenever data inside ``box`` became available."""

    def close(self) -> None:
        """Stop all work and release files; no thread is left behind."""


class SyncPlaneSource:
    """A ``PlaneSource`` that reads every plane at once on the caller's thread (no cache, no
    prefetch): complete planes, never PENDING, so listeners are never called."""

    def __init__(self, dataset: Volume) -> None:
        self.dataset = dataset

    def set_wanted(self, wanted: Sequence[PlaneRequest], focused: int | None,
                   cursor: tuple[int, int, int]) -> None:
        pass

    def plane(self, request: PlaneRequest) -> Plane:
        return read_plane(self.dataset, request)

    def add_listener(self, callback: DataArrived) -> None:
        pass

    def close(self) -> None:
        self.dataset.close()
