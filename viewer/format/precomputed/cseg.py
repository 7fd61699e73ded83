"""The compressed_segmentation encoding (neuroglancer's ``sliceview/compressed_segmentation``),
decoded and checked with numpy.

A chunk holds, after a header of one uint32 word offset per channel, each channel as a grid of
blocks (``block_size``; the box padded up to whole blocks): per block a 64-bit header
(lookup table offset: 24 bits, encoded bits: 8 bits, encoded values offset: 32 bits; offsets
in 32-bit words from the channel's start), then the packed values (``bits`` each, x fastest
within the block) that index the block's lookup table of uint32 or uint64 values.

The ``compressed-segmentation`` package decodes the same streams fast, but does not check
them: a stream cut short decodes to whatever lies past its end, and a damaged header crashes
the process.  So it is given only streams that ``in_bounds`` proves safe; any other is decoded
here with every offset and looked-up index checked (a ``CsegError`` naming the block), all
blocks of one bit width at once (a gather and a shift per width).  Where the native kernel was
built (``precomputed.nativecseg``) it decodes every stream, checked the same way, without the
interpreter lock; a stream it finds damaged is decoded again here for its error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.precomputed import nativecseg

Vec3 = tuple[int, int, int]
BIT_WIDTHS = (0, 1, 2, 4, 8, 16, 32)


class CsegError(ValueError):
    """The stream does not decode (the message says where)."""


def decode(data: bytes | memoryview, box: Vec3, channels: int, block: Vec3,
           dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """The chunk of ``box`` voxels as ``(C, bx, by, bz)`` in Fortran order: by the
    ``compressed-segmentation`` package when it is installed and ``in_bounds`` proves that
    nothing it may read lies outside the stream, else here (``decode_checked``); by the
    native kernel where it was built."""
    if nativecseg.usable(dtype):
        return decode_checked(data, box, channels, block, dtype)
    if len(data) % 4 == 0 and len(data) >= 4 * channels:
        words = np.frombuffer(data, dtype="<u4")
        if in_bounds(words, box, channels, block, dtype.itemsize == 8):
            try:
                import compressed_segmentation as library
            except ImportError:
                library = None
            if library is not None:
                arr = np.asarray(library.decompress(bytes(data), (*box, channels), dtype,
                                                    block, order="F"))
                return np.moveaxis(arr, 3, 0)
    return decode_checked(data, box, channels, block, dtype)


def in_bounds(words: npt.NDArray[np.uint32], box: Vec3, channels: int, block: Vec3,
              wide: bool) -> bool:
    """Whether every word a decoder may read lies inside the stream: the block headers,
    each block's packed values, and each block's lookup table at its full size
    (``2^bits`` entries) lie inside each channel's data.  A writer that stores a block's table
    shorter (only the values it uses) at the very end fails this test: it is then decoded
    with every index checked."""
    n = len(words)
    grid = tuple(-(-box[a] // block[a]) for a in range(3))
    nblocks = grid[0] * grid[1] * grid[2]
    per_block = block[0] * block[1] * block[2]
    for c in range(channels):
        start = int(words[c])
        left = n - start
        if left < 2 * nblocks:
            return False
        head = words[start:start + 2 * nblocks].reshape(nblocks, 2)
        bits = (head[:, 0] >> 24).astype(np.int64)
        if not np.isin(bits, BIT_WIDTHS).all():
            return False
        table_at = (head[:, 0] & 0xFFFFFF).astype(np.int64)
        values_at = head[:, 1].astype(np.int64)
        if int((values_at + -(-bits * per_block // 32)).max()) > left:
            return False
        short = np.flatnonzero(table_at + (np.int64(1) << bits) * (1 + wide) > left)
        if len(short):  # tables stored shorter than 2^bits: their largest index must fit
            ch = words[start:]
            for k in short.tolist():
                b = int(bits[k])
                top = int(_unpack(ch, values_at[k:k + 1], b, per_block).max()) if b else 0
                if table_at[k] + (top + 1) * (1 + wide) > left:
                    return False
    return True


def _unpack(w: npt.NDArray[np.uint32], values_at: npt.NDArray[np.int64], b: int,
            per_block: int) -> npt.NDArray[np.int64]:
    """The packed ``b``-bit values of blocks whose values start at words ``values_at``
    (in bounds), ``(len(values_at), per_block)``."""
    nwords = -(-b * per_block // 32)
    packed = w[values_at[:, None] + np.arange(nwords)]
    per_word = 32 // b
    shifts = (np.arange(per_word, dtype=np.uint32) * b).astype(np.uint32)
    mask = np.uint32((1 << b) - 1) if b < 32 else np.uint32(0xFFFFFFFF)
    vals = (packed[:, :, None] >> shifts) & mask
    out: npt.NDArray[np.int64] = vals.reshape(len(values_at), -1)[:, :per_block].astype(np.int64)
    return out


def decode_checked(data: bytes | memoryview, box: Vec3, channels: int, block: Vec3,
                   dtype: np.dtype[Any], lo: Vec3 = (0, 0, 0), hi: Vec3 | None = None,
                   native: bool = True) -> npt.NDArray[Any]:
    """The voxels ``[lo, hi)`` of the chunk (default: all of its ``box``) as ``(C, x, y,
    z)`` in Fortran order, decoded in numpy with every offset and index checked
    (``CsegError`` naming the block).  Only the blocks that meet ``[lo, hi)`` are decoded:
    an XY plane of a chunk costs one layer of blocks.  The native kernel decodes it where
    it was built (``native=False``: never)."""
    top = box if hi is None else hi
    if native and len(data) % 4 == 0 and nativecseg.usable(dtype):
        out = np.empty((channels, top[0] - lo[0], top[1] - lo[1], top[2] - lo[2]), dtype=dtype,
                       order="F")
        batch = nativecseg.Batch(channels, block, dtype)
        batch.add(words_of(data), box, lo, top, out)
        if batch.run()[0]:
            return out
    if len(data) % 4:
        raise CsegError(f"{len(data)} bytes is not a whole number of 32-bit words")
    words = np.frombuffer(data, dtype="<u4")
    if len(words) < channels:
        raise CsegError(f"stream of {len(data)} bytes is shorter than its channel header")
    size = (top[0] - lo[0], top[1] - lo[1], top[2] - lo[2])
    out = np.empty((channels, *size), dtype=dtype, order="F")
    for c in range(channels):
        start = int(words[c])
        if start >= len(words):
            raise CsegError(f"channel {c} starts at word {start}, past the end "
                            f"({len(words)} words)")
        out[c] = _channel(words, start, box, block, dtype, c, lo, top)
    return out


def words_of(data: bytes | memoryview) -> npt.NDArray[np.uint32]:
    """A stream's 32-bit words (its length a multiple of 4), copied when its bytes do not
    start on a 4-byte boundary (a chunk inside a shard read): the kernel reads words."""
    words = np.frombuffer(data, dtype="<u4")
    return words if words.ctypes.data % 4 == 0 else words.copy()


def _channel(words: npt.NDArray[np.uint32], start: int, box: Vec3, block: Vec3,
             dtype: np.dtype[Any], channel: int, lo: Vec3, hi: Vec3) -> npt.NDArray[Any]:
    w = words[start:]
    n = len(w)
    grid = tuple(-(-box[a] // block[a]) for a in range(3))
    nblocks = grid[0] * grid[1] * grid[2]
    if n < 2 * nblocks:
        raise CsegError(f"channel {channel}: {n} words, fewer than its {nblocks} block "
                        "headers")
    # the blocks that meet [lo, hi), x fastest
    b_lo = [lo[a] // block[a] for a in range(3)]
    b_hi = [-(-hi[a] // block[a]) for a in range(3)]
    sub = (b_hi[0] - b_lo[0], b_hi[1] - b_lo[1], b_hi[2] - b_lo[2])
    gz, gy, gx = np.meshgrid(np.arange(b_lo[2], b_hi[2]), np.arange(b_lo[1], b_hi[1]),
                             np.arange(b_lo[0], b_hi[0]), indexing="ij")
    blocks = (gx + grid[0] * (gy + grid[1] * gz)).reshape(-1)
    head = w[:2 * nblocks].reshape(nblocks, 2)[blocks]
    table_at = (head[:, 0] & 0xFFFFFF).astype(np.int64)
    bits = (head[:, 0] >> 24).astype(np.int64)
    values_at = head[:, 1].astype(np.int64)
    odd = ~np.isin(bits, BIT_WIDTHS)
    if odd.any():
        k = int(blocks[np.flatnonzero(odd)[0]])
        raise CsegError(f"channel {channel} block {k}: {int(bits[np.flatnonzero(odd)[0]])} "
                        "encoded bits (0, 1, 2, 4, 8, 16 or 32 allowed)")
    wide = 2 if dtype.itemsize == 8 else 1
    # within one layer of blocks, only the z layers wanted (values are x fastest, then y,
    # z: a run of whole layers, word-aligned when a layer holds a multiple of 32 values)
    layer = block[0] * block[1]
    z0 = lo[2] - b_lo[2] * block[2]
    nz = hi[2] - lo[2]
    if sub[2] != 1 or layer % 32:
        z0, nz = 0, block[2]
    per = layer * nz
    index = np.zeros((len(blocks), per), dtype=np.int64)
    for b in BIT_WIDTHS[1:]:
        sel = np.flatnonzero(bits == b)
        if not len(sel):
            continue
        first = b * layer * z0 // 32
        nwords = -(-b * (layer * (z0 + nz)) // 32) - first
        last = values_at[sel] + first + nwords
        if (last > n).any():
            k = int(sel[np.flatnonzero(last > n)[0]])
            raise CsegError(f"channel {channel} block {int(blocks[k])}: encoded values [word "
                            f"{int(values_at[k])}, {int(values_at[k]) + nwords}) run past the "
                            f"end ({n} words)")
        index[sel] = _unpack(w, values_at[sel] + first, b, per)
    slot = index
    slot *= wide
    slot += table_at[:, None]
    if int(slot.max(initial=0)) + wide > n:
        k = int(np.flatnonzero((slot + wide > n).any(axis=1))[0])
        raise CsegError(f"channel {channel} block {int(blocks[k])}: a value's lookup table "
                        f"entry lies past the end ({n} words)")
    if wide == 2:  # a uint64 at any word: the even- or the odd-aligned view of the words
        even = w[:n - n % 2].view("<u8")
        odd_view = w[1:n - (n - 1) % 2].view("<u8") if n > 1 else even[:0]
        half = slot >> 1
        values = np.where(slot & 1, odd_view[np.minimum(half, len(odd_view) - 1)],
                          even[np.minimum(half, len(even) - 1)]).astype(dtype, copy=False)
    else:
        values = w[slot].astype(dtype, copy=False)
    # (bz, by, bx) blocks of (block z, y, x) voxels -> x, y, z of the blocks' box, cropped
    v = values.reshape(sub[2], sub[1], sub[0], nz, block[1], block[0])
    full = v.transpose(2, 5, 1, 4, 0, 3).reshape(sub[0] * block[0], sub[1] * block[1],
                                                  sub[2] * nz)
    o = [lo[0] - b_lo[0] * block[0], lo[1] - b_lo[1] * block[1],
         lo[2] - b_lo[2] * block[2] - z0]
    out: npt.NDArray[Any] = full[o[0]:o[0] + hi[0] - lo[0], o[1]:o[1] + hi[1] - lo[1],
                                 o[2]:o[2] + hi[2] - lo[2]]
    return out


def block_stats(data: bytes | memoryview, box: Vec3, channels: int, block: Vec3
                ) -> dict[str, Any]:
    """What a chunk's blocks use, for the inspector: blocks per channel, how many encode
    their values with each bit width (``"bits: count"``), the distinct lookup tables, and the
    words of values and of tables (tables: from each table's offset to the next structure,
    an upper bound where tables are shared)."""
    words = np.frombuffer(data, dtype="<u4") if len(data) % 4 == 0 else np.zeros(0, np.uint32)
    grid = tuple(-(-box[a] // block[a]) for a in range(3))
    nblocks = grid[0] * grid[1] * grid[2]
    per_block = block[0] * block[1] * block[2]
    if len(words) < channels:
        return {"cseg_blocks": nblocks * channels, "cseg_bits": "?", "cseg_tables": "?",
                "cseg_value_words": "?"}
    bits_all: list[npt.NDArray[np.int64]] = []
    tables = 0
    value_words = 0
    for c in range(channels):
        start = int(words[c])
        head = words[start:start + 2 * nblocks]
        if len(head) < 2 * nblocks:
            return {"cseg_blocks": nblocks * channels, "cseg_bits": "?", "cseg_tables": "?",
                    "cseg_value_words": "?"}
        head = head.reshape(nblocks, 2)
        bits = (head[:, 0] >> 24).astype(np.int64)
        bits_all.append(bits)
        tables += len(np.unique(head[:, 0] & 0xFFFFFF))
        value_words += int((-(-bits * per_block // 32)).sum())
    b = np.concatenate(bits_all)
    counts = " ".join(f"{int(v)}:{int((b == v).sum())}" for v in np.unique(b))
    return {"cseg_blocks": int(len(b)), "cseg_bits": counts, "cseg_tables": tables,
            "cseg_value_words": value_words}


__all__ = ["decode", "decode_checked", "words_of", "CsegError", "BIT_WIDTHS", "block_stats"]
