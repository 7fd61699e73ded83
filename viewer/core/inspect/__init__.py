"""Looking inside the storage units of any volume without decoding them: the data behind the
inspector panel and ``wkw-viewer info``.

Everything comes through ``viewer.format``'s interface (``Volume``, ``StorageUnit``,
``ChunkTable``); nothing here knows a format by name.  One module per seam:

- ``header``: a unit's header for display (``header_report``): the volume's header
  (``Volume.info``), the unit's own (``StorageUnit.describe``), their differences.
- ``chunks``: one unit's chunk table for display (``UnitTable``: byte ranges, stored sizes,
  ratios, flags), decoding on request (``scan_chunk_contents``), which chunks a plane needs and
  in how many reads (``plane_chunks``, ``read_runs``), where a voxel's chunk is.
- ``scan``: one row per unit (``UnitStats``) and the background scan of a volume's units
  (``UnitScan``), a cache of unit tables (``TableCache``).
- ``plane``: the compression map, per-chunk values on one plane (``compression_plane``).

Qt-free.  Functions are pure and may run on any thread; ``UnitScan`` says which thread may
call which of its methods.
"""

from viewer.core.inspect.chunks import (
    ABSENT,
    ALL_ZERO,
    BAD_RANGE,
    CONSTANT,
    DAMAGED,
    DECODE_FAILED,
    DECODED,
    FLAG_NAMES,
    NO_SIZE_FLAGS,
    PAST_EOF,
    PROBLEM_FLAGS,
    STORED_CONSTANT,
    ZERO_LENGTH,
    UnitTable,
    chunk_at,
    chunk_center,
    chunk_coords,
    flag_names,
    plane_chunks,
    read_runs,
    scan_chunk_contents,
    unit_center,
    unit_table,
)
from viewer.core.inspect.header import (
    HeaderField,
    HeaderReport,
    difference_problem,
    differences,
    header_report,
)
from viewer.core.inspect.plane import (
    IN_PLANE,
    RATIO,
    SIZE,
    CompressionPlane,
    compression_plane,
)
from viewer.core.inspect.scan import (
    HISTOGRAM_BINS,
    Reopen,
    ScanBatch,
    ScanShare,
    ScanWork,
    TableCache,
    UnitScan,
    UnitStats,
    VolumeFacts,
    compression_of,
    error_row,
    histogram_edges,
    open_table,
    scan_all,
    scan_batches,
    scan_scheduler,
    scan_share,
    set_scan_scheduler,
    stats_of_table,
    unit_stats,
    units_inside,
    units_stats,
    volume_done_with,
)

__all__ = [
    "ABSENT", "STORED_CONSTANT", "ZERO_LENGTH", "PAST_EOF", "BAD_RANGE", "DAMAGED", "CONSTANT",
    "ALL_ZERO", "DECODE_FAILED", "DECODED", "FLAG_NAMES", "PROBLEM_FLAGS", "NO_SIZE_FLAGS",
    "flag_names", "UnitTable", "unit_table", "chunk_coords", "scan_chunk_contents",
    "plane_chunks", "read_runs", "chunk_at", "chunk_center", "unit_center",
    "HeaderField", "HeaderReport", "header_report", "differences", "difference_problem",
    "SIZE", "RATIO", "IN_PLANE", "CompressionPlane", "compression_plane",
    "HISTOGRAM_BINS", "histogram_edges", "UnitStats", "stats_of_table", "unit_stats",
    "open_table", "error_row", "VolumeFacts", "ScanBatch", "UnitScan", "Reopen",
    "scan_batches", "scan_all", "TableCache", "compression_of", "volume_done_with",
    "ScanWork", "ScanShare", "scan_share", "scan_scheduler", "set_scan_scheduler",
    "units_stats", "units_inside",
]
