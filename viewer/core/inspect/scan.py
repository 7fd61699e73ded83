"""Every storage unit of a volume, summarised: the inspector's Files tab and its scan.

``UnitStats`` is one row: the unit's path and grid position, compression, size, stored chunks,
stored-bytes statistics, ratio and structure problems (``StorageUnit.problems(decode=False)``
plus a disagreement with the volume's header), from the unit's ``ChunkTable`` alone (nothing
decoded).  ``UnitScan`` streams them in batches from the background, cancellable.

Qt-free.  Functions may run on any thread; ``UnitScan`` says which thread may call which of
its methods.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.inspect.chunks import UnitTable, unit_table
from viewer.core.inspect.header import difference_problem
from viewer.format import FormatError, Volume

Vec3 = tuple[int, int, int]

HISTOGRAM_BINS = 64


def histogram_edges(chunk_nbytes: int, bins: int = HISTOGRAM_BINS) -> npt.NDArray[np.float64]:
    """Fixed bin edges of stored chunk sizes for a volume (so per-unit histograms add up):
    linear from 0 to a chunk's decoded size plus what a compressor may add to incompressible
    data (``n + n / 255 + 16``, LZ4's bound)."""
    top = chunk_nbytes + chunk_nbytes // 255 + 16
    return np.linspace(0.0, float(top) + 1.0, bins + 1)


@dataclass(frozen=True)
class UnitStats:
    """One row of the volume's unit table.  Sizes in bytes over the chunks stored (present,
    not constant, with a sound range); ``ratio`` = decoded bytes / stored bytes of those;
    ``histogram`` counts their sizes on ``histogram_edges``."""

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
    """Summarise a ``UnitTable`` as a unit-table row."""
    valid = table.sizes[table.stored]
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
    value = table.description.get("compression", default)
    return str(value) if value is not None else default


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
    facts = facts or VolumeFacts.of(volume)
    table, error = open_table(volume, pos)
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
    still being listed)."""

    rows: tuple[UnitStats, ...]
    done: int
    total: int | None
    finished: bool = False


def scan_batches(volume: Volume, cancel: threading.Event | None = None,
                 batch_seconds: float = 0.05, batch_rows: int = 500) -> Iterator[ScanBatch]:
    """Every unit's stats in batches (the last one ``finished``); stops when ``cancel`` is
    set.  Any thread."""
    positions: list[Vec3] = []
    for pos in volume.iter_units():
        if cancel is not None and cancel.is_set():
            return
        positions.append(pos)
    total = len(positions)
    facts = VolumeFacts.of(volume)
    rows: list[UnitStats] = []
    last = time.perf_counter()
    for done, pos in enumerate(positions, 1):
        if cancel is not None and cancel.is_set():
            return
        rows.append(unit_stats(volume, pos, facts))
        now = time.perf_counter()
        if len(rows) >= batch_rows or now - last >= batch_seconds:
            yield ScanBatch(tuple(rows), done, total)
            rows = []
            last = now
    yield ScanBatch(tuple(rows), total, total, finished=True)


def scan_all(volume: Volume) -> list[UnitStats]:
    """Every unit's stats, synchronously (for the command line and tests)."""
    facts = VolumeFacts.of(volume)
    return [unit_stats(volume, pos, facts) for pos in volume.iter_units()]


@dataclass(frozen=True)
class Reopen:
    """How a child process opens the same volume through the registry:
    ``open_volume(path, layer, mag)``."""

    path: str
    layer: str | None = None
    mag: Vec3 | None = None


class UnitScan:
    """Scans every storage unit of a volume in the background and hands ``ScanBatch`` es to a
    callback, at most every ``batch_seconds`` (so a GUI appends rows in a few large batches).

    With ``reopen`` (how to open the volume again) and more than ``PROCESS_THRESHOLD`` units,
    the work runs in a child process (``python -m viewer.core.inspect --scan``) that streams
    pickled batches through a pipe, read by a thread here: thousands of small numpy calls per
    second would otherwise hold this process's GIL and make every Python callback of the GUI
    thread wait for it.  Without ``reopen``, with ``use_process=False``, in a frozen program,
    or when the child cannot open the volume (a format registered only in this process), the
    scan runs on a thread of this process.

    Threads: construct, ``start``, ``cancel`` and ``wait`` from any one controlling thread (the
    GUI thread); ``on_batch`` is called on the reader/worker thread and must only hand the
    batch over (the ui layer hops to the GUI thread with a queued signal).
    """

    #: Volumes with at most this many units are scanned on a thread: a child process costs
    #: more to start than they take.
    PROCESS_THRESHOLD = 64

    def __init__(self, volume: Volume, on_batch: Callable[[ScanBatch], None],
                 batch_seconds: float = 0.05, batch_rows: int = 500,
                 use_process: bool | None = None, reopen: Reopen | None = None) -> None:
        self.volume = volume
        self._on_batch = on_batch
        self._batch_seconds = batch_seconds
        self._batch_rows = batch_rows
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        if use_process is None:
            use_process = not getattr(sys, "frozen", False)
        self.use_process = use_process
        self.reopen = reopen if reopen is not None else Reopen(volume.path)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="inspector-scan", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self.use_process:
            count = 0
            for _ in self.volume.iter_units():
                count += 1
                if count > self.PROCESS_THRESHOLD or self._cancel.is_set():
                    break
            if count > self.PROCESS_THRESHOLD:
                self._run_process()
                return
        self._run_thread()

    def cancel(self) -> None:
        self._cancel.set()
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()

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

    def _run_thread(self) -> None:
        for batch in scan_batches(self.volume, self._cancel, self._batch_seconds,
                                  self._batch_rows):
            self._emit(batch)

    def _run_process(self) -> None:
        r = self.reopen
        v = self.volume
        cmd = [sys.executable, "-m", "viewer.core.inspect", "--scan", r.path, r.layer or "",
               "-".join(map(str, r.mag)) if r.mag is not None else "",
               str(self._batch_seconds), str(self._batch_rows), v.path,
               ",".join(map(str, v.chunk_shape)), ",".join(map(str, v.unit_shape))]
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        except OSError:
            self._run_thread()
            return
        with self._lock:
            self._proc = proc
        if self._cancel.is_set():
            proc.kill()
        got_any = False
        finished = False
        assert proc.stdout is not None
        try:
            while True:
                head = proc.stdout.read(8)
                if len(head) < 8:
                    break
                (size,) = struct.unpack("<Q", head)
                payload = proc.stdout.read(size)
                if len(payload) < size:
                    break
                try:
                    batch = pickle.loads(payload)
                except Exception:  # a child of another version: scan here instead
                    proc.kill()
                    break
                got_any = True
                finished = batch.finished
                self._emit(batch)
        finally:
            proc.stdout.close()
            proc.wait()
        if not finished and not got_any and not self._cancel.is_set():
            self._run_thread()  # the child could not run or open the volume: scan here
        elif not finished and not self._cancel.is_set():
            self._emit(ScanBatch((), 0, None, finished=True))


def _scan_main(argv: Sequence[str]) -> int:
    """The child process of ``UnitScan``: open the volume through the registry, scan it, write
    length-prefixed pickled ``ScanBatch`` es to stdout.  Writes nothing (exit 3) when the
    volume does not open as the one the parent has (the parent then scans on a thread)."""
    from viewer.format import open_volume

    path, layer, mag = argv[0], argv[1] or None, argv[2] or None
    batch_seconds, batch_rows = float(argv[3]), int(argv[4])
    want_path, want_chunk, want_unit = argv[5], argv[6], argv[7]
    out = sys.stdout.buffer
    try:
        volume = open_volume(path, layer, mag)
    except (FormatError, KeyError, OSError):
        return 3
    if (os.path.normpath(volume.path) != os.path.normpath(want_path)
            or ",".join(map(str, volume.chunk_shape)) != want_chunk
            or ",".join(map(str, volume.unit_shape)) != want_unit):
        return 3
    batches: Iterable[ScanBatch] = scan_batches(volume, None, batch_seconds, batch_rows)
    try:
        for batch in batches:
            payload = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
            out.write(struct.pack("<Q", len(payload)))
            out.write(payload)
            out.flush()
    except BrokenPipeError:
        return 1
    return 0


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


__all__ = ["UnitStats", "stats_of_table", "unit_stats", "open_table", "error_row",
           "histogram_edges", "HISTOGRAM_BINS", "VolumeFacts", "ScanBatch", "UnitScan",
           "Reopen", "scan_batches", "scan_all", "TableCache", "compression_of",
           "volume_done_with"]
