"""Conversion QA: compare two volumes chunk by chunk, say where and why they differ.

Any two volumes the format registry opens compare (a WKW mag against its zarr3 or N5
conversion): nothing here knows a format.  ``CompareJob`` is the engine (structure check,
fast comparison of stored bytes, voxel counts, diagnoses) and runs on background threads with
progress, cancel and streamed results; ``compare`` runs one on the calling thread.
``DatasetCompareJob`` compares datasets of layers and mags per (layer, mag) pair.
``difference_plane`` and ``mismatch_mask`` serve a window's compare modes, ``mismatch_rects``
its mismatch overlay.  Qt-free.
"""

from viewer.core.compare.datasets import (
    DatasetCompareJob,
    DatasetSummary,
    PairResult,
    WkCompareJob,
    WkSummary,
    compare_datasets,
    compare_webknossos,
    is_collection,
    open_input,
)
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
from viewer.core.compare.sides import VolumeSpec

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
    "DatasetCompareJob",
    "DatasetSummary",
    "PairResult",
    "VolumeSpec",
    "WkCompareJob",
    "WkSummary",
    "compare_datasets",
    "compare_webknossos",
    "is_collection",
    "open_input",
]
