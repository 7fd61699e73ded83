"""A batch of chunks of several storage units read for a reader that keeps units open.

The loader (``viewer.core.chunkio.ChunkReader``) reads every batch with one call,
``Volume.read_batch(jobs, units, hint)``, whatever the format; the volume says how.  The
reader hands it its table of the units it opened (``UnitTable``: look a unit up, remember what
opening it found, forget one another program rewrote); the volume opens, reads and records:

* **Units kept** (``read_kept``: the default).  A unit not known yet is opened and read at once
  (``Volume.open_and_read``) and kept in the table; a unit kept is read with
  ``StorageUnit.read_chunks``.  A unit another program rewrote since it was opened
  (``FileChangedError``) is forgotten, opened again and read once more.
* **Units not kept** (``read_unkept``: a volume of ``small_units``, a chunk or so per unit).
  Every unit of the batch not known yet is read with one ``Volume.read_units`` call, each
  opened only for its read; only absent or unreadable ones are remembered.  Keeping a one-chunk
  unit open buys nothing (its chunk is cached) and costs most of a block's CPU.  Units the table
  knows open already (opened for read-ahead) are read as kept ones.

What a batch gives per job is ``UnitRead``: the chunks as ``read_chunks`` gives them, None for
an absent unit, or the unit's ``FormatError`` (unreadable); the whole batch is None when the
reader stopped under it (a unit closed as the reader closes).  The errors: a unit that fails to
open is its ``FormatError`` (an ``OSError`` a ``DatasetLayoutError`` naming the unit's path);
a chunk that fails to read is its ``BlockDecodeError`` with the unit's path and the chunk's
index; a unit changed twice gives its chunks the ``FileChangedError``.

Threads: any (the loader's workers call it concurrently, on the same table).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, Final, Protocol, TypeVar

import numpy.typing as npt

from viewer.format.errors import (
    BlockDecodeError,
    DatasetLayoutError,
    FileChangedError,
    FileChangingError,
    FormatError,
    read_failure,
)

Vec3 = tuple[int, int, int]
#: A job of a batch: a unit's grid position and the indices of its chunks to read.
Job = tuple[Vec3, Sequence[int]]
#: A decoded chunk ``(C, cx, cy, cz)`` (Fortran order), ``None`` (absent), or its error.
ChunkResult = npt.NDArray[Any] | FormatError | None
#: What a batch read found of one unit: its chunks (as ``read_chunks`` returns them),
#: ``None`` (the unit is absent) or the unit's ``FormatError`` (unreadable).
UnitRead = list[ChunkResult] | FormatError | None


class Unknown(enum.Enum):
    """The state of a unit a table does not know (not opened yet)."""

    UNKNOWN = "UNKNOWN"

    def __repr__(self) -> str:
        return "UNKNOWN"


#: What ``UnitTable.state`` says of a unit not opened yet.
UNKNOWN: Final = Unknown.UNKNOWN


class OpenUnit(Protocol):
    """What a batch read uses of an open storage unit (``viewer.format.volume.StorageUnit``)."""

    path: str

    def read_chunks(self, indices: Sequence[int]) -> list[ChunkResult]: ...

    def will_need(self, indices: Sequence[int]) -> None: ...


U = TypeVar("U", bound=OpenUnit)
U_co = TypeVar("U_co", bound=OpenUnit, covariant=True)


class UnitTable(Protocol[U]):
    """A reader's table of the storage units it opened (the loader's ``ChunkReader``): what
    ``Volume.read_batch`` looks up, remembers and forgets.  Any thread, concurrently."""

    @property
    def stopping(self) -> bool:
        """The reader is closing: a unit closed under a read ends the batch."""
        ...

    def state(self, unit: Vec3) -> U | FormatError | None | Unknown:
        """What is known of the unit at ``unit``: ``UNKNOWN`` (not opened yet), the open unit,
        its ``FormatError`` (unreadable) or None (absent)."""
        ...

    def remember(self, unit: Vec3, state: U | FormatError | None) -> U | FormatError | None:
        """Keep what opening the unit at ``unit`` found (an open unit is kept open, and may
        close others it keeps), and return it."""
        ...

    def forget(self, unit: Vec3, old: U) -> None:
        """Forget ``old``, the unit at ``unit`` that another program rewrote (if it is still
        the one kept), without closing it (other reads may still use it)."""
        ...


class UnitReader(Protocol[U_co]):
    """What a batch read uses of a volume (``viewer.format.volume.Volume``)."""

    def unit_path(self, unit: Vec3) -> str: ...

    def open_unit(self, unit: Vec3) -> U_co | None: ...

    def open_and_read(self, unit: Vec3, indices: Sequence[int]
                      ) -> tuple[U_co | None, list[ChunkResult]]: ...

    def read_units(self, jobs: Sequence[Job]) -> list[UnitRead]: ...

    def forget_unit(self, unit: Vec3) -> None: ...


def open_state(volume: UnitReader[U], unit: Vec3) -> U | FormatError | None:
    """The unit at ``unit`` opened (``Volume.open_unit``), None when absent, or its
    ``FormatError`` when it is unreadable (a system error opening it is a
    ``DatasetLayoutError`` naming its path)."""
    try:
        return volume.open_unit(unit)
    except FormatError as exc:
        return exc
    except OSError as exc:
        return DatasetLayoutError(f"cannot open: {exc.strerror or exc}", volume.unit_path(unit))


def resolve(volume: UnitReader[U], units: UnitTable[U], unit: Vec3) -> U | FormatError | None:
    """Open the unit at ``unit`` and remember what was found in ``units``."""
    return units.remember(unit, open_state(volume, unit))


def read_kept(volume: UnitReader[U], jobs: Sequence[Job], units: UnitTable[U], hint: bool
              ) -> list[UnitRead] | None:
    """``Volume.read_batch`` with every unit opened once and kept in ``units`` (see the
    module docstring).  ``hint``: a unit not open yet is opened first and asked for its chunks
    (``will_need``) before they are read, like a unit kept."""
    out: list[UnitRead] = []
    for pos, indices in jobs:
        state = units.state(pos)
        results: list[ChunkResult] | None = None
        if state is UNKNOWN:
            if hint:
                state = resolve(volume, units, pos)
            else:
                state, results = _open_read(volume, units, pos, indices)
        if state is None or isinstance(state, FormatError):
            out.append(state)
            continue
        if results is None:
            if hint:
                state.will_need(indices)
            results = _read_unit(volume, units, pos, state, indices)
            if results is None:
                return None
        out.append(results)
    return out


def read_unkept(volume: UnitReader[U], jobs: Sequence[Job], units: UnitTable[U], hint: bool
                ) -> list[UnitRead] | None:
    """``Volume.read_batch`` of a volume whose units are not kept (``small_units``): the
    jobs of units ``units`` does not know, read with one ``Volume.read_units`` call, only the
    absent or unreadable ones remembered; the others as ``read_kept`` reads them."""
    fresh = [k for k, (pos, _) in enumerate(jobs) if units.state(pos) is UNKNOWN]
    out: list[UnitRead] = [None] * len(jobs)
    if fresh:
        got = volume.read_units([jobs[k] for k in fresh])
        for k, found in zip(fresh, got, strict=True):
            if found is None or isinstance(found, FormatError):
                units.remember(jobs[k][0], found)  # absent or unreadable: its look
            out[k] = found
    if len(fresh) < len(jobs):
        known = set(fresh)
        rest = [k for k in range(len(jobs)) if k not in known]
        kept = read_kept(volume, [jobs[k] for k in rest], units, hint)
        if kept is None:
            return None
        for k, found in zip(rest, kept, strict=True):
            out[k] = found
    return out


def _open_read(volume: UnitReader[U], units: UnitTable[U], pos: Vec3, indices: Sequence[int]
               ) -> tuple[U | FormatError | None, list[ChunkResult] | None]:
    """Open the unit at ``pos`` and read ``indices`` from it at once
    (``Volume.open_and_read``), and remember it: ``(its state, the chunks read or None when
    they are still to be read)``."""
    state: U | FormatError | None
    results: list[ChunkResult] | None = None
    try:
        state, results = volume.open_and_read(pos, indices)
    except FileChangingError as exc:  # waited for it to settle already
        state = exc
    except FileChangedError:
        return resolve(volume, units, pos), None  # changed while opened: open it once more
    except FormatError as exc:
        state = exc
    except OSError as exc:
        state = DatasetLayoutError(f"cannot open: {exc.strerror or exc}", volume.unit_path(pos))
    except ValueError:  # closing, say: the plain way says which
        return resolve(volume, units, pos), None
    state = units.remember(pos, state)
    return state, results if state is not None and not isinstance(state, FormatError) \
        else None


def _read_unit(volume: UnitReader[U], units: UnitTable[U], pos: Vec3, unit: U,
               indices: Sequence[int]) -> list[ChunkResult] | None:
    """``unit.read_chunks(indices)``, every failure turned into the chunks' errors (None:
    the reader stopped, the unit closed under it)."""
    try:
        try:
            return unit.read_chunks(indices)
        except FileChangedError:
            # Another program rewrote the unit since it was opened: open it again and read
            # from the new one (once; a second change is the chunks' error).  The old unit is
            # not closed here: other reads may still use it (theirs fail on their own).
            units.forget(pos, unit)
            volume.forget_unit(pos)
            state = resolve(volume, units, pos)
            if state is None or isinstance(state, FormatError):
                raise
            return state.read_chunks(indices)
    except FileChangedError as exc:
        return [exc] * len(indices)
    except OSError as exc:
        return [read_failure(exc, BlockDecodeError, "read failed", unit.path, block=i)
                for i in indices]
    except ValueError as exc:  # the unit was closed under us (the reader closing)
        if units.stopping:
            return None
        return [BlockDecodeError(str(exc), unit.path, block=i) for i in indices]


__all__ = ["UnitTable", "UnitReader", "OpenUnit", "UNKNOWN", "Unknown", "Job", "ChunkResult",
           "UnitRead", "open_state", "resolve", "read_kept", "read_unkept"]
