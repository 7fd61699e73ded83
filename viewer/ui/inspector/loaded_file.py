"""What the inspector's unit worker hands back for the current storage unit, and the voxel
triple type the inspector's parts share."""

from __future__ import annotations

from dataclasses import dataclass

from viewer.core import inspect
from viewer.format import FormatError

Vec3 = tuple[int, int, int]


@dataclass(frozen=True)
class LoadedUnit:
    """The current unit as the worker read it: its grid ``position`` and ``path``, its header
    ``report`` and chunk ``table`` (None when the unit is absent or did not open: then
    ``error`` says why, None for an absent unit)."""

    position: Vec3
    path: str
    report: inspect.HeaderReport | None
    table: inspect.UnitTable | None
    error: FormatError | None
