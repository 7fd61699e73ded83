"""Morton (Z-order) block indices inside a WKW file: x in bit 0, then y, then z, repeating.

Vectorised over numpy arrays: one pass per bit, never a Python loop per block.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Bits per axis the header's 4-bit log2 field allows.
MAX_BITS = 15


def _spread_table() -> npt.NDArray[np.int64]:
    """Byte value -> its 8 bits spread to every third bit (bit k to bit 3k)."""
    v = np.arange(256, dtype=np.int64)
    out = np.zeros(256, dtype=np.int64)
    for bit in range(8):
        out |= ((v >> bit) & 1) << (3 * bit)
    return out


def _compact_table() -> npt.NDArray[np.int64]:
    """12-bit value -> its bits 0, 3, 6, 9 packed into 4 bits (the inverse of spreading)."""
    v = np.arange(4096, dtype=np.int64)
    out = np.zeros(4096, dtype=np.int64)
    for bit in range(4):
        out |= ((v >> (3 * bit)) & 1) << bit
    return out


_SPREAD = _spread_table()
_COMPACT = _compact_table()
_MASK = (1 << MAX_BITS) - 1


def _spread(v: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    v = v & _MASK
    out: npt.NDArray[np.int64] = _SPREAD[v & 0xFF] | (_SPREAD[v >> 8] << 24)
    return out


def encode(x: npt.ArrayLike, y: npt.ArrayLike, z: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Morton index of block coordinates (arrays broadcast together; coordinates below 2^15).

    Table lookups, a byte of each coordinate at a time: a few numpy operations whatever the
    number of blocks."""
    xa = np.asarray(x, dtype=np.int64)
    ya = np.asarray(y, dtype=np.int64)
    za = np.asarray(z, dtype=np.int64)
    out: npt.NDArray[np.int64] = _spread(xa) | (_spread(ya) << 1) | (_spread(za) << 2)
    return out


def _compact(v: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    out = np.zeros(v.shape, dtype=np.int64)
    for chunk in range(4):  # 4 x 12 bits cover the 45 bits of 15-bit coordinates
        out |= _COMPACT[(v >> (12 * chunk)) & 0xFFF] << (4 * chunk)
    return out


def decode(index: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], ...]:
    """Block coordinates (x, y, z) of Morton indices."""
    idx = np.asarray(index, dtype=np.int64)
    return _compact(idx), _compact(idx >> 1), _compact(idx >> 2)


_SPREAD_PY: list[int] = _SPREAD.tolist()


def spread_int(v: int) -> int:
    """One coordinate's bits spread to every third bit (plain ints: no numpy overhead)."""
    return _SPREAD_PY[v & 0xFF] | (_SPREAD_PY[(v >> 8) & 0x7F] << 24)


def box_indices(lo: tuple[int, int, int], hi: tuple[int, int, int]) -> npt.NDArray[np.int64]:
    """Morton indices of the blocks ``lo <= b < hi``, x fastest (as ``block_grid``): spread
    each axis once, then combine by broadcasting (a few operations for any box)."""
    sx = np.array([spread_int(v) for v in range(lo[0], hi[0])], dtype=np.int64)
    sy = np.array([spread_int(v) << 1 for v in range(lo[1], hi[1])], dtype=np.int64)
    sz = np.array([spread_int(v) << 2 for v in range(lo[2], hi[2])], dtype=np.int64)
    out: npt.NDArray[np.int64] = (sz[:, None, None] | sy[None, :, None]
                                  | sx[None, None, :]).reshape(-1)
    return out


def block_grid(lo: tuple[int, int, int], hi: tuple[int, int, int]) -> npt.NDArray[np.int64]:
    """(N, 3) block coordinates of the box ``lo <= b < hi``, x fastest."""
    nx, ny, nz = (max(b - a, 0) for a, b in zip(lo, hi, strict=True))
    out = np.empty((nz, ny, nx, 3), dtype=np.int64)
    out[..., 0] = np.arange(lo[0], lo[0] + nx, dtype=np.int64)
    out[..., 1] = np.arange(lo[1], lo[1] + ny, dtype=np.int64)[:, None]
    out[..., 2] = np.arange(lo[2], lo[2] + nz, dtype=np.int64)[:, None, None]
    return out.reshape(-1, 3)
