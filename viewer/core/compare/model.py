"""What a comparison reports: per-block results, structural findings, and the summary.

Plain, immutable data (apart from the summary, which the job fills in), so results can cross
threads freely and be turned into JSON by ``to_json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

Vec3 = tuple[int, int, int]
#: A voxel box as ``(offset, shape)`` in dataset coordinates.
Box = tuple[Vec3, Vec3]

#: Severities of a structural finding.
DIFFERENCE = "difference"  #: the datasets do not hold the same voxels because of it
INFO = "info"  #: worth knowing, but the voxels may still be equal (e.g. another encoding)
DIAGNOSIS = "diagnosis"  #: a named conversion bug that the sampled data fits


def json_number(value: float | None) -> int | float | str | None:
    """A number JSON can carry: an infinite difference (NaN against a number) becomes "inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else str(value)
    return value


@dataclass(frozen=True)
class BlockResult:
    """One block (a chunk of A) that differs (or could not be read) in one of the datasets.

    ``file`` is A's storage unit holding it (a WKW data file, a zarr shard, an N5 chunk file),
    relative to A's root (``z0/y0/x1.wkw``); ``morton_index`` the chunk's index inside that
    unit in the unit's own order (WKW: the Morton index; the key keeps its historical name);
    ``position`` the chunk's first voxel ``[x, y, z]`` in dataset coordinates.  A block that
    could not be read has ``error`` set (naming the side, file, block and byte offset) and no
    voxel counts: a damaged block is reported, never read as zeros.
    """

    file: str
    morton_index: int
    position: Vec3
    voxels_different: int | None
    max_abs_diff: int | float | None
    error: str | None = None
    #: Set when the block belongs to one (layer, mag) pair of a webKnossos comparison: then
    #: ``file`` is relative to A's dataset folder and ``position`` is in that mag's voxels.
    layer: str | None = None
    mag: Vec3 | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "morton_index": self.morton_index,
            "position": list(self.position),
            "voxels_different": self.voxels_different,
            "max_abs_diff": json_number(self.max_abs_diff),
        }
        if self.error is not None:
            out["error"] = self.error
        if self.layer is not None:
            out["layer"] = self.layer
        if self.mag is not None:
            out["mag"] = list(self.mag)
        return out


@dataclass(frozen=True)
class Finding:
    """A structural difference or a named diagnosis.  ``kind`` is a short stable identifier
    (``voxel_type``, ``num_channels``, ``extent``, ``file_missing``, ``transposed``, ...),
    ``details`` the facts behind the message, for machines."""

    kind: str
    severity: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "message": self.message,
                **self.details}


@dataclass
class Summary:
    """The outcome of a comparison (complete, or as far as it got when cancelled)."""

    a: str
    b: str
    box: Box | None
    tolerance: float
    #: A's block side in voxels: a mismatching block covers ``position + [0, block_len)^3``
    #: (for chunks that are not cubes: ``chunk_shape``; ``block_len`` is then its x side).
    block_len: int = 0
    #: A's chunk shape (x, y, z): a mismatching block covers ``position + [0, chunk_shape)``.
    chunk_shape: Vec3 | None = None
    blocks_total: int = 0
    blocks_compared: int = 0
    mismatching_blocks: list[BlockResult] = field(default_factory=list)
    voxels_different: int = 0
    max_abs_diff: int | float = 0
    structure: list[Finding] = field(default_factory=list)
    #: False when the voxels could not be compared at all (e.g. different voxel types).
    comparable: bool = True
    cancelled: bool = False
    elapsed: float = 0.0

    @property
    def damaged_blocks(self) -> int:
        return sum(1 for r in self.mismatching_blocks if r.error is not None)

    @property
    def first_mismatch(self) -> BlockResult | None:
        return self.mismatching_blocks[0] if self.mismatching_blocks else None

    @property
    def equal(self) -> bool:
        """Same voxels everywhere compared, nothing unreadable, no structural difference,
        and the comparison ran to the end."""
        return (self.comparable and not self.cancelled and not self.mismatching_blocks
                and not any(f.severity == DIFFERENCE for f in self.structure))

    def to_json(self) -> dict[str, Any]:
        first = self.first_mismatch
        return {
            "equal": self.equal,
            "a": self.a,
            "b": self.b,
            "box": None if self.box is None else [*self.box[0], *self.box[1]],
            "tolerance": self.tolerance,
            "comparable": self.comparable,
            "cancelled": self.cancelled,
            "block_len": self.block_len,
            "chunk_shape": None if self.chunk_shape is None else list(self.chunk_shape),
            "blocks_total": self.blocks_total,
            "blocks_compared": self.blocks_compared,
            "mismatching_block_count": len(self.mismatching_blocks),
            "damaged_blocks": self.damaged_blocks,
            "voxels_different": self.voxels_different,
            "max_abs_diff": json_number(self.max_abs_diff),
            "first_mismatch": None if first is None else first.to_json(),
            "mismatching_blocks": [r.to_json() for r in self.mismatching_blocks],
            "structure": [f.to_json() for f in self.structure],
            "elapsed_s": round(self.elapsed, 3),
        }
