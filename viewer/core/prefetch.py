"""Which blocks a plane needs, and which blocks to read next: the loader's geometry and policy.

Blocks (a volume's chunks) are addressed here by their *global* block coordinates
``(gx, gy, gz)`` (voxel // chunk_shape, per axis; chunks need not be cubic); the loader turns
them into cache keys (storage unit, index in it) in bulk.

``PlaneLayout`` says, for one ``PlaneRequest``, every block the plane crosses and which rectangle
of the plane each one fills.  The prefetch policy ranks what to read beyond the screen:

1. the next block layers along each view's normal in the direction it last moved (the focused
   view first, nearer layers first), and a band beyond the edge a view was panned towards;
2. then the Morton neighbourhood of the cursor: the blocks around the cursor's block, nearest
   first, and one layer on either side of views that have not moved yet.

``rank`` turns a ``Plan`` (what is on screen and how the views moved) into ranked lists of
blocks for the loader's scheduler, within a byte allowance.

Pure functions of their arguments (``rank`` also remembers the grids it keys in its
``BlockKeys``); any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.blockkeys import BlockKeys
from viewer.core.schedule import Ranked
from viewer.core.slicing import IN_PLANE, PlaneRequest

IntArray = npt.NDArray[np.int64]
Vec3 = tuple[int, int, int]


def chunk_dims(chunk: int | Sequence[int]) -> Vec3:
    """``(cx, cy, cz)`` of a chunk shape given as one side (cubic) or three."""
    if isinstance(chunk, (int, np.integer)):
        return (int(chunk), int(chunk), int(chunk))
    c = tuple(int(v) for v in chunk)
    return (c[0], c[1], c[2])

#: Block layers read ahead of a view moving along its normal.
LAYERS_AHEAD = 2
#: Block columns read ahead of a view panned in its plane.
PAN_AHEAD = 2
#: Radius (in blocks) of the cube around the cursor's block that is read when idle.
NEIGHBOURHOOD_RADIUS = 2


@dataclass(frozen=True)
class PlaneLayout:
    """The blocks one plane crosses.  Row ``k`` of every array describes one block:
    ``blocks[k]`` its global block coordinates, ``[u0, u1) x [v0, v1)`` the plane pixels it
    fills, ``(bu0, bv0)`` where that rectangle starts inside the block; ``depth`` is the voxel
    index along the normal inside the block (the same for all); ``bu``/``bv`` the block's
    size along the plane's u and v axes."""

    request: PlaneRequest
    chunk: Vec3
    bu: int
    bv: int
    blocks: IntArray
    u0: IntArray
    u1: IntArray
    v0: IntArray
    v1: IntArray
    bu0: IntArray
    bv0: IntArray
    depth: int
    #: Block ranges along u and v, ``[lo, hi)``, and the block layer along the normal.
    u_blocks: tuple[int, int]
    v_blocks: tuple[int, int]
    layer: int

    def __len__(self) -> int:
        return int(self.blocks.shape[0])

    @cached_property
    def full(self) -> list[bool]:
        """Per block: it fills a whole block-sized rectangle of the plane (no clipping)."""
        whole = ((self.u1 - self.u0) == self.bu) & ((self.v1 - self.v0) == self.bv)
        return [bool(x) for x in whole]


def plane_layout(request: PlaneRequest, chunk: int | Sequence[int]) -> PlaneLayout:
    """The blocks ``request`` crosses (only non-negative coordinates hold data)."""
    dims = chunk_dims(chunk)
    u_axis, v_axis = IN_PLANE[request.axis]
    bu, bv, bn = dims[u_axis], dims[v_axis], dims[request.axis]
    lo_u, lo_v = (max(c, 0) for c in request.lo)
    hi_u, hi_v = request.hi
    empty = request.index < 0 or hi_u <= lo_u or hi_v <= lo_v
    u_blocks = (lo_u // bu, (hi_u - 1) // bu + 1) if not empty else (0, 0)
    v_blocks = (lo_v // bv, (hi_v - 1) // bv + 1) if not empty else (0, 0)
    au = np.arange(*u_blocks, dtype=np.int64)
    av = np.arange(*v_blocks, dtype=np.int64)
    mv, mu = np.meshgrid(av, au, indexing="ij")
    gu: IntArray = mu.ravel()
    gv: IntArray = mv.ravel()
    layer = request.index // bn if request.index >= 0 else -1
    blocks = np.empty((gu.size, 3), dtype=np.int64)
    blocks[:, request.axis] = layer
    blocks[:, u_axis] = gu
    blocks[:, v_axis] = gv
    su = np.maximum(gu * bu, lo_u)
    sv = np.maximum(gv * bv, lo_v)
    eu = np.minimum(gu * bu + bu, hi_u)
    ev = np.minimum(gv * bv + bv, hi_v)
    return PlaneLayout(
        request=request, chunk=dims, bu=bu, bv=bv, blocks=blocks,
        u0=su - request.lo[0], u1=eu - request.lo[0], v0=sv - request.lo[1],
        v1=ev - request.lo[1], bu0=su - gu * bu, bv0=sv - gv * bv,
        depth=request.index - layer * bn, u_blocks=u_blocks, v_blocks=v_blocks, layer=layer)


def plane_grid(axis: int, layer: int, u_range: tuple[int, int],
               v_range: tuple[int, int]) -> IntArray:
    """Blocks of a plane-shaped slab: block `layer` along `axis`, u and v block ranges."""
    u_axis, v_axis = IN_PLANE[axis]
    bu = np.arange(*u_range, dtype=np.int64)
    bv = np.arange(*v_range, dtype=np.int64)
    gv, gu = np.meshgrid(bv, bu, indexing="ij")
    out = np.empty((gu.size, 3), dtype=np.int64)
    out[:, axis] = layer
    out[:, u_axis] = gu.ravel()
    out[:, v_axis] = gv.ravel()
    return out


def layers_ahead(layout: PlaneLayout, direction: int, count: int = LAYERS_AHEAD) -> list[IntArray]:
    """The next ``count`` block layers past ``layout``'s along its normal (``direction`` +1/-1),
    nearest first; one array per layer."""
    out = []
    for k in range(1, count + 1):
        layer = layout.layer + direction * k
        if layer < 0 or len(layout) == 0:
            break
        out.append(plane_grid(layout.request.axis, layer, layout.u_blocks, layout.v_blocks))
    return out


def pan_band(layout: PlaneLayout, du: int, dv: int, width: int = PAN_AHEAD) -> list[IntArray]:
    """Block columns beyond the edge(s) the view was panned towards (``du``/``dv`` signs)."""
    if len(layout) == 0:
        return []
    out = []
    (ulo, uhi), (vlo, vhi) = layout.u_blocks, layout.v_blocks
    axis, layer = layout.request.axis, layout.layer
    for k in range(1, width + 1):
        if du > 0:
            out.append(plane_grid(axis, layer, (uhi + k - 1, uhi + k), (vlo, vhi)))
        elif du < 0 and ulo - k >= 0:
            out.append(plane_grid(axis, layer, (ulo - k, ulo - k + 1), (vlo, vhi)))
        if dv > 0:
            out.append(plane_grid(axis, layer, (ulo, uhi), (vhi + k - 1, vhi + k)))
        elif dv < 0 and vlo - k >= 0:
            out.append(plane_grid(axis, layer, (ulo, uhi), (vlo - k, vlo - k + 1)))
    return out


def neighbourhood(cursor: Sequence[int], chunk: int | Sequence[int],
                  radius: int = NEIGHBOURHOOD_RADIUS) -> IntArray:
    """Blocks of the cube of ``radius`` around the cursor's block, nearest first (ties in
    Morton-like order: x fastest), never negative."""
    dims = chunk_dims(chunk)
    centre = np.asarray([int(c) // d for c, d in zip(cursor, dims, strict=True)], dtype=np.int64)
    r = np.arange(-radius, radius + 1, dtype=np.int64)
    gz, gy, gx = np.meshgrid(r, r, r, indexing="ij")
    offsets = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)
    dist = np.abs(offsets).max(axis=1) * 1000 + np.abs(offsets).sum(axis=1)
    offsets = offsets[np.argsort(dist, kind="stable")]
    blocks = centre + offsets
    return blocks[(blocks >= 0).all(axis=1)]


def sign(value: int) -> int:
    return (value > 0) - (value < 0)


@dataclass(frozen=True)
class Plan:
    """What ranking the prefetch of one screen needs (taken on the GUI thread, ranked by a
    worker): the views in order (focused first) with their layouts, the cursor, the bytes of
    the screen's blocks, and each view's direction of motion along its normal and in its
    plane."""

    order: list[int]
    layouts: dict[int, PlaneLayout]
    cursor: Vec3
    visible_bytes: int  #: what the screen's blocks take decoded
    normal_dir: dict[int, int]
    pan_dir: dict[int, tuple[int, int]]


def rank(plan: Plan, keys: BlockKeys, chunk: Vec3, allowance: int,
         block_nbytes: int) -> list[Ranked]:
    """What to read beyond the screen, ranked (at most ``allowance`` bytes of blocks):

    2. the next ``LAYERS_AHEAD`` block layers in each view's direction of motion (nearer
       layers first, focused view first), and bands beyond the edge a view was panned towards;
    3. the neighbourhood of the cursor, then one layer either side of views that have not
       moved.
    """
    order, layouts, cursor = plan.order, plan.layouts, plan.cursor
    out: list[Ranked] = []
    spent = 0

    def add(prio: tuple[int, ...], memo: tuple[Any, ...], make: Callable[[], IntArray]
            ) -> None:
        nonlocal spent
        blocks = keys.remembered(memo)
        if blocks is None:
            blocks = make()
        if len(blocks) == 0:
            return
        cost = len(blocks) * block_nbytes
        if spent + cost > allowance:
            return
        spent += cost
        block_keys, blocks = keys.keys(memo, blocks)
        out.append((prio, memo, block_keys, blocks, True))

    def grid(lay: PlaneLayout, layer: int) -> Callable[[], IntArray]:
        return lambda: plane_grid(lay.request.axis, layer, lay.u_blocks, lay.v_blocks)

    def given(blocks: IntArray) -> Callable[[], IntArray]:
        return lambda: blocks

    for rank_, i in enumerate(order):
        lay = layouts[i]
        axis = lay.request.axis
        direction = plan.normal_dir.get(axis)
        if direction and len(lay):
            for k in range(1, LAYERS_AHEAD + 1):
                layer = lay.layer + direction * k
                if layer >= 0:
                    add((2, k, rank_), ("plane", axis, layer, lay.u_blocks, lay.v_blocks),
                        grid(lay, layer))
        pan = plan.pan_dir.get(axis)
        if pan:
            for k, band in enumerate(pan_band(lay, *pan), 1):
                add((2, k, rank_), ("pan", axis, lay.layer, lay.u_blocks, lay.v_blocks, pan, k),
                    given(band))
    centre = tuple(c // d for c, d in zip(cursor, chunk, strict=True))
    add((3, 0, 0), ("near", centre), lambda: neighbourhood(cursor, chunk))
    for rank_, i in enumerate(order):
        lay = layouts[i]
        axis = lay.request.axis
        if axis in plan.normal_dir or not len(lay):
            continue
        for layer in (lay.layer + 1, lay.layer - 1):
            if layer >= 0:
                add((3, 1, rank_), ("plane", axis, layer, lay.u_blocks, lay.v_blocks),
                    grid(lay, layer))
    return out
