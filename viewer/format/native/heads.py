"""The native part of ``viewer.format.fileheads`` (``heads.c``): the first bytes of many files
in one call, without the interpreter lock.  Built as its own optional extension (``setup.py``),
loaded here with ctypes; None where it was not built (``fileheads`` then reads in Python)."""

from __future__ import annotations

import ctypes

from viewer.format.native import load

#: The interface version (``heads_abi()``); a library built from other sources is not used.
ABI = 1


def _load() -> ctypes.CDLL | None:
    lib = load("_heads", "heads_abi", ABI)
    if lib is None:
        return None
    try:
        lib.heads_slots.restype = ctypes.c_int64
        lib.heads_read.restype = ctypes.c_int64
        lib.heads_read.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                   ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    except AttributeError:
        return None
    return lib


#: The loaded library, or None where it was not built.
LIBRARY = _load()

__all__ = ["ABI", "LIBRARY"]
