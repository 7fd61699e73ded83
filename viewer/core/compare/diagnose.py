"""Name the usual conversion bugs from a sample of mismatching blocks.

Each hypothesis predicts what B's block at a position should hold if B were A with that bug:
axes of the whole dataset permuted (x and z swapped, ...), axes permuted inside every block
(C order written where Fortran order was meant, which swaps x and z within blocks), or the whole
volume moved by one voxel or one block along an axis.  A hypothesis is claimed only when the
prediction matches B (within the tolerance) on at least 99.9% of the voxels of the sampled
blocks, over at least half of the samples, and the samples carry information (a constant
block matches any permutation, so those are left out).  A "block" is one of A's chunks; both
volumes are read through ``Volume.read``, whatever their format.  Runs on the job's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.compare.diff import abs_difference
from viewer.core.compare.model import DIAGNOSIS, BlockResult, Finding, Vec3
from viewer.format import FormatError, Volume

#: Mismatching blocks read to test the hypotheses.
MAX_SAMPLES = 12
#: Largest fraction of sampled voxels a hypothesis may get wrong and still be claimed.
MAX_WRONG = 1e-3

AXES = "xyz"
PERMUTATIONS: list[tuple[int, int, int]] = [(2, 1, 0), (1, 0, 2), (0, 2, 1), (1, 2, 0), (2, 0, 1)]

Sample = tuple[Vec3, npt.NDArray[Any], npt.NDArray[Any]]  # position, A block, B block
Predict = Callable[[Vec3, npt.NDArray[Any]], "npt.NDArray[Any] | None"]


def _perm_words(perm: tuple[int, int, int]) -> str:
    swapped = [i for i in range(3) if perm[i] != i]
    if len(swapped) == 2:
        i, j = swapped
        return f"{AXES[i]} and {AXES[j]} swapped"
    return f"B's x, y, z axes are A's {', '.join(AXES[p] for p in perm)} axes"


def _hypotheses(a: Volume, chunk_shape: Vec3
                ) -> list[tuple[str, str, dict[str, Any], Predict]]:
    """(kind, message, details, predict) per hypothesis, most specific first."""
    out: list[tuple[str, str, dict[str, Any], Predict]] = []
    shape = chunk_shape

    for perm in PERMUTATIONS:
        def whole(p: Vec3, va: npt.NDArray[Any], perm: tuple[int, int, int] = perm
                  ) -> npt.NDArray[Any]:
            q = [0, 0, 0]
            s = [0, 0, 0]
            for j in range(3):
                q[perm[j]] = p[j]
                s[perm[j]] = shape[j]
            box = a.read(q, s)
            return np.transpose(box, (0, 1 + perm[0], 1 + perm[1], 1 + perm[2]))
        words = _perm_words(perm)
        out.append(("transposed", f"B looks like A transposed: dataset axes {words}",
                    {"axes": "".join(AXES[p] for p in perm)}, whole))
    for perm in PERMUTATIONS:
        def inner(p: Vec3, va: npt.NDArray[Any], perm: tuple[int, int, int] = perm
                  ) -> npt.NDArray[Any]:
            return np.transpose(va, (0, 1 + perm[0], 1 + perm[1], 1 + perm[2]))
        words = _perm_words(perm)
        if perm == (2, 1, 0):
            message = ("B looks like A with each block's voxels in the other order: Fortran vs "
                       "C order inside blocks (x and z swapped within every block)")
        else:
            message = f"B looks like A with axes permuted inside every block ({words})"
        out.append(("block_order", message, {"axes": "".join(AXES[p] for p in perm)}, inner))
    for unit in ("voxel", "block"):
        for axis in range(3):
            step = 1 if unit == "voxel" else chunk_shape[axis]
            for sign in (1, -1):
                d = [0, 0, 0]
                d[axis] = sign * step

                def shifted(p: Vec3, va: npt.NDArray[Any], d: tuple[int, ...] = tuple(d)
                            ) -> npt.NDArray[Any] | None:
                    q = [p[i] - d[i] for i in range(3)]
                    if min(q) < 0:
                        return None
                    return a.read(q, shape)
                moved = "+" if sign > 0 else "-"
                message = (f"B looks like A moved by {moved}1 {unit} along {AXES[axis]} "
                           f"(B[{AXES[axis]}] = A[{AXES[axis]} {'-' if sign > 0 else '+'} "
                           f"{step}])")
                out.append(("offset", message, {"shift": d, "unit": unit}, shifted))
    return out


def _samples(a: Volume, b: Volume, mismatches: Sequence[BlockResult]) -> list[Sample]:
    shape = a.chunk_shape
    if len(mismatches) > MAX_SAMPLES:
        picks = [mismatches[int(i)] for i in
                 np.linspace(0, len(mismatches) - 1, MAX_SAMPLES).round().astype(int)]
    else:
        picks = list(mismatches)
    out: list[Sample] = []
    for r in picks:
        try:
            va = a.read(r.position, shape)
            vb = b.read(r.position, shape)
        except (FormatError, OSError):
            continue
        if vb.size == 0 or bool(np.all(vb == vb.flat[0])):
            continue  # a constant block says nothing about where its voxels came from
        out.append((r.position, va, vb))
    return out


def diagnose(a: Volume, b: Volume, mismatches: Sequence[BlockResult],
             tolerance: float = 0.0) -> list[Finding]:
    """The first hypothesis the sampled mismatching blocks fit, as a finding (or none)."""
    samples = _samples(a, b, mismatches)
    if not samples:
        return []
    for kind, message, details, predict in _hypotheses(a, a.chunk_shape):
        used = wrong = voxels = 0
        for position, va, vb in samples:
            try:
                pred = predict(position, va)
            except (FormatError, OSError):
                pred = None
            if pred is None or pred.shape != vb.shape:
                continue
            d = abs_difference(np.moveaxis(pred, 0, -1), np.moveaxis(vb, 0, -1))
            wrong += int(np.count_nonzero((d > tolerance).any(axis=-1)))
            voxels += int(vb[0].size)
            used += 1
            if wrong > MAX_WRONG * (voxels + (len(samples) - used) * vb[0].size):
                break
        if used and used * 2 >= len(samples) and wrong <= MAX_WRONG * voxels:
            return [Finding(kind, DIAGNOSIS, message,
                            {**details, "samples": used, "voxels_wrong": wrong,
                             "voxels_sampled": voxels})]
    return []
