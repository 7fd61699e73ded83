"""Comparison by voxels through box reads, for volumes whose chunks do not line up.

When the chunk shapes differ (a WKW mag of 32^3 blocks against a zarr conversion of 64^3
chunks, say), stored bytes and single chunks say nothing; both volumes are read through
``Volume.read`` one slab at a time (one layer of A's chunks across one of A's storage units)
and the differences are binned into A's chunks, which name the results.  Slower than the chunk
path, but any two volumes of the same voxel type and channels can be compared.  A box that a
damaged chunk makes unreadable is read again chunk by chunk, so the damage is reported for the
chunks it hits.  Worker threads run ``compare_slab``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.compare.blocks import ChunkOutcome
from viewer.core.compare.diff import abs_difference
from viewer.core.compare.model import BlockResult, Box, Vec3
from viewer.format import FormatError, Volume


@dataclass(frozen=True)
class Slab:
    """A box of A's chunks inside A's storage unit ``unit`` (named ``name`` in reports):
    ``lo``..``hi`` in unit-local chunk coordinates."""

    name: str
    unit: Vec3
    lo: Vec3
    hi: Vec3

    def blocks(self) -> int:
        return (self.hi[0] - self.lo[0]) * (self.hi[1] - self.lo[1]) * (self.hi[2] - self.lo[2])


def _read(volume: Volume, offset: Vec3, shape: Vec3, label: str) -> npt.NDArray[Any] | str:
    """The box, or what stops it being read (``"A: <error>"``)."""
    try:
        return volume.read(offset, shape)
    except FormatError as exc:
        return f"{label}: {exc}"


def _index(a: Volume, local: Vec3) -> int:
    return int(a.chunk_index(np.asarray([local], dtype=np.int64))[0])


def compare_slab(a: Volume, b: Volume, slab: Slab, box: Box | None,
                 tolerance: float) -> ChunkOutcome:
    """Compare the voxels of one slab, binned into A's chunks.  Any thread."""
    c = np.asarray(a.chunk_shape, dtype=np.int64)
    unit_origin = np.asarray(slab.unit, dtype=np.int64) * c * np.asarray(a.unit_shape)
    lo = unit_origin + np.asarray(slab.lo, dtype=np.int64) * c
    shape = (np.asarray(slab.hi, dtype=np.int64) - np.asarray(slab.lo, dtype=np.int64)) * c
    offset3: Vec3 = (int(lo[0]), int(lo[1]), int(lo[2]))
    shape3: Vec3 = (int(shape[0]), int(shape[1]), int(shape[2]))
    va = _read(a, offset3, shape3, "A")
    vb = _read(b, offset3, shape3, "B")
    if isinstance(va, str) or isinstance(vb, str):
        if slab.blocks() == 1:
            problems = "; ".join(e for e in (va, vb) if isinstance(e, str))
            return ChunkOutcome([BlockResult(slab.name, _index(a, slab.lo), offset3, None, None,
                                             problems)], 1, True, 0)
        return _block_by_block(a, b, slab, box, tolerance)
    d = abs_difference(np.moveaxis(va, 0, -1), np.moveaxis(vb, 0, -1))  # (X, Y, Z, C)
    if box is not None:  # voxels outside the box do not count
        inside = np.zeros(shape3, dtype=bool)
        b_lo = np.maximum(np.asarray(box[0]) - lo, 0)
        b_hi = np.minimum(np.asarray(box[0]) + np.asarray(box[1]) - lo, shape)
        inside[b_lo[0]:b_hi[0], b_lo[1]:b_hi[1], b_lo[2]:b_hi[2]] = True
        d[~inside] = 0
    peak = d.max(axis=-1) if d.size else d.reshape(shape3)
    tol: int | float = (int(tolerance) if d.dtype.kind == "u" and float(tolerance).is_integer()
                        else tolerance)
    different = (d > tol).any(axis=-1)
    cx, cy, cz = (int(v) for v in c)
    nx, ny, nz = shape3[0] // cx, shape3[1] // cy, shape3[2] // cz
    counts = different.reshape(nx, cx, ny, cy, nz, cz).sum(axis=(1, 3, 5))
    peaks = peak.reshape(nx, cx, ny, cy, nz, cz).max(axis=(1, 3, 5))
    results: list[BlockResult] = []
    top: int | float = 0
    any_difference = False
    for bx, by, bz in np.argwhere(peaks > 0).tolist():
        value = peaks[bx, by, bz]
        peak_value: int | float = int(value) if d.dtype.kind == "u" else float(value)
        any_difference = True
        top = max(top, peak_value)
        count = int(counts[bx, by, bz])
        if count:
            local = (slab.lo[0] + bx, slab.lo[1] + by, slab.lo[2] + bz)
            position = (offset3[0] + bx * cx, offset3[1] + by * cy, offset3[2] + bz * cz)
            results.append(BlockResult(slab.name, _index(a, local), position, count,
                                       peak_value))
    results.sort(key=lambda r: r.morton_index)
    return ChunkOutcome(results, slab.blocks(), any_difference, top)


def _block_by_block(a: Volume, b: Volume, slab: Slab, box: Box | None,
                    tolerance: float) -> ChunkOutcome:
    results: list[BlockResult] = []
    compared = 0
    any_difference = False
    top: int | float = 0
    for z in range(slab.lo[2], slab.hi[2]):
        for y in range(slab.lo[1], slab.hi[1]):
            for x in range(slab.lo[0], slab.hi[0]):
                one = compare_slab(a, b, Slab(slab.name, slab.unit, (x, y, z),
                                              (x + 1, y + 1, z + 1)), box, tolerance)
                results.extend(one.results)
                compared += one.compared
                any_difference |= one.any_difference
                top = max(top, one.max_abs_diff)
    results.sort(key=lambda r: r.morton_index)
    return ChunkOutcome(results, compared, any_difference, top)


__all__ = ["Slab", "compare_slab"]
