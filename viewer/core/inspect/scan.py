"""Every storage unit of a volume, summarised: the inspector's Files tab and its scan.

(Over 600 lines: a row is worked out three ways that must agree, one unit, a batch proven sound
as arrays, and a grid position over a store that cannot list; the seam to split along is the
background ``UnitScan`` and its child-process work, which could move to a module of their own.)

``UnitStats`` is one row: the unit's path and grid position, compression, size, stored chunks,
stored-bytes statistics, ratio and structure problems (``StorageUnit.problems(decode=False)``
plus a disagreement with the volume's header), from the unit's ``ChunkTable`` alone (nothing
decoded).  ``UnitScan`` streams them in batches from the background, cancellable.

Qt-free.  Functions may run on any thread; ``UnitScan`` says which thread may call which of
its methods.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.inspect.chunks import UnitTable, unit_table
from viewer.core.inspect.header import difference_problem
from viewer.core.jobs import Emit, Job, JobCancelled, NotHere, processes_available
from viewer.format import FormatError, SoundUnits, Volume

Vec3 = tuple[int, int, int]

HISTOGRAM_BINS = 64
#: Units whose rows are worked out together (``units_stats``).
STATS_BATCH = 256


def histogram_edges(chunk_nbytes: int, bins: int = HISTOGRAM_BINS) -> npt.NDArray[np.float64]:
    """Fixed bin edges of stored chunk sizes for a volume (so per-unit histograms add up):
    linear from 0 to a chunk's decoded size plus what a compressor may add to incompressible
    data (``n + n / 255 + 16``, LZ4's bound)."""
    top = chunk_nbytes + chunk_nbytes // 255 + 16
    return np.linspace(0.0, float(top) + 1.0, bins + 1)


@dataclass(frozen=True, slots=True)
class UnitStats:
    """One row of the volume's unit table.  Sizes in bytes over the chunks stored (present,
    not constant, with a sound range); ``ratio`` = decoded bytes / stored bytes of those;
    ``histogram`` counts their sizes on ``histogram_edges``.  Slotted: a window holding the
    rows of 100,000 units has one object a row for the cycle collector to walk, not two (an
    instance's attribute dictionary stays tracked until a full collection)."""

    path: str
    position: Vec3 | None
    compression: str
    size_on_disk: int
    chunk_count: int
    size_min: int
    size_median: float
    size_max: int
    ratio: float
    problems: tuple[FormatError, ...]
    histogram: npt.NDArray[np.int64] | None = None
    total: int = 0

    @property
    def problem_count(self) -> int:
        return len(self.problems)


def stats_of_table(table: UnitTable, position: Vec3 | None, compression: str = "",
                   problems: Sequence[FormatError] | None = None,
                   edges: npt.NDArray[np.float64] | None = None) -> UnitStats:
    """Summarise a ``UnitTable`` as a unit-table row (over the chunks that meet the
    volume's extent: ``UnitTable.inside``)."""
    valid = table.sizes[table.stored_inside]
    total = int(valid.sum()) if len(valid) else 0
    ratio = (table.chunk_nbytes * len(valid) / total) if total > 0 else float("nan")
    if edges is None:
        edges = histogram_edges(table.chunk_nbytes)
    hist, _ = np.histogram(np.clip(valid, 0, None), bins=edges)
    return UnitStats(
        table.path, position, compression, table.size, int(len(valid)),
        int(valid.min()) if len(valid) else 0,
        float(np.median(valid)) if len(valid) else float("nan"),
        int(valid.max()) if len(valid) else 0,
        float(ratio),
        tuple(table.problems if problems is None else problems),
        hist.astype(np.int64),
        total,
    )


def compression_of(table: UnitTable, default: str) -> str:
    value = table.description.compression
    return value if value is not None else default


def error_row(path: str, position: Vec3 | None, error: FormatError) -> UnitStats:
    """The row of a unit that does not open."""
    try:
        size = os.stat(path).st_size if "://" not in path else 0
    except OSError:
        size = 0
    return UnitStats(path, position, "?", size, 0, 0, float("nan"), 0, float("nan"), (error,))


def open_table(volume: Volume, position: Sequence[int]
               ) -> tuple[UnitTable | None, FormatError | None]:
    """The ``UnitTable`` of the unit at ``position``: ``(None, None)`` when it is absent,
    ``(None, error)`` when it does not open."""
    pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
    try:
        unit = volume.open_unit(pos)
        if unit is None:
            return None, None
        return unit_table(volume, pos, unit), None
    except FormatError as exc:
        return None, exc
    except OSError as exc:
        return None, FormatError(f"cannot read: {exc.strerror or exc}", volume.unit_path(pos))


@dataclass(frozen=True)
class VolumeFacts:
    """What every row of one volume's scan shares (read once per scan)."""

    header: Mapping[str, Any]
    compression: str
    edges: npt.NDArray[np.float64]

    @classmethod
    def of(cls, volume: Volume) -> VolumeFacts:
        try:
            info = volume.info()
            header, compression = dict(info.header), info.compression
        except FormatError:
            header, compression = {}, "?"
        return cls(header, compression, histogram_edges(volume.chunk_nbytes))


def unit_stats(volume: Volume, position: Sequence[int],
               facts: VolumeFacts | None = None) -> UnitStats:
    """The unit-table row of the unit at ``position``: from its index only (nothing
    decoded)."""
    pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
    table, error = open_table(volume, pos)
    return _stats(volume, pos, facts or VolumeFacts.of(volume), table, error)


def _stats(volume: Volume, pos: Vec3, facts: VolumeFacts, table: UnitTable | None,
           error: FormatError | None) -> UnitStats:
    """``unit_stats`` of a unit already opened (``open_table``)."""
    path = volume.unit_path(pos)
    if table is None:
        return error_row(path, pos, error or FormatError("absent", path))
    problems = list(table.problems)
    extra = difference_problem(facts.header, table.description, table.path)
    if extra is not None:
        problems.insert(0, extra)
    stats = stats_of_table(table, pos, compression_of(table, facts.compression), problems,
                           facts.edges)
    volume_done_with(volume, table)
    return stats


def units_inside(volume: Volume, grid: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which units at unit-grid positions ``grid`` (``(N, 3)``) lie wholly inside the extent
    (all of them when the extent is the units' own box): their chunks all count."""
    if not volume.extent_declared:
        return np.ones(len(grid), np.bool_)
    lo, hi = (np.asarray(b, dtype=np.int64) for b in volume.bounds)
    side = np.asarray(volume.unit_len_vx, dtype=np.int64)
    first = grid * side
    return np.asarray(((first >= lo) & (first + side <= hi)).all(axis=1))


def units_stats(volume: Volume, positions: Sequence[Vec3],
                facts: VolumeFacts | None = None) -> list[UnitStats]:
    """``scanned_row`` of each unit at ``positions``, in order (none for a unit proven
    absent where the units come from the grid): the units a batched check proves sound
    (``Volume.sound_units``) and that lie inside the extent from their chunk tables as
    arrays, the others one by one.  The same rows either way."""
    facts = facts or VolumeFacts.of(volume)
    if not positions:
        return []
    sound = volume.sound_units(positions)
    grid = np.asarray(positions, dtype=np.int64).reshape(-1, 3)
    rows: dict[int, UnitStats] = {}
    if len(sound):
        fine = units_inside(volume, grid)[sound.index]
        keep = np.flatnonzero(fine)
        if len(keep):
            rows = dict(zip(sound.index[keep].tolist(),
                            _sound_rows(volume, sound, keep, grid, facts), strict=True))
    listed = (rows[i] if i in rows else scanned_row(volume, pos, facts)
              for i, pos in enumerate(positions))
    return [row for row in listed if row is not None]


def _sound_rows(volume: Volume, sound: SoundUnits, keep: npt.NDArray[np.intp],
                grid: npt.NDArray[np.int64], facts: VolumeFacts) -> list[UnitStats]:
    """The rows of sound units (every chunk stored, no problem), vectorised."""
    sizes = sound.nbytes[keep]
    k, n = sizes.shape
    edges = facts.edges
    bins = len(edges) - 1
    # np.histogram's bins: [e_i, e_i+1), the last one closed; sizes outside are not counted.
    at = np.searchsorted(edges, sizes, side="right") - 1
    at[sizes == edges[-1]] = bins - 1
    counted = (at >= 0) & (at < bins)
    rows = np.repeat(np.arange(k), n).reshape(k, n)
    hist = np.bincount((rows * bins + at)[counted], minlength=k * bins).reshape(k, bins)
    ordered = np.sort(sizes, axis=1)
    totals = ordered.sum(axis=1)
    mid = ordered[:, n // 2].astype(np.float64) if n % 2 else \
        (ordered[:, n // 2 - 1] + ordered[:, n // 2]) / 2
    desc = sound.description.get("compression", facts.compression)
    compression = str(desc) if desc is not None else facts.compression
    nbytes = volume.chunk_nbytes
    out = []
    for j, (row, total) in enumerate(zip(keep.tolist(), totals.tolist(), strict=True)):
        x, y, z = grid[sound.index[row]].tolist()
        out.append(UnitStats(sound.paths[row], (x, y, z), compression, int(sound.sizes[row]),
                             n, int(ordered[j, 0]), float(mid[j]), int(ordered[j, -1]),
                             float(nbytes * n / total) if total > 0 else float("nan"), (),
                             hist[j].astype(np.int64), int(total)))
    return out


def volume_done_with(volume: Volume, table: UnitTable) -> None:
    """Hand a scanned unit back to its volume (a volume that does not keep units open closes
    it); the table no longer reads through it."""
    if table.source is not None:
        volume.done_with(table.source)
        table.source = None


# -- background scan of a volume --------------------------------------------------------------
@dataclass(frozen=True)
class ScanBatch:
    """Rows scanned since the last batch, with progress (``total`` is None while the units are
    still being listed).  ``error``: why the scan could not run as asked (e.g. a cluster that
    cannot be reached; the scan then ran here)."""

    rows: tuple[UnitStats, ...]
    done: int
    total: int | None
    finished: bool = False
    error: str | None = None
    #: Every row's size histogram added up, when all of them are one length (None: not
    #: known, e.g. a batch made in this process, or rows of several lengths).  Filled where a
    #: batch from a child process is unpickled (the scan's reader thread), so that the window
    #: adds up a batch with one sum on its GUI thread instead of stacking every row.
    histograms_summed: npt.NDArray[np.int64] | None = dataclasses.field(default=None,
                                                                         compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (from a child process) with the rows' histograms as one array: unpickled
        one by one, each would keep a buffer object alive (two objects a row for the cycle
        collector of a window holding 100,000 rows to walk); rebuilt, each is a view of the
        batch's array."""
        same = [k for k, r in enumerate(self.rows) if r.histogram is not None
                and r.histogram.ndim == 1 and r.histogram.dtype == np.int64]
        if len(same) < 2 or len({len(self.rows[k].histogram) for k in same}) != 1:  # type: ignore[arg-type]
            return (ScanBatch, (self.rows, self.done, self.total, self.finished, self.error))
        stacked = np.stack([self.rows[k].histogram for k in same])  # type: ignore[misc]
        taken = set(same)
        bare = tuple(dataclasses.replace(r, histogram=None) if k in taken else r
                     for k, r in enumerate(self.rows))
        return (_batch_of, (bare, np.asarray(same, np.int64), stacked, self.done, self.total,
                            self.finished, self.error))


def _batch_of(rows: tuple[UnitStats, ...], where: npt.NDArray[np.int64],
              histograms: npt.NDArray[np.int64], done: int, total: int | None, finished: bool,
              error: str | None) -> ScanBatch:
    """A ``ScanBatch`` unpickled: row ``where[i]`` gets ``histograms[i]`` back."""
    for i, k in enumerate(where.tolist()):
        object.__setattr__(rows[k], "histogram", histograms[i])  # a row being rebuilt
    summed = None
    if len(where) == sum(r.histogram is not None for r in rows):  # no other row has one
        summed = histograms.sum(axis=0, dtype=np.int64)
    return ScanBatch(rows, done, total, finished, error, summed)


def scanned_row(volume: Volume, position: Sequence[int],
                facts: VolumeFacts | None = None) -> UnitStats | None:
    """The row a scan shows for ``position``, one of ``Volume.units_to_check``: as
    ``unit_stats``, but None for a unit proven absent where the units come from the grid
    (a store that cannot list: plain HTTP), as a listing leaves absent units out."""
    if volume.lists_units:
        return unit_stats(volume, position, facts)
    pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
    table, error = open_table(volume, pos)
    if table is None and error is None:
        return None
    return _stats(volume, pos, facts or VolumeFacts.of(volume), table, error)


def scan_batches(volume: Volume, cancel: threading.Event | None = None,
                 batch_seconds: float = 0.05, batch_rows: int = 500) -> Iterator[ScanBatch]:
    """Every unit's stats in batches (the last one ``finished``); stops when ``cancel`` is
    set.  The units are ``Volume.units_to_check``: the listing where the store lists, else
    every position of the grid (over plain HTTP a listing finds nothing; each position is
    opened, a proven-absent one shows no row, one that cannot be read is a row naming its
    error).  Any thread."""
    positions: list[Vec3] = []
    for pos in volume.units_to_check():
        if cancel is not None and cancel.is_set():
            return
        positions.append(pos)
    total = len(positions)
    facts = VolumeFacts.of(volume)
    rows: list[UnitStats] = []
    last = time.perf_counter()
    step = max(1, min(batch_rows, STATS_BATCH))
    for start in range(0, total, step):
        if cancel is not None and cancel.is_set():
            return
        rows.extend(units_stats(volume, positions[start:start + step], facts))
        now = time.perf_counter()
        if len(rows) >= batch_rows or now - last >= batch_seconds:
            yield ScanBatch(tuple(rows), min(start + step, total), total)
            rows = []
            last = now
    yield ScanBatch(tuple(rows), total, total, finished=True)


def scan_all(volume: Volume) -> list[UnitStats]:
    """Every unit's stats, synchronously (for the command line and tests)."""
    facts = VolumeFacts.of(volume)
    positions = list(volume.units_to_check())
    return [row for start in range(0, len(positions), STATS_BATCH)
            for row in units_stats(volume, positions[start:start + STATS_BATCH], facts)]


@dataclass(frozen=True)
class Reopen:
    """How a child process opens the same volume through the registry:
    ``open_volume(path, layer, mag, index)`` (``index``: the element of each extra axis, as
    ``Volume.extra_index`` gives it; the same path at another time point is another volume)."""

    path: str
    layer: str | None = None
    mag: Vec3 | None = None
    index: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def index_of(volume: Volume) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(volume.extra_index.items()))

    def open(self) -> Volume:
        from viewer.format import open_volume

        return open_volume(self.path, self.layer, self.mag, dict(self.index))


@dataclass(frozen=True)
class ScanWork:
    """The scan as a ``viewer.core.jobs`` work (in a child process): open the volume again,
    check it is the parent's (else ``NotHere``: the parent scans its own), emit its
    ``ScanBatch`` es."""

    reopen: Reopen
    volume_path: str
    chunk_shape: Vec3
    unit_shape: Vec3
    batch_seconds: float
    batch_rows: int

    def __call__(self, emit: Emit, cancelled: threading.Event) -> None:
        try:
            volume = self.reopen.open()
        except (FormatError, KeyError, IndexError, OSError) as exc:
            raise NotHere(f"the child cannot open {self.reopen.path}: {exc}") from None
        try:
            if (os.path.normpath(volume.path) != os.path.normpath(self.volume_path)
                    or tuple(volume.chunk_shape) != self.chunk_shape
                    or tuple(volume.unit_shape) != self.unit_shape):
                raise NotHere(f"the child opened another volume at {self.reopen.path}")
            for batch in scan_batches(volume, cancelled, self.batch_seconds, self.batch_rows):
                emit(batch)
        finally:
            volume.close()


@dataclass(frozen=True)
class ScanShare:
    """A cluster task of the scan: the units at ``positions`` of the volume ``reopen`` opens."""

    reopen: Reopen
    positions: tuple[Vec3, ...]


def scan_share(share: ScanShare) -> list[UnitStats]:
    """The rows of a share's units (on a cluster worker): summaries, never voxels."""
    volume = share.reopen.open()
    try:
        facts = VolumeFacts.of(volume)
        return units_stats(volume, share.positions, facts)
    finally:
        volume.close()


#: The scheduler whole-volume scans run on when ``UnitScan`` is not given one: None (or "")
#: scans on this machine; ``tcp://HOST:PORT`` or ``local:N`` on a Dask cluster.  The window's
#: setting (and ``wkw-viewer PATH --scheduler``) sets it with ``set_scan_scheduler``.
_scan_scheduler: str | None = None


def set_scan_scheduler(scheduler: str | None) -> None:
    """Where later scans run (any thread): None or "" here, else a Dask scheduler address
    (``tcp://HOST:PORT``) or ``local:N``.  Raises ``SchedulerError`` for an address that
    does not parse."""
    global _scan_scheduler
    if scheduler:
        from viewer.core.cluster import parse_scheduler

        parse_scheduler(scheduler)
    _scan_scheduler = scheduler or None


def scan_scheduler() -> str | None:
    """The scheduler set with ``set_scan_scheduler`` (None: scans run here)."""
    return _scan_scheduler


class UnitScan:
    """Scans every storage unit of a volume in the background and hands ``ScanBatch`` es to a
    callback, at most every ``batch_seconds`` (so a GUI appends rows in a few large batches).

    With ``reopen`` (how to open the volume again) and more than ``PROCESS_THRESHOLD`` units,
    the work runs in a child process (a ``viewer.core.jobs.Job`` of a ``ScanWork``) that
    streams the batches back: thousands of small numpy calls per second would otherwise hold
    this process's GIL and make every Python callback of the GUI thread wait for it.  Without
    ``reopen``, with ``use_process=False``, in a frozen program, or when the child cannot open
    the volume (a format registered only in this process), the scan runs on a thread of this
    process.

    With a ``scheduler`` (``tcp://HOST:PORT`` or ``local:N``; default: ``scan_scheduler()``,
    the window's setting; ``""`` forces a local scan) the units are scanned on a Dask cluster
    in tasks of a few units (``scan_share``) and each task's rows arrive as one batch, as
    tasks finish; ``cancel`` cancels the futures.  A cluster that cannot be used is said in
    the first batch's ``error`` and the scan runs here instead.

    Threads: construct, ``start``, ``cancel`` and ``wait`` from any one controlling thread (the
    GUI thread); ``on_batch`` is called on the reader/worker thread and must only hand the
    batch over (the ui layer hops to the GUI thread with a queued signal).
    """

    #: Volumes with at most this many units are scanned on a thread: a child process costs
    #: more to start than they take.
    PROCESS_THRESHOLD = 64

    def __init__(self, volume: Volume, on_batch: Callable[[ScanBatch], None],
                 batch_seconds: float = 0.05, batch_rows: int = 500,
                 use_process: bool | None = None, reopen: Reopen | None = None,
                 scheduler: str | None = None) -> None:
        self.volume = volume
        self._on_batch = on_batch
        self._batch_seconds = batch_seconds
        self._batch_rows = batch_rows
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._job: Job[None] | None = None
        self._runner: Any = None
        self._lock = threading.Lock()
        if use_process is None:
            use_process = processes_available()
        self.use_process = use_process
        self.reopen = reopen if reopen is not None else \
            Reopen(volume.path, index=Reopen.index_of(volume))
        self.scheduler = (scheduler if scheduler is not None else scan_scheduler()) or None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="inspector-scan", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self.scheduler is not None:
            self._run_cluster(self.scheduler)
            return
        if self.use_process:
            count = 0
            for _ in self.volume.units_to_check():
                count += 1
                if count > self.PROCESS_THRESHOLD or self._cancel.is_set():
                    break
            if count > self.PROCESS_THRESHOLD:
                self._run_process()
                return
        self._run_here(self._emit, self._cancel)

    def cancel(self) -> None:
        self._cancel.set()
        with self._lock:
            job, runner = self._job, self._runner
        if job is not None:
            job.kill()
        if runner is not None:
            runner.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Join the worker; True when it has ended."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _emit(self, batch: ScanBatch) -> None:
        if not self._cancel.is_set():
            self._on_batch(batch)

    def _run_here(self, emit: Emit, cancelled: threading.Event) -> None:
        for batch in scan_batches(self.volume, cancelled, self._batch_seconds,
                                  self._batch_rows):
            emit(batch)

    def _run_process(self) -> None:
        v = self.volume
        work = ScanWork(self.reopen, v.path, _vec3(v.chunk_shape), _vec3(v.unit_shape),
                        self._batch_seconds, self._batch_rows)
        job: Job[None] = Job(work, self._emit, local=self._run_here, name="inspector-scan")
        with self._lock:
            self._job = job
        if self._cancel.is_set():
            job.kill()
        try:
            job.run()
        except JobCancelled:
            pass
        except RuntimeError:  # the child died mid-scan: end the scan with what came
            self._emit(ScanBatch((), 0, None, finished=True))
        finally:
            with self._lock:
                self._job = None

    def _run_cluster(self, scheduler: str) -> None:
        from viewer.core.cluster import ClusterRunner, SchedulerError, chunked, units_per_task

        positions = []
        for pos in self.volume.units_to_check():
            if self._cancel.is_set():
                return
            positions.append(pos)
        total, done = len(positions), 0
        try:
            with ClusterRunner(scheduler, shared=True) as runner:
                with self._lock:
                    self._runner = runner
                if self._cancel.is_set():
                    runner.cancel()
                runner.check_paths([self.reopen.path])
                shares = [ScanShare(self.reopen, tuple(part)) for part in
                          chunked(positions, units_per_task(total, runner.workers))]
                for _, rows in runner.map(scan_share, shares, key="scan"):
                    done += len(rows)
                    self._emit(ScanBatch(tuple(rows), done, total))
                if not self._cancel.is_set():
                    self._emit(ScanBatch((), total, total, finished=True))
        except Exception as exc:  # noqa: BLE001 - said in the last batch, never a dead thread
            if self._cancel.is_set():
                return
            if done:  # rows have arrived: end with them (a rerun here would repeat them)
                self._emit(ScanBatch((), done, total, finished=True,
                                     error=f"the scan on the cluster stopped: {exc}"))
                return
            why = "cannot use" if isinstance(exc, SchedulerError) else "failed on"
            self._emit(ScanBatch((), 0, None, error=f"{why} the cluster, scanned here: {exc}"))
            self.scheduler = None
            self._run()
        finally:
            with self._lock:
                self._runner = None


def _vec3(v: Sequence[int]) -> Vec3:
    return (int(v[0]), int(v[1]), int(v[2]))


# -- tables of the units near the cursor --------------------------------------------------------
class TableCache:
    """A small LRU of one volume's ``UnitTable`` s by unit position.  Thread-safe (any
    thread)."""

    def __init__(self, volume: Volume | None = None, capacity: int = 64) -> None:
        self.volume = volume
        self._capacity = capacity
        self._tables: OrderedDict[Vec3, tuple[UnitTable | None, FormatError | None]] = \
            OrderedDict()
        self._lock = threading.Lock()

    def get(self, position: Sequence[int]) -> tuple[UnitTable | None, FormatError | None]:
        pos: Vec3 = (int(position[0]), int(position[1]), int(position[2]))
        with self._lock:
            if pos in self._tables:
                self._tables.move_to_end(pos)
                return self._tables[pos]
            volume = self.volume
        if volume is None:
            return None, None
        entry = open_table(volume, pos)
        gone: list[UnitTable] = []
        with self._lock:
            if self.volume is not volume:
                return entry
            self._tables[pos] = entry
            while len(self._tables) > self._capacity:
                old = self._tables.popitem(last=False)[1][0]
                if old is not None:
                    gone.append(old)
        for table in gone:
            volume_done_with(volume, table)
        return entry

    def reset(self, volume: Volume | None) -> None:
        """Forget every table; later ones are of ``volume``."""
        with self._lock:
            old_volume, tables = self.volume, list(self._tables.values())
            self._tables.clear()
            self.volume = volume
        if old_volume is not None:
            for table, _ in tables:
                if table is not None:
                    volume_done_with(old_volume, table)

    def clear(self) -> None:
        self.reset(self.volume)


__all__ = ["UnitStats", "stats_of_table", "unit_stats", "scanned_row", "open_table", "error_row",
           "histogram_edges", "HISTOGRAM_BINS", "VolumeFacts", "ScanBatch", "UnitScan",
           "Reopen", "ScanWork", "ScanShare", "scan_share", "set_scan_scheduler",
           "scan_scheduler", "scan_batches", "scan_all", "TableCache", "compression_of",
           "volume_done_with", "units_stats", "units_inside"]
