"""One storage unit's chunks, for people: the inspector's Jump table, Sizes and Byte layout.

``UnitTable`` is a unit's ``ChunkTable`` (``viewer.format.StorageUnit.chunk_table``) laid out
for display: one row per chunk in the unit's own order (WKW: Morton; a zarr shard: its inner
grid's order), with the chunk's position in the unit (``Volume.chunk_local``), its byte range,
stored bytes, compression ratio and flags.  Nothing is decoded to build it: the flags come from
the table and from the unit's own structure checks (``StorageUnit.problems(decode=False)``);
content flags (constant, all zero, failed) are added only when the user asks for decoding
(``scan_chunk_contents``).

Qt-free; every function may run on any thread.  A ``UnitTable``'s ``flags`` are the only
mutable part (``apply_content_flags``, called by the thread that owns the table).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import FormatError, StorageUnit, Volume
from viewer.format.description import UnitDescription

Vec3 = tuple[int, int, int]

# -- chunk flags (bits of UnitTable.flags) ----------------------------------------------------
#: The chunk is not stored (it reads as the fill value): not damage.
ABSENT = 1
#: Stored as one value and no bytes (VDS constant chunks).
STORED_CONSTANT = 2
#: A stored chunk whose byte range is empty.
ZERO_LENGTH = 4
#: The byte range ends past the end of the unit.
PAST_EOF = 8
#: A negative offset or length: the unit's index is damaged.
BAD_RANGE = 16
#: The unit's own structure checks name this chunk (e.g. a WKW block longer than LZ4 can
#: encode, a range inside the header); set only where no flag above says why.
DAMAGED = 32
#: Decoded (on request): every voxel holds the same value.
CONSTANT = 64
#: Decoded (on request): every voxel is zero.
ALL_ZERO = 128
#: Decoding was attempted and failed.
DECODE_FAILED = 256
#: Decoded (on request): CONSTANT, ALL_ZERO and DECODE_FAILED are meaningful for this chunk.
DECODED = 512

FLAG_NAMES: dict[int, str] = {
    ABSENT: "absent",
    STORED_CONSTANT: "constant (not stored)",
    ZERO_LENGTH: "zero length",
    PAST_EOF: "past end of unit",
    BAD_RANGE: "bad range",
    DAMAGED: "damaged",
    CONSTANT: "constant",
    ALL_ZERO: "all zero",
    DECODE_FAILED: "decode failed",
}
#: Flags that mean the unit's index or the data is damaged.
PROBLEM_FLAGS = ZERO_LENGTH | PAST_EOF | BAD_RANGE | DAMAGED | DECODE_FAILED
#: Flags of chunks whose stored bytes have no meaningful size (left out of size statistics).
NO_SIZE_FLAGS = ABSENT | STORED_CONSTANT | PAST_EOF | BAD_RANGE

FlagArray = npt.NDArray[np.uint16]


def flag_names(flags: int) -> list[str]:
    """Names of the flags set in ``flags`` (in bit order)."""
    return [name for bit, name in FLAG_NAMES.items() if flags & bit]


@dataclass
class UnitTable:
    """Every chunk of one storage unit, in the unit's chunk order (see the module docstring).

    Arrays (length ``num_chunks``): ``starts`` / ``ends`` byte ranges, ``sizes`` (stored
    bytes), ``coords`` (``(N, 3)`` chunk position inside the unit, found on first use),
    ``ratio`` (decoded bytes /
    stored bytes; inf for an empty range), ``flags`` (bits above).  ``description`` is the
    unit's ``describe()``; ``chunk_columns`` the keys of its ``describe_chunk`` (extra Jump
    table columns, fetched per row when shown, through ``source``)."""

    path: str
    unit: Vec3
    size: int
    chunk_shape: Vec3
    chunk_nbytes: int
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    ratio: npt.NDArray[np.float64]
    flags: FlagArray
    problems: list[FormatError]
    description: UnitDescription = field(default_factory=UnitDescription)
    chunk_columns: tuple[str, ...] = ()
    source: StorageUnit | None = None
    volume: Volume | None = None
    _coords: npt.NDArray[np.int64] | None = None
    _inside: tuple[npt.NDArray[np.bool_] | None] | None = None

    @property
    def num_chunks(self) -> int:
        return int(self.sizes.shape[0])

    @property
    def coords(self) -> npt.NDArray[np.int64]:
        """``(N, 3)`` position of each chunk inside the unit (``Volume.chunk_local``), found
        on first use (a unit-table row of the scan never needs it)."""
        if self._coords is None:
            assert self.volume is not None
            self._coords = chunk_coords(self.volume, self.num_chunks)
        return self._coords

    @property
    def inside(self) -> npt.NDArray[np.bool_] | None:
        """Which chunks meet the volume's extent (``Volume.bounds``), or None when all of
        them do: a unit may hold chunks past the extent (a WKW file of 1024^3 voxels, a zarr
        shard at the array's edge, a webKnossos array allocated larger than its layer's
        box), and counts and ratios are over the data, not over those.  Found once."""
        if self._inside is None:
            self._inside = (self._meeting_extent(),)
        return self._inside[0]

    def _meeting_extent(self) -> npt.NDArray[np.bool_] | None:
        volume = self.volume
        if volume is None or not volume.extent_declared:
            return None  # the extent is the units' own box: every chunk is inside
        lo, hi = (np.asarray(b, dtype=np.int64) for b in volume.bounds)
        side = np.asarray(volume.unit_len_vx, dtype=np.int64)
        first = np.asarray(self.unit, dtype=np.int64) * side
        if (first >= lo).all() and (first + side <= hi).all():
            return None
        c = np.asarray(self.chunk_shape, dtype=np.int64)
        start = first + self.coords * c
        return np.asarray(((start < hi) & (start + c > lo)).all(axis=1))

    @property
    def stored(self) -> npt.NDArray[np.bool_]:
        """Chunks whose stored size means something (present, stored, sound range)."""
        return np.asarray((self.flags & NO_SIZE_FLAGS) == 0)

    @property
    def stored_inside(self) -> npt.NDArray[np.bool_]:
        """``stored`` chunks that meet the extent (``inside``): what sizes and ratios of the
        data count."""
        inside = self.inside
        return self.stored if inside is None else self.stored & inside

    @property
    def present_inside(self) -> int:
        """Chunks present (stored or constant) that meet the extent."""
        present = (self.flags & ABSENT) == 0
        inside = self.inside
        return int(np.count_nonzero(present if inside is None else present & inside))

    @property
    def count_inside(self) -> int:
        """Chunks of the unit that meet the extent."""
        inside = self.inside
        return self.num_chunks if inside is None else int(np.count_nonzero(inside))

    def apply_content_flags(self, indices: npt.NDArray[np.int64], flags: FlagArray) -> None:
        """Merge decoded content flags (from ``scan_chunk_contents``) into ``flags``.  Caller:
        the thread that owns this table (the GUI thread in the panel)."""
        keep = np.uint16(~(CONSTANT | ALL_ZERO | DECODE_FAILED | DECODED) & 0xFFFF)
        self.flags[indices] = (self.flags[indices] & keep) | flags

    def describe_chunk(self, index: int) -> dict[str, Any]:
        """The format's own facts about chunk ``index`` (empty when the unit is gone)."""
        if self.source is None:
            return {}
        try:
            return dict(self.source.describe_chunk(int(index)))
        except (FormatError, OSError, ValueError) as exc:
            return {k: f"? ({exc})" for k in self.chunk_columns}


_coords: OrderedDict[tuple[Any, ...], npt.NDArray[np.int64]] = OrderedDict()
_coords_lock = threading.Lock()
#: Chunk orders remembered (one array per unit geometry and order: a few MB at most).
_COORDS_KEPT = 8


def chunk_coords(volume: Volume, num_chunks: int) -> npt.NDArray[np.int64]:
    """``(N, 3)`` positions inside a unit of chunk indices ``0..N-1`` (``Volume.chunk_local``),
    one read-only array per chunk order: volumes of one class and unit shape whose
    ``chunk_local`` agrees on a few probe indices share it (a WKW file of 32,768 blocks
    would cost its Morton decoding again each time a dataset is opened)."""
    n = int(num_chunks)
    probe = np.unique(np.asarray([0, 1, 2, 3, 5, 7, n // 3, n // 2, n - 2, n - 1],
                                 dtype=np.int64).clip(0, max(n - 1, 0)))
    probed = np.asarray(volume.chunk_local(probe), dtype=np.int64)
    key = (type(volume), tuple(volume.unit_shape), n, probed.tobytes())
    with _coords_lock:
        found = _coords.get(key)
        if found is not None:
            _coords.move_to_end(key)
            return found
    coords = np.ascontiguousarray(volume.chunk_local(np.arange(n, dtype=np.int64)),
                                  dtype=np.int64)
    coords.flags.writeable = False
    with _coords_lock:
        _coords[key] = coords
        while len(_coords) > _COORDS_KEPT:
            _coords.popitem(last=False)
    return coords


def unit_table(volume: Volume, position: Sequence[int], unit: StorageUnit) -> UnitTable:
    """The ``UnitTable`` of an open unit, vectorised (no chunk is read or decoded)."""
    pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
    table = unit.chunk_table()
    n = len(table)
    offsets = np.asarray(table.offsets, dtype=np.int64)
    nbytes = np.asarray(table.nbytes, dtype=np.int64)
    present = np.asarray(table.present, dtype=np.bool_)
    constant = (np.asarray(table.constant, dtype=np.bool_) if table.constant is not None
                else np.zeros(n, dtype=np.bool_))
    size = int(unit.size)
    flags = np.zeros(n, dtype=np.uint16)
    flags[~present] |= ABSENT
    flags[present & constant] |= STORED_CONSTANT
    stored = present & ~constant
    bad = stored & ((offsets < 0) | (nbytes < 0))
    flags[bad] |= BAD_RANGE
    sound = stored & ~bad
    ends = offsets + nbytes
    flags[sound & (ends > size)] |= PAST_EOF
    flags[sound & (nbytes == 0)] |= ZERO_LENGTH
    try:
        problems = list(unit.problems(decode=False))
    except FormatError as exc:
        problems = [exc]
    named = np.asarray(sorted({p.block for p in problems
                               if p.block is not None and 0 <= p.block < n}), dtype=np.int64)
    if named.size:
        unexplained = named[(flags[named] & (ZERO_LENGTH | PAST_EOF | BAD_RANGE)) == 0]
        flags[unexplained] |= DAMAGED
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(nbytes > 0, volume.chunk_nbytes / np.maximum(nbytes, 1), np.inf)
    try:
        description = unit.describe()
    except (FormatError, OSError) as exc:
        description = UnitDescription({"error": str(exc)})
    columns: tuple[str, ...] = ()
    first = np.flatnonzero(stored)
    if first.size:
        try:
            columns = tuple(unit.describe_chunk(int(first[0])))
        except (FormatError, OSError, ValueError):
            columns = ()
    return UnitTable(unit.path, pos, size, volume.chunk_shape, volume.chunk_nbytes, offsets,
                     ends, nbytes, ratio.astype(np.float64), flags, problems, description,
                     columns, unit, volume)


def scan_chunk_contents(unit: StorageUnit, indices: Sequence[int] | npt.NDArray[np.int64],
                        cancel: threading.Event | None = None, batch: int = 256
                        ) -> Iterator[tuple[npt.NDArray[np.int64], FlagArray,
                                            list[FormatError]]]:
    """Decode chunks (on request only) and yield ``(indices, flags, errors)`` per batch: flags
    DECODED plus CONSTANT / ALL_ZERO, or DECODE_FAILED with the chunk's error in ``errors``
    (an absent chunk is only DECODED).  Any thread; stops early when ``cancel`` is set."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    for start in range(0, len(idx), batch):
        if cancel is not None and cancel.is_set():
            return
        part = idx[start:start + batch]
        out = np.full(len(part), DECODED, dtype=np.uint16)
        errors: list[FormatError] = []
        for k, arr in enumerate(unit.read_chunks(part.tolist())):
            if arr is None:
                continue
            if isinstance(arr, FormatError):
                out[k] |= DECODE_FAILED
                errors.append(arr)
                continue
            flat = np.asarray(arr).reshape(-1)
            first = flat[0]
            if bool(np.all(flat == first)):
                out[k] |= CONSTANT
                if first == 0:
                    out[k] |= ALL_ZERO
        yield part, out, errors


# -- byte layout ------------------------------------------------------------------------------
def plane_chunks(table: UnitTable, axis: int, local_index: int) -> npt.NDArray[np.int64]:
    """Indices of the chunks of this unit that the plane with normal ``axis`` at unit-local
    voxel ``local_index`` needs, in the unit's chunk order."""
    layer = int(local_index) // table.chunk_shape[axis]
    return np.flatnonzero(table.coords[:, axis] == layer).astype(np.int64)


def read_runs(table: UnitTable, indices: npt.NDArray[np.int64], gap: int = 4096) -> int:
    """How many separate reads fetch ``indices`` when byte ranges closer than ``gap`` are
    merged: a measure of how scattered a plane's reads are (absent chunks need none)."""
    indices = indices[(table.flags[indices] & (ABSENT | STORED_CONSTANT)) == 0]
    if len(indices) == 0:
        return 0
    order = np.argsort(table.starts[indices], kind="stable")
    lo = table.starts[indices][order]
    hi = np.maximum.accumulate(table.ends[indices][order])
    breaks = lo[1:] - hi[:-1] > gap
    return int(np.count_nonzero(breaks)) + 1


# -- where a voxel's chunk is -----------------------------------------------------------------
def chunk_at(volume: Volume, position: Sequence[int]) -> tuple[Vec3, int]:
    """(unit-grid position, index in the unit) of the chunk holding voxel ``position``."""
    c = np.asarray(volume.chunk_shape, dtype=np.int64)
    chunk = np.asarray([int(p) for p in position], dtype=np.int64) // c
    units, indices = volume.locate(chunk.reshape(1, 3))
    u = units[0]
    return (int(u[0]), int(u[1]), int(u[2])), int(indices[0])


def chunk_center(volume: Volume, unit: Sequence[int], index: int) -> Vec3:
    """Voxel at the centre of chunk ``index`` of the unit at ``unit``."""
    local = volume.chunk_local(np.asarray([int(index)], dtype=np.int64))[0]
    c, u = volume.chunk_shape, volume.unit_shape
    return tuple(  # type: ignore[return-value]
        (int(unit[a]) * u[a] + int(local[a])) * c[a] + c[a] // 2 for a in range(3))


def unit_center(volume: Volume, unit: Sequence[int]) -> Vec3:
    """Voxel at the centre of the unit at ``unit``."""
    side = volume.unit_len_vx
    return tuple(int(unit[a]) * side[a] + side[a] // 2 for a in range(3))  # type: ignore[return-value]


__all__ = [
    "ABSENT", "STORED_CONSTANT", "ZERO_LENGTH", "PAST_EOF", "BAD_RANGE", "DAMAGED", "CONSTANT",
    "ALL_ZERO", "DECODE_FAILED", "DECODED", "FLAG_NAMES", "PROBLEM_FLAGS", "NO_SIZE_FLAGS",
    "flag_names", "UnitTable", "unit_table", "chunk_coords", "scan_chunk_contents",
    "plane_chunks", "read_runs", "chunk_at", "chunk_center", "unit_center",
]
