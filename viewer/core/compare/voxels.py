"""Comparison by voxels through box reads, for datasets whose block or file geometry differ.

Blocks and files do not line up, so stored bytes say nothing; both datasets are read through
``Dataset.read`` one slab at a time (one of A's block layers across one of A's files) and the
differences are binned into A's blocks, which name the results.  Slower than the block path,
but any two datasets of the same voxel type and channels can be compared.  A box that a damaged
block makes unreadable is read again block by block, so the damage is reported for the blocks
it hits.  Worker threads run ``compare_slab``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.compare.blocks import ChunkOutcome
from viewer.core.compare.diff import abs_difference
from viewer.core.compare.model import BlockResult, Box, Vec3
from viewer.format import FormatError, wkw
from viewer.format.wkw import morton


@dataclass(frozen=True)
class Slab:
    """One layer of A's blocks across one of A's files: ``lo``..``hi`` in block coordinates
    inside the file at ``position`` (z range one block)."""

    position: Vec3
    lo: Vec3
    hi: Vec3

    def blocks(self) -> int:
        return (self.hi[0] - self.lo[0]) * (self.hi[1] - self.lo[1]) * (self.hi[2] - self.lo[2])


def _read(ds: wkw.Dataset, offset: Vec3, shape: Vec3, label: str) -> npt.NDArray[Any] | str:
    """The box, or what stops it being read (``"A: <error>"``)."""
    try:
        return ds.read(offset, shape)
    except FormatError as exc:
        return f"{label}: {exc}"


def compare_slab(a: wkw.Dataset, b: wkw.Dataset, slab: Slab, box: Box | None,
                 tolerance: float) -> ChunkOutcome:
    """Compare the voxels of one slab, binned into A's blocks.  Any thread."""
    h = a.header
    bl = h.block_len
    side = h.file_len_vx
    file_origin = np.asarray(slab.position, dtype=np.int64) * side
    lo = file_origin + np.asarray(slab.lo, dtype=np.int64) * bl
    shape = (np.asarray(slab.hi, dtype=np.int64) - np.asarray(slab.lo, dtype=np.int64)) * bl
    offset3: Vec3 = (int(lo[0]), int(lo[1]), int(lo[2]))
    shape3: Vec3 = (int(shape[0]), int(shape[1]), int(shape[2]))
    va = _read(a, offset3, shape3, "A")
    vb = _read(b, offset3, shape3, "B")
    name = f"z{slab.position[2]}/y{slab.position[1]}/x{slab.position[0]}.wkw"
    if isinstance(va, str) or isinstance(vb, str):
        if slab.blocks() == 1:
            problems = "; ".join(e for e in (va, vb) if isinstance(e, str))
            index = int(morton.encode(*slab.lo))
            return ChunkOutcome([BlockResult(name, index, offset3, None, None, problems)], 1,
                                True, 0)
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
    nx, ny, nz = (int(s) // bl for s in shape3)
    counts = different.reshape(nx, bl, ny, bl, nz, bl).sum(axis=(1, 3, 5))
    peaks = peak.reshape(nx, bl, ny, bl, nz, bl).max(axis=(1, 3, 5))
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
            coord = (slab.lo[0] + bx, slab.lo[1] + by, slab.lo[2] + bz)
            position = (offset3[0] + bx * bl, offset3[1] + by * bl, offset3[2] + bz * bl)
            results.append(BlockResult(name, int(morton.encode(*coord)), position, count,
                                       peak_value))
    results.sort(key=lambda r: r.morton_index)
    return ChunkOutcome(results, slab.blocks(), any_difference, top)


def _block_by_block(a: wkw.Dataset, b: wkw.Dataset, slab: Slab, box: Box | None,
                    tolerance: float) -> ChunkOutcome:
    results: list[BlockResult] = []
    compared = 0
    any_difference = False
    top: int | float = 0
    for z in range(slab.lo[2], slab.hi[2]):
        for y in range(slab.lo[1], slab.hi[1]):
            for x in range(slab.lo[0], slab.hi[0]):
                one = compare_slab(a, b, Slab(slab.position, (x, y, z), (x + 1, y + 1, z + 1)),
                                   box, tolerance)
                results.extend(one.results)
                compared += one.compared
                any_difference |= one.any_difference
                top = max(top, one.max_abs_diff)
    results.sort(key=lambda r: r.morton_index)
    return ChunkOutcome(results, compared, any_difference, top)
