"""Where the data is and what it costs today, and which chunks to re-encode.

``survey`` reads every storage unit's chunk table through the format layer's declared
interface (``viewer.core.inspect.open_table``: nothing decoded) into a ``SourceMap``: which
chunks of the volume's grid are present, each one's stored bytes, and the units' total size
(today's stored bytes).  ``TargetGrid.of`` lays a candidate chunk shape over the same extent:
a target chunk is present when any source chunk it meets is, and its *current bytes* are the
stored bytes of the source chunks it meets, shared by the voxels it covers of each.

``TargetGrid.of`` also stratifies the present target chunks (a dataset is not uniform: tissue
compresses worse than background, and today's size says which is which): edge chunks and
chunks made only of today's cheapest chunks (most likely all fill) apart from the others; in
each group a value of today's bytes shared by many chunks (chunks of
zeros) a stratum of its own; the rest cut by today's bytes (with today's sizes all equal, raw
data, by position along z then y).  ``TargetGrid.sample`` draws ``fraction`` of the chunks
with a seed, in proportion to each stratum's count times the square root of its mean bytes
today (bigger chunks vary more in bytes), at least ``MIN_DRAW`` per stratum, systematically
in order of today's bytes within each.

Qt-free; pure functions and immutable results; any thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core import inspect
from viewer.format import FormatError, Volume

Vec3 = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Strata at most, and chunks per stratum at least (in the population).
MAX_STRATA = 8
MIN_PER_STRATUM = 8
#: A sample is at least this many chunks (or all of them), whatever the fraction.
MIN_SAMPLE = 40
#: Chunks drawn per stratum at least (or all of it): enough for a variance with a slope.
MIN_DRAW = 4
#: A value of today's bytes held by this share of a group's chunks (and by at least
#: ``MIN_PER_STRATUM``) is a stratum of its own; at most ``MAX_ATOMS`` such per group.
ATOM_SHARE = 0.01
MAX_ATOMS = 3
#: A stratum's share of the sample: its count times its mean bytes today to this power.
ALLOC_POWER = 0.5


@dataclass(frozen=True)
class SourceMap:
    """The volume's own chunk grid over the extent ``[lo, hi)`` (voxels): ``first`` is the
    grid position of ``present[0, 0, 0]``; ``sizes`` the stored bytes of each present chunk
    (0 where absent); ``stored_bytes`` the units' total size; ``problems`` what could not be
    read (those units count as absent)."""

    lo: Vec3
    hi: Vec3
    chunk_shape: Vec3
    first: Vec3
    present: BoolArray
    sizes: FloatArray
    stored_bytes: int
    units: int
    encoding: str
    problems: tuple[str, ...] = ()

    @property
    def chunks_present(self) -> int:
        return int(np.count_nonzero(self.present))


def survey(volume: Volume, box: tuple[Vec3, Vec3] | None = None,
           cancelled: Callable[[], bool] | None = None,
           progress: Callable[[int], None] | None = None) -> SourceMap:
    """The ``SourceMap`` of ``volume`` (within ``box``, ``(offset, size)`` voxels, when
    given): every unit's chunk table, read through the declared interface."""
    lo_v, hi_v = volume.bounds
    lo = np.asarray(lo_v, np.int64)
    hi = np.asarray(hi_v, np.int64)
    if box is not None:
        lo = np.maximum(lo, np.asarray(box[0], np.int64))
        hi = np.minimum(hi, np.asarray(box[0], np.int64) + np.asarray(box[1], np.int64))
    if (hi <= lo).any():
        raise ValueError("the box does not meet the data's extent")
    c = np.asarray(volume.chunk_shape, np.int64)
    first = lo // c
    last = (hi - 1) // c
    dims = tuple(int(v) for v in last - first + 1)
    present = np.zeros(dims, np.bool_)
    sizes = np.zeros(dims, np.float64)
    try:
        encoding = volume.info().compression
    except FormatError:
        encoding = "?"
    unit_shape = np.asarray(volume.unit_shape, np.int64)
    stored = 0
    units = 0
    problems: list[str] = []
    for k, pos in enumerate(volume.iter_units(), 1):
        if cancelled is not None and cancelled():
            break
        if progress is not None:
            progress(k)
        base = np.asarray(pos, np.int64) * unit_shape
        if ((base + unit_shape - 1) < first).any() or (base > last).any():
            continue
        table, error = inspect.open_table(volume, pos)
        if table is None:
            if error is not None:
                problems.append(str(error))
            continue
        try:
            flags = table.flags
            here = (flags & inspect.ABSENT) == 0
            grid = table.coords[here] + base - first
            inside = ((grid >= 0) & (grid < np.asarray(dims))).all(axis=1)
            grid = grid[inside]
            size = np.where(table.stored, table.sizes, 0)[here][inside].astype(np.float64)
            present[grid[:, 0], grid[:, 1], grid[:, 2]] = True
            sizes[grid[:, 0], grid[:, 1], grid[:, 2]] = size
            units += 1
            stored += int(table.size) if box is None else int(size.sum())
        finally:
            inspect.volume_done_with(volume, table)
    return SourceMap(_vec(lo), _vec(hi), _vec(c), _vec(first), present, sizes, stored, units,
                     encoding, tuple(problems))


def _vec(v: Any) -> Vec3:
    return (int(v[0]), int(v[1]), int(v[2]))


def _overlap(lo: int, hi: int, src: int, src_first: int, n_src: int, tgt: int, tgt_first: int,
             n_tgt: int) -> FloatArray:
    """``(n_tgt, n_src)``: the share of each source chunk's voxels (inside ``[lo, hi)``) that
    each target chunk covers, along one axis."""
    s0 = np.maximum((src_first + np.arange(n_src)) * src, lo)
    s1 = np.minimum((src_first + np.arange(n_src) + 1) * src, hi)
    t0 = np.maximum((tgt_first + np.arange(n_tgt)) * tgt, lo)
    t1 = np.minimum((tgt_first + np.arange(n_tgt) + 1) * tgt, hi)
    inter = np.clip(np.minimum(t1[:, None], s1[None, :]) - np.maximum(t0[:, None], s0[None, :]),
                    0, None).astype(np.float64)
    share: FloatArray = inter / np.maximum(s1 - s0, 1)[None, :]
    return share


def _contract(grid: FloatArray, mats: list[FloatArray]) -> FloatArray:
    """``grid`` (source chunks) mapped onto target chunks through one matrix per axis."""
    out = np.tensordot(mats[0], grid, axes=([1], [0]))
    out = np.tensordot(mats[1], out, axes=([1], [1])).transpose(1, 0, 2)
    return np.tensordot(mats[2], out, axes=([1], [2])).transpose(1, 2, 0)


@dataclass(frozen=True)
class Sample:
    """Chunks drawn for measuring: ``rows`` into the target grid's present chunks, their
    ``stratum``; ``population`` and ``drawn`` chunks per stratum."""

    rows: IntArray
    stratum: IntArray
    population: IntArray
    drawn: IntArray
    exhaustive: bool


@dataclass(frozen=True)
class TargetGrid:
    """A chunk shape laid over the extent: its present chunks (``grid``, ``(N, 3)`` positions
    in that chunk grid), their current bytes ``x`` and stratum; the absent chunks' count;
    per storage unit of ``unit_chunks`` chunks, the present chunks it holds."""

    chunk_shape: Vec3
    lo: Vec3
    hi: Vec3
    first: Vec3
    dims: Vec3
    grid: IntArray
    x: FloatArray
    stratum: IntArray
    strata: int
    by_position: bool

    @property
    def total_chunks(self) -> int:
        return int(np.prod(self.dims))

    @property
    def present_chunks(self) -> int:
        return int(self.grid.shape[0])

    @classmethod
    def of(cls, source: SourceMap, chunk_shape: Vec3) -> TargetGrid:
        lo, hi = source.lo, source.hi
        first = [lo[a] // chunk_shape[a] for a in range(3)]
        last = [(hi[a] - 1) // chunk_shape[a] for a in range(3)]
        dims = [last[a] - first[a] + 1 for a in range(3)]
        cheapest = _cheapest(source)
        if chunk_shape == source.chunk_shape:
            present, x = source.present, source.sizes
            plain = cheapest
        else:
            shares = [_overlap(lo[a], hi[a], source.chunk_shape[a], source.first[a],
                               source.present.shape[a], chunk_shape[a], first[a], dims[a])
                      for a in range(3)]
            x = _contract(source.sizes, shares)
            meets = [(m > 0).astype(np.float64) for m in shares]
            present = _contract(source.present.astype(np.float64), meets) > 0
            plain = _contract((source.present & ~cheapest).astype(np.float64), meets) == 0
        grid = np.argwhere(present).astype(np.int64)
        xs = x[present].astype(np.float64)
        start = (grid + np.asarray(first, np.int64)) * np.asarray(chunk_shape, np.int64)
        edge = ((start < np.asarray(lo)) | (start + np.asarray(chunk_shape) > np.asarray(hi))
                ).any(axis=1)
        group = edge.astype(np.int64) + 2 * plain[present].astype(np.int64)
        stratum, strata, by_position = _strata(grid, xs, group)
        return cls(chunk_shape, lo, hi, (first[0], first[1], first[2]),
                   (dims[0], dims[1], dims[2]), grid + np.asarray(first, np.int64), xs,
                   stratum, strata, by_position)

    def sample(self, fraction: float, seed: int | None, exhaustive: bool = False) -> Sample:
        """The chunks to measure (every present chunk when ``exhaustive``)."""
        n_total = self.present_chunks
        pop = np.bincount(self.stratum, minlength=self.strata).astype(np.int64)
        if exhaustive or n_total == 0:
            rows = np.arange(n_total, dtype=np.int64)
            return Sample(rows, self.stratum.copy(), pop, pop.copy(), True)
        want = max(int(math.ceil(fraction * n_total)), min(n_total, MIN_SAMPLE))
        if want >= n_total:
            return self.sample(fraction, seed, exhaustive=True)
        rng = np.random.default_rng(seed)
        # How a candidate's size varies within a stratum is not known before it is measured
        # (today's spread says little of it), so no stratum is starved on the strength of
        # today's spread; compressed sizes spread roughly in proportion to their mean, hence
        # the mean's weight (its square root: half way to proportional allocation).
        mean_x = np.asarray([self.x[self.stratum == h].mean() if pop[h] else 0.0
                             for h in range(self.strata)])
        weight = pop * np.maximum(mean_x, 1.0) ** ALLOC_POWER
        drawn = np.minimum(pop, np.maximum(MIN_DRAW, np.round(want * weight / weight.sum())))
        drawn = drawn.astype(np.int64)
        rows_out: list[IntArray] = []
        for h in range(self.strata):
            members = np.flatnonzero(self.stratum == h)
            rows_out.append(np.sort(_systematic(members, self.x[members], int(drawn[h]),
                                                rng)))
        rows = np.concatenate(rows_out) if rows_out else np.zeros(0, np.int64)
        return Sample(rows.astype(np.int64), self.stratum[rows], pop, drawn, False)

    def units(self, per_unit: Vec3) -> tuple[int, int]:
        """``(units holding a present chunk, present chunks in them)`` for storage units of
        ``per_unit`` chunks (aligned to the grid's origin, as every format aligns them)."""
        if self.present_chunks == 0:
            return 0, 0
        keys = self.grid // np.asarray(per_unit, np.int64)
        return int(np.unique(keys, axis=0).shape[0]), self.present_chunks


def _systematic(members: IntArray, x: FloatArray, n: int, rng: np.random.Generator
                ) -> IntArray:
    """``n`` of ``members`` drawn systematically in order of today's bytes ``x`` (ties in a
    random order): a random start, then evenly spaced, so that the draw spans the stratum's
    sizes instead of, by chance, only one end of them."""
    shuffle: FloatArray = rng.random(size=int(members.shape[0]))
    order = members[np.lexsort((shuffle, x))]
    step = members.shape[0] / n
    picks = np.floor(rng.random() * step + step * np.arange(n)).astype(np.int64)
    out: IntArray = order[np.minimum(picks, members.shape[0] - 1)]
    return out


def _cheapest(source: SourceMap) -> BoolArray:
    """The source chunks of the smallest stored size when several share it: chunks of one
    value (most often the fill value: stored only because the format stores every chunk)."""
    sizes = source.sizes[source.present]
    if sizes.shape[0] < 2:
        return np.zeros(source.present.shape, np.bool_)
    least = float(sizes.min())
    if int(np.count_nonzero(sizes == least)) < 2:
        return np.zeros(source.present.shape, np.bool_)
    out: BoolArray = source.present & (source.sizes == least)
    return out


def _strata(grid: IntArray, x: FloatArray, group: IntArray) -> tuple[IntArray, int, bool]:
    """Each present chunk's stratum, and whether the strata go by position.

    The chunks fall in groups stratified apart (``group``: 1 edge, 2 plain, 3 both): edge
    chunks (cut by the extent's border: padded or clipped as the format does, so their sizes
    follow today's differently) and *plain* chunks (made only of today's cheapest chunks: most
    likely all fill, which many formats do not store at all).  In each group, an *atom*, a
    value of today's bytes shared by many chunks (chunks of fill, of a constant, or that the
    codec could not compress: alike), is a stratum of its own, so that a few chunks of data
    are never hidden among hundreds of chunks of zeros; the rest are cut by Dalenius and
    Hodges' cumulative square root of frequency rule (boundaries at equal steps of
    ``sum sqrt(f)`` over a fine histogram of ``log(1 + x)``).  With today's bytes all equal
    (raw data), by position instead (z, then y, then x) in equal parts.  About ``MAX_STRATA``
    strata in all, shared between the groups by their counts, each of at least
    ``MIN_PER_STRATUM`` chunks (a smaller group is one stratum)."""
    n = int(x.shape[0])
    stratum = np.zeros(n, np.int64)
    if n == 0:
        return stratum, 1, True
    by_position = float(x.max()) == float(x.min())
    next_label = 0
    for g in range(4):
        members = np.flatnonzero(group == g)
        if members.shape[0] == 0:
            continue
        budget = max(1, min(MAX_STRATA, int(round(MAX_STRATA * members.shape[0] / n))))
        labels, count = _group_strata(grid[members], x[members], budget, by_position)
        stratum[members] = labels + next_label
        next_label += count
    return stratum, next_label, by_position


def _group_strata(grid: IntArray, x: FloatArray, budget: int, by_position: bool
                  ) -> tuple[IntArray, int]:
    """One group's strata (see ``_strata``): labels from 0, and how many."""
    n = int(x.shape[0])
    stratum = np.zeros(n, np.int64)
    if by_position:
        strata = max(1, min(budget, n // MIN_PER_STRATUM))
        order = np.lexsort((grid[:, 0], grid[:, 1], grid[:, 2]))
        stratum[order] = (np.arange(n) * strata) // n
        return stratum, strata
    values, counts = np.unique(x, return_counts=True)
    big = max(MIN_PER_STRATUM, int(math.ceil(ATOM_SHARE * n)))
    atoms = values[np.argsort(counts)[::-1][:MAX_ATOMS]]
    atoms = atoms[np.isin(atoms, values[counts >= big])]
    is_atom = np.isin(x, atoms)
    rest = np.flatnonzero(~is_atom)
    label = 0
    for value in np.sort(atoms):
        stratum[x == value] = label
        label += 1
    if rest.shape[0]:
        strata = max(1, min(budget, rest.shape[0] // MIN_PER_STRATUM))
        cut = _cum_sqrt_f(x[rest], strata)
        stratum[rest] = cut + label
        label += int(cut.max()) + 1
    return stratum, label


def _cum_sqrt_f(x: FloatArray, strata: int) -> IntArray:
    """Dalenius and Hodges' strata of ``x`` (at most ``strata``, each of at least
    ``MIN_PER_STRATUM`` chunks but for a lone one), labelled from 0 in order of ``x``."""
    if strata <= 1 or float(x.max()) == float(x.min()):
        return np.zeros(x.shape[0], np.int64)
    bins = max(strata * 20, 50)
    logx = np.log1p(np.maximum(x, 0.0))
    counts, edges = np.histogram(logx, bins=bins)
    cum = np.cumsum(np.sqrt(counts))
    steps = cum[-1] * np.arange(1, strata) / strata
    cut_bins = np.searchsorted(cum, steps)  # last histogram bin of each stratum but the last
    bounds = np.unique(edges[np.minimum(cut_bins + 1, bins)])
    stratum = np.searchsorted(bounds, logx, side="right").astype(np.int64)
    # Merge strata too small to be sampled on their own into their neighbour.
    sizes = np.bincount(stratum, minlength=len(bounds) + 1)
    label = np.zeros(sizes.shape[0], np.int64)
    current, held = 0, 0
    for h, size in enumerate(sizes.tolist()):
        if held >= MIN_PER_STRATUM and size > 0:
            current += 1
            held = 0
        label[h] = current
        held += size
    if held < MIN_PER_STRATUM and current > 0:  # a small last stratum joins the one before
        label[label == current] = current - 1
    return label[stratum]


__all__ = ["SourceMap", "survey", "TargetGrid", "Sample", "MAX_STRATA", "MIN_SAMPLE"]
