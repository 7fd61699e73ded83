"""Plane assembly by native code (``planes.c``): the plane slices of a list of whole blocks
copied into a plane in one call, the interpreter lock released for the copies.  Used by
``viewer.core.assembly.scatter_blocks`` where it was built; where it was not, or where a call
declines (another element size, a block not as described), numpy copies the same slices.

The library is loaded with ``ctypes.PyDLL`` (the lock held on entry): it takes the blocks'
and the plane's memory through the buffer protocol itself, which costs less a block than
numpy's address attributes.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import native

#: The version of ``planes.c``'s functions this module calls.
ABI = 1

_i64 = ctypes.c_int64


def _function() -> Any:
    lib = native.load("_planes", "planes_abi", ABI, python=True)
    if lib is None:
        return None
    fn = lib.planes_scatter
    fn.argtypes = [ctypes.py_object, ctypes.py_object, _i64, _i64, _i64, _i64, _i64, _i64,
                   ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = _i64
    return fn


_SCATTER = _function()


def available() -> bool:
    """True when the native plane assembly was built and loads."""
    return _SCATTER is not None


def scatter(plane: npt.NDArray[Any], blocks: list[npt.NDArray[Any]], normal: int, depth: int,
            u_dim: int, v_dim: int, bu: int, bv: int, u0: npt.NDArray[np.int64],
            v0: npt.NDArray[np.int64]) -> bool:
    """Copy, for each of ``blocks`` (``(C, X, Y, Z)`` arrays), its ``bu`` x ``bv`` slice at
    index ``depth`` of dimension ``normal`` (dimensions ``u_dim``, ``v_dim`` along the plane's
    U and V; 1-3) into ``plane`` (``(C, U, V)``, writable) at rows ``u0[k]``, ``v0[k]``.
    False (nothing written) where the native code was not built or declined."""
    if _SCATTER is None:
        return False
    us = np.ascontiguousarray(u0, dtype=np.int64)
    vs = np.ascontiguousarray(v0, dtype=np.int64)
    placed: int = _SCATTER(blocks, plane, normal, depth, u_dim, v_dim, bu, bv,
                           us.ctypes.data, vs.ctypes.data)
    return placed == len(blocks)


__all__ = ["ABI", "available", "scatter"]
