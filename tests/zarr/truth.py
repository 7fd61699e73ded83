"""What a zarr array must read as through ``Volume.read``: its data in the array's own axis
order, rearranged to ``(C, X, Y, Z)`` by the axis positions the test states."""

from __future__ import annotations

from typing import Any

import numpy as np


def to_cxyz(data: Any, x: int | None, y: int | None, z: int | None,
            c: int | None = None) -> np.ndarray:
    """``data`` (array axis order) as ``(C, X, Y, Z)``; other axes must have size 1."""
    a = np.asarray(data)
    keep = [i for i in (c, x, y, z) if i is not None]
    drop = [i for i in range(a.ndim) if i not in keep]
    assert all(a.shape[i] == 1 for i in drop)
    t = a.transpose(keep + drop).reshape([a.shape[i] for i in keep])
    shape = [a.shape[c] if c is not None else 1] + \
        [a.shape[i] if i is not None else 1 for i in (x, y, z)]
    return np.asfortranarray(t.reshape(shape))
