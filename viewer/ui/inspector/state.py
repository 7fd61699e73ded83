"""What the inspector knows at one moment, shared by its tabs: the volume inspected, its
header, the unit shown, the cursor and the compression metric.

``QtInspectorPanel`` owns the one instance and is the only writer; the tabs read it when the
panel tells them something changed.  GUI thread only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

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
    #: The box of those positions, (lowest, highest) unit on each axis (None: no unit yet).
    unit_box: tuple[Vec3, Vec3] | None = None
    #: Every unit's size histogram added up (None: none yet), kept as rows arrive so that
    #: no refresh walks every unit.
    size_histogram: npt.NDArray[np.int64] | None = None
    #: ``unit_positions`` batch by batch as the scan found them (each batch immutable), for
    #: background work: a snapshot is a copy of this list, not of every position.
    _position_batches: list[tuple[Vec3, ...]] = field(default_factory=list, repr=False)

    def clear_units(self) -> None:
        self.units, self.unit_positions = [], set()
        self.unit_box, self.size_histogram = None, None
        self._position_batches = []

    def add_units(self, rows: Sequence[inspect.UnitStats],
                  histograms_summed: npt.NDArray[np.int64] | None = None) -> None:
        """Rows of the scan: kept, with their positions, box and histograms added up
        (``histograms_summed``: the rows' histograms already added up, all one length, as
        ``inspect.ScanBatch.histograms_summed``)."""
        self.units.extend(rows)
        positions = [r.position for r in rows if r.position is not None]
        self.unit_positions.update(positions)
        if positions:
            self._position_batches.append(tuple(positions))
            arr = np.asarray(positions, dtype=np.int64)
            lo, hi = arr.min(axis=0), arr.max(axis=0)
            if self.unit_box is not None:
                lo = np.minimum(lo, self.unit_box[0])
                hi = np.maximum(hi, self.unit_box[1])
            self.unit_box = ((int(lo[0]), int(lo[1]), int(lo[2])),
                             (int(hi[0]), int(hi[1]), int(hi[2])))
        known = self.size_histogram
        if histograms_summed is not None and (known is None
                                              or len(histograms_summed) == len(known)):
            self.size_histogram = (histograms_summed.astype(np.int64) if known is None
                                   else known + histograms_summed)
            return
        hists = [r.histogram for r in rows if r.histogram is not None]
        if hists:
            if self.size_histogram is not None:
                hists = [h for h in hists if len(h) == len(self.size_histogram)]
                hists.append(self.size_histogram)
            self.size_histogram = np.sum(np.stack(hists), axis=0, dtype=np.int64)

    def positions_snapshot(self) -> tuple[tuple[Vec3, ...], ...]:
        """``unit_positions`` for background work, as the scan's batches of positions (a
        copy of the list of batches: the GUI thread never copies every position; a worker
        walks them)."""
        return tuple(self._position_batches)

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
