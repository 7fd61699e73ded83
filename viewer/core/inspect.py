"""Looking inside WKW files without decoding them: the data behind the inspector panel.

Everything here comes from headers and jump tables (one header + jump-table read per file); no
block is decoded unless a caller asks for content flags (``scan_block_contents``).  The pieces:

- ``header_report``: every header field decoded for display, the raw 16 bytes in hex, the geometry
  derived from them, and the differences against the dataset's header.wkw.  Works on files whose
  header does not parse (the fields are then shown as found, with the error).
- ``BlockTable``: one row per block of a file (Morton index, block coordinates, byte range, size,
  ratio, flags), built vectorised from the jump table; ``plane_blocks`` / ``read_runs`` tell which
  blocks a plane needs and in how many separate reads.
- ``FileStats`` / ``file_stats``: one row of the dataset's file table; its problems are the format
  library's checks that need no decoding (``wkw.validation.file_problems(f, decode=False)``).
- ``FileScan``: a background scan of a dataset's files, streaming ``FileStats`` in batches with
  progress, cancellable.
- ``compression_plane``: per-block compressed size or ratio on one orthogonal plane through a
  dataset, the data of the compression-map overlay.

Qt-free.  Functions are pure and may run on any thread; ``FileScan`` says which thread may call
which of its methods.
"""

from __future__ import annotations

import functools
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import FormatError, wkw
from viewer.format.errors import DatasetLayoutError, JumpTableError
from viewer.format.wkw import lz4block, morton
from viewer.format.wkw.header import BLOCK_TYPE_NAMES, HEADER_SIZE, VOXEL_TYPES

Vec3 = tuple[int, int, int]

# -- block flags (bits of BlockTable.flags) ---------------------------------------------------
#: The block's byte range is empty.
ZERO_LENGTH = 1
#: Larger than LZ4 can encode a block in (LZ4_COMPRESSBOUND): the table or the data is wrong.
ABOVE_BOUND = 2
#: The byte range ends past the end of the file.
PAST_EOF = 4
#: The range starts before the data or ends before it starts (a damaged jump table).
BAD_RANGE = 8
#: Decoded (on request): every voxel holds the same value.
CONSTANT = 16
#: Decoded (on request): every voxel is zero.
ALL_ZERO = 32
#: Decoding was attempted and failed.
DECODE_FAILED = 64
#: Decoded (on request): CONSTANT, ALL_ZERO and DECODE_FAILED are meaningful for this block.
DECODED = 128

FLAG_NAMES: dict[int, str] = {
    ZERO_LENGTH: "zero length",
    ABOVE_BOUND: "above LZ4 bound",
    PAST_EOF: "past end of file",
    BAD_RANGE: "bad range",
    CONSTANT: "constant",
    ALL_ZERO: "all zero",
    DECODE_FAILED: "decode failed",
}
#: Flags that mean the jump table or the data is damaged.
PROBLEM_FLAGS = ZERO_LENGTH | ABOVE_BOUND | PAST_EOF | BAD_RANGE | DECODE_FAILED

#: Error objects built per file at most; the rest are summarised in one line.
MAX_PROBLEMS_PER_FILE = 64


def flag_names(flags: int) -> list[str]:
    """Names of the flags set in ``flags`` (in bit order)."""
    return [name for bit, name in FLAG_NAMES.items() if flags & bit]


# -- header -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class HeaderField:
    """One header field as stored: its byte range, the raw value and what it means."""

    name: str
    first_byte: int
    length: int
    raw: int | bytes
    meaning: str


@dataclass(frozen=True)
class HeaderReport:
    """What the inspector shows of one file's header.

    ``raw`` is the first (up to) 16 bytes of the file; ``fields`` decode them as found, even when
    they are invalid (``error`` then says why ``Header.from_bytes`` refused them).  ``geometry``
    lists derived quantities as ``(name, value)``; ``expected_data_offset`` / ``found_data_offset``
    are the two numbers a reader relies on.  ``differences`` compares the file with header.wkw
    (field name -> "header.wkw value vs file value"); data offset is not a difference (it is 0 in
    header.wkw by definition).
    """

    path: str
    raw: bytes
    fields: tuple[HeaderField, ...]
    geometry: tuple[tuple[str, str], ...]
    header: wkw.Header | None
    error: FormatError | None
    file_size: int
    expected_data_offset: int | None
    found_data_offset: int | None
    differences: dict[str, str] = field(default_factory=dict)

    @property
    def hex(self) -> str:
        """The raw header bytes as hex pairs, space-separated."""
        return self.raw.hex(" ")


_FIELDS = struct.Struct("<3sBBBBBQ")


def header_report(path: str | os.PathLike[str],
                  dataset_header: wkw.Header | None = None) -> HeaderReport:
    """Decode the header of the file at ``path`` for display; compare with ``dataset_header``
    (the dataset's header.wkw) when given.  Never raises a FormatError: it is in ``error``."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        raw = fh.read(HEADER_SIZE)
        file_size = os.fstat(fh.fileno()).st_size
    error: FormatError | None = None
    header: wkw.Header | None = None
    try:
        header = wkw.Header.from_bytes(raw, path)
    except FormatError as exc:
        error = exc
    fields: list[HeaderField] = []
    found_offset: int | None = None
    if len(raw) >= HEADER_SIZE:
        magic, version, per_dim, block_type, vtype, vsize, data_offset = _FIELDS.unpack(raw)
        found_offset = int(data_offset)
        vt = VOXEL_TYPES.get(vtype)
        fields = [
            HeaderField("magic", 0, 3, magic,
                        "WKW" if magic == b"WKW" else f"{magic!r}: not a WKW file"),
            HeaderField("version", 3, 1, version, "1" if version == 1 else "unknown version"),
            HeaderField("perDimLog2", 4, 1, per_dim,
                        f"block_len 2^{per_dim & 15} = {1 << (per_dim & 15)} voxels, "
                        f"file_len 2^{per_dim >> 4} = {1 << (per_dim >> 4)} blocks"),
            HeaderField("blockType", 5, 1, block_type,
                        BLOCK_TYPE_NAMES.get(block_type, "unknown block type")),
            HeaderField("voxelType", 6, 1, vtype,
                        str(vt) if vt is not None else "unknown voxel type"),
            HeaderField("voxelSize", 7, 1, vsize,
                        f"{vsize // vt.itemsize} channel(s) of {vt}" if vt is not None
                        and vt.itemsize and vsize % vt.itemsize == 0 else
                        f"{vsize} bytes per voxel"),
            HeaderField("dataOffset", 8, 8, data_offset,
                        "header.wkw (no data)" if data_offset == 0 else f"block 0 at byte {data_offset}"),
        ]
    geometry: list[tuple[str, str]] = []
    expected: int | None = None
    if header is not None:
        h = header
        expected = h.expected_data_offset
        geometry = [
            ("voxel type", f"{h.dtype} x {h.num_channels} channel(s), {h.voxel_size} B/voxel"),
            ("voxels per block", f"{h.block_len}^3 = {h.block_voxels:,}"),
            ("voxels per file", f"{h.file_len_vx}^3 = {h.file_len_vx ** 3:,}"),
            ("blocks per file", f"{h.file_len}^3 = {h.num_blocks:,}"),
            ("block bytes", f"{h.block_bytes:,}"),
            ("LZ4 bound per block", f"{lz4block.compress_bound(h.block_bytes):,}"
             if h.is_compressed else "-"),
            ("jump table", f"{h.num_blocks:,} x u64 = {8 * h.num_blocks:,} B"
             if h.is_compressed else "none (raw)"),
            ("expected data offset", f"{expected:,}"),
            ("found data offset", f"{h.data_offset:,}" + (
                "" if h.data_offset in (expected, 0) else "  (MISMATCH)")),
            ("file size", f"{file_size:,} B"),
        ]
        if not h.is_compressed:
            geometry.append(("raw file size expected",
                             f"{HEADER_SIZE + h.num_blocks * h.block_bytes:,} B"))
    differences: dict[str, str] = {}
    if dataset_header is not None and header is not None:
        for name, a, b in (
            ("version", dataset_header.version, header.version),
            ("block_len", dataset_header.block_len, header.block_len),
            ("file_len", dataset_header.file_len, header.file_len),
            ("block_type", dataset_header.block_type_name, header.block_type_name),
            ("voxel_type", str(dataset_header.dtype), str(header.dtype)),
            ("num_channels", dataset_header.num_channels, header.num_channels),
        ):
            if a != b:
                differences[name] = f"{a} vs {b}"
    return HeaderReport(path, raw, tuple(fields), tuple(geometry), header, error, file_size,
                        expected, found_offset, differences)


#: Which header fields (``HeaderField.name``) a difference name concerns, for highlighting.
DIFFERENCE_FIELDS = {
    "version": "version", "block_len": "perDimLog2", "file_len": "perDimLog2",
    "block_type": "blockType", "voxel_type": "voxelType", "num_channels": "voxelSize",
}


# -- per-block table --------------------------------------------------------------------------
@dataclass
class BlockTable:
    """Every block of one file, in Morton order, from its jump table alone.

    Arrays (length ``num_blocks``): ``starts``/``ends`` byte ranges, ``sizes`` (bytes on disk),
    ``coords`` ((N, 3) block coordinates inside the file), ``ratio`` (block bytes / size; inf
    for an empty block), ``flags`` (bits above).  ``flags`` is the only mutable part: content
    flags are added by ``apply_content_flags`` once blocks have been decoded on request.
    """

    path: str
    header: wkw.Header
    file_size: int
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    coords: npt.NDArray[np.int64]
    ratio: npt.NDArray[np.float64]
    flags: npt.NDArray[np.uint8]
    problems: list[FormatError]

    @property
    def num_blocks(self) -> int:
        return int(self.sizes.shape[0])

    def apply_content_flags(self, indices: npt.NDArray[np.int64],
                            flags: npt.NDArray[np.uint8]) -> None:
        """Merge decoded content flags (from ``scan_block_contents``) into ``flags``.  Caller:
        the thread that owns this table (the GUI thread in the panel)."""
        keep = np.uint8(~(CONSTANT | ALL_ZERO | DECODE_FAILED | DECODED) & 0xFF)
        self.flags[indices] = (self.flags[indices] & keep) | flags


@functools.lru_cache(maxsize=8)
def block_coords(file_len: int) -> npt.NDArray[np.int64]:
    """(N, 3) block coordinates of Morton indices 0..N-1 for a file of ``file_len`` blocks per
    side; one read-only array shared by every table of that geometry."""
    x, y, z = morton.decode(np.arange(file_len ** 3, dtype=np.int64))
    coords = np.stack([x, y, z], axis=1)
    coords.flags.writeable = False
    return coords


def block_table(f: wkw.File) -> BlockTable:
    """Build the ``BlockTable`` of an open file, vectorised (no block is read)."""
    h = f.header
    starts, ends = f.block_ranges()
    sizes = ends - starts
    n = h.num_blocks
    coords = block_coords(h.file_len)
    flags = np.zeros(n, dtype=np.uint8)
    if h.is_compressed:
        bad = (starts < h.data_offset) | (ends < 0) | (starts < 0) | (ends < starts)
        flags[bad] |= BAD_RANGE
        flags[~bad & (ends > f.file_size)] |= PAST_EOF
        ok = ~bad & (ends <= f.file_size)
        flags[ok & (sizes == 0)] |= ZERO_LENGTH
        flags[ok & (sizes > lz4block.compress_bound(h.block_bytes))] |= ABOVE_BOUND
    else:
        flags[ends > f.file_size] |= PAST_EOF
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sizes > 0, h.block_bytes / np.maximum(sizes, 1), np.inf)
    problems = _problems_from_flags(f, flags)
    return BlockTable(f.path, h, f.file_size, starts, ends, sizes, coords,
                      ratio.astype(np.float64), flags, problems)


def _problems_from_flags(f: wkw.File, flags: npt.NDArray[np.uint8]) -> list[FormatError]:
    """The format library's own error for each flagged block (up to a cap, then a summary)."""
    flagged = np.flatnonzero(flags & PROBLEM_FLAGS)
    problems: list[FormatError] = []
    for index in flagged[:MAX_PROBLEMS_PER_FILE].tolist():
        problem = f.block_problem(index)
        if problem is not None:
            problems.append(problem)
    if len(flagged) > MAX_PROBLEMS_PER_FILE:
        first = int(flagged[MAX_PROBLEMS_PER_FILE])
        problems.append(JumpTableError(
            f"... and {len(flagged) - MAX_PROBLEMS_PER_FILE} more damaged blocks",
            f.path, block=first))
    return problems


def open_table(path: str) -> tuple[BlockTable | None, FormatError | None]:
    """Open a file and build its table; a file that does not open gives its error instead."""
    try:
        with wkw.File.open(path) as f:
            return block_table(f), None
    except FormatError as exc:
        return None, exc
    except OSError as exc:
        return None, FormatError(f"cannot read: {exc.strerror or exc}", path)


def table_problems(f: wkw.File) -> list[FormatError] | None:
    """The format library's own checks of an open file that need no decoding (jump table,
    ranges, bytes after the last block: ``wkw.validation.file_problems(f, decode=False)``), or
    None when the library offers none (the caller then uses ``BlockTable.problems``)."""
    try:
        from viewer.format.wkw import validation
    except ImportError:
        return None
    checker: Callable[..., tuple[Any, list[FormatError]]] | None = getattr(
        validation, "file_problems", None)
    if checker is None:
        return None
    try:
        return list(checker(f, decode=False)[1])
    except FormatError as exc:
        return [exc]


def scan_block_contents(f: wkw.File, indices: Sequence[int] | npt.NDArray[np.int64],
                        cancel: threading.Event | None = None, batch: int = 256
                        ) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8],
                                            list[FormatError]]]:
    """Decode blocks (on request only) and yield ``(indices, flags, errors)`` per batch: flags
    DECODED plus CONSTANT / ALL_ZERO, or DECODE_FAILED with the block's error in ``errors``.
    Any thread; stops early when ``cancel`` is set."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    for start in range(0, len(idx), batch):
        if cancel is not None and cancel.is_set():
            return
        part = idx[start:start + batch]
        out = np.full(len(part), DECODED, dtype=np.uint8)
        errors: list[FormatError] = []
        for k, arr in enumerate(f.read_blocks(part)):
            if isinstance(arr, FormatError):
                out[k] |= DECODE_FAILED
                errors.append(arr)
                continue
            flat = arr.reshape(-1)
            first = flat[0]
            if bool(np.all(flat == first)):
                out[k] |= CONSTANT
                if first == 0:
                    out[k] |= ALL_ZERO
        yield part, out, errors


# -- byte layout ------------------------------------------------------------------------------
def plane_blocks(table: BlockTable, axis: int, local_index: int) -> npt.NDArray[np.int64]:
    """Morton indices of the blocks of this file that the plane with normal ``axis`` at
    file-local voxel ``local_index`` needs, in Morton order."""
    layer = int(local_index) // table.header.block_len
    return np.flatnonzero(table.coords[:, axis] == layer).astype(np.int64)


def read_runs(table: BlockTable, indices: npt.NDArray[np.int64],
              gap: int = 4096) -> int:
    """How many separate reads fetch ``indices`` when byte ranges closer than ``gap`` are
    merged (as the format library does): a measure of how scattered a plane's reads are."""
    if len(indices) == 0:
        return 0
    order = np.argsort(table.starts[indices], kind="stable")
    lo = table.starts[indices][order]
    hi = np.maximum.accumulate(table.ends[indices][order])
    breaks = lo[1:] - hi[:-1] > gap
    return int(np.count_nonzero(breaks)) + 1


# -- per-file statistics ----------------------------------------------------------------------
@dataclass(frozen=True)
class FileStats:
    """One row of the dataset's file table.  Sizes in bytes; ``ratio`` = uncompressed bytes /
    bytes on disk of the blocks; ``histogram`` counts block sizes on ``histogram_edges(header)``."""

    path: str
    position: Vec3 | None
    block_type: str
    size_on_disk: int
    block_count: int
    size_min: int
    size_median: float
    size_max: int
    ratio: float
    problems: tuple[FormatError, ...]
    histogram: npt.NDArray[np.int64] | None = None

    @property
    def problem_count(self) -> int:
        return len(self.problems)


HISTOGRAM_BINS = 64


def histogram_edges(header: wkw.Header, bins: int = HISTOGRAM_BINS) -> npt.NDArray[np.float64]:
    """Fixed bin edges of block sizes for a dataset (so per-file histograms add up): linear from
    0 to the LZ4 bound of one block."""
    top = lz4block.compress_bound(header.block_bytes) if header.is_compressed \
        else header.block_bytes
    return np.linspace(0.0, float(top) + 1.0, bins + 1)


def stats_of_table(table: BlockTable, position: Vec3 | None,
                   problems: Sequence[FormatError] | None = None) -> FileStats:
    """Summarise a ``BlockTable`` as a file-table row."""
    sizes = table.sizes
    valid = sizes[(table.flags & (BAD_RANGE | PAST_EOF)) == 0]
    total = int(valid.sum()) if len(valid) else 0
    ratio = (table.header.block_bytes * len(valid) / total) if total > 0 else float("nan")
    hist, _ = np.histogram(np.clip(valid, 0, None), bins=histogram_edges(table.header))
    return FileStats(
        table.path, position, table.header.block_type_name, table.file_size, table.num_blocks,
        int(valid.min()) if len(valid) else 0,
        float(np.median(valid)) if len(valid) else float("nan"),
        int(valid.max()) if len(valid) else 0,
        float(ratio),
        tuple(table.problems if problems is None else problems),
        hist.astype(np.int64),
    )


def file_stats(path: str, position: Vec3 | None = None,
               dataset_header: wkw.Header | None = None) -> FileStats:
    """The file-table row of one file: from its header and jump table only (one open, one
    header read, one jump-table read; nothing decoded)."""
    try:
        with wkw.File.open(path) as f:
            table = block_table(f)
            problems = table_problems(f)
    except (FormatError, OSError) as exc:
        error = exc if isinstance(exc, FormatError) else FormatError(
            f"cannot read: {exc.strerror or exc}", path)
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0
        return FileStats(path, position, "?", size, 0, 0, float("nan"), 0, float("nan"), (error,))
    stats = stats_of_table(table, position, problems)
    if dataset_header is not None and (not dataset_header.same_geometry(table.header)
                                       or dataset_header.block_type != table.header.block_type):
        diffs = "; ".join(dataset_header.differences(table.header))
        extra = DatasetLayoutError(
            f"file header differs from header.wkw (header.wkw vs file: {diffs})", path, offset=0)
        stats = FileStats(stats.path, stats.position, stats.block_type, stats.size_on_disk,
                          stats.block_count, stats.size_min, stats.size_median, stats.size_max,
                          stats.ratio, (extra, *stats.problems), stats.histogram)
    return stats


# -- background scan of a dataset ------------------------------------------------------------
@dataclass(frozen=True)
class ScanBatch:
    """Rows scanned since the last batch, with progress (``total`` is None while the directory
    is still being listed)."""

    rows: tuple[FileStats, ...]
    done: int
    total: int | None
    finished: bool = False


class FileScan:
    """Scans every file of a dataset in the background and hands ``ScanBatch`` es to a
    callback, at most every ``batch_seconds`` (so a GUI appends rows in a few large batches).

    By default the work runs in a child process (``python -m viewer.core.inspect --scan``) that
    streams pickled batches through a pipe, read by a thread here: thousands of small numpy
    calls per second would otherwise hold this process's GIL and make every Python callback of
    the GUI thread wait for it.  ``use_process=False`` (or a frozen program, or a child that
    fails to start) scans on a thread of this process instead.

    Threads: construct, ``start``, ``cancel`` and ``wait`` from any one controlling thread (the
    GUI thread); ``on_batch`` is called on the reader/worker thread and must only hand the
    batch over (the ui layer hops to the GUI thread with a queued signal).
    """

    def __init__(self, dataset: wkw.Dataset, on_batch: Callable[[ScanBatch], None],
                 batch_seconds: float = 0.05, batch_rows: int = 500,
                 use_process: bool | None = None) -> None:
        self.dataset = dataset
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

    #: Datasets with at most this many files are scanned on a thread: a child process costs
    #: more to start than they take.
    PROCESS_THRESHOLD = 64

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="inspector-scan", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self.use_process and self.dataset.single_file is None:
            count = 0
            for _ in self.dataset.list_files():
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
        for batch in scan_batches(self.dataset, self._cancel, self._batch_seconds,
                                  self._batch_rows):
            self._emit(batch)

    def _run_process(self) -> None:
        ds = self.dataset
        cmd = [sys.executable, "-m", "viewer.core.inspect", "--scan",
               ds.single_file or ds.root, str(self._batch_seconds), str(self._batch_rows)]
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
            self._run_thread()  # the child could not run: scan here instead
        elif not finished and not self._cancel.is_set():
            self._emit(ScanBatch((), 0, None, finished=True))


def scan_batches(dataset: wkw.Dataset, cancel: threading.Event | None = None,
                 batch_seconds: float = 0.05, batch_rows: int = 500) -> Iterator[ScanBatch]:
    """Every file's stats in batches (the last one ``finished``); stops when ``cancel`` is
    set.  Any thread."""
    import time

    paths: list[str] = []
    for path in dataset.list_files():
        if cancel is not None and cancel.is_set():
            return
        paths.append(path)
    total = len(paths)
    rows: list[FileStats] = []
    last = time.perf_counter()
    for done, path in enumerate(paths, 1):
        if cancel is not None and cancel.is_set():
            return
        try:
            position: Vec3 | None = dataset.file_position(path)
        except FormatError:
            position = None
        rows.append(file_stats(path, position, dataset.header))
        now = time.perf_counter()
        if len(rows) >= batch_rows or now - last >= batch_seconds:
            yield ScanBatch(tuple(rows), done, total)
            rows = []
            last = now
    yield ScanBatch(tuple(rows), total, total, finished=True)


def _scan_main(argv: Sequence[str]) -> int:
    """The child process of ``FileScan``: scan a dataset, write length-prefixed pickled
    ``ScanBatch`` es to stdout."""
    root, batch_seconds, batch_rows = argv[0], float(argv[1]), int(argv[2])
    out = sys.stdout.buffer
    try:
        dataset = wkw.Dataset.open(root)
    except FormatError as exc:
        row = FileStats(root, None, "?", 0, 0, 0, float("nan"), 0, float("nan"), (exc,))
        batches: Iterable[ScanBatch] = [ScanBatch((row,), 1, 1, finished=True)]
    else:
        batches = scan_batches(dataset, None, batch_seconds, batch_rows)
    try:
        for batch in batches:
            payload = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
            out.write(struct.pack("<Q", len(payload)))
            out.write(payload)
            out.flush()
    except BrokenPipeError:
        return 1
    return 0


def scan_all(dataset: wkw.Dataset) -> list[FileStats]:
    """Every file's stats, synchronously (for the command line and tests)."""
    out: list[FileStats] = []
    for path in dataset.list_files():
        try:
            position: Vec3 | None = dataset.file_position(path)
        except FormatError:
            position = None
        out.append(file_stats(path, position, dataset.header))
    return out


# -- compression map --------------------------------------------------------------------------
SIZE = "size"
RATIO = "ratio"


@dataclass(frozen=True)
class CompressionPlane:
    """Per-block values on one plane: ``values[u, v]`` for block (u, v) of the in-plane block
    grid starting at voxel ``origin`` (u, v), each block ``block_len`` voxels; NaN where no
    file exists or the block's range is damaged.  ``metric`` is SIZE (bytes) or RATIO."""

    axis: int
    index: int
    metric: str
    origin: tuple[int, int]
    block_len: int
    values: npt.NDArray[np.float64]
    block_bytes: int


class TableCache:
    """A small LRU of ``BlockTable`` s by path.  Thread-safe (any thread)."""

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._tables: OrderedDict[str, tuple[BlockTable | None, FormatError | None]] = \
            OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str) -> tuple[BlockTable | None, FormatError | None]:
        with self._lock:
            if path in self._tables:
                self._tables.move_to_end(path)
                return self._tables[path]
        if not os.path.exists(path):
            entry: tuple[BlockTable | None, FormatError | None] = (None, None)
        else:
            entry = open_table(path)
        with self._lock:
            self._tables[path] = entry
            while len(self._tables) > self._capacity:
                self._tables.popitem(last=False)
        return entry

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()


IN_PLANE: dict[int, tuple[int, int]] = {2: (0, 1), 1: (0, 2), 0: (1, 2)}


def compression_plane(dataset: wkw.Dataset, axis: int, index: int,
                      file_positions: Iterable[Vec3], metric: str = SIZE,
                      cache: TableCache | None = None) -> CompressionPlane | None:
    """Block sizes (or ratios) on the plane with normal ``axis`` at dataset voxel ``index``,
    over the files of ``file_positions`` that the plane crosses.  None when it crosses none."""
    h = dataset.header
    side = h.file_len_vx
    b = h.block_len
    layer = index // side
    local_layer = (index % side) // b
    u_ax, v_ax = IN_PLANE[axis]
    on_plane = sorted({p for p in file_positions if p[axis] == layer})
    if not on_plane:
        return None
    u_lo = min(p[u_ax] for p in on_plane)
    u_hi = max(p[u_ax] for p in on_plane) + 1
    v_lo = min(p[v_ax] for p in on_plane)
    v_hi = max(p[v_ax] for p in on_plane) + 1
    n = h.file_len
    values = np.full(((u_hi - u_lo) * n, (v_hi - v_lo) * n), np.nan, dtype=np.float64)
    cache = cache or TableCache()
    for pos in on_plane:
        table, _ = cache.get(dataset.file_path(*pos))
        if table is None or table.header.file_len != n:
            continue
        sel = np.flatnonzero(table.coords[:, axis] == local_layer)
        vals = (table.sizes[sel] if metric == SIZE else table.ratio[sel]).astype(np.float64)
        vals[(table.flags[sel] & (BAD_RANGE | PAST_EOF)) != 0] = np.nan
        cu = table.coords[sel, u_ax] + (pos[u_ax] - u_lo) * n
        cv = table.coords[sel, v_ax] + (pos[v_ax] - v_lo) * n
        values[cu, cv] = vals
    return CompressionPlane(axis, index, metric, (u_lo * side, v_lo * side), b, values,
                            h.block_bytes)


def block_at(header: wkw.Header, position: Sequence[int]) -> tuple[Vec3, int]:
    """(file-grid position, Morton index) of the block holding dataset voxel ``position``."""
    side = header.file_len_vx
    b = header.block_len
    fpos = tuple(int(p) // side for p in position)
    local = [(int(p) % side) // b for p in position]
    index = int(morton.encode(local[0], local[1], local[2]))
    return fpos, index  # type: ignore[return-value]


def block_center(header: wkw.Header, file_position: Sequence[int], index: int) -> Vec3:
    """Dataset voxel at the centre of block ``index`` of the file at ``file_position``."""
    side = header.file_len_vx
    b = header.block_len
    x, y, z = (int(c) for c in morton.decode(index))
    return (file_position[0] * side + x * b + b // 2, file_position[1] * side + y * b + b // 2,
            file_position[2] * side + z * b + b // 2)


__all__ = [
    "ZERO_LENGTH", "ABOVE_BOUND", "PAST_EOF", "BAD_RANGE", "CONSTANT", "ALL_ZERO",
    "DECODE_FAILED", "DECODED", "FLAG_NAMES", "PROBLEM_FLAGS", "flag_names",
    "HeaderField", "HeaderReport", "header_report", "DIFFERENCE_FIELDS",
    "BlockTable", "block_table", "block_coords", "open_table", "table_problems", "scan_block_contents",
    "plane_blocks", "read_runs", "FileStats", "file_stats", "stats_of_table", "histogram_edges",
    "ScanBatch", "FileScan", "scan_batches", "scan_all", "CompressionPlane", "TableCache", "compression_plane",
    "SIZE", "RATIO", "block_at", "block_center",
]


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--scan":
        # Run the module under its real name, so that pickled classes name viewer.core.inspect.
        from viewer.core import inspect as _inspect

        sys.exit(_inspect._scan_main(sys.argv[2:]))
    print("usage: python -m viewer.core.inspect --scan PATH BATCH_SECONDS BATCH_ROWS",
          file=sys.stderr)
    sys.exit(2)
