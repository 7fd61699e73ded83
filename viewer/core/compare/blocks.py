"""Chunk-by-chunk comparison of two volumes whose chunks line up (the same chunk shape).

The unit of work is one storage unit of A (a WKW file, a zarr shard, an N5 chunk file): a
``UnitPlan`` holds A's unit, the chunks of it to compare, and where each of those chunks lives
in B (B's unit and index: ``Volume.locate``, so B may group its chunks in other units, of
another size or order).  A run of a plan's chunks is compared by ``compare_chunk``, on any
thread, through the storage-unit interface alone:

* when both volumes encode chunks the same way (``codec_signature``: format, compression,
  voxel type, channels, chunk shape), chunks whose stored bytes are equal are equal without
  being decoded: the chunk tables rule out those of different sizes, the rest are compared
  with one ``memcmp`` each (``StorageUnit.read_stored``);
* every other chunk is decoded on both sides (``StorageUnit.read_chunks``) and compared with
  ``memcmp``; only chunks that differ get their voxels counted.

An absent chunk (or unit) reads as its volume's fill value; a chunk whose bytes cannot be read
or decoded is reported as that chunk's problem, never taken for the fill value.  Worker
threads run ``compare_chunk``; they touch nothing shared but the read-only plan and the
(thread-safe) storage units.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.compare.diff import abs_difference
from viewer.core.compare.model import BlockResult, Vec3
from viewer.format import FormatError, StorageUnit

IntArray = npt.NDArray[np.int64]


def _load_memcmp() -> Any:
    fn = None
    for name in (ctypes.util.find_library("c"), "msvcrt"):
        if not name:
            continue
        try:
            fn = ctypes.CDLL(name).memcmp
            break
        except (OSError, AttributeError):
            fn = None
    if fn is not None:
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        fn.restype = ctypes.c_int
    return fn


_MEMCMP = _load_memcmp()


def _address(buf: Any) -> tuple[npt.NDArray[np.uint8], int]:
    arr = np.frombuffer(buf, dtype=np.uint8)
    return arr, int(arr.ctypes.data) if arr.size else 0


def same_bytes(a: Any, b: Any) -> bool:
    """Whether two byte buffers (bytes, memoryview, contiguous arrays) hold the same bytes:
    one ``memcmp`` where libc has it (the GIL is released meanwhile)."""
    if isinstance(a, bytes) and isinstance(b, bytes):
        return a == b
    x, ax = _address(a)
    y, ay = _address(b)
    if x.nbytes != y.nbytes:
        return False
    if x.nbytes == 0 or ax == ay:
        return True
    if _MEMCMP is not None:
        return bool(_MEMCMP(ax, ay, x.nbytes) == 0)
    return bool(np.array_equal(x, y))  # pragma: no cover


def same_chunk(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    """Whether two decoded chunks hold the same voxels bit for bit: a ``memcmp`` when both
    lie the same way in memory (as every format's decoded chunks do: Fortran order)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.nbytes == 0:
        return True
    if _MEMCMP is not None and ((a.flags.f_contiguous and b.flags.f_contiguous)
                                or (a.flags.c_contiguous and b.flags.c_contiguous)):
        return bool(_MEMCMP(int(a.ctypes.data), int(b.ctypes.data), a.nbytes) == 0)
    return _bitwise_equal(a, b)


def _bitwise_equal(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    unsigned = np.dtype(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else None
    if unsigned is None:  # pragma: no cover - complex types are not voxel types
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a.view(unsigned), b.view(unsigned)))


@dataclass
class UnitPlan:
    """What to compare in one storage unit of A.

    ``indices`` are A's chunk indices inside the unit (sorted) and ``local`` their unit-local
    chunk coordinates; row ``k`` of them lives in B's unit ``b_units[b_group[k]]`` at index
    ``b_indices[k]``.  ``a`` or a B unit is None where that volume has no unit (absent: the
    fill value).  ``clips`` maps an A index to the chunk-local voxel box ``(lo, hi)`` when
    only part of the chunk lies inside the comparison box.  ``same_codec``: stored bytes
    may be compared instead of voxels."""

    name: str
    unit: Vec3
    origin: Vec3
    indices: IntArray
    local: IntArray
    a: StorageUnit | None
    b_units: list[StorageUnit | None]
    b_group: IntArray
    b_indices: IntArray
    chunk_shape: Vec3
    dtype: np.dtype[Any]
    channels: int
    tolerance: float
    same_codec: bool
    fill_a: int | float = 0
    fill_b: int | float = 0
    clips: dict[int, tuple[Vec3, Vec3]] = field(default_factory=dict)
    #: Whether B's chunks of this plan all live in one unit of the same layout as A's (then a
    #: missing unit on one side is a "file missing" finding).
    one_to_one: bool = False
    _fills: dict[str, npt.NDArray[Any]] = field(default_factory=dict)

    @property
    def chunk_nbytes(self) -> int:
        c = self.chunk_shape
        return int(c[0] * c[1] * c[2] * self.channels * self.dtype.itemsize)

    @property
    def b_absent(self) -> bool:
        return all(u is None for u in self.b_units)

    def fill(self, side: str) -> npt.NDArray[Any]:
        """A chunk of the side's fill value (read-only, shared)."""
        arr = self._fills.get(side)
        if arr is None:
            value = self.fill_a if side == "A" else self.fill_b
            arr = np.full((self.channels, *self.chunk_shape), value, dtype=self.dtype, order="F")
            arr.flags.writeable = False
            self._fills[side] = arr
        return arr


@dataclass
class ChunkOutcome:
    """What one run of chunks found: the chunks that differ (or failed), how many it covered,
    whether any voxel differed from the other side at all (tolerance aside), and the largest
    difference met."""

    results: list[BlockResult]
    compared: int
    any_difference: bool
    max_abs_diff: int | float


#: A chunk as read: decoded voxels, None (absent), or what stopped it being read.
Read = npt.NDArray[Any] | FormatError | None


def _stored_equal(plan: UnitPlan, rows: IntArray) -> npt.NDArray[np.bool_]:
    """Per row: known equal from the stored bytes alone (same encoding, same bytes).

    The chunk tables rule out chunks of different stored sizes; runs of chunks stored one
    after another on both sides are read as one range each (``StorageUnit.read_range``) and
    compared with one ``memcmp``; only a run that differs is compared chunk by chunk (within
    the ranges already read)."""
    done = np.zeros(len(rows), dtype=bool)
    a = plan.a
    if a is None or not len(rows):
        return done
    ta = a.chunk_table()
    idx_a = plan.indices[rows]
    groups = plan.b_group[rows]
    for g in np.unique(groups).tolist():
        unit_b = plan.b_units[g]
        if unit_b is None:
            continue
        sel = np.flatnonzero(groups == g)
        ia = idx_a[sel]
        ib = plan.b_indices[rows[sel]]
        tb = unit_b.chunk_table()
        if len(ta) <= int(ia.max()) or len(tb) <= int(ib.max()):
            continue  # a table shorter than the unit: left to the decoding path to report
        na, nb = ta.nbytes[ia], tb.nbytes[ib]
        cand = ta.present[ia] & tb.present[ib] & (na == nb) & (na > 0)
        if ta.constant is not None:
            cand &= ~ta.constant[ia]
        if tb.constant is not None:
            cand &= ~tb.constant[ib]
        if not cand.any():
            continue
        oa, ob = ta.offsets[ia], tb.offsets[ib]
        joined = (cand[:-1] & cand[1:] & (oa[:-1] + na[:-1] == oa[1:])
                  & (ob[:-1] + nb[:-1] == ob[1:]))
        starts = np.concatenate([[0], np.flatnonzero(~joined) + 1])
        stops = np.concatenate([starts[1:], [len(sel)]])
        for lo, hi in zip(starts.tolist(), stops.tolist(), strict=True):
            if not cand[lo]:
                continue
            total = int(oa[hi - 1] + na[hi - 1] - oa[lo])
            ra = a.read_range(int(oa[lo]), total)
            rb = unit_b.read_range(int(ob[lo]), total) if ra is not None else None
            if ra is None or rb is None or len(ra) != total or len(rb) != total:
                _chunk_by_chunk(a, unit_b, ia[lo:hi], ib[lo:hi], sel[lo:hi], done)
                continue
            if same_bytes(ra, rb):
                done[sel[lo:hi]] = True
                continue
            if hi - lo == 1:
                continue
            xa, pa = _address(ra)
            xb, pb = _address(rb)
            base_a, base_b = int(oa[lo]), int(ob[lo])
            for k in range(lo, hi):
                n = int(na[k])
                if _same_at(xa, pa + int(oa[k]) - base_a, xb, pb + int(ob[k]) - base_b, n):
                    done[sel[k]] = True
    return done


def _same_at(xa: npt.NDArray[np.uint8], pa: int, xb: npt.NDArray[np.uint8], pb: int,
             n: int) -> bool:
    """Whether ``n`` bytes at two addresses inside the buffers ``xa``, ``xb`` are equal."""
    if _MEMCMP is not None:
        return bool(_MEMCMP(pa, pb, n) == 0)
    oa = pa - int(xa.ctypes.data)  # pragma: no cover - no libc
    ob = pb - int(xb.ctypes.data)  # pragma: no cover
    return bool(np.array_equal(xa[oa:oa + n], xb[ob:ob + n]))  # pragma: no cover


def _chunk_by_chunk(a: StorageUnit, b: StorageUnit, ia: IntArray, ib: IntArray,
                    where: IntArray, done: npt.NDArray[np.bool_]) -> None:
    """Compare the stored bytes of chunks one by one (``read_stored``)."""
    stored_a = a.read_stored(ia.tolist())
    stored_b = b.read_stored(ib.tolist())
    for p, x, y in zip(where.tolist(), stored_a, stored_b, strict=True):
        if x is None or y is None or isinstance(x, FormatError) or isinstance(y, FormatError):
            continue
        if same_bytes(x, y):
            done[p] = True


def _read(plan: UnitPlan, rows: IntArray) -> tuple[list[Read], list[Read]]:
    """Both sides' chunks of ``rows``, decoded (in the order of ``rows``)."""
    n = len(rows)
    if plan.a is None:
        va: list[Read] = [None] * n
    else:
        va = list(plan.a.read_chunks(plan.indices[rows].tolist()))
    vb: list[Read] = [None] * n
    groups = plan.b_group[rows]
    for g in np.unique(groups).tolist():
        unit_b = plan.b_units[g]
        if unit_b is None:
            continue
        sel = np.flatnonzero(groups == g)
        got = unit_b.read_chunks(plan.b_indices[rows[sel]].tolist())
        for p, r in zip(sel.tolist(), got, strict=True):
            vb[p] = r
    return va, vb


def compare_chunk(plan: UnitPlan, start: int, stop: int) -> ChunkOutcome:
    """Compare the plan's chunks ``start:stop`` (rows, in A's index order).  Any thread."""
    rows = np.arange(start, stop, dtype=np.int64)
    n = len(rows)
    if plan.same_codec:
        rows = rows[~_stored_equal(plan, rows)]
    va, vb = _read(plan, rows)
    results: list[BlockResult] = []
    any_difference = False
    top: int | float = 0
    for j, row in enumerate(rows.tolist()):
        x, y = va[j], vb[j]
        index = int(plan.indices[row])
        if isinstance(x, FormatError) or isinstance(y, FormatError):
            problems = [f"{name}: {e}" for name, e in (("A", x), ("B", y))
                        if isinstance(e, FormatError)]
            results.append(BlockResult(plan.name, index, _position(plan, row), None, None,
                                       "; ".join(problems)))
            any_difference = True
            continue
        if x is None and y is None and plan.fill_a == plan.fill_b:
            continue
        xa = plan.fill("A") if x is None else x
        ya = plan.fill("B") if y is None else y
        clip = plan.clips.get(index)
        if clip is None and same_chunk(xa, ya):
            continue
        if clip is not None:
            (x0, y0, z0), (x1, y1, z1) = clip
            xa = xa[:, x0:x1, y0:y1, z0:z1]
            ya = ya[:, x0:x1, y0:y1, z0:z1]
        d = abs_difference(np.moveaxis(xa, 0, -1), np.moveaxis(ya, 0, -1))
        if d.size == 0:
            continue
        peak = d.max()
        peak_value: int | float = int(peak) if d.dtype.kind == "u" else float(peak)
        if peak_value == 0:
            continue  # different bytes, same values (e.g. -0.0 and 0.0), or outside the box
        any_difference = True
        top = max(top, peak_value)
        tol: int | float = (int(plan.tolerance) if d.dtype.kind == "u"
                            and float(plan.tolerance).is_integer() else plan.tolerance)
        count = int(np.count_nonzero((d > tol).any(axis=-1)))
        if count:
            results.append(BlockResult(plan.name, index, _position(plan, row), count,
                                       peak_value))
    return ChunkOutcome(results, n, any_difference, top)


def _position(plan: UnitPlan, row: int) -> Vec3:
    loc = plan.local[row]
    c = plan.chunk_shape
    o = plan.origin
    return (o[0] + int(loc[0]) * c[0], o[1] + int(loc[1]) * c[1], o[2] + int(loc[2]) * c[2])


__all__ = ["UnitPlan", "ChunkOutcome", "compare_chunk", "same_bytes", "same_chunk"]
