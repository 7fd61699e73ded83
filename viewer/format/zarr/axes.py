"""Which of a zarr array's axes are x, y, z and the channel axis.

Names decide when there are any (``dimension_names`` of zarr v3, or the ``axes`` of an
OME-Zarr multiscale that lists the array): the axes named ``x``, ``y``, ``z``; ``c`` or
``channel`` (or an OME axis of type ``channel``) is the channel axis.  Without names the last
axis is x, the one before y, the one before that z.  Every other axis (OME ``time`` and
``custom``, a ``t``) is an *extra* axis: a volume shows one element of it at a time, chosen by
the ``select`` of ``to_cxyz`` (an axis of size 1 has nothing to choose).  A missing spatial
axis (a 2-D image) reads as size 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import UnsupportedFormatError

CHANNEL_NAMES = ("c", "channel", "channels")


@dataclass(frozen=True)
class AxisMap:
    """Positions of x, y, z and c among the array's ``ndim`` axes (None: absent) and the
    extra axes (``dropped``: every other axis, one element of each shown at a time), with
    every axis's name (``#i`` for an unnamed one) and size."""

    ndim: int
    x: int | None
    y: int | None
    z: int | None
    c: int | None
    dropped: tuple[int, ...]
    names: tuple[str, ...]
    sizes: tuple[int, ...] = ()

    @property
    def extra(self) -> dict[str, int]:
        """The extra axes longer than 1 (what an index chooses from): name -> length."""
        return {self.names[a]: self.sizes[a] for a in self.dropped
                if self.sizes and self.sizes[a] > 1}

    @property
    def spatial(self) -> tuple[int | None, int | None, int | None]:
        return (self.x, self.y, self.z)

    def xyz(self, values: Sequence[int], missing: int = 1) -> tuple[int, int, int]:
        """``values`` (one per array axis) along x, y, z."""
        out = [int(values[a]) if a is not None else missing for a in self.spatial]
        return (out[0], out[1], out[2])

    def nd(self, xyz: Sequence[int], rest: Sequence[int] | None = None) -> list[int]:
        """A position along x, y, z as one per array axis (``rest`` on every other axis,
        default 0)."""
        out = list(rest) if rest is not None else [0] * self.ndim
        for a, v in zip(self.spatial, xyz, strict=True):
            if a is not None:
                out[a] = int(v)
        return out

    def nd_many(self, xyz: npt.NDArray[np.int64], rest: Sequence[int] | None = None
                ) -> npt.NDArray[np.int64]:
        """``nd`` for ``(N, 3)`` positions: ``(N, ndim)``."""
        out = np.zeros((xyz.shape[0], self.ndim), dtype=np.int64)
        if rest is not None:
            out[:] = np.asarray(rest, dtype=np.int64)
        for k, a in enumerate(self.spatial):
            if a is not None:
                out[:, a] = xyz[:, k]
        return out

    def to_cxyz(self, arr: npt.NDArray[Any], channels: int,
                select: Sequence[int] | None = None) -> npt.NDArray[Any]:
        """A chunk in the array's axis order as ``(C, cx, cy, cz)`` (a view where possible):
        ``channels`` entries of the channel axis from ``select[c]``, and element
        ``select[a]`` of each extra axis ``a`` (``select``: one entry per array axis, offsets
        inside the chunk; default 0)."""
        at = select if select is not None else (0,) * self.ndim
        index: list[Any] = [slice(None)] * self.ndim
        for a in self.dropped:
            index[a] = at[a]
        if self.c is not None and (arr.shape[self.c] != channels or at[self.c]):
            index[self.c] = slice(at[self.c], at[self.c] + channels)
        a_ = arr[tuple(index)] if self.dropped or self.c is not None else arr
        kept = [i for i in range(self.ndim) if i not in self.dropped]
        order = [kept.index(i) for i in (self.c, self.x, self.y, self.z) if i is not None]
        t = a_.transpose(order)
        shape = [channels if self.c is not None else 1]
        shape += [arr.shape[i] if i is not None else 1 for i in self.spatial]
        return t.reshape(shape)

    def chunk_box(self, shape: Sequence[int]) -> tuple[int, int, int]:
        return self.xyz(shape)


def axis_map(shape: Sequence[int], names: Sequence[str | None] | None,
             types: Sequence[str | None] | None, where: str) -> AxisMap:
    """The axis map of an array of ``shape`` with optional ``names`` (and OME axis ``types``);
    every axis that is neither x, y, z nor the channel axis is an extra axis."""
    nd = len(shape)
    lower = [n.lower() if isinstance(n, str) else None for n in (names or [None] * nd)]
    kinds = list(types) if types is not None else [None] * nd
    pos: dict[str, int] = {}
    if "x" in lower:
        for axis in ("x", "y", "z"):
            if lower.count(axis) > 1:
                raise UnsupportedFormatError(f"two axes named {axis!r}", where)
            if axis in lower:
                pos[axis] = lower.index(axis)
    else:
        for k, axis in enumerate(("x", "y", "z")):
            if nd - 1 - k >= 0:
                pos[axis] = nd - 1 - k
    c: int | None = None
    for i in range(nd):
        if i in pos.values():
            continue
        if lower[i] in CHANNEL_NAMES or kinds[i] == "channel":
            if c is not None:
                raise UnsupportedFormatError("two channel axes", where)
            c = i
    label = [lower[i] if lower[i] else f"#{i}" for i in range(nd)]
    dropped = [i for i in range(nd) if i not in pos.values() and i != c]
    if len(set(label)) != nd:
        raise UnsupportedFormatError(f"two axes share a name: {label}", where)
    return AxisMap(nd, pos.get("x"), pos.get("y"), pos.get("z"), c, tuple(dropped),
                   tuple(str(v) for v in label), tuple(int(v) for v in shape))


__all__ = ["AxisMap", "axis_map", "CHANNEL_NAMES"]
