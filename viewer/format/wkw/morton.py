"""Morton (Z-order) block indices inside a WKW file: x in bit 0, then y, then z, repeating.

Vectorised over numpy arrays: one pass per bit, never a Python loop per block.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Bits per axis the header's 4-bit log2 field allows.
MAX_BITS = 15


def encode(x: npt.ArrayLike, y: npt.ArrayLike, z: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Morton index of block coordinates (arrays broadcast together)."""
    xa = np.asarray(x, dtype=np.int64)
    ya = np.asarray(y, dtype=np.int64)
    za = np.asarray(z, dtype=np.int64)
    out = np.zeros(np.broadcast_shapes(xa.shape, ya.shape, za.shape), dtype=np.int64)
    for bit in range(MAX_BITS):
        out |= ((xa >> bit) & 1) << (3 * bit)
        out |= ((ya >> bit) & 1) << (3 * bit + 1)
        out |= ((za >> bit) & 1) << (3 * bit + 2)
    return out


def decode(index: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], ...]:
    """Block coordinates (x, y, z) of Morton indices."""
    idx = np.asarray(index, dtype=np.int64)
    x = np.zeros(idx.shape, dtype=np.int64)
    y = np.zeros(idx.shape, dtype=np.int64)
    z = np.zeros(idx.shape, dtype=np.int64)
    for bit in range(MAX_BITS):
        x |= ((idx >> (3 * bit)) & 1) << bit
        y |= ((idx >> (3 * bit + 1)) & 1) << bit
        z |= ((idx >> (3 * bit + 2)) & 1) << bit
    return x, y, z


def block_grid(lo: tuple[int, int, int], hi: tuple[int, int, int]) -> npt.NDArray[np.int64]:
    """(N, 3) block coordinates of the box ``lo <= b < hi``, x fastest."""
    xs, ys, zs = (np.arange(a, b, dtype=np.int64) for a, b in zip(lo, hi))
    gz, gy, gx = np.meshgrid(zs, ys, xs, indexing="ij")
    return np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)
