"""The comparison job: structure first, then every block, on a small thread pool.

``CompareJob(a, b)`` opens both datasets, checks their structure (voxel type, channels, block
and file geometry, encodings, extents, which files exist), then compares every file position
present in either dataset, block by block, in chunks of megabytes handed to ``workers``
threads (lz4, file reads and memcmp release the GIL).  Results stream out through callbacks as
the chunks finish, in a fixed order (files by z, y, x; blocks by Morton index).  When blocks
differ, a few are sampled to name the usual conversion bugs (``diagnose``).

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
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.compare.background import BackgroundRun
from viewer.core.compare.blocks import ChunkOutcome, FilePlan, Side, compare_chunk
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
from viewer.core.compare.voxels import Slab, compare_slab
from viewer.format import FormatError, wkw
from viewer.format.wkw import morton

#: Decoded bytes per task: large enough that the thread hop is noise next to the work.
CHUNK_BYTES = 8 << 20
#: Tasks in flight per worker (bounds memory, keeps both cores busy).
IN_FLIGHT_PER_WORKER = 2

ProgressCallback = Callable[[int, int], None]
BlockCallback = Callable[[BlockResult], None]
FindingCallback = Callable[[Finding], None]
FinishedCallback = Callable[[Summary], None]


class CompareJob(BackgroundRun[Summary]):
    """Compare two WKW datasets (paths or open ``wkw.Dataset`` objects), optionally within a
    voxel ``box`` ``((x, y, z), (w, h, d))``, counting ``|A - B| > tolerance`` as different."""

    thread_name = "wkw-compare"

    def __init__(self, a: str | os.PathLike[str] | wkw.Dataset,
                 b: str | os.PathLike[str] | wkw.Dataset, box: Box | None = None,
                 tolerance: float = 0.0, workers: int = 2,
                 on_progress: ProgressCallback | None = None,
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
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._done = 0
        self._total = 0
        super().__init__()
        #: Block or file geometry differ: compare through box reads (``voxels``).
        self._by_voxels = False
        self.summary = Summary(_name(a), _name(b), box, self.tolerance)

    # -- control (any thread) -----------------------------------------------------------------
    def cancel(self) -> None:
        """Stop after the chunks already running; the summary says ``cancelled``."""
        self._cancel.set()

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
        Raises ``FormatError`` or ``OSError`` when either dataset cannot be opened."""
        started = time.perf_counter()
        ds_a, close_a = _open(self._a_in, "A")
        try:
            ds_b, close_b = _open(self._b_in, "B")
        except BaseException:
            if close_a:
                ds_a.close()
            raise
        try:
            positions = self._structure(ds_a, ds_b)
            if self.summary.comparable:
                if self._by_voxels:
                    self._compare_voxels(ds_a, ds_b, positions)
                else:
                    self._compare(ds_a, ds_b, positions)
                data_mismatches = [r for r in self.summary.mismatching_blocks if r.error is None]
                if data_mismatches and not self.cancelled:
                    for finding in diagnose(ds_a, ds_b, data_mismatches, self.tolerance):
                        self._add_finding(finding)
        finally:
            if close_a:
                ds_a.close()
            if close_b:
                ds_b.close()
        self.summary.cancelled = self.cancelled
        self.summary.elapsed = time.perf_counter() - started
        if self.on_finished is not None:
            self.on_finished(self.summary)
        return self.summary

    def _add_finding(self, finding: Finding) -> None:
        self.summary.structure.append(finding)
        if self.on_finding is not None:
            self.on_finding(finding)

    def _structure(self, a: wkw.Dataset, b: wkw.Dataset) -> list[Vec3]:
        """Compare headers and file lists; return the file positions to compare."""
        ha, hb = a.header, b.header
        s = self.summary
        s.block_len = ha.block_len
        if ha.voxel_type_code != hb.voxel_type_code:
            s.comparable = False
            self._add_finding(Finding("voxel_type", DIFFERENCE,
                                      f"voxel type differs: A {ha.dtype.name}, B {hb.dtype.name}",
                                      {"a": ha.dtype.name, "b": hb.dtype.name}))
        if ha.num_channels != hb.num_channels:
            s.comparable = False
            self._add_finding(Finding("num_channels", DIFFERENCE,
                                      f"channels differ: A {ha.num_channels}, B {hb.num_channels}",
                                      {"a": ha.num_channels, "b": hb.num_channels}))
        for name in ("block_len", "file_len"):
            va, vb = getattr(ha, name), getattr(hb, name)
            if va != vb:
                self._by_voxels = True
                self._add_finding(Finding(
                    name, INFO, f"{name} differs: A {va}, B {vb} (blocks do not line up: "
                    "compared voxel by voxel, results in A's blocks)", {"a": va, "b": vb}))
        if ha.block_type != hb.block_type:
            self._add_finding(Finding(
                "block_type", INFO, f"encoding differs: A {ha.block_type_name}, "
                f"B {hb.block_type_name} (compared by voxels)",
                {"a": ha.block_type_name, "b": hb.block_type_name}))
        grid_a = _file_grid(a)
        grid_b = _file_grid(b)
        ext_a = _extent(grid_a, ha.file_len_vx)
        ext_b = _extent(grid_b, hb.file_len_vx)
        if ext_a != ext_b:
            self._add_finding(Finding(
                "extent", INFO, f"extent differs (union of the files present): A {_fmt_box(ext_a)}"
                f", B {_fmt_box(ext_b)}",
                {"a": _box_json(ext_a), "b": _box_json(ext_b)}))
        if not s.comparable:
            return []
        side = ha.file_len_vx
        cells = set(grid_a)
        if self._by_voxels:  # B's files, as cells of A's file grid
            side_b = hb.file_len_vx
            for pb in grid_b:
                c_lo = [pb[i] * side_b // side for i in range(3)]
                c_hi = [((pb[i] + 1) * side_b - 1) // side for i in range(3)]
                cells.update((x, y, z) for z in range(c_lo[2], c_hi[2] + 1)
                             for y in range(c_lo[1], c_hi[1] + 1)
                             for x in range(c_lo[0], c_hi[0] + 1))
        else:
            cells.update(grid_b)
        positions = sorted(cells, key=lambda p: (p[2], p[1], p[0]))
        if self.box is not None:
            (bx, by, bz), (bw, bh, bd) = self.box
            lo = (bx // side, by // side, bz // side)
            hi = ((bx + bw - 1) // side, (by + bh - 1) // side, (bz + bd - 1) // side)
            positions = [p for p in positions if all(lo[i] <= p[i] <= hi[i] for i in range(3))]
        total = sum(len(self._blocks_of(ha, p)[0]) for p in positions)
        with self._lock:
            self._total = total
        s.blocks_total = total
        return positions

    def _blocks_of(self, header: wkw.Header, position: Vec3
                   ) -> tuple[npt.NDArray[np.int64], dict[int, tuple[Vec3, Vec3]]]:
        """Morton indices of the blocks of the file at ``position`` inside the box (all without
        a box), sorted, and the block-local clip of the blocks the box cuts."""
        if self.box is None:
            return np.arange(header.num_blocks, dtype=np.int64), {}
        side = header.file_len_vx
        bl = header.block_len
        origin = np.asarray(position, dtype=np.int64) * side
        off = np.asarray(self.box[0], dtype=np.int64)
        lo = np.maximum(off - origin, 0)
        hi = np.minimum(off + np.asarray(self.box[1], dtype=np.int64) - origin, side)
        if np.any(hi <= lo):
            return np.zeros(0, dtype=np.int64), {}
        b_lo, b_hi = lo // bl, (hi - 1) // bl + 1
        coords = morton.block_grid((int(b_lo[0]), int(b_lo[1]), int(b_lo[2])),
                                   (int(b_hi[0]), int(b_hi[1]), int(b_hi[2])))
        indices = morton.encode(coords[:, 0], coords[:, 1], coords[:, 2])
        clips: dict[int, tuple[Vec3, Vec3]] = {}
        for coord, index in zip(coords.tolist(), indices.tolist()):
            base = np.asarray(coord, dtype=np.int64) * bl
            c_lo = np.maximum(lo - base, 0)
            c_hi = np.minimum(hi - base, bl)
            if np.any(c_lo > 0) or np.any(c_hi < bl):
                clips[int(index)] = ((int(c_lo[0]), int(c_lo[1]), int(c_lo[2])),
                                     (int(c_hi[0]), int(c_hi[1]), int(c_hi[2])))
        order = np.argsort(indices, kind="stable")
        return indices[order], clips

    def _plans(self, a: wkw.Dataset, b: wkw.Dataset, positions: list[Vec3]
               ) -> Iterator[FilePlan | tuple[int, Finding]]:
        """A plan per file position, or (blocks skipped, finding) for a file that cannot be
        opened at all.  Runs on the job's thread."""
        h = a.header
        side = h.file_len_vx
        for pos in positions:
            name = f"z{pos[2]}/y{pos[1]}/x{pos[0]}.wkw"
            indices, clips = self._blocks_of(h, pos)
            sides: list[Side | None] = []
            failure: Finding | None = None
            for label, ds in (("A", a), ("B", b)):
                try:
                    f = ds.get_file(*pos)
                    sides.append(Side.open(f) if f is not None else None)
                except (FormatError, OSError) as exc:
                    failure = Finding("file_unreadable", DIFFERENCE,
                                      f"{label}: {name} cannot be read: {exc}",
                                      {"file": name, "side": label, "error": str(exc)})
                    break
            if failure is not None:
                for opened in sides:
                    if opened is not None:
                        opened.close()
                yield (len(indices), failure)
                continue
            origin = (pos[0] * side, pos[1] * side, pos[2] * side)
            yield FilePlan(name, origin, sides[0], sides[1], indices, h.block_len, h.dtype,
                           h.num_channels, self.tolerance, clips)

    def _compare(self, a: wkw.Dataset, b: wkw.Dataset, positions: list[Vec3]) -> None:
        per_chunk = max(1, CHUNK_BYTES // max(1, a.header.block_bytes))
        pending: deque[tuple[FilePlan, Future[ChunkOutcome], bool]] = deque()
        open_plans: dict[int, FilePlan] = {}
        one_sided: dict[str, bool] = {}  # file -> whether the present side differs from zeros
        limit = self.workers * IN_FLIGHT_PER_WORKER

        def collect() -> None:
            plan, future, last = pending.popleft()
            outcome = future.result()
            self._take(outcome)
            if plan.a is None or plan.b is None:
                one_sided[plan.name] = one_sided.get(plan.name, False) or outcome.any_difference
            if last:
                open_plans.pop(id(plan)).close()
                if plan.a is None or plan.b is None:
                    self._missing_file(plan, one_sided.pop(plan.name, False))

        def chunks() -> Iterator[tuple[FilePlan, npt.NDArray[np.int64], bool]]:
            for item in self._plans(a, b, positions):
                if isinstance(item, tuple):
                    skipped, finding = item
                    self._add_finding(finding)
                    self._advance(skipped)
                    continue
                if (item.a is None and item.b is None) or len(item.indices) == 0:
                    item.close()
                    continue
                open_plans[id(item)] = item
                n = len(item.indices)
                for start in range(0, n, per_chunk):
                    yield item, item.indices[start:start + per_chunk], start + per_chunk >= n

        with ThreadPoolExecutor(self.workers, thread_name_prefix="wkw-compare-pool") as pool:
            try:
                for plan, chunk, last in chunks():
                    if self.cancelled:
                        break
                    while len(pending) >= limit:
                        collect()
                    pending.append((plan, pool.submit(compare_chunk, plan, chunk), last))
                while pending and not self.cancelled:
                    collect()
            finally:
                for _, future, _ in pending:
                    future.cancel()
                wait([future for _, future, _ in pending])  # before the files are unmapped
                pending.clear()
                for plan in open_plans.values():
                    plan.close()
                open_plans.clear()

    def _slabs(self, header: wkw.Header, positions: list[Vec3]) -> Iterator[Slab]:
        """Slabs of A's blocks (one block layer in z, as many rows in y as fit a chunk)
        covering the file cells, cut to the box."""
        bl = header.block_len
        row_bytes = header.file_len_vx * bl * bl * header.voxel_size
        rows = max(1, CHUNK_BYTES // max(1, row_bytes))
        for pos in positions:
            indices, _ = self._blocks_of(header, pos)
            if len(indices) == 0:
                continue
            x, y, z = morton.decode(indices)
            lo = (int(x.min()), int(y.min()), int(z.min()))
            hi = (int(x.max()) + 1, int(y.max()) + 1, int(z.max()) + 1)
            for bz in range(lo[2], hi[2]):
                for by in range(lo[1], hi[1], rows):
                    yield Slab(pos, (lo[0], by, bz), (hi[0], min(by + rows, hi[1]), bz + 1))

    def _compare_voxels(self, a: wkw.Dataset, b: wkw.Dataset, positions: list[Vec3]) -> None:
        pending: deque[Future[ChunkOutcome]] = deque()
        limit = self.workers * IN_FLIGHT_PER_WORKER
        with ThreadPoolExecutor(self.workers, thread_name_prefix="wkw-compare-pool") as pool:
            try:
                for slab in self._slabs(a.header, positions):
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
                pending.clear()

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

    def _missing_file(self, plan: FilePlan, differs: bool) -> None:
        present, absent = ("A", "B") if plan.b is None else ("B", "A")
        where = "" if self.box is None else " inside the box"
        if differs:
            message = (f"{plan.name} is absent from {absent} (reads as zeros) but {present}'s "
                       f"file is not all zeros{where}")
        else:
            message = (f"{plan.name} is absent from {absent} (reads as zeros); {present}'s file "
                       f"is all zeros{where}, so the voxels agree")
        self._add_finding(Finding("file_missing", DIFFERENCE if differs else INFO, message,
                                  {"file": plan.name, "missing_in": absent,
                                   "present_all_zeros": not differs}))


def compare(a: str | os.PathLike[str] | wkw.Dataset, b: str | os.PathLike[str] | wkw.Dataset,
            box: Box | None = None, tolerance: float = 0.0, workers: int = 2,
            **callbacks: Any) -> Summary:
    """Compare two datasets on the calling thread and return the summary."""
    return CompareJob(a, b, box, tolerance, workers, **callbacks).run()


def _name(ds: str | os.PathLike[str] | wkw.Dataset) -> str:
    if isinstance(ds, wkw.Dataset):
        return ds.single_file or ds.root
    return os.fspath(ds)


def _open(ds: str | os.PathLike[str] | wkw.Dataset, label: str) -> tuple[wkw.Dataset, bool]:
    if isinstance(ds, wkw.Dataset):
        return ds, False
    path = os.fspath(ds)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{label}: {path}: no such file or directory")
    return wkw.Dataset.open(path), True


def _file_grid(ds: wkw.Dataset) -> list[Vec3]:
    """File-grid positions of the data files present (one directory scan)."""
    return [ds.file_position(p) for p in ds.list_files()]


def _extent(grid: list[Vec3], side: int) -> Box | None:
    if not grid:
        return None
    arr = np.asarray(grid, dtype=np.int64)
    lo = arr.min(axis=0) * side
    hi = (arr.max(axis=0) + 1) * side
    return ((int(lo[0]), int(lo[1]), int(lo[2])),
            (int(hi[0] - lo[0]), int(hi[1] - lo[1]), int(hi[2] - lo[2])))


def _fmt_box(box: Box | None) -> str:
    if box is None:
        return "empty (no data files)"
    (x, y, z), (w, h, d) = box
    return f"offset ({x}, {y}, {z}) size {w}x{h}x{d}"


def _box_json(box: Box | None) -> list[int] | None:
    return None if box is None else [*box[0], *box[1]]
