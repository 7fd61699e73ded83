"""Geometry every format shares: mags (resolution factors), boxes of voxels, voxel sizes.

A mag is the factor by which a level is downsampled along x, y and z: ``(1, 1, 1)`` is the full
resolution, ``(2, 2, 1)`` halves x and y only.  Voxel ``p`` of mag ``m`` covers the mag-1 voxels
``[p * m, (p + 1) * m)`` on every axis (mag grids are aligned at the origin).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Vec3 = tuple[int, int, int]

#: Bounds of voxel coordinates and sizes accepted in metadata (far beyond any real dataset,
#: and safely inside int64 arithmetic).
MAX_COORDINATE = 1 << 40

#: Largest mag factor accepted (2^20 already shrinks a petavoxel axis to one voxel).
MAX_FACTOR = 1 << 20


def parse_mag(value: Any) -> Vec3:
    """A mag from any of its spellings: ``2``, ``[2, 2, 1]``, ``"2"``, ``"2-2-1"``.

    Raises ``ValueError`` for anything else (a factor below 1, two or four entries, ...)."""
    if isinstance(value, bool):
        raise ValueError(f"not a mag: {value!r}")
    if isinstance(value, (int, np.integer)):
        parts: list[Any] = [value] * 3
    elif isinstance(value, str):
        text = value.strip()
        pieces = text.split("-")
        if not all(p.isdigit() for p in pieces) or len(pieces) not in (1, 3):
            raise ValueError(f"not a mag: {value!r}")
        parts = [int(p) for p in pieces] * (3 if len(pieces) == 1 else 1)
    elif isinstance(value, (list, tuple)) and len(value) == 3:
        parts = list(value)
    else:
        raise ValueError(f"not a mag: {value!r}")
    out = []
    for p in parts:
        if isinstance(p, bool) or not isinstance(p, (int, float, np.integer)):
            raise ValueError(f"not a mag: {value!r}")
        if isinstance(p, float) and not p.is_integer():  # also NaN and infinities
            raise ValueError(f"not a mag: {value!r}")
        if int(p) < 1:
            raise ValueError(f"mag factors must be at least 1: {value!r}")
        if int(p) > MAX_FACTOR:
            raise ValueError(f"mag factor {int(p)} is beyond {MAX_FACTOR}: {value!r}")
        out.append(int(p))
    return (out[0], out[1], out[2])


def mag_name(mag: Sequence[int], short: bool = True) -> str:
    """The folder name of a mag: ``2-2-1``; ``2`` when all factors are equal and ``short``."""
    x, y, z = (int(m) for m in mag)
    if short and x == y == z:
        return str(x)
    return f"{x}-{y}-{z}"



#: Length units of ``scale.unit`` in nanometres.
UNIT_NANOMETERS: dict[str, float] = {
    "yoctometer": 1e-15, "zeptometer": 1e-12, "attometer": 1e-9, "femtometer": 1e-6,
    "picometer": 1e-3, "angstrom": 0.1, "nanometer": 1.0, "micrometer": 1e3,
    "millimeter": 1e6, "centimeter": 1e7, "decimeter": 1e8, "meter": 1e9, "hectometer": 1e11,
    "kilometer": 1e12, "megameter": 1e15, "gigameter": 1e18, "terameter": 1e21,
    "petameter": 1e24, "exameter": 1e27, "zettameter": 1e30, "yottameter": 1e33,
    "inch": 2.54e7, "foot": 3.048e8, "yard": 9.144e8, "mile": 1.609344e12,
    "parsec": 3.0856775814913673e25,
}


@dataclass(frozen=True)
class VoxelSize:
    """The physical size of one mag-1 voxel: ``factor`` (x, y, z) in ``unit``."""

    factor: tuple[float, float, float]
    unit: str = "nanometer"

    @property
    def nanometers(self) -> tuple[float, float, float]:
        """The voxel size in nanometres per axis."""
        k = UNIT_NANOMETERS[self.unit]
        return (self.factor[0] * k, self.factor[1] * k, self.factor[2] * k)

    def to_json(self, legacy: bool = False) -> Any:
        """``{"factor", "unit"}``, or with ``legacy`` the bare nanometre list."""
        if legacy:
            return [_plain_number(v) for v in self.nanometers]
        return {"factor": [_plain_number(v) for v in self.factor], "unit": self.unit}




def _is_int(value: Any) -> bool:
    """A JSON integer (or an integral float) within +-``MAX_COORDINATE``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_COORDINATE
    return isinstance(value, float) and value.is_integer() and abs(value) <= MAX_COORDINATE


def _int_vec(value: Any, what: str) -> Vec3:
    if not isinstance(value, list) or len(value) != 3 or not all(_is_int(v) for v in value):
        raise ValueError(f"{what} must be three integers [x, y, z], not {value!r}")
    return (int(value[0]), int(value[1]), int(value[2]))



def _plain_number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)




@dataclass(frozen=True)
class BoundingBox:
    """A box of voxels: ``top_left`` (x, y, z) and ``size`` (width, height, depth)."""

    top_left: Vec3
    size: Vec3

    @property
    def end(self) -> Vec3:
        """The exclusive far corner."""
        return (self.top_left[0] + self.size[0], self.top_left[1] + self.size[1],
                self.top_left[2] + self.size[2])

    @property
    def is_empty(self) -> bool:
        return min(self.size) <= 0

    def at_mag(self, mag: Sequence[int]) -> BoundingBox:
        """The box of mag ``mag`` voxels that covers this mag-1 box (start floored, end
        ceiled), because mag grids are aligned at the origin."""
        lo = [self.top_left[a] // int(mag[a]) for a in range(3)]
        hi = [-(-self.end[a] // int(mag[a])) for a in range(3)]
        return BoundingBox((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))

    def to_json(self) -> dict[str, Any]:
        return {"topLeft": list(self.top_left), "width": self.size[0],
                "height": self.size[1], "depth": self.size[2]}

    @classmethod
    def from_json(cls, value: Any) -> BoundingBox:
        """Parse ``{topLeft, width, height, depth}``; ``ValueError`` when malformed."""
        if not isinstance(value, dict):
            raise ValueError("boundingBox must be an object {topLeft, width, height, depth}")
        top_left = _int_vec(value.get("topLeft"), "boundingBox.topLeft")
        size: list[int] = []
        for key in ("width", "height", "depth"):
            v: Any = value.get(key)
            if not _is_int(v) or int(v) < 0:
                raise ValueError(f"boundingBox.{key} must be a non-negative integer, not {v!r}")
            size.append(int(v))
        return cls(top_left, (size[0], size[1], size[2]))


__all__ = ["parse_mag", "mag_name", "MAX_FACTOR", "BoundingBox", "VoxelSize", "UNIT_NANOMETERS",
           "MAX_COORDINATE"]
