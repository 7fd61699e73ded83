"""Where mismatching blocks meet a plane: the rectangles a window draws as its mismatch
overlay.  Qt-free; any thread."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from viewer.core.compare.model import BlockResult
from viewer.core.slicing import IN_PLANE, PlaneRequest

#: An in-plane rectangle ``(u, v, width, height)`` in the request's pixel coordinates
#: (relative to ``request.lo``).
Rect = tuple[int, int, int, int]


def mismatch_rects(blocks: Iterable[BlockResult], block_len: int | Sequence[int],
                   request: PlaneRequest) -> list[tuple[Rect, BlockResult]]:
    """The mismatching (or unreadable) blocks the plane cuts through, each with its
    rectangle clipped to the requested in-plane box.  ``block_len``: the blocks' side, or
    their shape (x, y, z) when they are not cubes."""
    size = (block_len,) * 3 if isinstance(block_len, int) else tuple(block_len)
    u_axis, v_axis = IN_PLANE[request.axis]
    out: list[tuple[Rect, BlockResult]] = []
    for r in blocks:
        p = r.position
        if not p[request.axis] <= request.index < p[request.axis] + size[request.axis]:
            continue
        u0 = max(p[u_axis], request.lo[0])
        v0 = max(p[v_axis], request.lo[1])
        u1 = min(p[u_axis] + size[u_axis], request.hi[0])
        v1 = min(p[v_axis] + size[v_axis], request.hi[1])
        if u1 > u0 and v1 > v0:
            out.append(((u0 - request.lo[0], v0 - request.lo[1], u1 - u0, v1 - v0), r))
    return out
