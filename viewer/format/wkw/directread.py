"""Big reads of compressed blocks decoded straight into the destination (issue 20).

The staging path of ``boxread`` decodes a batch of block layers (up to 16 MB) into a staging
buffer and then moves the box out with one numpy copy: the decoded bytes go to memory and
come back.  Here each thread decodes one block at a time into a small buffer of its own (32
KB for 32^3 uint8: it stays in the core's cache) and copies it at once into its place in the
destination.  The copy treats each block row (``block_len`` voxels of every channel,
contiguous on both sides) as one item of a void dtype, so numpy moves 1,024 items of 32 bytes
rather than 32,768 bytes one row of 32 at a time (measured: ~2.5 us a 32^3 block against 5.5-7).

Used by ``boxread`` for the batches of a large read that both threads share; a batch whose
blocks the box cuts along x (or an ``out`` whose rows are not contiguous) takes the staging
path instead.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from viewer.format.wkw import lz4block, morton

if TYPE_CHECKING:
    from viewer.format.wkw.file import File

Vec3 = tuple[int, int, int]

_local = threading.local()


def _scratch(nbytes: int) -> npt.NDArray[np.uint8]:
    buf: npt.NDArray[np.uint8] | None = getattr(_local, "scratch", None)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(nbytes, dtype=np.uint8)
        _local.scratch = buf
    return buf


def applicable(f: File, out_t: npt.NDArray[Any], lo: list[int], hi: list[int]) -> bool:
    """Whether ``read_batch`` can read this box: compressed blocks, the box not cutting any
    block along x, and each destination row (x and channels) contiguous."""
    h = f.header
    b = h.block_len
    if not h.is_compressed or lo[0] % b or (hi[0] % b and hi[0] != h.file_len_vx):
        return False
    item = out_t.dtype.itemsize
    return bool(out_t.strides[3] == item and out_t.strides[2] == item * out_t.shape[3]
                and out_t.dtype == h.dtype)


def read_batch(f: File, out_t: npt.NDArray[Any], lo: list[int], hi: list[int],
               shift: list[int], blo: Vec3, bhi: Vec3) -> None:
    """Read the blocks ``blo <= b < bhi`` and copy their part of the box ``[lo, hi)`` into
    ``out_t`` (``(Z, Y, X, C)``), block by block (see the module docstring).  Raises the
    first damaged block's error (lowest index), as the staging path does."""
    h = f.header
    b = h.block_len
    c = h.num_channels
    bb = h.block_bytes
    indices = morton.box_indices(blo, bhi)
    starts, ends = f._ranges_of(indices)
    problem = f._first_problem(indices, starts, ends)
    if problem is not None:
        raise problem
    src, keep = f._sources(starts, ends, indices)
    sizes = (ends - starts).tolist()
    scratch = _scratch(bb)
    dst_addr = scratch.__array_interface__["data"][0]
    row = np.dtype((np.void, b * c * h.dtype.itemsize))
    rows = scratch[:bb].view(row).reshape(b, b)  # (z, y) rows of one decoded block
    decode = lz4block.decode_many
    zn, yn, xn, cn = out_t.shape
    # out_t with each (x, channel) row as one axis of voxels (a view: ``applicable`` checked
    # that x and the channels are contiguous).
    flat = np.lib.stride_tricks.as_strided(
        out_t, (zn, yn, xn * cn), (out_t.strides[0], out_t.strides[1], out_t.strides[3]))
    width = b * c
    failed: list[tuple[int, int]] = []
    k = 0
    try:
        for bz in range(blo[2], bhi[2]):
            z0, z1 = max(lo[2], bz * b), min(hi[2], (bz + 1) * b)
            zs, ze = z0 - bz * b, z1 - bz * b
            oz0, oz1 = z0 + shift[2], z1 + shift[2]
            for by in range(blo[1], bhi[1]):
                y0, y1 = max(lo[1], by * b), min(hi[1], (by + 1) * b)
                ys, ye = y0 - by * b, y1 - by * b
                oy0, oy1 = y0 + shift[1], y1 + shift[1]
                for bx in range(blo[0], bhi[0]):
                    got = decode([src[k]], [sizes[k]], [dst_addr], [bb], bb)[0]
                    if got != bb:
                        failed.append((k, got))
                        k += 1
                        continue
                    ox = (bx * b + shift[0]) * c
                    flat[oz0:oz1, oy0:oy1, ox:ox + width].view(row)[:, :, 0] = \
                        rows[zs:ze, ys:ye]
                    k += 1
    finally:
        del keep
    if failed:
        j, got = min(failed, key=lambda p: int(indices[p[0]]))
        raise f._decode_error(int(indices[j]), int(starts[j]), got, bb, False)
