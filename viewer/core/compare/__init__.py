"""Conversion QA: compare two WKW datasets block by block, say where and why they differ.

``CompareJob`` is the engine (structure check, fast comparison of stored bytes, voxel counts,
diagnoses) and runs on background threads with progress, cancel and streamed results;
``compare`` runs one on the calling thread.  ``difference_plane`` and ``mismatch_mask`` serve a
window's compare modes, ``mismatch_rects`` its mismatch overlay.  ``WkCompareJob`` compares
webKnossos datasets per (layer, mag) pair.  Qt-free.
"""

from viewer.core.compare.diagnose import diagnose
from viewer.core.compare.diff import (
    abs_difference,
    difference_plane,
    mismatch_mask,
    voxel_stats,
)
from viewer.core.compare.job import CompareJob, compare
from viewer.core.compare.model import (
    DIAGNOSIS,
    DIFFERENCE,
    INFO,
    BlockResult,
    Box,
    Finding,
    Summary,
)
from viewer.core.compare.overlay import mismatch_rects
from viewer.core.compare.webknossos import (
    PairResult,
    WkCompareJob,
    WkSummary,
    compare_webknossos,
    is_webknossos_input,
)

__all__ = [
    "DIAGNOSIS",
    "DIFFERENCE",
    "INFO",
    "BlockResult",
    "Box",
    "CompareJob",
    "Finding",
    "Summary",
    "abs_difference",
    "compare",
    "diagnose",
    "difference_plane",
    "mismatch_mask",
    "mismatch_rects",
    "voxel_stats",
    "PairResult",
    "WkCompareJob",
    "WkSummary",
    "compare_webknossos",
    "is_webknossos_input",
]
