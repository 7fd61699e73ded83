"""N5 multiscale groups and voxel sizes, as BigDataViewer, Paintera and the N5 viewer write
them.

A multiscale group is a group whose children ``s0, s1, ...`` are datasets, ``s0`` the finest.
Each level's factor (its mag) comes from, in this order:

* the level's own ``downsamplingFactors`` attribute (BigDataViewer, Paintera, N5 viewer);
* a ``scales`` (N5 viewer) or ``downsamplingFactors`` (BigDataViewer) list, one entry per
  level, on the group or the nearest group above it that has one (BigDataViewer keeps it on
  the ``setup`` group above ``timepoint``; the N5 viewer may keep it on the root as the
  default for every channel);
* the ratio of ``s0``'s dimensions to the level's (rounded), when nothing is declared.

The voxel size (of ``s0``) comes from ``resolution`` (Paintera, the N5 viewer's older
metadata; with ``units`` where given, else nanometres) or ``pixelResolution: {dimensions,
unit}`` (the N5 viewer), on the group first, then on the groups above it, then on ``s0``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from viewer.format.errors import FormatError, MetadataError
from viewer.format.geometry import MAX_FACTOR, UNIT_NANOMETERS, VoxelSize
from viewer.format.n5.attributes import DatasetAttributes

Vec3 = tuple[int, int, int]
LEVEL_NAME = re.compile(r"^s(\d{1,4})$")

#: Unit spellings met in N5 attributes, to the names ``VoxelSize`` knows.
UNIT_ALIASES: dict[str, str] = {
    "nm": "nanometer", "nanometer": "nanometer", "nanometers": "nanometer",
    "nanometre": "nanometer", "nanometres": "nanometer",
    "um": "micrometer", "µm": "micrometer", "μm": "micrometer", "micrometer": "micrometer",
    "micrometers": "micrometer", "micrometre": "micrometer", "micron": "micrometer",
    "microns": "micrometer",
    "mm": "millimeter", "millimeter": "millimeter", "millimetre": "millimeter",
    "cm": "centimeter", "m": "meter", "meter": "meter", "metre": "meter",
    "pm": "picometer", "picometer": "picometer", "a": "angstrom", "å": "angstrom",
    "angstrom": "angstrom",
}


def level_index(name: str) -> int | None:
    """``k`` for a child named ``s{k}``, else None."""
    m = LEVEL_NAME.match(name)
    return int(m.group(1)) if m else None


def _factor_vec(value: Any) -> Vec3 | None:
    """Three integer factors from a ``downsamplingFactors`` / ``scales`` entry (N5 order,
    at least two entries; a missing Z is 1), or None when it is not one."""
    if not isinstance(value, list) or not 2 <= len(value) <= 16:
        return None
    out = []
    for v in value[:3]:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        iv = int(round(float(v)))
        if abs(float(v) - iv) > 1e-6 or not 1 <= iv <= MAX_FACTOR:
            return None
        out.append(iv)
    while len(out) < 3:
        out.append(1)
    return (out[0], out[1], out[2])


def level_factors(index: int, level: DatasetAttributes, finest: DatasetAttributes,
                  groups: Sequence[dict[str, Any]]) -> tuple[Vec3, str]:
    """The mag of level ``index`` and where it came from (``"downsamplingFactors"``,
    ``"scales"``, ``"dimensions"``)."""
    own = _factor_vec(level.raw.get("downsamplingFactors"))
    if own is not None:
        return own, "downsamplingFactors"
    for group in groups:
        for key in ("scales", "downsamplingFactors"):
            table = group.get(key)
            if isinstance(table, list) and index < len(table):
                vec = _factor_vec(table[index])
                if vec is not None:
                    return vec, key
    ratio = []
    for a in range(3):
        d0, d = finest.shape[a], level.shape[a]
        ratio.append(max(1, int(round(d0 / d))) if d > 0 else 1)
    return (ratio[0], ratio[1], ratio[2]), "dimensions"


def _unit_name(unit: Any, where: str, problems: list[FormatError]) -> str:
    if isinstance(unit, str) and unit.strip().lower() in UNIT_ALIASES:
        return UNIT_ALIASES[unit.strip().lower()]
    if isinstance(unit, str) and unit.strip().lower() in UNIT_NANOMETERS:
        return unit.strip().lower()
    problems.append(MetadataError(f"unknown length unit {unit!r}: taken as nanometres"[:200],
                                  where))
    return "nanometer"


def _numbers(value: Any) -> list[float] | None:
    if not isinstance(value, list) or not 2 <= len(value) <= 16:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return None
    out = [float(v) for v in value[:3]]
    if not all(v > 0 and v < 1e30 for v in out):
        return None
    while len(out) < 3:
        out.append(1.0)
    return out


def voxel_size(docs: Sequence[tuple[dict[str, Any] | None, str]],
               problems: list[FormatError]) -> VoxelSize | None:
    """The voxel size declared by the first of ``docs`` (attributes, where) that declares
    one, else None."""
    for attrs, where in docs:
        if not attrs:
            continue
        res = _numbers(attrs.get("resolution"))
        if res is not None:
            units = attrs.get("units")
            if isinstance(units, list) and units:
                names = [_unit_name(u, where, problems) for u in units[:3]]
            elif isinstance(units, str):
                names = [_unit_name(units, where, problems)] * 3
            else:
                names = ["nanometer"] * 3
            return _combine(res, names)
        pix = attrs.get("pixelResolution")
        if isinstance(pix, dict):
            dims = _numbers(pix.get("dimensions"))
            if dims is not None:
                name = _unit_name(pix.get("unit", "nm"), where, problems)
                return _combine(dims, [name] * 3)
        elif _numbers(pix) is not None:
            return _combine(_numbers(pix) or [1.0, 1.0, 1.0], ["nanometer"] * 3)
    return None


def _combine(values: list[float], units: list[str]) -> VoxelSize:
    while len(units) < 3:
        units.append(units[-1])
    if len(set(units[:3])) == 1:
        return VoxelSize((values[0], values[1], values[2]), units[0])
    nm = [values[a] * UNIT_NANOMETERS[units[a]] for a in range(3)]
    return VoxelSize((nm[0], nm[1], nm[2]), "nanometer")


@dataclass(frozen=True)
class Level:
    """One level of a multiscale group: child name, key in the store, attributes, mag."""

    name: str
    key: str
    attrs: DatasetAttributes
    mag: Vec3
    source: str


__all__ = ["Level", "level_index", "level_factors", "voxel_size", "UNIT_ALIASES"]
