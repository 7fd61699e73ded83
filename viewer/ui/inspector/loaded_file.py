"""What the inspector's unit worker hands back for the current storage unit, and the voxel
triple type the panel's parts share."""

from __future__ import annotations

from viewer.core import inspect
from viewer.format import FormatError

Vec3 = tuple[int, int, int]


class _LoadedUnit:
    """What the worker hands back for the current unit: its grid position and path, header
    report and chunk table (None when it is absent or did not open: then ``error``)."""

    def __init__(self, position: Vec3, path: str, report: inspect.HeaderReport | None,
                 table: inspect.UnitTable | None, error: FormatError | None) -> None:
        self.position = position
        self.path = path
        self.report = report
        self.table = table
        self.error = error
