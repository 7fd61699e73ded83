"""What the inspector's file worker hands back for the current file, and the voxel triple type
the panel's parts share."""

from __future__ import annotations

from viewer.core import inspect
from viewer.format import FormatError

Vec3 = tuple[int, int, int]


class _LoadedFile:
    """What the worker hands back for the current file."""

    def __init__(self, position: Vec3, path: str, report: inspect.HeaderReport | None,
                 table: inspect.BlockTable | None, error: FormatError | None) -> None:
        self.position = position
        self.path = path
        self.report = report
        self.table = table
        self.error = error
