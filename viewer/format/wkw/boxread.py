"""Reading a box out of one data file: the engine behind ``File.read_into``.

(Over 600 lines: the two ways below share their geometry, checks and copies; the seam to
split along is the small read, ``_read_few`` down to ``_byte_rows``.)

Two ways through a box read, by size (the numbers are the constants below):

- A few blocks (at most ``PER_BLOCK_COPY``): plain-int index arithmetic and range checks, each
  block decoded (only as far as the box needs) or, raw, read (just the z planes needed, one
  pread each) into its slot of a per-thread staging buffer, then copied out one column of
  blocks along z at a time, x rows as whole elements (``_copy_columns``).
- More (a plane, a box, the whole file): the block box is cut into slabs of at most
  ``STAGING_BYTES`` decoded (``_batches``: whole rows of blocks along x, so that a slab's copy
  writes whole rows of the Fortran-ordered output, one after the other).  Each slab is read
  (one ``pread`` per run of neighbouring blocks), decoded into a per-thread staging buffer
  and copied out by one numpy copy.  From ``PARALLEL_BYTES`` of blocks the work is shared by
  all cores (``viewer.format.pool.share``): a read of up to ``ONE_BATCH_BYTES`` (a plane) is
  one batch whose reading and decoding are shared a few blocks at a time, the reading of some
  overlapping the decoding of others (``shareddecode``); a larger one is cut into
  slabs that the calling thread and the pool's threads take until none is left (reading,
  decoding and copying all release the GIL).  Raw XY planes are read with one pread per
  block (just the planes needed).

A full read's time goes mostly to decoding, then to the copy into the output (profile in
docs/performance.md).  The copy cannot be saved: LZ4 decodes a block into contiguous memory,
and a block's voxels are not contiguous in a ``(C, X, Y, Z)`` array wider than one block.

Functions here take the file they read from (``BlockFile``: a ``wkw.File``); they use its
descriptor, jump table and range checks, and never change it.  Stored bytes come from
``pread`` into per-thread buffers (``buffers``), never from a mapping (``file.py`` says why).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from viewer.format import pool
from viewer.format.errors import FormatError
from viewer.format.handles import readinto_fd
from viewer.format.wkw import buffers, lz4block, morton, nativebox, shareddecode
from viewer.format.wkw.blockfile import MERGE_GAP, BlockFile
from viewer.format.wkw.header import Header

Vec3 = tuple[int, int, int]

#: Decoded bytes of one slab of a read shared by the cores (at most: a read is cut into at
#: least ``SHARED_CHUNKS`` slabs per thread).  Smaller slabs, whose staging buffer would stay
#: in a core's cache, cost more Python work per byte and more hand-offs of the GIL
#: (docs/performance.md).
STAGING_BYTES = 16 << 20
#: A read of compressed blocks totalling at least this many bytes is shared by all cores
#: (below that, waking the pool's threads and the chance that one is descheduled in the
#: middle of its share cost more than they save; a 64^3 box stays on the calling thread).
PARALLEL_BYTES = 2 << 20
#: The same for a read by the native kernel (no Python between blocks: a second thread pays
#: off sooner).
NATIVE_PARALLEL_BYTES = 1 << 20
#: The same for raw blocks (only copied, no decoding: threads pay off later).
PARALLEL_RAW_BYTES = 16 << 20
#: A read shared by the cores is cut into at least this many slabs per thread (more, smaller
#: slabs: less to wait for when a thread is descheduled in the middle of its last slab).
SHARED_CHUNKS = 4
#: A compressed read of at most this many bytes of blocks (a 512^2 plane of 32^3 blocks) that
#: is shared by the cores is one batch whose reading and decoding are shared a few blocks at
#: a time (``shareddecode``); larger reads are cut into slabs.  A read kept on one thread goes
#: in batches of this size.
ONE_BATCH_BYTES = 16 << 20
#: A batch of raw blocks of which the box needs at most 1/RAW_PREAD_PLANES of each block's z
#: planes (an XY plane) is read with one pread of just those planes per block.
RAW_PREAD_PLANES = 4
#: Threads that decode one large read (1: the calling thread alone).  Default: every core,
#: up to the pool's size.
DECODE_THREADS = min(pool.cores(), pool.MAX_THREADS)
#: Batches of at most this many blocks are copied out block by block, larger ones by one gather.
PER_BLOCK_COPY = 48

_PREADV: Any = getattr(os, "preadv", None)
_LZ4_WHOLE = lz4block.whole_decoder()
_LZ4_PARTIAL = lz4block.partial_decoder()


def _staging(nbytes: int) -> npt.NDArray[np.uint8]:
    return buffers.staging(nbytes)


class _Geometry(NamedTuple):
    """What a read needs of a header, as plain locals (one tuple per read, not thirty
    attribute look-ups)."""

    block_len: int
    block_bytes: int
    plane: int  # bytes of one z plane of a block
    dtype: np.dtype[Any]
    channels: int
    compressed: bool
    side: int  # voxels per file side


def _geometry(h: Header) -> _Geometry:
    b = h.block_len
    return _Geometry(b, h.block_bytes, b * b * h.voxel_size, h.dtype, h.num_channels,
                     h.is_compressed, b * h.file_len)


def read_into(f: BlockFile, out: npt.NDArray[Any], offset: Sequence[int],
              out_offset: Sequence[int] = (0, 0, 0),
              shape: Sequence[int] | None = None, native: bool = True) -> None:
    """Read the box of ``shape`` (default: all of ``out`` past ``out_offset``) starting at
    file-local voxel ``offset`` into ``out[:, out_offset:...]``.  The box is clipped to the
    file; what lies outside is left untouched.  ``out`` is ``(C, X, Y, Z)`` of the file's
    dtype (Fortran order is fastest).  A damaged block raises its ``FormatError``.
    ``native``: use the native kernel where it was built (False: the Python path alone)."""
    g = _geometry(f.header)
    b = g.block_len
    side = g.side
    if shape is None:
        shape = tuple(int(out.shape[1 + a]) - int(out_offset[a]) for a in range(3))
    off = [int(v) for v in offset]
    lo = [max(off[a], 0) for a in range(3)]
    hi = [min(off[a] + int(shape[a]), side) for a in range(3)]
    if any(hi[a] <= lo[a] for a in range(3)):
        return
    # Where file voxel (x, y, z) lands in out, as an offset added to file coordinates.
    shift = [int(out_offset[a]) - off[a] for a in range(3)]
    blo = (lo[0] // b, lo[1] // b, lo[2] // b)
    bhi = ((hi[0] - 1) // b + 1, (hi[1] - 1) // b + 1, (hi[2] - 1) // b + 1)
    out_t = out.T  # (Z, Y, X, C); C order when out is F order
    blocks = (bhi[0] - blo[0]) * (bhi[1] - blo[1]) * (bhi[2] - blo[2])
    if native and _kernel_takes(g, blocks, blo, bhi):
        rows = _byte_rows(out_t)
        if rows is not None:
            nativebox.read(f, rows, lo, hi, shift, _native_threads(g, blocks, lo, hi, blo, bhi))
            return
    # Bytes decoded (compressed) or read (raw) per block: a read one block layer thick
    # (an XY plane) needs each block only up to (raw: from and up to) its z planes.
    bb = g.block_bytes
    per_block = bb
    if bhi[2] - blo[2] == 1:
        z0, z1 = lo[2] - blo[2] * b, hi[2] - blo[2] * b
        per_block = (z1 if g.compressed else z1 - z0) * g.plane
    if blocks <= PER_BLOCK_COPY and blocks * per_block < (
            PARALLEL_BYTES if g.compressed else PARALLEL_RAW_BYTES):
        _read_few(f, out_t, lo, hi, shift, blo, bhi, g)  # a small read: this thread alone
        return
    enough = PARALLEL_BYTES if g.compressed else PARALLEL_RAW_BYTES
    threads = DECODE_THREADS
    if threads < 2 or blocks < 2 or blocks * per_block < enough:
        threads = 1
    if threads > 1 and g.compressed and blocks * bb <= ONE_BATCH_BYTES:
        # A plane or a medium box: the checks and the copy out are done once, by this
        # thread; the reading and decoding are shared a few blocks at a time (per-slab
        # Python work would serialise on the GIL).
        _read_batch(f, out_t, lo, hi, shift, blo, bhi, few=False, shared=True)
        return
    if threads == 1 and not g.compressed and bhi[2] - blo[2] > 1 and (
            bhi[0] - blo[0] == 1 or bhi[1] - blo[1] == 1):
        # Raw, one block thick along x or y (an XZ or YZ plane): column by column.
        rows = _byte_rows(out_t)
        if rows is not None:
            _read_raw_columns(f, rows, lo, hi, shift, blo, bhi, g)
            return
    if threads == 1:
        # One thread: batches as large as a plane (fewer, larger numpy operations; raw
        # planes and slabs are bound by them, not by the cache).
        batches = _batches(blo, bhi, bb, 1, ONE_BATCH_BYTES)
    else:
        batches = _batches(blo, bhi, bb, SHARED_CHUNKS * threads)
    if threads == 1 or len(batches) == 1:
        few = blocks <= PER_BLOCK_COPY
        for bl, bh in batches:
            _read_batch(f, out_t, lo, hi, shift, bl, bh, few=few)
        return
    _read_shared(f, out_t, lo, hi, shift, blo, bhi, batches, threads)


def small_native(h: Header, out: npt.NDArray[Any], offset: Sequence[int],
                 out_offset: Sequence[int], shape: Sequence[int]
                 ) -> tuple[npt.NDArray[np.uint8], list[int], list[int], list[int]] | None:
    """``(rows, lo, hi, shift)`` for ``nativebox.read_path`` when ``read_into`` of this box
    from a file of header ``h`` would be the kernel's on the calling thread alone (a small
    box), else None.  The arguments are ``read_into``'s."""
    g = _geometry(h)
    b, side = g.block_len, g.side
    off = [int(v) for v in offset]
    lo = [max(off[a], 0) for a in range(3)]
    hi = [min(off[a] + int(shape[a]), side) for a in range(3)]
    if hi[0] <= lo[0] or hi[1] <= lo[1] or hi[2] <= lo[2]:
        return None
    blo = (lo[0] // b, lo[1] // b, lo[2] // b)
    bhi = ((hi[0] - 1) // b + 1, (hi[1] - 1) // b + 1, (hi[2] - 1) // b + 1)
    blocks = (bhi[0] - blo[0]) * (bhi[1] - blo[1]) * (bhi[2] - blo[2])
    if not _kernel_takes(g, blocks, blo, bhi) or \
            _native_threads(g, blocks, lo, hi, blo, bhi) != 1:
        return None
    rows = _byte_rows(out.T)
    if rows is None:
        return None
    return rows, lo, hi, [int(out_offset[a]) - off[a] for a in range(3)]


def _kernel_takes(g: _Geometry, blocks: int, blo: Vec3, bhi: Vec3) -> bool:
    """Whether the native kernel reads this box (where it was built): every compressed read,
    small raw boxes and raw planes one block thick along x or y (XZ, YZ); raw XY planes and
    larger raw reads keep the Python path's ways (one pread of just the planes needed;
    reads into reused memory): as fast there."""
    if not nativebox.usable(g.compressed):
        return False
    if g.compressed or blocks <= PER_BLOCK_COPY:
        return True
    return RAW_PLANES_NATIVE and bhi[2] - blo[2] > 1 and (
        bhi[0] - blo[0] == 1 or bhi[1] - blo[1] == 1)


#: Raw XZ and YZ planes go through the native kernel (on every core from
#: ``PARALLEL_RAW_PLANE_BYTES``).
RAW_PLANES_NATIVE = True
#: A raw plane read by the kernel is shared by the cores from this many bytes of blocks.
PARALLEL_RAW_PLANE_BYTES = 2 << 20


def _native_threads(g: _Geometry, blocks: int, lo: list[int], hi: list[int], blo: Vec3,
                    bhi: Vec3) -> int:
    """Threads for a read by the kernel: every core from ``NATIVE_PARALLEL_BYTES`` of
    blocks decoded (compressed) or read (raw), else the calling thread alone."""
    if DECODE_THREADS < 2 or blocks < 2 * nativebox.GROUP:
        return 1
    per_block = g.block_bytes
    if bhi[2] - blo[2] == 1:
        z0, z1 = lo[2] - blo[2] * g.block_len, hi[2] - blo[2] * g.block_len
        per_block = (z1 if g.compressed else z1 - z0) * g.plane
    if g.compressed:
        enough = NATIVE_PARALLEL_BYTES
    elif blocks > PER_BLOCK_COPY:  # a raw plane (``_kernel_takes``)
        enough = PARALLEL_RAW_PLANE_BYTES
    else:
        enough = PARALLEL_RAW_BYTES
    return DECODE_THREADS if blocks * per_block >= enough else 1


def _batches(blo: Vec3, bhi: Vec3, block_bytes: int, at_least: int = 1,
             limit: int | None = None) -> list[tuple[Vec3, Vec3]]:
    """The block box ``[blo, bhi)`` cut into slabs of at most ``limit`` (default
    ``STAGING_BYTES``) decoded (at least one block), and into at least ``at_least`` slabs
    where it has that many rows: whole rows along x where they fit, z slowest (a slab's copy
    into the Fortran-ordered output then writes whole rows of it, one after the other)."""
    nbx, nby, nbz = bhi[0] - blo[0], bhi[1] - blo[1], bhi[2] - blo[2]
    limit = STAGING_BYTES if limit is None else limit
    fit = max(1, limit // max(block_bytes, 1))  # blocks per slab
    fit = min(fit, max(1, -(-nbx * nby * nbz // max(at_least, 1))))
    sx = min(nbx, fit)
    rows = max(1, fit // sx)
    # Two block layers along z when there are at least four rows: blocks that neighbour in
    # x, y and z lie next to each other in the file (Morton order), so a slab of 2 x 2 rows
    # is read with fewer preads than one of 4 x 1.
    sz = min(nbz, 2 if rows >= 4 else 1)
    sy = min(nby, max(1, rows // sz))
    sz = min(nbz, max(sz, fit // (sx * sy)))
    return [((x, y, z), (min(x + sx, bhi[0]), min(y + sy, bhi[1]), min(z + sz, bhi[2])))
            for z in range(blo[2], bhi[2], sz) for y in range(blo[1], bhi[1], sy)
            for x in range(blo[0], bhi[0], sx)]


def _read_shared(f: BlockFile, out_t: npt.NDArray[Any], lo: list[int], hi: list[int],
                 shift: list[int], blo: Vec3, bhi: Vec3, batches: list[tuple[Vec3, Vec3]],
                 threads: int) -> None:
    """Read ``batches`` on ``threads`` threads (``pool.share``: the calling thread and the
    pool's take the next slab until none is left; each slab is read, decoded and copied
    into its own part of out).  The block ranges are checked once, up front; a block that
    does not decode is reported after every slab is done, the lowest such block (the same
    error whichever thread met it)."""
    h = f.header
    if h.is_compressed:
        indices = morton.box_indices(blo, bhi)
        problem = f._first_problem(indices, *f._ranges_of(indices))
        if problem is not None:
            raise problem
    # The slabs of one layer of slabs (along z) write one stretch of out: when there are
    # enough layers, a thread takes a whole layer, so that no two threads fault in the same
    # pages of a new output at once (that costs the kernel far more: docs/performance.md).
    items: list[list[tuple[Vec3, Vec3]]] = []
    for bl, bh in batches:
        if items and items[-1][0][0][2] == bl[2]:
            items[-1].append((bl, bh))
        else:
            items.append([(bl, bh)])
    if len(items) < SHARED_CHUNKS * threads:
        items = [[batch] for batch in batches]
    failed: list[FormatError] = []

    def one(k: int) -> None:
        for bl, bh in items[k]:
            try:
                _read_batch(f, out_t, lo, hi, shift, bl, bh, checked=True, few=False)
            except FormatError as exc:
                failed.append(exc)

    pool.share(len(items), one, threads)
    if failed:
        raise min(failed, key=lambda e: e.block if e.block is not None else -1)


def _read_batch(f: BlockFile, out_t: npt.NDArray[Any], lo: list[int], hi: list[int],
                shift: list[int], blo: Vec3, bhi: Vec3, checked: bool = False,
                few: bool = True, shared: bool = False) -> None:
    """Read the blocks ``blo <= b < bhi`` (a box of the block grid) and copy their part of
    the box ``[lo, hi)`` into ``out_t`` (``(Z, Y, X, C)``).  ``checked``: the blocks' byte
    ranges were checked already.  ``few``: a batch of at most ``PER_BLOCK_COPY`` blocks may
    go block by block (``_read_few``: right for a small read, whose output stays in cache;
    a slab of a large read is copied whole rows at a time instead).  ``shared``: all cores
    read and decode the blocks (``shareddecode``; compressed files only)."""
    h = f.header
    b = h.block_len
    nbx, nby, nbz = bhi[0] - blo[0], bhi[1] - blo[1], bhi[2] - blo[2]
    if few and nbx * nby * nbz <= PER_BLOCK_COPY:
        _read_few(f, out_t, lo, hi, shift, blo, bhi)
        return
    # Per axis, the block-local voxel range read from every block of the batch: the box's
    # own range when the batch is one block thick along that axis, else whole blocks.
    rng = []
    for a, n in ((0, nbx), (1, nby), (2, nbz)):
        if n == 1:
            rng.append((lo[a] - blo[a] * b if lo[a] > blo[a] * b else 0,
                        hi[a] - blo[a] * b if hi[a] < (blo[a] + 1) * b else b))
        else:
            rng.append((0, b))
    (x0, x1), (y0, y1), (z0, z1) = rng
    indices = morton.box_indices(blo, bhi)
    c = h.num_channels
    count = len(indices)
    if not h.is_compressed:
        # Raw: one comparison with plain ints says whether every block is there.
        if h.data_offset + (int(indices.max()) + 1) * h.block_bytes > f.file_size:
            problem = f._first_problem(indices, *f._ranges_of(indices))
            if problem is not None:
                raise problem
        if (z1 - z0) * RAW_PREAD_PLANES <= b:
            _read_raw_planes(f, out_t, lo, hi, shift, blo, bhi, rng, indices)
            return
        bb = h.block_bytes
        staging = _staging(count * bb)
        _read_raw_blocks(f, indices, staging)
        blocks = staging[:count * bb].view(h.dtype).reshape(nbz, nby, nbx, b, b, b, c)
        _place(f, out_t, lo, hi, shift, blo, rng, blocks[:, :, :, z0:z1, y0:y1, x0:x1, :])
        return
    starts, ends = f._ranges_of(indices)
    if not checked:
        problem = f._first_problem(indices, starts, ends)
        if problem is not None:
            raise problem
    plane = b * b * h.voxel_size
    slot = z1 * plane  # room for each block up to the last z plane any block needs
    staging = _staging(count * slot)
    dst0 = staging.ctypes.data
    dst = list(range(dst0, dst0 + count * slot, slot))
    block_bytes = h.block_bytes
    # Each block is decoded only up to the last z plane the box needs from it (the last
    # layer of a box ending inside a block needs a prefix only).
    layer = nbx * nby
    prefixes = [min(hi[2] - (blo[2] + j) * b, z1) * plane
                for j in range(nbz) for _ in range(layer)]
    if shared:
        got = shareddecode.read_and_decode(f, starts, ends, indices, dst, prefixes,
                                           block_bytes, DECODE_THREADS)
    else:
        src, keep = f._sources(starts, ends, indices)
        got = lz4block.decode_many(src, (ends - starts).tolist(), dst, prefixes, block_bytes)
        del keep
    failed = [k for k in range(count)
              if (got[k] < prefixes[k] if prefixes[k] < block_bytes
                  else got[k] != block_bytes)]
    if failed:
        k = min(failed, key=lambda j: int(indices[j]))
        partial = prefixes[k] < block_bytes
        raise f._decode_error(int(indices[k]), int(starts[k]), got[k],
                              prefixes[k] if partial else block_bytes, partial)
    blocks = staging[:count * slot].view(h.dtype).reshape(nbz, nby, nbx, z1, b, b, c)
    _place(f, out_t, lo, hi, shift, blo, rng, blocks[:, :, :, z0:z1, y0:y1, x0:x1, :])


def _read_few(f: BlockFile, out_t: npt.NDArray[Any], lo: list[int], hi: list[int],
              shift: list[int], blo: Vec3, bhi: Vec3, g: _Geometry | None = None) -> None:
    """Read a few blocks (``blo <= b < bhi``, a 64^3 box touches 8 to 27) into a per-thread
    staging buffer, then copy the box's part of them into ``out_t``.

    The blocks are read (raw: one ``pread`` of the z planes each needs) or decoded
    (compressed: each only up to the last z plane the box needs) in file order, each into
    its slot of the staging buffer: the slots run x slowest, then y, then z, so that the
    blocks of one column along z lie one after the other and form one array of z planes.
    One numpy copy per column (``_copy_columns``; 9 for 27 blocks, where one per block cost
    Python work each).  Plain Python ints for the index arithmetic: for a
    handful of blocks numpy's per-call overhead costs more than the arithmetic."""
    h = f.header
    if g is None:
        g = _geometry(h)
    b = g.block_len
    bb = g.block_bytes
    nby, nbz = bhi[1] - blo[1], bhi[2] - blo[2]
    # Per axis: (Morton bits of the block coordinate, its slot's share of the offset).
    ax = [(morton.spread_int(bc), (bc - blo[0]) * nby * nbz * bb) for bc in range(blo[0], bhi[0])]
    ay = [(morton.spread_int(bc) << 1, (bc - blo[1]) * nbz * bb) for bc in range(blo[1], bhi[1])]
    az = []
    for bc in range(blo[2], bhi[2]):
        v = bc * b
        az.append((morton.spread_int(bc) << 2, (bc - blo[2]) * bb,
                   lo[2] - v if lo[2] > v else 0, hi[2] - v if hi[2] < v + b else b))
    # Blocks in Morton order: file order, and the first damaged one found is the lowest.
    # Each: (index, offset of its slot, block-local z range needed).
    blocks = sorted((mz | my | mx, sx + sy + sz, z0, z1)
                    for mz, sz, z0, z1 in az for my, sy in ay for mx, sx in ax)
    count = len(blocks)
    staging = _staging(count * bb)
    if g.compressed:
        _decode_few(f, blocks, staging, g)
    else:
        _read_raw_few(f, blocks, staging, g)
    _copy_columns(out_t, staging[:count * bb], lo, hi, shift, blo, bhi, g)


def _decode_few(f: BlockFile, blocks: list[tuple[int, int, int, int]],
                staging: npt.NDArray[np.uint8], g: _Geometry) -> None:
    """Decode the compressed ``blocks`` (``_read_few``'s list, Morton order) into their
    slots of ``staging``, each up to the last z plane needed; their ranges are checked
    first, in Morton order (the first damaged block named is the lowest)."""
    h = f.header
    bb = g.block_bytes
    assert f._ranges_i64 is not None  # compressed files have a jump table
    idx = np.array([blk[0] for blk in blocks], dtype=np.int64)
    starts: list[int] = f._ranges_i64[idx].tolist()
    ends: list[int] = f._ranges_i64[idx + 1].tolist()
    # The checks of ``bad_ranges``, with ints; in Morton order, so the first is the lowest.
    first, size_limit = h.data_offset, lz4block.compress_bound(bb)
    for k, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if start < first or end <= start or end > f.file_size or end - start > size_limit:
            problem = f._range_problem(blocks[k][0], start, end)
            if problem is not None:
                raise problem
    src, keep = _few_sources(f, blocks, starts, ends)
    base = staging.ctypes.data
    plane = g.plane
    whole = _LZ4_WHOLE
    partial = _LZ4_PARTIAL
    for k, (index, slot, _, z1) in enumerate(blocks):
        prefix = z1 * plane
        dst = base + slot
        size = ends[k] - starts[k]
        if whole is None or partial is None:  # no liblz4: the lz4 package, whole blocks
            got = lz4block.decode_many([src[k]], [size], [dst], [bb], bb)[0]
            if got != bb:
                raise f._decode_error(index, starts[k], got, bb, False)
        elif prefix >= bb:
            got = whole(src[k], dst, size, bb)
            if got != bb:
                raise f._decode_error(index, starts[k], got, bb, False)
        else:
            got = partial(src[k], dst, size, prefix, bb)
            if got < prefix:
                raise f._decode_error(index, starts[k], got, prefix, True)
    del keep


def _read_raw_few(f: BlockFile, blocks: list[tuple[int, int, int, int]],
                  staging: npt.NDArray[np.uint8], g: _Geometry) -> None:
    """Read the z planes each of the raw ``blocks`` (``_read_few``'s list, Morton order)
    needs into its slot of ``staging``: one ``pread`` per block.  A file too short for a
    block names the lowest such block."""
    h = f.header
    bb = g.block_bytes
    plane = g.plane
    first = h.data_offset
    if first + (blocks[-1][0] + 1) * bb > f.file_size:
        for index, *_ in blocks:
            start = first + index * bb
            if start + bb > f.file_size:
                raise f._short(index, start, start + bb)
    view = memoryview(staging)  # type: ignore[arg-type]
    preadv = _PREADV
    with f._reading() as fd:
        for index, slot, z0, z1 in blocks:
            start = first + index * bb + z0 * plane
            at = slot + z0 * plane
            n = (z1 - z0) * plane
            got = preadv(fd, [view[at:at + n]], start) if preadv is not None else 0
            if got < n:  # a short read (or no preadv): finish it; less is a shorter file
                got += readinto_fd(fd, view[at + got:at + n], start + got)
                if got < n:  # the file shrank since it was opened
                    raise f._short(index, start - z0 * plane, start - z0 * plane + bb)


def _copy_columns(out_t: npt.NDArray[Any], staging: npt.NDArray[np.uint8], lo: list[int],
                  hi: list[int], shift: list[int], blo: Vec3, bhi: Vec3, g: _Geometry
                  ) -> None:
    """Copy the box ``[lo, hi)`` out of the blocks ``blo <= b < bhi`` held in ``staging``
    (``_read_few``'s slots: x slowest, then y, then z, each block's bytes ``[z, y, x, c]``)
    into ``out_t``, one column of blocks along z at a time.

    When ``out_t``'s x rows are contiguous (an F-order ``out``, what ``Dataset.read``
    makes), each x row is copied as one element of a void type (a ``memcpy`` per row):
    cheaper than numpy copying the 32 bytes of a row element by element (docs/performance.md).
    Else by an ordinary numpy copy."""
    b = g.block_len
    nbx, nby, nbz = bhi[0] - blo[0], bhi[1] - blo[1], bhi[2] - blo[2]
    zs, ze = lo[2] - blo[2] * b, hi[2] - blo[2] * b  # the box along a column's z planes
    oz0, oz1 = lo[2] + shift[2], hi[2] + shift[2]
    ys = []
    for iy in range(nby):
        v = (blo[1] + iy) * b
        y0, y1 = (lo[1] - v if lo[1] > v else 0), (hi[1] - v if hi[1] < v + b else b)
        ys.append((iy, y0, y1, v + y0 + shift[1], v + y1 + shift[1]))
    rows = _byte_rows(out_t)
    if rows is None:
        c = g.channels
        cols = staging.view(g.dtype).reshape(nbx, nby, nbz * b, b, b, c)
        for ix in range(nbx):
            v = (blo[0] + ix) * b
            x0, x1 = (lo[0] - v if lo[0] > v else 0), (hi[0] - v if hi[0] < v + b else b)
            dst = out_t[oz0:oz1, :, v + x0 + shift[0]:v + x1 + shift[0], :]
            for iy, y0, y1, oy0, oy1 in ys:
                dst[:, oy0:oy1] = cols[ix, iy, zs:ze, y0:y1, x0:x1, :]
        return
    vs = g.plane // (b * b)  # bytes per voxel
    cols = staging.reshape(nbx, nby, nbz * b, b, b * vs)
    for ix in range(nbx):
        v = (blo[0] + ix) * b
        x0, x1 = (lo[0] - v if lo[0] > v else 0), (hi[0] - v if hi[0] < v + b else b)
        n = (x1 - x0) * vs
        a = (v + x0 + shift[0]) * vs
        if n < VOID_ROW_BYTES:
            dst = rows[oz0:oz1, :, a:a + n]
            for iy, y0, y1, oy0, oy1 in ys:
                dst[:, oy0:oy1] = cols[ix, iy, zs:ze, y0:y1, x0 * vs:x0 * vs + n]
            continue
        vt = _void(n)
        dst = rows[oz0:oz1, :, a:a + n].view(vt)
        for iy, y0, y1, oy0, oy1 in ys:
            dst[:, oy0:oy1] = cols[ix, iy, zs:ze, y0:y1, x0 * vs:x0 * vs + n].view(vt)


def _read_raw_columns(f: BlockFile, rows: npt.NDArray[np.uint8], lo: list[int], hi: list[int],
                      shift: list[int], blo: Vec3, bhi: Vec3, g: _Geometry) -> None:
    """A raw read on one thread, one column of blocks along z at a time (two when they are
    neighbours in the file): each block's z planes read with one ``pread`` (a pair of
    blocks with one ``preadv``) into a staging buffer of two columns, then each column's
    part of the box copied into ``rows`` (``_byte_rows`` of the output) at once.  That
    buffer (32 blocks of 32 KB) stays in the core's cache, where one of the whole read
    (8 MB for an XZ plane of 512^2) does not (figures in docs/performance.md).
    The blocks' presence is checked up front (the lowest block missing is named), the
    file's identity once at the end."""
    h = f.header
    b, bb, plane = g.block_len, g.block_bytes, g.plane
    vs = plane // (b * b)
    first = h.data_offset
    spread = morton.spread_int
    last = spread(bhi[0] - 1) | spread(bhi[1] - 1) << 1 | spread(bhi[2] - 1) << 2
    if first + (last + 1) * bb > f.file_size:  # the box's highest block is its far corner
        indices = morton.box_indices(blo, bhi)
        problem = f._first_problem(indices, *f._ranges_of(indices))
        if problem is not None:
            raise problem
    nbz = bhi[2] - blo[2]
    layers = []  # (Morton bits of z, slot, block-local z range)
    for k in range(nbz):
        v = (blo[2] + k) * b
        layers.append((spread(blo[2] + k) << 2, k * bb, lo[2] - v if lo[2] > v else 0,
                       hi[2] - v if hi[2] < v + b else b))
    zs, ze = lo[2] - blo[2] * b, hi[2] - blo[2] * b  # the box along a column's z planes
    oz0, oz1 = lo[2] + shift[2], hi[2] + shift[2]
    span = nbz * bb  # one column's share of the staging buffer
    staging = _staging(2 * span)
    view = memoryview(staging)  # type: ignore[arg-type]
    columns = staging[:2 * span].reshape(2, nbz * b, b, b * vs)
    preadv = _PREADV

    def read(fd: int, index: int, at: int, z0: int, z1: int) -> None:
        """Planes ``[z0, z1)`` of block ``index`` to ``at`` in the staging buffer."""
        start = first + index * bb + z0 * plane
        size = (z1 - z0) * plane
        at += z0 * plane
        got = preadv(fd, [view[at:at + size]], start) if preadv is not None else 0
        if got < size:  # a short read (or no preadv): finish it
            got += readinto_fd(fd, view[at + got:at + size], start + got)
            if got < size:  # the file shrank since it was opened
                raise f._short(index, start - z0 * plane, start - z0 * plane + bb)

    with f._reading() as fd:
        bx = blo[0]
        while bx < bhi[0]:
            # Blocks next to each other along x, the first at an even x, lie one after the
            # other in the file (Morton order): such a pair is read with one ``preadv``.
            pair = not bx & 1 and bx + 1 < bhi[0] and preadv is not None
            mx = spread(bx)
            for by in range(blo[1], bhi[1]):
                vy = by * b
                y0, y1 = (lo[1] - vy if lo[1] > vy else 0), (hi[1] - vy if hi[1] < vy + b else b)
                mxy = mx | spread(by) << 1
                for mz, slot, z0, z1 in layers:
                    index = mxy | mz
                    if pair:
                        # From plane z0 of the first block to plane z1 of the second: planes
                        # either side that the box does not need land in their own slots.
                        size = bb - z0 * plane + z1 * plane
                        got = preadv(fd, [view[slot + z0 * plane:slot + bb],
                                          view[span + slot:span + slot + z1 * plane]],
                                     first + index * bb + z0 * plane)
                        if got < size:  # read them one by one: which one is short?
                            read(fd, index, slot, z0, z1)
                            read(fd, index + 1, span + slot, z0, z1)
                        continue
                    read(fd, index, slot, z0, z1)
                for c in range(2 if pair else 1):
                    v = (bx + c) * b
                    x0, x1 = (lo[0] - v if lo[0] > v else 0), (hi[0] - v if hi[0] < v + b else b)
                    n = (x1 - x0) * vs
                    a = (v + x0 + shift[0]) * vs
                    dst = rows[oz0:oz1, vy + y0 + shift[1]:vy + y1 + shift[1], a:a + n]
                    src = columns[c, zs:ze, y0:y1, x0 * vs:x0 * vs + n]
                    if n < VOID_ROW_BYTES:
                        dst[...] = src
                    else:
                        vt = _void(n)
                        dst.view(vt)[...] = src.view(vt)
            bx += 2 if pair else 1


#: Rows of at least this many bytes are copied as void elements (a ``memcpy`` each);
#: narrower ones byte by byte (numpy's loop over single bytes is faster than a ``memcpy``
#: call per byte: the x row of a YZ plane is one voxel).
VOID_ROW_BYTES = 8


def _void(n: int) -> np.dtype[Any]:
    vt = _VOID.get(n)
    if vt is None:
        vt = _VOID.setdefault(n, np.dtype((np.void, n)))
    return vt


#: Void dtypes by length in bytes: an x row copied as one element (``_copy_columns``).
_VOID: dict[int, np.dtype[Any]] = {}


def _byte_rows(out_t: npt.NDArray[Any]) -> npt.NDArray[np.uint8] | None:
    """``out_t`` (``(Z, Y, X, C)``) as a uint8 array ``(Z, Y, X * bytes per voxel)`` over
    the same memory, when each of its x rows (all channels) is contiguous; else None."""
    nz, ny, nx, c = out_t.shape
    item = out_t.dtype.itemsize
    sz, sy, sx, sc = out_t.strides
    if sx != c * item or (c > 1 and sc != item) or sz <= 0 or sy <= 0 or not out_t.size:
        return None
    shape = (nz, ny, nx * c * item)
    if out_t.flags.c_contiguous or out_t.flags.f_contiguous:
        # Element 0 is the first byte of the memory (positive strides): a view made from
        # the buffer itself (cheaper than ``as_strided``).
        rows: npt.NDArray[np.uint8] = np.ndarray(shape, np.uint8, out_t, 0, (sz, sy, 1))
        return rows
    # Any other layout whose x rows are contiguous (a part of a larger array).
    strided: npt.NDArray[np.uint8] = np.lib.stride_tricks.as_strided(
        out_t.view(np.uint8), shape=shape, strides=(sz, sy, 1))
    return strided


def _few_sources(f: BlockFile, blocks: list[Any], starts: list[int], ends: list[int]
                 ) -> tuple[list[int], npt.NDArray[np.uint8]]:
    """``File._sources`` for a few blocks, with plain ints (its numpy calls cost more than
    the reading of a 64^3 box's 27 blocks takes): the addresses of the stored bytes
    of the blocks (their ranges checked; ``blocks`` as ``_read_few`` lists them, to name one
    in an error), read by one ``pread`` per run of blocks whose bytes lie within
    ``MERGE_GAP`` of each other into this thread's buffer, and the buffer."""
    n = len(starts)
    order = sorted(range(n), key=starts.__getitem__)
    runs: list[list[int]] = []  # [first byte, end byte, where it lands in the buffer]
    where = [0] * n  # the run of each block
    pos = 0
    for k in order:
        if runs and starts[k] - runs[-1][1] <= MERGE_GAP:
            if ends[k] > runs[-1][1]:
                pos += ends[k] - runs[-1][1]
                runs[-1][1] = ends[k]
        else:
            runs.append([starts[k], ends[k], pos])
            pos += ends[k] - starts[k]
        where[k] = len(runs) - 1
    buf = buffers.source(pos)
    view = memoryview(buf)  # type: ignore[arg-type]
    with f._reading() as fd:
        for lo, hi, at in runs:
            got = readinto_fd(fd, view[at:at + hi - lo], lo)
            if got < hi - lo:  # the file shrank since it was opened: the first block cut
                k = min((k for k in range(n) if ends[k] > lo + got and runs[where[k]][0] == lo),
                        key=starts.__getitem__)
                raise f._short(blocks[k][0], starts[k], ends[k])
    base = buf.ctypes.data
    addresses = [base + runs[r][2] + starts[k] - runs[r][0] for k, r in enumerate(where)]
    return addresses, buf


def _read_raw_blocks(f: BlockFile, indices: npt.NDArray[np.int64],
                     staging: npt.NDArray[np.uint8]) -> None:
    """Read raw blocks ``indices`` (already checked to be in the file) whole into
    ``staging``, block ``k`` at ``k * block_bytes``: one ``preadv`` per run of blocks
    consecutive in the file, scattered straight into their places."""
    h = f.header
    bb = h.block_bytes
    idx = indices.tolist()
    order = sorted(range(len(idx)), key=idx.__getitem__)
    view = memoryview(staging)  # type: ignore[arg-type]
    iov_max = 512
    with f._reading() as fd:
        k = 0
        while k < len(order):
            first = idx[order[k]]
            run = [order[k]]
            k += 1
            while k < len(order) and idx[order[k]] == first + len(run) and len(run) < iov_max:
                run.append(order[k])
                k += 1
            bufs = [view[j * bb:(j + 1) * bb] for j in run]
            start = h.data_offset + first * bb
            if hasattr(os, "preadv"):
                got = os.preadv(fd, bufs, start)
                if got < len(run) * bb:  # a short read: finish it, or name the block
                    done = got
                    while done < len(run) * bb:
                        j = run[done // bb]
                        more = readinto_fd(fd, bufs[done // bb][done % bb:], start + done)
                        if more <= 0:
                            raise f._short(idx[j], start + (done // bb) * bb,
                                           start + (done // bb + 1) * bb)
                        done += more
            else:  # pragma: no cover - platforms without preadv
                for m, j in enumerate(run):
                    if readinto_fd(fd, bufs[m], start + m * bb) < bb:
                        raise f._short(idx[j], start + m * bb, start + (m + 1) * bb)


def _read_raw_planes(f: BlockFile, out_t: npt.NDArray[Any], lo: list[int], hi: list[int],
                     shift: list[int], blo: Vec3, bhi: Vec3, rng: list[tuple[int, int]],
                     indices: npt.NDArray[np.int64]) -> None:
    """A batch of raw blocks (already checked to be in the file) of which the box needs
    only a few z planes each (an XY plane: one): read exactly those planes of each block
    with one ``pread`` into a staging buffer, then one copy into ``out_t``: cheaper than a
    fresh mapping, whose page faults map (and unmapping tears down) 16 pages around each
    plane of 1 KB (docs/performance.md)."""
    h = f.header
    b = h.block_len
    bb = h.block_bytes
    (x0, x1), (y0, y1), (z0, z1) = rng
    nbx, nby, nbz = bhi[0] - blo[0], bhi[1] - blo[1], bhi[2] - blo[2]
    n = (z1 - z0) * b * b * h.voxel_size
    count = len(indices)
    staging = _staging(count * n)
    view = memoryview(staging)  # type: ignore[arg-type]
    first = h.data_offset + z0 * b * b * h.voxel_size
    # The pool keeps the descriptor open while it is in use here, even if another thread
    # closes the file meanwhile (no read from a reused descriptor number).
    preadv = getattr(os, "preadv", None)
    with f._reading() as fd:
        for k, index in enumerate(indices.tolist()):
            part = view[k * n:k * n + n]
            got = preadv(fd, [part], first + index * bb) if preadv is not None else 0
            if got < n:  # a short read (or no preadv): finish it; less is a shorter file
                got += readinto_fd(fd, part[got:], first + index * bb + got)
            if got < n:  # the file shrank since it was opened
                start = h.data_offset + index * bb
                raise f._short(index, start, start + bb)
    blocks = staging[:count * n].view(h.dtype).reshape(nbz, nby, nbx, z1 - z0, b, b,
                                                       h.num_channels)
    _place(f, out_t, lo, hi, shift, blo, rng, blocks[:, :, :, :, y0:y1, x0:x1, :])

def _place(f: BlockFile, out_t: npt.NDArray[Any], lo: list[int], hi: list[int],
           shift: list[int], blo: Vec3, rng: list[tuple[int, int]],
           part: npt.NDArray[Any]) -> None:
    """Copy ``part`` (``(nbz, nby, nbx, zr, yr, xr, C)``: the block-local ranges ``rng`` of
    a grid of blocks from ``blo``) into ``out_t``, cut to the box ``[lo, hi)``."""
    b = f.header.block_len
    nbz, nby, nbx, zr, yr, xr, c = part.shape
    (x0, _), (y0, _), (z0, _) = rng
    org = [blo[0] * b + x0, blo[1] * b + y0, blo[2] * b + z0]  # file voxel of vol[0, 0, 0]
    extent = (nbx * xr, nby * yr, nbz * zr)
    s = [max(lo[a], org[a]) for a in range(3)]
    e = [min(hi[a], org[a] + extent[a]) for a in range(3)]
    dest = out_t[s[2] + shift[2]:e[2] + shift[2], s[1] + shift[1]:e[1] + shift[1],
                 s[0] + shift[0]:e[0] + shift[0], :]
    if s == org and all(e[a] - s[a] == extent[a] for a in range(3)):
        # The batch covers its part of the box exactly: one copy, straight into out,
        # through a view of out with each axis split into (blocks, voxels in a block).
        sz, sy, sx, sc = dest.strides
        grid_view = np.lib.stride_tricks.as_strided(
            dest, shape=(nbz, zr, nby, yr, nbx, xr, c),
            strides=(zr * sz, sz, yr * sy, sy, xr * sx, sx, sc), writeable=True)
        source = part.transpose(0, 3, 1, 4, 2, 5, 6)
        rows_out, rows_in = _as_rows(grid_view), _as_rows(source)
        if rows_out is not None and rows_in is not None:
            rows_out[...] = rows_in
        else:
            grid_view[...] = source
        return
    vol = part.transpose(0, 3, 1, 4, 2, 5, 6).reshape(nbz * zr, nby * yr, nbx * xr, c)
    dest[...] = vol[s[2] - org[2]:e[2] - org[2], s[1] - org[1]:e[1] - org[1],
                    s[0] - org[0]:e[0] - org[0], :]


def _as_rows(a: npt.NDArray[Any]) -> npt.NDArray[Any] | None:
    """``a`` (``(..., X, C)``) as an array of its rows along x, each one element of a void
    type (a view), when each row is contiguous in memory; else None.  Copying rows as
    elements makes numpy's innermost loop run over the blocks of a row of the output
    instead of over the bytes of one block's row (less time for the copy of a slab:
    docs/performance.md)."""
    *lead, xr, c = a.shape
    item = a.dtype.itemsize
    row = xr * c * item
    if row < 16 or a.strides[-1] != item or a.strides[-2] != c * item:
        return None
    raw = np.lib.stride_tricks.as_strided(a.view(np.uint8), shape=(*lead, row),
                                          strides=(*a.strides[:-2], 1))
    return raw.view(np.dtype((np.void, row)))[..., 0]
