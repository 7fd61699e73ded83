"""What the inspector knows at one moment, shared by its tabs: the volume inspected, its
header, the unit shown, the cursor and the compression metric.

``QtInspectorPanel`` owns the one instance and is the only writer; the tabs read it when the
panel tells them something changed.  GUI thread only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from viewer.core import inspect
from viewer.core.advise import SavingsSource
from viewer.format import Volume
from viewer.ui.inspector.loaded_file import LoadedUnit, Vec3


@dataclass
class InspectorState:
    """The inspection in progress (see the module docstring)."""

    #: The volume inspected (one mag of one layer), None when nothing is.
    volume: Volume | None = None
    #: The volume's own header (``Volume.info().header``); empty when it has none.
    volume_header: Mapping[str, Any] = field(default_factory=dict)
    #: The unit whose header and chunk table are shown.
    shown: LoadedUnit | None = None
    #: The cursor in the inspected volume's voxels (None until the window gave one).
    cursor: Vec3 | None = None
    #: The compression map's metric: ``inspect.SIZE``, ``inspect.RATIO`` or
    #: ``advise.SAVINGS``.
    metric: str = inspect.SIZE
    #: Every unit the scan reported so far, in scan order.
    units: list[inspect.UnitStats] = field(default_factory=list)
    #: The unit-grid positions of those units.
    unit_positions: set[Vec3] = field(default_factory=set)
    #: How a child process opens the same volume (None: it cannot).
    reopen: inspect.Reopen | None = None
    #: The inspected layer is a segmentation (never offered a lossy codec).
    segmentation: bool = False
    #: What the Map's savings metric draws (the What if tab's choice; None: nothing yet).
    savings: SavingsSource | None = None

    @property
    def table(self) -> inspect.UnitTable | None:
        """The shown unit's chunk table (None: no unit, or it is absent or broken)."""
        return self.shown.table if self.shown is not None else None

    def volume_header_file(self) -> str:
        """The metadata file the volume's header comes from, when it names one (a key
        ``header_file``, ``attributes_file``, ...); else ""."""
        for key, value in self.volume_header.items():
            if str(key).endswith("_file") and isinstance(value, str) and value:
                return value
        return ""
