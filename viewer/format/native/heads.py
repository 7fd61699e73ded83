"""The native part of ``viewer.format.fileheads`` (``heads.c``): the first bytes of many files
in one call, without the interpreter lock.  Built as its own optional extension (``setup.py``),
loaded here with ctypes; None where it was not built (``fileheads`` then reads in Python)."""

from __future__ import annotations

import ctypes
import importlib.machinery
import os

#: The interface version (``heads_abi()``); a library built from other sources is not used.
ABI = 1


def _load() -> ctypes.CDLL | None:
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, "_heads" + suffix)
        if not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.heads_abi.restype = ctypes.c_int64
            lib.heads_slots.restype = ctypes.c_int64
            if lib.heads_abi() != ABI:
                continue
            lib.heads_read.restype = ctypes.c_int64
            lib.heads_read.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                       ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
        except (OSError, AttributeError):
            continue
        return lib
    return None


#: The loaded library, or None where it was not built.
LIBRARY = _load()

__all__ = ["ABI", "LIBRARY"]
