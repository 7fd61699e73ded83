"""Which of a zarr array's axes are x, y, z and the channel axis.

Names decide when there are any (``dimension_names`` of zarr v3, or the ``axes`` of an
OME-Zarr multiscale that lists the array): the axes named ``x``, ``y``, ``z``; ``c`` or
``channel`` (or an OME axis of type ``channel``) is the channel axis.  Without names the last
axis is x, the one before y, the one before that z.  Any other axis must have size 1 and is
dropped; a larger one is an error that names it.  A missing spatial axis (a 2-D image) reads
as size 1.
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
    dropped axes (size 1)."""

    ndim: int
    x: int | None
    y: int | None
    z: int | None
    c: int | None
    dropped: tuple[int, ...]
    names: tuple[str, ...]

    @property
    def spatial(self) -> tuple[int | None, int | None, int | None]:
        return (self.x, self.y, self.z)

    def xyz(self, values: Sequence[int], missing: int = 1) -> tuple[int, int, int]:
        """``values`` (one per array axis) along x, y, z."""
        out = [int(values[a]) if a is not None else missing for a in self.spatial]
        return (out[0], out[1], out[2])

    def nd(self, xyz: Sequence[int]) -> list[int]:
        """A position along x, y, z as one per array axis (0 on every other axis)."""
        out = [0] * self.ndim
        for a, v in zip(self.spatial, xyz, strict=True):
            if a is not None:
                out[a] = int(v)
        return out

    def nd_many(self, xyz: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``nd`` for ``(N, 3)`` positions: ``(N, ndim)``."""
        out = np.zeros((xyz.shape[0], self.ndim), dtype=np.int64)
        for k, a in enumerate(self.spatial):
            if a is not None:
                out[:, a] = xyz[:, k]
        return out

    def to_cxyz(self, arr: npt.NDArray[Any], channels: int) -> npt.NDArray[Any]:
        """A chunk in the array's axis order as ``(C, cx, cy, cz)`` (a view where possible;
        the first ``channels`` entries of the channel axis)."""
        index: list[Any] = [slice(None)] * self.ndim
        for a in self.dropped:
            index[a] = 0
        if self.c is not None and arr.shape[self.c] != channels:
            index[self.c] = slice(0, channels)
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
    """The axis map of an array of ``shape`` with optional ``names`` (and OME axis ``types``).
    An axis that is neither x, y, z nor the channel axis and is larger than 1 is an
    ``UnsupportedFormatError`` naming it."""
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
    dropped = []
    label = [lower[i] if lower[i] else f"#{i}" for i in range(nd)]
    for i in range(nd):
        if i in pos.values() or i == c:
            continue
        if shape[i] != 1:
            raise UnsupportedFormatError(
                f"axis {label[i]!r} (number {i}) has size {shape[i]}: only x, y, z and a "
                "channel axis can be shown, other axes must have size 1", where)
        dropped.append(i)
    return AxisMap(nd, pos.get("x"), pos.get("y"), pos.get("z"), c, tuple(dropped),
                   tuple(str(v) for v in label))


__all__ = ["AxisMap", "axis_map", "CHANNEL_NAMES"]
