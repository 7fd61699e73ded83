"""From measured chunks to the whole layer: projected bytes with a 95 % interval, speeds,
errors.

Per candidate, the payload total is a stratified estimate over the present chunks: in each
stratum, when today's sizes ``x`` vary, the separate regression estimator
``N_h * (ybar + b (Xbar_h - xbar))`` with the stratum's least-squares slope ``b`` (a
candidate's size mostly follows today's, and where it does not, ``b`` is near 0 and this is
the mean), else the mean ``N_h * ybar``.  Its variance is the stratified delete-one jackknife
(each drawn chunk left out in turn, the slope fitted again: the slope's own uncertainty, which
the residuals alone leave out, is counted) with the finite-population correction
``1 - n_h/N_h``; the interval is ``+- t * sqrt(var)`` with Student's t at Satterthwaite's
degrees of freedom (few when the variance comes from a few strata of few chunks: the interval
widens, as it must), at the level that makes the run's intervals hold together at 95 %
(Bonferroni over its candidates: one reads the table as a whole, comparing candidates).  An
exhaustive run (``--all``) is exact: no interval.  To the payloads the format's own bytes are
added exactly: chunks of fill in stored WKW files (each costs what a fill chunk encodes to),
unit headers, jump tables and shard indexes for every unit holding data, ``header.wkw``.

The same estimator gives each present chunk's predicted bytes (its measured bytes where it
was sampled): what the Map colours by.

Qt-free; pure functions; any thread.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.advise.measure import ChunkMeasure
from viewer.core.advise.sampling import Sample, SourceMap, TargetGrid
from viewer.core.advise.targets import Candidate

Vec3 = tuple[int, int, int]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The confidence of the intervals, held by a run's candidates together.
CONFIDENCE = 0.95
REGRESSION = True


def t_quantile(p: float, df: int) -> float:
    """Student's t ``p`` quantile (Cornish-Fisher expansion around the normal quantile;
    within 1e-3 of the exact value from 3 degrees of freedom for the quantiles used here)."""
    if df <= 0:
        return float("inf")
    z = NormalDist().inv_cdf(p)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3


def t95(df: int) -> float:
    """Student's t 97.5 % quantile: a single two-sided 95 % interval's half-width factor."""
    return t_quantile(0.975, df)


@dataclass(frozen=True)
class Projection:
    """One candidate's figures (see ``to_json`` for the names)."""

    candidate: Candidate
    projected_bytes: float
    interval: tuple[float, float]
    payload_bytes: float
    overhead_bytes: int
    raw_bytes: int
    current_bytes: int
    encode_mb_s: float
    decode_mb_s: float
    max_abs_error: float
    rmse: float
    psnr: float
    sampled_chunks: int
    present_chunks: int
    total_chunks: int
    units: int
    #: A precomputed shard's bits (the ``sharding`` its ``info`` would hold).
    sharding: dict[str, int] | None = None

    @property
    def lossless(self) -> bool:
        return self.candidate.lossless

    @property
    def ratio_to_current(self) -> float:
        return self.projected_bytes / self.current_bytes if self.current_bytes else math.nan

    @property
    def ratio_to_raw(self) -> float:
        return self.projected_bytes / self.raw_bytes if self.raw_bytes else math.nan

    def to_json(self) -> dict[str, Any]:
        doc = self.candidate.to_json()
        lossy = not self.lossless
        doc.update({
            "projected_bytes": int(round(self.projected_bytes)),
            "interval": [int(math.floor(self.interval[0])), int(math.ceil(self.interval[1]))],
            "payload_bytes": int(round(self.payload_bytes)),
            "overhead_bytes": self.overhead_bytes,
            "ratio_to_current": _num(self.ratio_to_current, 4),
            "ratio_to_raw": _num(self.ratio_to_raw, 4),
            "encode_mb_s": _num(self.encode_mb_s, 1),
            "decode_mb_s": _num(self.decode_mb_s, 1),
            "max_abs_error": _num(self.max_abs_error, 6) if lossy else 0,
            "rmse": _num(self.rmse, 6) if lossy else 0,
            "psnr": _num(self.psnr, 3) if lossy else None,
            "sampled_chunks": self.sampled_chunks,
            "present_chunks": self.present_chunks,
            "total_chunks": self.total_chunks,
            "units": self.units,
        })
        if self.sharding is not None:
            doc["sharding"] = {"@type": "neuroglancer_uint64_sharded_v1", "hash": "identity",
                               **self.sharding, "minishard_index_encoding": "raw",
                               "data_encoding": "raw"}
        return doc


def _num(v: float, digits: int) -> float | None:
    return None if v is None or not math.isfinite(v) else round(float(v), digits)


@dataclass
class ShapeResult:
    """What one chunk shape's run produced: the grid, the sample, its candidates, the
    measures by row of ``grid.grid`` (filled as they arrive) and each candidate's fill chunk
    cost."""

    grid: TargetGrid
    sample: Sample
    candidates: list[Candidate]
    fill_sizes: IntArray
    measures: dict[int, ChunkMeasure] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        return [m.error for m in self.measures.values() if m.error is not None]


def _fit(xs: FloatArray, ys: FloatArray, regression: bool
         ) -> tuple[FloatArray, FloatArray, float]:
    """``(slope, ybar, xbar)`` of the candidates' sizes ``ys`` (``(n, k)``) on today's ``xs``:
    the least-squares slope when ``regression`` and ``xs`` vary over more than two chunks,
    else 0 (the mean)."""
    xbar = float(xs.mean())
    ybar = ys.mean(axis=0)
    sxx = float(((xs - xbar) ** 2).sum())
    if not regression or sxx <= 0 or xs.shape[0] <= 2:
        return np.zeros(ys.shape[1]), ybar, xbar
    slope = ((xs - xbar)[:, None] * (ys - ybar[None, :])).sum(axis=0) / sxx
    return slope, ybar, xbar


def _jackknife(xs: FloatArray, ys: FloatArray, big_n: int, big_xbar: float, regression: bool
               ) -> FloatArray:
    """The delete-one jackknife variance of one stratum's total (per candidate), before the
    finite-population correction: each drawn chunk left out in turn and the slope fitted
    again, so that the slope's own uncertainty, which the residuals' variance leaves out,
    is counted."""
    n = xs.shape[0]
    m = n - 1
    x_i = xs[:, None]
    xbar_i = (xs.sum() - xs) / m
    ybar_i = (ys.sum(axis=0)[None, :] - ys) / m
    slope = np.zeros_like(ys)
    if regression and m > 2:
        sxx_i = (xs ** 2).sum() - xs ** 2 - m * xbar_i ** 2
        sxy_i = (xs[:, None] * ys).sum(axis=0)[None, :] - x_i * ys \
            - m * xbar_i[:, None] * ybar_i
        ok = sxx_i > 1e-9 * max(float((xs ** 2).sum()), 1.0)
        slope[ok] = sxy_i[ok] / sxx_i[ok, None]
    t_i = big_n * (ybar_i + slope * (big_xbar - xbar_i)[:, None])
    out: FloatArray = (m / n) * ((t_i - t_i.mean(axis=0)[None, :]) ** 2).sum(axis=0)
    return out


def project(shape: ShapeResult, source: SourceMap, dtype: np.dtype[Any], channels: int,
            family: int = 1) -> tuple[list[Projection], FloatArray]:
    """Each candidate's ``Projection`` and the predicted bytes of every present chunk
    (``(present chunks, candidates)``)."""
    grid, sample = shape.grid, shape.sample
    good = [(row, m) for row, m in sorted(shape.measures.items()) if m.error is None]
    rows = np.asarray([r for r, _ in good], np.int64)
    k = len(shape.candidates)
    y = np.asarray([m.sizes for _, m in good], np.float64).reshape(len(good), k)
    x_all = grid.x
    x = x_all[rows] if len(rows) else np.zeros(0)
    strat = grid.stratum[rows] if len(rows) else np.zeros(0, np.int64)
    pop = np.bincount(grid.stratum, minlength=grid.strata)
    totals = np.zeros(k)
    var = np.zeros(k)
    predicted = np.zeros((grid.present_chunks, k))
    df_den = np.zeros(k)  # Satterthwaite's degrees of freedom: var^2 / df_den
    for h in range(grid.strata):
        members = np.flatnonzero(grid.stratum == h)
        sel = strat == h
        n_h, big_n = int(sel.sum()), int(pop[h])
        if big_n == 0:
            continue
        if n_h == 0:  # every drawn chunk of the stratum failed to read: the overall mean
            sel = np.ones(len(rows), np.bool_)
            n_h = int(sel.sum())
            if n_h == 0:
                continue
        ys, xs = y[sel], x[sel]
        big_xbar = float(x_all[members].mean())
        slope, ybar, xbar = _fit(xs, ys, REGRESSION and not grid.by_position)
        totals += big_n * (ybar + slope * (big_xbar - xbar))
        predicted[members] = np.maximum(
            ybar[None, :] + (x_all[members, None] - xbar) * slope[None, :], 0.0)
        if 1 < n_h < big_n:
            part = (1 - n_h / big_n) * _jackknife(xs, ys, big_n, big_xbar,
                                                  REGRESSION and not grid.by_position)
            var += part
            df_den += part ** 2 / (n_h - 1)
    if len(rows):
        predicted[rows] = y  # measured where sampled
    exact = sample.exhaustive
    c = grid.chunk_shape
    raw_bytes = int(np.prod([grid.hi[a] - grid.lo[a] for a in range(3)])) * channels \
        * dtype.itemsize
    measured = [m for _, m in good]
    voxels = sum(m.voxels for m in measured) * channels
    vbytes = sum(m.voxel_bytes for m in measured)
    lo = min((m.lo for m in measured), default=0.0)
    hi = max((m.hi for m in measured), default=0.0)
    peak = (float(np.iinfo(dtype).max) - float(np.iinfo(dtype).min)) if dtype.kind in "iu" \
        else hi - lo
    # Bonferroni: each interval at 1 - 0.05 / family, so that all of a run's hold at once.
    level = 1 - (1 - CONFIDENCE) / (2 * max(1, family))
    out: list[Projection] = []
    for j, cand in enumerate(shape.candidates):
        per_unit = cand.target.chunks_per_unit(c, grid.dims)
        units, present_in_units = grid.units(per_unit)
        n_unit = int(np.prod(per_unit))
        fill_chunks = units * n_unit - present_in_units if cand.target.stores_fill_chunks else 0
        overhead = (units * cand.target.unit_overhead(c, cand.encoding, grid.dims)
                    + (cand.target.fixed_overhead if units else 0))
        fill_bytes = int(fill_chunks * int(shape.fill_sizes[j]))
        payload = float(totals[j]) + fill_bytes
        total = payload + overhead
        df = float(var[j]) ** 2 / float(df_den[j]) if df_den[j] > 0 else 1.0
        half = 0.0 if exact else t_quantile(level, max(1, int(df))) \
            * math.sqrt(max(float(var[j]), 0.0))
        enc_s = sum(int(m.encode_ns[j]) for m in measured) / 1e9
        dec_s = sum(int(m.decode_ns[j]) for m in measured) / 1e9
        sq = sum(float(m.sq_error[j]) for m in measured)
        mx = max((float(m.max_error[j]) for m in measured), default=0.0)
        rmse = math.sqrt(sq / voxels) if voxels else 0.0
        psnr = (20 * math.log10(peak) - 10 * math.log10(rmse ** 2)) if rmse > 0 and peak > 0 \
            else math.inf
        out.append(Projection(
            cand, total, (max(0.0, total - half), total + half), payload, overhead, raw_bytes,
            source.stored_bytes, vbytes / 1e6 / enc_s if enc_s > 0 else math.inf,
            vbytes / 1e6 / dec_s if dec_s > 0 else math.inf, mx, rmse, psnr, len(good),
            grid.present_chunks, grid.total_chunks, units,
            cand.target.sharding(c, grid.dims)))
    return out, predicted


__all__ = ["Projection", "ShapeResult", "project", "t95", "t_quantile", "CONFIDENCE"]
