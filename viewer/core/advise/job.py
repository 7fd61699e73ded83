"""The advise run: survey, sample, re-encode, project, recommend.

``run_advice(volume, request, emit, cancelled)`` does the whole run and returns a ``Report``;
it emits ``AdviseProgress`` messages as it goes (the survey's units, then batches of measured
chunks with their per-candidate sizes, so an exhaustive run streams its per-chunk results).
Chunks are re-encoded on ``request.threads`` worker threads of a pool the run owns and closes
(encoders release the GIL), or with ``request.scheduler`` on a Dask cluster
(``viewer.core.cluster``) in tasks of a few dozen chunks, each task opening the volume again
by path (``Reopen``).  ``AdviseWork`` is the same run as a ``viewer.core.jobs`` work, for a
child process (the window's tab).

Threads: ``run_advice`` on one thread (it owns its pool); ``emit`` is called on that thread;
``cancelled`` may be set from any thread and stops the run at the next batch
(``AdviseCancelled``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.advise.catalogue import Skipped, candidates, default_specs
from viewer.core.advise.measure import ChunkMeasure, fill_chunk_sizes, measure_chunks
from viewer.core.advise.projection import Projection, ShapeResult, project
from viewer.core.advise.recommend import Recommendation, pareto_front, recommend
from viewer.core.advise.sampling import SourceMap, TargetGrid, survey
from viewer.core.advise.targets import DEFAULT_SHARD_VX, Candidate
from viewer.core.inspect.scan import Reopen
from viewer.core.jobs import Emit, NotHere
from viewer.format import FormatError, Volume

Vec3 = tuple[int, int, int]

#: Chunks per task of the thread pool (a task is a few milliseconds to a second of work).
BATCH_CHUNKS = 8
#: Chunks per task on a cluster (the scheduler's cost per task stays small next to it).
CLUSTER_BATCH_CHUNKS = 64


class AdviseCancelled(Exception):  # noqa: N818 - an outcome, not a failure
    """The run was cancelled before it finished."""


@dataclass(frozen=True)
class AdviseRequest:
    """What to try and how: ``specs`` (``--codecs`` entries; None: the default set), extra
    ``chunk_shapes`` (the volume's own always comes first), the sample ``fraction`` or
    ``exhaustive``, the ``seed``, a ``box`` (offset, size), the WKW file / zarr3 shard side
    ``shard_vx``, whether the layer is a ``segmentation``, the recommendation's decode target
    and whether it may pick a lossy candidate, the worker ``threads`` (0: one per core) and a
    Dask ``scheduler`` (with ``reopen``, how its workers open the volume)."""

    specs: tuple[str, ...] | None = None
    chunk_shapes: tuple[Vec3, ...] = ()
    fraction: float = 0.05
    exhaustive: bool = False
    seed: int | None = None
    box: tuple[Vec3, Vec3] | None = None
    shard_vx: int = DEFAULT_SHARD_VX
    segmentation: bool = False
    min_decode_mb_s: float | None = None
    allow_lossy: bool = False
    threads: int = 0
    scheduler: str | None = None
    reopen: Reopen | None = None


@dataclass(frozen=True)
class ChunkRow:
    """One measured chunk as it streams: chunk shape index, its position in that grid, its
    bytes today, each of that shape's candidates' stored bytes (``None`` when it could not
    be read)."""

    shape: int
    grid: Vec3
    current: float
    sizes: tuple[int, ...] | None


@dataclass(frozen=True)
class AdviseProgress:
    """``stage`` ("survey": units read so far; "measure": chunks re-encoded of ``total``),
    and the chunks measured since the last message."""

    stage: str
    done: int
    total: int | None
    rows: tuple[ChunkRow, ...] = ()


@dataclass(frozen=True)
class ShapeMap:
    """Per present chunk of one chunk shape: position, today's bytes and each candidate's
    predicted bytes (``candidates`` index into the report's projections): the Map's data."""

    chunk_shape: Vec3
    grid: npt.NDArray[np.int64]
    current: npt.NDArray[np.float64]
    predicted: npt.NDArray[np.float32]
    sampled: npt.NDArray[np.bool_]
    candidates: tuple[int, ...]


@dataclass
class Report:
    """Everything a run found (``to_json`` is the ``--json`` document)."""

    path: str
    format: str
    encoding: str
    stored_bytes: int
    dtype: str
    channels: int
    extent: tuple[Vec3, Vec3]
    chunk_shape: Vec3
    projections: list[Projection]
    recommendation: Recommendation
    pareto: list[int]
    skipped: list[Skipped]
    maps: list[ShapeMap]
    sampled_chunks: int
    total_chunks: int
    present_chunks: int
    exhaustive: bool
    fraction: float
    seed: int | None
    problems: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path, "format": self.format,
            "current": {"encoding": self.encoding, "stored_bytes": self.stored_bytes},
            "dtype": self.dtype, "num_channels": self.channels,
            "extent": {"lo": list(self.extent[0]), "hi": list(self.extent[1])},
            "chunk_shape": list(self.chunk_shape),
            "sampled_chunks": self.sampled_chunks, "total_chunks": self.total_chunks,
            "present_chunks": self.present_chunks,
            "exhaustive": self.exhaustive, "sample": None if self.exhaustive else self.fraction,
            "seed": self.seed,
            "candidates": [p.to_json() for p in self.projections],
            "pareto": self.pareto,
            "recommended": self.recommendation.to_json(self.projections),
            "skipped": [s.to_json() for s in self.skipped],
            "problems": self.problems,
            "seconds": round(self.elapsed, 3),
        }


def _threads(n: int) -> int:
    return n if n > 0 else max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class MeasureShare:
    """A cluster task: chunks ``grids`` of one shape, measured on a worker that opens the
    volume itself."""

    reopen: Reopen
    chunk_shape: Vec3
    lo: Vec3
    hi: Vec3
    candidates: tuple[Candidate, ...]
    grids: tuple[Vec3, ...]


def measure_share(share: MeasureShare) -> list[ChunkMeasure]:
    """The task a cluster worker runs (results are sizes and times, never voxels)."""
    volume = share.reopen.open()
    try:
        return measure_chunks(volume, share.grids, share.chunk_shape, share.lo, share.hi,
                              share.candidates)
    finally:
        volume.close()


def run_advice(volume: Volume, request: AdviseRequest, emit: Emit | None = None,
               cancelled: threading.Event | None = None) -> Report:
    """The whole run (see the module docstring).  Raises ``ValueError`` for a request that
    does not fit the volume (a box outside it, a bad candidate), ``AdviseCancelled``."""
    started = time.perf_counter()
    stop = cancelled or threading.Event()
    say: Emit = emit if emit is not None else (lambda _m: None)

    def units_read(k: int) -> None:
        if k % 16 == 0:
            say(AdviseProgress("survey", k, None))

    source = survey(volume, request.box, stop.is_set, units_read)
    if stop.is_set():
        raise AdviseCancelled()
    dtype = np.dtype(volume.dtype)
    shapes = [tuple(volume.chunk_shape)] + [s for s in request.chunk_shapes
                                           if s != tuple(volume.chunk_shape)]
    specs = list(request.specs) if request.specs else default_specs(dtype, request.segmentation)
    cands, skipped = candidates(specs, [(s[0], s[1], s[2]) for s in shapes], dtype,
                                volume.num_channels, request.segmentation, request.shard_vx)
    results: list[ShapeResult] = []
    for shape in shapes:
        vec: Vec3 = (shape[0], shape[1], shape[2])
        mine = [c for c in cands if c.chunk_shape == vec]
        if not mine:
            continue
        grid = TargetGrid.of(source, vec)
        sample = grid.sample(request.fraction, request.seed, request.exhaustive)
        results.append(ShapeResult(grid, sample, mine, fill_chunk_sizes(volume, vec, mine)))
    total = sum(int(r.sample.rows.shape[0]) for r in results)
    done = 0
    say(AdviseProgress("measure", 0, total))
    for index, rows, measures in _measured(volume, results, request, stop):
        r = results[index]
        streamed = []
        for row, m in zip(rows, measures, strict=True):
            r.measures[int(row)] = m
            streamed.append(ChunkRow(index, m.grid, float(r.grid.x[int(row)]),
                                     None if m.error is not None
                                     else tuple(int(v) for v in m.sizes)))
        done += len(rows)
        say(AdviseProgress("measure", done, total, tuple(streamed)))
    if stop.is_set():
        raise AdviseCancelled()
    return _report(volume, source, results, skipped, request, time.perf_counter() - started)


def _measured(volume: Volume, results: Sequence[ShapeResult], request: AdviseRequest,
              stop: threading.Event
              ) -> Iterator[tuple[int, npt.NDArray[np.int64], list[ChunkMeasure]]]:
    """``(shape index, rows, measures)`` per batch, in any order."""
    per_task = CLUSTER_BATCH_CHUNKS if request.scheduler else BATCH_CHUNKS
    jobs: list[tuple[int, npt.NDArray[np.int64]]] = []
    for index, r in enumerate(results):
        rows = r.sample.rows
        for start in range(0, len(rows), per_task):
            jobs.append((index, rows[start:start + per_task]))

    def grids_of(index: int, rows: npt.NDArray[np.int64]) -> tuple[Vec3, ...]:
        g = results[index].grid.grid[rows]
        return tuple((int(a), int(b), int(c)) for a, b, c in g.tolist())

    if request.scheduler:
        from viewer.core.cluster import ClusterRunner

        if request.reopen is None:
            raise ValueError("a run on a cluster needs to know how to open the volume again")
        reopen = request.reopen
        shares = []
        for index, rows in jobs:
            g = results[index].grid
            shares.append(MeasureShare(reopen, g.chunk_shape, g.lo, g.hi,
                                       tuple(results[index].candidates), grids_of(index, rows)))
        finished = threading.Event()
        with ClusterRunner(request.scheduler) as runner:
            runner.check_paths([reopen.path])
            watcher = threading.Thread(target=_cancel_when, args=(stop, finished, runner),
                                       name="advise-cancel", daemon=True)
            watcher.start()
            try:
                for k, measures in runner.map(measure_share, shares, key="advise"):
                    index, rows = jobs[k]
                    yield index, rows, measures
            finally:
                finished.set()
                watcher.join()
        return

    def task(index: int, rows: npt.NDArray[np.int64]) -> list[ChunkMeasure]:
        if stop.is_set():
            return []
        g = results[index].grid
        return measure_chunks(volume, grids_of(index, rows), g.chunk_shape, g.lo, g.hi,
                              results[index].candidates)

    threads = _threads(request.threads)
    with ThreadPoolExecutor(threads, thread_name_prefix="advise") as pool:
        pending: list[tuple[int, npt.NDArray[np.int64], Future[list[ChunkMeasure]]]] = []
        it = iter(jobs)
        try:
            while True:
                while len(pending) < 2 * threads:
                    nxt = next(it, None)
                    if nxt is None:
                        break
                    pending.append((nxt[0], nxt[1], pool.submit(task, *nxt)))
                if not pending or stop.is_set():
                    break
                index, rows, fut = pending.pop(0)
                measures = fut.result()
                if stop.is_set():
                    break
                yield index, rows, measures
        finally:
            stop_early = stop.is_set()
            for _, _, fut in pending:
                fut.cancel()
            if stop_early:
                pool.shutdown(wait=True, cancel_futures=True)


def _cancel_when(stop: threading.Event, finished: threading.Event, runner: Any) -> None:
    """Cancel the cluster's futures when the run is cancelled before it has ``finished`` (a
    watcher thread, ended by either)."""
    while not finished.is_set():
        if stop.wait(0.2):
            runner.cancel()
            return


def _report(volume: Volume, source: SourceMap, results: Sequence[ShapeResult],
            skipped: list[Skipped], request: AdviseRequest, elapsed: float) -> Report:
    dtype = np.dtype(volume.dtype)
    projections: list[Projection] = []
    maps: list[ShapeMap] = []
    problems = list(source.problems)
    family = sum(len(r.candidates) for r in results)
    for r in results:
        found, predicted = project(r, source, dtype, volume.num_channels, family)
        first = len(projections)
        projections.extend(found)
        sampled = np.zeros(r.grid.present_chunks, np.bool_)
        sampled[list(r.measures)] = True
        maps.append(ShapeMap(r.grid.chunk_shape, r.grid.grid, r.grid.x,
                             predicted.astype(np.float32), sampled,
                             tuple(range(first, len(projections)))))
        problems.extend(r.errors)
    rec = recommend(projections, request.min_decode_mb_s, request.allow_lossy)
    head = results[0] if results else None
    try:
        fmt = volume.format or volume.info().format
    except FormatError:
        fmt = "?"
    return Report(
        volume.path, fmt, source.encoding, source.stored_bytes, dtype.name,
        volume.num_channels, (source.lo, source.hi), tuple(volume.chunk_shape),  # type: ignore[arg-type]
        projections, rec, pareto_front(projections), skipped, maps,
        len(head.measures) if head else 0, head.grid.total_chunks if head else 0,
        head.grid.present_chunks if head else 0, request.exhaustive or bool(
            head and head.sample.exhaustive), request.fraction, request.seed, problems,
        elapsed)


@dataclass(frozen=True)
class AdviseWork:
    """The run as a ``viewer.core.jobs`` work (a child process): open the volume again
    (``NotHere`` when the child cannot: the parent runs it on its own volume), run, return
    the ``Report``."""

    reopen: Reopen
    request: AdviseRequest

    def __call__(self, emit: Emit, cancelled: threading.Event) -> Report:
        try:
            volume = self.reopen.open()
        except (FormatError, KeyError, OSError) as exc:
            raise NotHere(f"the child cannot open {self.reopen.path}: {exc}") from None
        try:
            return run_advice(volume, self.request, emit, cancelled)
        finally:
            volume.close()


def human_bytes(n: float) -> str:
    """``1.2 GiB``, ``312 KiB``, ``17 B``."""
    if not math.isfinite(n):
        return "?"
    for unit, div in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n:.0f} B"


__all__ = ["AdviseRequest", "AdviseProgress", "AdviseWork", "AdviseCancelled", "ChunkRow",
           "Report", "ShapeMap", "run_advice", "measure_share", "MeasureShare", "human_bytes"]
