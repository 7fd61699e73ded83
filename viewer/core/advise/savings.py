"""What a chosen candidate would save, chunk by chunk, on one plane: the inspector's Map
coloured by savings.

A chunk's value is the share of today's stored bytes the candidate would save there,
``(today - candidate) / today``, clipped to [-1, 1] (-1: it would cost twice as much or
more); a chunk not stored today has none.  The candidate's bytes are its measured ones where
the chunk was re-encoded and the projection's prediction elsewhere (``ShapeMap``).  Chunks
are the candidate's own (another chunk shape than today's is drawn at its own size).

Qt-free; pure functions; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from viewer.core.advise.job import ShapeMap
from viewer.core.inspect.plane import IN_PLANE, CompressionPlane

#: The Map's metric name for savings (beside ``inspect.SIZE`` and ``inspect.RATIO``).
SAVINGS = "savings"


@dataclass(frozen=True)
class SavingsSource:
    """The chunks of one chunk shape and one candidate's column of ``chunks.predicted``;
    ``chunk_nbytes`` a decoded chunk's bytes."""

    chunks: ShapeMap
    column: int
    chunk_nbytes: int
    label: str = ""


def chunk_savings(source: SavingsSource) -> np.ndarray:
    """Per present chunk, the share of today's bytes saved (NaN where today stores none)."""
    today = source.chunks.current.astype(np.float64)
    cand = source.chunks.predicted[:, source.column].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        saved = np.where(today > 0, (today - cand) / today, np.nan)
    return np.clip(saved, -1.0, 1.0)


def savings_plane(source: SavingsSource, axis: int, index: int) -> CompressionPlane | None:
    """The savings of the chunks on the plane with normal ``axis`` at voxel ``index`` (None
    when the plane meets none)."""
    chunks = source.chunks
    c = chunks.chunk_shape
    grid = chunks.grid
    on = grid[:, axis] == index // c[axis]
    if not on.any():
        return None
    u_ax, v_ax = IN_PLANE[axis]
    gu, gv = grid[on, u_ax], grid[on, v_ax]
    u0, v0 = int(gu.min()), int(gv.min())
    values = np.full((int(gu.max()) - u0 + 1, int(gv.max()) - v0 + 1), np.nan)
    values[gu - u0, gv - v0] = chunk_savings(source)[on]
    return CompressionPlane(axis, index, SAVINGS, (u0 * c[u_ax], v0 * c[v_ax]),
                            (c[u_ax], c[v_ax]), values, source.chunk_nbytes)


__all__ = ["SAVINGS", "SavingsSource", "chunk_savings", "savings_plane"]
