"""The compression map: per-chunk stored size or ratio on one orthogonal plane through a
volume, from the ChunkTables of the units the plane crosses (nothing decoded).

Chunks need not be cubes: a plane's values are one per chunk of the in-plane chunk grid, each
covering ``chunk_size`` (u, v) voxels.  Qt-free; any thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from viewer.core.inspect.chunks import ABSENT, BAD_RANGE, PAST_EOF
from viewer.core.inspect.scan import TableCache
from viewer.format import Volume

Vec3 = tuple[int, int, int]

SIZE = "size"
RATIO = "ratio"

#: In-plane data axes (u, v) of the plane whose normal is the key.
IN_PLANE: dict[int, tuple[int, int]] = {2: (0, 1), 1: (0, 2), 0: (1, 2)}


@dataclass(frozen=True)
class CompressionPlane:
    """Per-chunk values on one plane: ``values[u, v]`` for chunk (u, v) of the in-plane chunk
    grid starting at voxel ``origin`` (u, v), each chunk ``chunk_size`` (u, v) voxels; NaN where
    no unit or chunk is stored or the chunk's range is damaged.  ``metric`` is SIZE (bytes) or
    RATIO; ``chunk_nbytes`` the decoded size of a chunk (the top of the size scale)."""

    axis: int
    index: int
    metric: str
    origin: tuple[int, int]
    chunk_size: tuple[int, int]
    values: npt.NDArray[np.float64]
    chunk_nbytes: int


def compression_plane(volume: Volume, axis: int, index: int,
                      unit_positions: Iterable[Vec3], metric: str = SIZE,
                      cache: TableCache | None = None) -> CompressionPlane | None:
    """Stored chunk sizes (or ratios) on the plane with normal ``axis`` at voxel ``index``,
    over the units of ``unit_positions`` that the plane crosses.  None when it crosses none."""
    side = volume.unit_len_vx
    c, n = volume.chunk_shape, volume.unit_shape
    layer = index // side[axis]
    local_layer = (index % side[axis]) // c[axis]
    u_ax, v_ax = IN_PLANE[axis]
    on_plane = sorted({p for p in unit_positions if p[axis] == layer})
    if not on_plane:
        return None
    u_lo = min(p[u_ax] for p in on_plane)
    u_hi = max(p[u_ax] for p in on_plane) + 1
    v_lo = min(p[v_ax] for p in on_plane)
    v_hi = max(p[v_ax] for p in on_plane) + 1
    nu, nv = n[u_ax], n[v_ax]
    values = np.full(((u_hi - u_lo) * nu, (v_hi - v_lo) * nv), np.nan, dtype=np.float64)
    if cache is None or cache.volume is not volume:
        cache = TableCache(volume)
    for pos in on_plane:
        table, _ = cache.get(pos)
        if table is None or table.coords.shape[0] != nu * nv * n[axis]:
            continue
        sel = np.flatnonzero(table.coords[:, axis] == local_layer)
        vals = (table.sizes[sel] if metric == SIZE else table.ratio[sel]).astype(np.float64)
        vals[(table.flags[sel] & (BAD_RANGE | PAST_EOF | ABSENT)) != 0] = np.nan
        cu = table.coords[sel, u_ax] + (pos[u_ax] - u_lo) * nu
        cv = table.coords[sel, v_ax] + (pos[v_ax] - v_lo) * nv
        values[cu, cv] = vals
    return CompressionPlane(axis, index, metric, (u_lo * side[u_ax], v_lo * side[v_ax]),
                            (c[u_ax], c[v_ax]), values, volume.chunk_nbytes)


__all__ = ["SIZE", "RATIO", "IN_PLANE", "CompressionPlane", "compression_plane"]
