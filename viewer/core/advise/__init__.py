"""What if: how big and how fast a volume would be under other codecs and chunkings.

``run_advice(volume, AdviseRequest(...))`` re-encodes a stratified sample of the volume's
present chunks (or all of them) with candidate encodings and projects, per candidate, the
bytes the whole layer/mag would take in that format (payloads plus the format's own
overhead) with a 95 % interval, the encode and decode speed per core, and a lossy
candidate's error; then recommends one.  One module per step:

- ``codecs``: the encodings (this package's own encoders over the formats' libraries);
- ``targets``: the target formats' byte layouts and overhead models, and ``Candidate``;
- ``catalogue``: ``--codecs`` parsing and the default candidates per voxel type;
- ``sampling``: the survey of today's chunk tables and the stratified sample;
- ``measure``: re-encoding chunks; ``projection``: the estimates; ``recommend``: the choice;
- ``job``: the run (threads, a child process for the window, a Dask cluster), ``Report``;
- ``savings``: per-chunk savings on a plane, for the inspector's Map.

Reads go through ``viewer.format``'s declared interface only; nothing here reads a format.
Qt-free.
"""

from viewer.core.advise.catalogue import (
    CandidateError,
    Skipped,
    candidates,
    default_specs,
    parse_chunk_shapes,
    parse_spec,
)
from viewer.core.advise.codecs import Encoding, EncodingUnavailable
from viewer.core.advise.job import (
    AdviseCancelled,
    AdviseProgress,
    AdviseRequest,
    AdviseWork,
    ChunkRow,
    Report,
    ShapeMap,
    human_bytes,
    run_advice,
)
from viewer.core.advise.projection import Projection, t95
from viewer.core.advise.recommend import BROWSE_DECODE_MB_S, Recommendation, pareto_front
from viewer.core.advise.savings import SAVINGS, SavingsSource, chunk_savings, savings_plane
from viewer.core.advise.targets import DEFAULT_SHARD_VX, Candidate, TargetFormat

__all__ = [
    "AdviseCancelled", "AdviseProgress", "AdviseRequest", "AdviseWork", "ChunkRow", "Report",
    "ShapeMap", "run_advice", "human_bytes", "Projection", "t95", "BROWSE_DECODE_MB_S",
    "Recommendation", "pareto_front", "Candidate", "TargetFormat", "DEFAULT_SHARD_VX",
    "Encoding", "EncodingUnavailable", "CandidateError", "Skipped", "candidates",
    "default_specs", "parse_chunk_shapes", "parse_spec", "SAVINGS", "SavingsSource",
    "chunk_savings", "savings_plane",
]
