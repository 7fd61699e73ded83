"""The comparison job: structure first, then every chunk, on a small thread pool.

(Over 600 lines: the structure checks, the unit plans and the per-unit passes share one
summary and its findings; the seam to split along is ``unit_plans`` and what follows it.)

``CompareJob(a, b)`` opens both volumes through the format registry (any two formats: a WKW
mag against its zarr3 or N5 conversion), checks their structure (voxel type, channels, chunk
and storage-unit geometry, encodings, extents, which storage units exist), then compares every
storage unit of A's grid that either volume fills, chunk by chunk:

* when the chunk shapes agree, chunk against chunk (``blocks``): B's chunk is found wherever B
  stores it (``Volume.locate``), and chunks whose stored bytes are equal under the same
  encoding are equal without decoding;
* otherwise voxel against voxel through box reads, binned into A's chunks (``voxels``).

The work is split per storage unit of A (runs of a large unit's chunks, or several small units,
of about ``CHUNK_BYTES`` decoded bytes per task) and handed to ``workers`` threads (decoding,
reads and memcmp release the GIL).  Results stream out through callbacks as the tasks finish,
in a fixed order (units by z, y, x; chunks by their index in the unit).  When chunks differ, a
few are sampled to name the usual conversion bugs (``diagnose``).

Threads: construct on any thread.  ``run()`` works on the calling thread and returns the
``Summary``; ``start()`` runs the same on a background thread, ``wait()`` collects it.
``cancel()``, ``progress`` and ``summary`` may be called from any thread.  Callbacks
(``on_progress(done, total)``, ``on_block(BlockResult)``, ``on_finding(Finding)``,
``on_finished(Summary)``) are called on the thread that runs the job, never on a pool thread:
a GUI must hop to its own thread (a queued signal) before touching widgets.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numpy as np

from viewer.core.compare.background import BackgroundRun
from viewer.core.compare.blocks import ChunkOutcome, UnitPlan, compare_chunk
from viewer.core.compare.diagnose import diagnose
from viewer.core.compare.model import (
    DIFFERENCE,
    INFO,
    BlockResult,
    Box,
    Finding,
    Summary,
    Vec3,
)
from viewer.core.compare.sides import (
    SideInput,
    UnitChunks,
    VolumeSpec,
    codec_signature,
    extent_box,
    open_side,
    side_name,
    unit_name,
    units_present,
)
from viewer.core.compare.voxels import Slab, compare_slab
from viewer.format import (
    FileChangedError,
    FormatError,
    RemoteError,
    StorageUnit,
    Volume,
    is_url,
)

#: Decoded bytes per task: large enough that the thread hop is noise next to the work.
CHUNK_BYTES = 8 << 20
#: Tasks in flight per worker (bounds memory, keeps both cores busy).
IN_FLIGHT_PER_WORKER = 2

ProgressCallback = Callable[[int, int], None]
BlockCallback = Callable[[BlockResult], None]
FindingCallback = Callable[[Finding], None]
FinishedCallback = Callable[[Summary], None]

#: One piece of a task: a plan's chunk rows ``start:stop``, and whether it is the plan's last.
Piece = tuple[UnitPlan, int, int, bool]


def run_pieces(pieces: list[Piece]) -> list[ChunkOutcome]:
    """A task: compare each piece (any thread)."""
    return [compare_chunk(plan, start, stop) for plan, start, stop, _ in pieces]


@dataclass(frozen=True)
class UnitsTask:
    """A cluster task: compare A's storage units at ``positions`` with B (both named by
    ``VolumeSpec``: the worker opens them itself)."""

    a: VolumeSpec
    b: VolumeSpec
    positions: tuple[Vec3, ...]
    box: Box | None
    tolerance: float


#: What a cluster task sends back, in plan order: ``("finding", blocks skipped, Finding)`` or
#: ``("plan", name, A present, B absent, one_to_one, [ChunkOutcome, ...])``.
UnitsResult = list[tuple[Any, ...]]


def run_units(task: UnitsTask) -> UnitsResult:
    """Compare the units of ``task`` on whoever runs it (a Dask worker): summaries only (block
    results, findings), never voxels."""
    a, _ = open_side(task.a, "A")
    try:
        b, _ = open_side(task.b, "B")
        try:
            out: UnitsResult = []
            chunks_a = UnitChunks(a, task.box)
            for item in unit_plans(a, b, list(task.positions), chunks_a, task.tolerance):
                if isinstance(item, tuple):
                    out.append(("finding", item[0], item[1]))
                    continue
                try:
                    outcomes = [] if item.a is None and item.b_absent else \
                        [compare_chunk(item, 0, len(item.indices))]
                finally:
                    if item.a is not None:
                        a.done_with(item.a)
                    for u in item.b_units:
                        if u is not None:
                            b.done_with(u)
                out.append(("plan", item.name, item.a is not None, item.b_absent,
                            item.one_to_one, outcomes))
            return out
        finally:
            b.close()
    finally:
        a.close()


class CompareJob(BackgroundRun[Summary]):
    """Compare two volumes (paths, ``VolumeSpec``s or open ``Volume``s, any formats),
    optionally within a voxel ``box`` ``((x, y, z), (w, h, d))``, counting
    ``|A - B| > tolerance`` as different."""

    thread_name = "wkw-compare"

    def __init__(self, a: SideInput, b: SideInput, box: Box | None = None,
                 tolerance: float = 0.0, workers: int = 2,
                 on_progress: ProgressCallback | None = None,
                 scheduler: str | None = None,
                 on_block: BlockCallback | None = None,
                 on_finding: FindingCallback | None = None,
                 on_finished: FinishedCallback | None = None) -> None:
        if tolerance < 0:
            raise ValueError(f"tolerance must be non-negative, not {tolerance}")
        if box is not None and (min(box[1]) <= 0 or min(box[0]) < 0):
            raise ValueError(f"box must have a non-negative offset and a positive size: {box}")
        self._a_in, self._b_in = a, b
        self.box = box
        self.tolerance = float(tolerance)
        self.workers = max(1, int(workers))
        self.on_progress = on_progress
        self.on_block = on_block
        self.on_finding = on_finding
        self.on_finished = on_finished
        #: ``tcp://HOST:PORT`` or ``local:N``: the units are compared on a Dask cluster.
        self.scheduler = scheduler
        self._runner: Any = None
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._done = 0
        self._total = 0
        super().__init__()
        #: The chunk shapes differ: compare through box reads (``voxels``).
        self._by_voxels = False
        self._chunks_a: UnitChunks | None = None
        self.summary = Summary(side_name(a), side_name(b), box, self.tolerance)

    # -- control (any thread) -----------------------------------------------------------------
    def cancel(self) -> None:
        """Stop after the tasks already running; the summary says ``cancelled``."""
        self._cancel.set()
        runner = self._runner
        if runner is not None:
            runner.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def progress(self) -> tuple[int, int]:
        """``(blocks done, blocks in all)``."""
        with self._lock:
            return self._done, self._total

    # -- the work (one thread) ----------------------------------------------------------------
    def run(self) -> Summary:
        """Compare on the calling thread (plus the worker pool) and return the summary.
        Raises ``FormatError`` or ``OSError`` when either volume cannot be opened."""
        started = time.perf_counter()
        vol_a, close_a = open_side(self._a_in, "A")
        try:
            vol_b, close_b = open_side(self._b_in, "B")
        except BaseException:
            if close_a:
                vol_a.close()
            raise
        try:
            positions = self._structure(vol_a, vol_b)
            if self.summary.comparable:
                if self._by_voxels:
                    self._compare_voxels(vol_a, vol_b, positions)
                elif self.scheduler is not None:
                    self._compare_on_cluster(positions)
                else:
                    self._compare(vol_a, vol_b, positions)
                data_mismatches = [r for r in self.summary.mismatching_blocks if r.error is None]
                if data_mismatches and not self.cancelled:
                    for finding in diagnose(vol_a, vol_b, data_mismatches, self.tolerance):
                        self._add_finding(finding)
        finally:
            if close_a:
                vol_a.close()
            if close_b:
                vol_b.close()
        self.summary.cancelled = self.cancelled
        self.summary.elapsed = time.perf_counter() - started
        if self.on_finished is not None:
            self.on_finished(self.summary)
        return self.summary

    def _add_finding(self, finding: Finding) -> None:
        self.summary.structure.append(finding)
        if self.on_finding is not None:
            self.on_finding(finding)

    def _structure(self, a: Volume, b: Volume) -> list[Vec3]:
        """Compare the volumes' geometry and unit lists; return A's unit positions to
        compare."""
        s = self.summary
        s.block_len = int(a.chunk_shape[0])
        s.chunk_shape = (int(a.chunk_shape[0]), int(a.chunk_shape[1]), int(a.chunk_shape[2]))
        if a.dtype != b.dtype:
            s.comparable = False
            self._add_finding(Finding("voxel_type", DIFFERENCE,
                                      f"voxel type differs: A {a.dtype.name}, B {b.dtype.name}",
                                      {"a": a.dtype.name, "b": b.dtype.name}))
        if a.num_channels != b.num_channels:
            s.comparable = False
            self._add_finding(Finding(
                "num_channels", DIFFERENCE,
                f"channels differ: A {a.num_channels}, B {b.num_channels}",
                {"a": a.num_channels, "b": b.num_channels}))
        if tuple(a.chunk_shape) != tuple(b.chunk_shape):
            self._by_voxels = True
            self._geometry_finding("block_len", "chunk_shape", a.chunk_shape, b.chunk_shape,
                                   "chunks do not line up: compared voxel by voxel, results "
                                   "in A's blocks")
        if tuple(a.unit_shape) != tuple(b.unit_shape):
            why = ("storage units differ: compared voxel by voxel, results in A's blocks"
                   if self._by_voxels else
                   "storage units differ: each block is compared with B's block at the same "
                   "place, wherever B stores it")
            self._geometry_finding("file_len", "unit_shape", a.unit_shape, b.unit_shape, why)
        info_a, info_b = a.info(), b.info()
        if info_a.format != info_b.format:
            self._add_finding(Finding(
                "format", INFO, f"format differs: A {info_a.format}, B {info_b.format} "
                "(compared by voxels)", {"a": info_a.format, "b": info_b.format}))
        if info_a.compression != info_b.compression:
            self._add_finding(Finding(
                "block_type", INFO, f"encoding differs: A {info_a.compression}, "
                f"B {info_b.compression} (compared by voxels)",
                {"a": info_a.compression, "b": info_b.compression}))
        # A side whose store cannot list (plain HTTP) is walked over its whole unit grid:
        # each unit there is opened, and is absent only when its store says so (a 404).
        grid_a = units_present(a) if a.lists_units else list(a.grid_units())
        grid_b = units_present(b) if b.lists_units else list(b.grid_units())
        ext_a = extent_box(a, grid_a)
        ext_b = extent_box(b, grid_b)
        # The units of a grid walked whole say nothing of the extent; a declared one does.
        known = all(v.extent_declared or v.lists_units for v in (a, b))
        if ext_a != ext_b and known:
            self._add_finding(Finding(
                "extent", INFO, f"extent differs: A {_fmt_box(ext_a)}"
                f", B {_fmt_box(ext_b)}",
                {"a": _box_json(ext_a), "b": _box_json(ext_b)}))
        if not s.comparable:
            return []
        side = a.unit_len_vx
        cells = set(grid_a)
        if tuple(b.unit_len_vx) == tuple(side):
            cells.update(grid_b)
        else:  # B's units, as cells of A's unit grid
            side_b = b.unit_len_vx
            for pb in grid_b:
                c_lo = [pb[i] * side_b[i] // side[i] for i in range(3)]
                c_hi = [((pb[i] + 1) * side_b[i] - 1) // side[i] for i in range(3)]
                cells.update((x, y, z) for z in range(c_lo[2], c_hi[2] + 1)
                             for y in range(c_lo[1], c_hi[1] + 1)
                             for x in range(c_lo[0], c_hi[0] + 1))
        positions = sorted(cells, key=lambda p: (p[2], p[1], p[0]))
        if self.box is None and a.extent_declared and b.extent_declared \
                and ext_a is not None and ext_b is not None:
            # Both extents are the data (array shapes, layers' boxes): voxels past them
            # (a unit's or an allocated array's padding) are no one's data.
            self.box = _union(ext_a, ext_b)
        if self.box is not None:
            (bx, by, bz), (bw, bh, bd) = self.box
            lo = (bx // side[0], by // side[1], bz // side[2])
            hi = ((bx + bw - 1) // side[0], (by + bh - 1) // side[1], (bz + bd - 1) // side[2])
            positions = [p for p in positions if all(lo[i] <= p[i] <= hi[i] for i in range(3))]
        self._chunks_a = UnitChunks(a, self.box)
        total = sum(self._chunks_a.count(p) for p in positions)
        with self._lock:
            self._total = total
        s.blocks_total = total
        return positions

    def _geometry_finding(self, cube_kind: str, kind: str, va: Vec3, vb: Vec3,
                          why: str) -> None:
        """A chunk or unit shape that differs: as ``block_len``/``file_len`` (one number per
        side) when both are cubes, else as ``chunk_shape``/``unit_shape`` (x, y, z)."""
        if len(set(va)) == 1 and len(set(vb)) == 1:
            self._add_finding(Finding(cube_kind, INFO,
                                      f"{cube_kind} differs: A {va[0]}, B {vb[0]} ({why})",
                                      {"a": int(va[0]), "b": int(vb[0])}))
        else:
            self._add_finding(Finding(
                kind, INFO, f"{kind} differs: A {'x'.join(map(str, va))}, "
                f"B {'x'.join(map(str, vb))} ({why})", {"a": list(va), "b": list(vb)}))

    # -- chunk against chunk ----------------------------------------------------------------------
    def _plans(self, a: Volume, b: Volume, positions: list[Vec3]
               ) -> Iterator[UnitPlan | tuple[int, Finding]]:
        assert self._chunks_a is not None
        return unit_plans(a, b, positions, self._chunks_a, self.tolerance)

    def _compare(self, a: Volume, b: Volume, positions: list[Vec3]) -> None:
        per_task = max(1, CHUNK_BYTES // max(1, a.chunk_nbytes))
        pending: deque[tuple[list[Piece], Future[list[ChunkOutcome]]]] = deque()
        open_plans: dict[int, UnitPlan] = {}
        one_sided: dict[int, bool] = {}  # plan -> whether the present side differs from fill
        limit = self.workers * IN_FLIGHT_PER_WORKER

        def release(plan: UnitPlan) -> None:
            if plan.a is not None:
                a.done_with(plan.a)
            for u in plan.b_units:
                if u is not None:
                    b.done_with(u)

        def collect() -> None:
            pieces, future = pending.popleft()
            for (plan, _, _, last), outcome in zip(pieces, future.result(), strict=True):
                self._take(outcome)
                missing = plan.one_to_one and (plan.a is None or plan.b_absent)
                if missing:
                    one_sided[id(plan)] = one_sided.get(id(plan), False) \
                        or outcome.any_difference
                if last:
                    release(open_plans.pop(id(plan)))
                    if missing:
                        self._missing_file(plan, one_sided.pop(id(plan), False))

        def tasks() -> Iterator[list[Piece]]:
            batch: list[Piece] = []
            size = 0
            for item in self._plans(a, b, positions):
                if isinstance(item, tuple):
                    skipped, finding = item
                    self._add_finding(finding)
                    self._advance(skipped)
                    continue
                if item.a is None and item.b_absent:
                    release(item)
                    continue
                open_plans[id(item)] = item
                n = len(item.indices)
                for start in range(0, n, per_task):
                    stop = min(n, start + per_task)
                    batch.append((item, start, stop, stop >= n))
                    size += stop - start
                    if size >= per_task:
                        yield batch
                        batch, size = [], 0
            if batch:
                yield batch

        with ThreadPoolExecutor(self.workers, thread_name_prefix="wkw-compare-pool") as pool:
            try:
                for batch in tasks():
                    if self.cancelled:
                        break
                    while len(pending) >= limit:
                        collect()
                    pending.append((batch, pool.submit(run_pieces, batch)))
                while pending and not self.cancelled:
                    collect()
            finally:
                for _, future in pending:
                    future.cancel()
                wait([future for _, future in pending])  # before the units are released
                pending.clear()
                for plan in open_plans.values():
                    release(plan)
                open_plans.clear()

    def _compare_on_cluster(self, positions: list[Vec3]) -> None:
        """``_compare`` on a Dask cluster: tasks of a few of A's units (``run_units``), their
        results taken in unit order, so the summary is the local run's."""
        from viewer.core.cluster import ClusterRunner, SchedulerError, chunked, units_per_task

        specs = []
        for side in (self._a_in, self._b_in):
            if isinstance(side, Volume):
                raise SchedulerError("a cluster compares volumes named by path, not open ones")
            specs.append(side if isinstance(side, VolumeSpec) else VolumeSpec(os.fspath(side)))
        spec_a, spec_b = (VolumeSpec(os.path.abspath(s.path) if not is_url(s.path) else s.path,
                                     s.layer, s.mag) for s in specs)
        done: dict[int, UnitsResult] = {}
        next_task = 0
        with ClusterRunner(self.scheduler) as runner:  # type: ignore[arg-type]
            self._runner = runner
            try:
                runner.check_paths([spec_a.path, spec_b.path])
                per_task = units_per_task(len(positions), runner.workers)
                tasks = [UnitsTask(spec_a, spec_b, tuple(part), self.box, self.tolerance)
                         for part in chunked(positions, per_task)]
                for k, result in runner.map(run_units, tasks, key="compare"):
                    done[k] = result
                    while next_task in done:
                        self._take_units(done.pop(next_task))
                        next_task += 1
                    if self.cancelled:
                        break
            finally:
                self._runner = None

    def _take_units(self, result: UnitsResult) -> None:
        for item in result:
            if item[0] == "finding":
                self._add_finding(item[2])
                self._advance(item[1])
                continue
            _, name, a_present, b_absent, one_to_one, outcomes = item
            differs = False
            for outcome in outcomes:
                self._take(outcome)
                differs = differs or outcome.any_difference
            if one_to_one and outcomes and (not a_present or b_absent):
                self._missing_plan(name, a_present, differs)

    # -- voxel against voxel --------------------------------------------------------------------
    def _slabs(self, a: Volume, positions: list[Vec3]) -> Iterator[Slab]:
        """Slabs of A's chunks (one chunk layer in z, as many rows in y as fit a task)
        covering the unit cells, cut to the box."""
        assert self._chunks_a is not None
        c = a.chunk_shape
        row_bytes = a.unit_len_vx[0] * c[1] * c[2] * a.dtype.itemsize * a.num_channels
        rows = max(1, CHUNK_BYTES // max(1, row_bytes))
        for pos in positions:
            _, local, _ = self._chunks_a.of(pos)
            if not len(local):
                continue
            lo = local.min(axis=0).tolist()
            hi = (local.max(axis=0) + 1).tolist()
            name = unit_name(a, pos)
            for bz in range(lo[2], hi[2]):
                for by in range(lo[1], hi[1], rows):
                    yield Slab(name, pos, (lo[0], by, bz), (hi[0], min(by + rows, hi[1]), bz + 1))

    def _compare_voxels(self, a: Volume, b: Volume, positions: list[Vec3]) -> None:
        pending: deque[Future[ChunkOutcome]] = deque()
        limit = self.workers * IN_FLIGHT_PER_WORKER
        with ThreadPoolExecutor(self.workers, thread_name_prefix="wkw-compare-pool") as pool:
            try:
                for slab in self._slabs(a, positions):
                    if self.cancelled:
                        break
                    while len(pending) >= limit:
                        self._take(pending.popleft().result())
                    pending.append(pool.submit(compare_slab, a, b, slab, self.box,
                                               self.tolerance))
                while pending and not self.cancelled:
                    self._take(pending.popleft().result())
            finally:
                for future in pending:
                    future.cancel()
                wait(list(pending))
                pending.clear()

    # -- results ----------------------------------------------------------------------------------
    def _take(self, outcome: ChunkOutcome) -> None:
        s = self.summary
        for r in outcome.results:
            s.mismatching_blocks.append(r)
            s.voxels_different += r.voxels_different or 0
            if self.on_block is not None:
                self.on_block(r)
        s.max_abs_diff = max(s.max_abs_diff, outcome.max_abs_diff)
        s.blocks_compared += outcome.compared
        self._advance(outcome.compared)

    def _advance(self, blocks: int) -> None:
        with self._lock:
            self._done += blocks
            done, total = self._done, self._total
        if self.on_progress is not None:
            self.on_progress(done, total)

    def _missing_file(self, plan: UnitPlan, differs: bool) -> None:
        self._missing_plan(plan.name, plan.a is not None, differs)

    def _missing_plan(self, name: str, a_present: bool, differs: bool) -> None:
        present, absent = ("A", "B") if a_present else ("B", "A")
        where = "" if self.summary.box is None else " inside the box"
        if differs:
            message = (f"{name} is absent from {absent} (reads as zeros) but {present}'s "
                       f"file is not all zeros{where}")
        else:
            message = (f"{name} is absent from {absent} (reads as zeros); {present}'s file "
                       f"is all zeros{where}, so the voxels agree")
        self._add_finding(Finding("file_missing", DIFFERENCE if differs else INFO, message,
                                  {"file": name, "missing_in": absent,
                                   "present_all_zeros": not differs}))


def compare(a: SideInput, b: SideInput, box: Box | None = None, tolerance: float = 0.0,
            workers: int = 2, **callbacks: Any) -> Summary:
    """Compare two volumes on the calling thread and return the summary."""
    return CompareJob(a, b, box, tolerance, workers, **callbacks).run()


def unit_plans(a: Volume, b: Volume, positions: Iterable[Vec3], chunks_a: UnitChunks,
               tolerance: float) -> Iterator[UnitPlan | tuple[int, Finding]]:
    """A ``UnitPlan`` per storage-unit position of A (chunks lining up on both sides), or
    ``(blocks skipped, finding)`` for a unit that cannot be opened at all.  The units a plan
    opened are released with ``a.done_with`` / ``b.done_with`` by whoever runs it.  This is
    the unit of distribution: any set of A's unit positions can be planned and compared on
    its own (a worker opens both volumes by ``VolumeSpec`` and calls this)."""
    ua = np.asarray(a.unit_shape, dtype=np.int64)
    side = a.unit_len_vx
    one_to_one = tuple(a.unit_shape) == tuple(b.unit_shape)
    same_codec = codec_signature(a) == codec_signature(b)
    for pos in positions:
        indices, local, clips = chunks_a.of(pos)
        if not len(indices):
            continue
        name = unit_name(a, pos)
        try:
            unit_a = a.open_unit(pos)
        except (FormatError, OSError) as exc:
            yield len(indices), _unreadable("A", name, exc)
            continue
        if one_to_one:  # the same unit grid: B's unit at the same place holds these chunks
            keys = np.asarray([pos], dtype=np.int64)
            inverse = np.zeros(len(indices), dtype=np.int64)
            idx_b = np.asarray(b.chunk_index(local), dtype=np.int64)
        else:
            coords = np.asarray(pos, dtype=np.int64) * ua + local
            units_b, idx_b = b.locate(coords)
            keys, inverse = np.unique(units_b, axis=0, return_inverse=True)
            inverse = np.asarray(inverse, dtype=np.int64).reshape(-1)
        b_units: list[StorageUnit | None] = []
        keep = np.ones(len(indices), dtype=bool)
        for g, key in enumerate(keys.tolist()):
            ub = (int(key[0]), int(key[1]), int(key[2]))
            try:
                b_units.append(b.open_unit(ub))
            except (FormatError, OSError) as exc:
                b_units.append(None)
                rows = inverse == g
                keep &= ~rows
                yield int(rows.sum()), _unreadable("B", unit_name(b, ub), exc)
        if not keep.all():
            if not keep.any():
                if unit_a is not None:
                    a.done_with(unit_a)
                for u in b_units:
                    if u is not None:
                        b.done_with(u)
                continue
            indices, local, inverse, idx_b = (indices[keep], local[keep], inverse[keep],
                                              idx_b[keep])
        yield UnitPlan(name, pos, (pos[0] * side[0], pos[1] * side[1], pos[2] * side[2]),
                       indices, local, unit_a, b_units, inverse,
                       np.asarray(idx_b, dtype=np.int64), a.chunk_shape, a.dtype,
                       a.num_channels, tolerance, same_codec, a.fill_value, b.fill_value,
                       clips, one_to_one)


def _unreadable(label: str, name: str, exc: BaseException) -> Finding:
    """A unit that does not open: a difference (never equal); one that could not be fetched
    (``RemoteError``) or kept changing (``FileChangedError``) says its chunks were not
    checked."""
    unchecked = isinstance(exc, (RemoteError, FileChangedError))
    what = "not checked, it could not be fetched" if isinstance(exc, RemoteError) \
        else "not checked, it kept changing" if unchecked else "cannot be read"
    return Finding("file_unreadable", DIFFERENCE, f"{label}: {name} {what}: {exc}",
                   {"file": name, "side": label, "error": str(exc),
                    "not_checked": unchecked})


def _union(a: Box, b: Box) -> Box:
    lo = [min(a[0][i], b[0][i]) for i in range(3)]
    hi = [max(a[0][i] + a[1][i], b[0][i] + b[1][i]) for i in range(3)]
    return ((lo[0], lo[1], lo[2]), (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))


def _fmt_box(box: Box | None) -> str:
    if box is None:
        return "empty (no data files)"
    (x, y, z), (w, h, d) = box
    return f"offset ({x}, {y}, {z}) size {w}x{h}x{d}"


def _box_json(box: Box | None) -> list[int] | None:
    return None if box is None else [*box[0], *box[1]]
