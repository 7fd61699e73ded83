"""Native batch kernels: C code built with the package where a compiler exists (``setup.py``
marks the extension optional), loaded here with ctypes.  Each kernel does for a whole batch
of chunks what the Python paths do chunk by chunk, without the interpreter lock (ctypes
releases it for the call) and without starting threads of its own: callers share a batch
over their own threads.  Every caller keeps its Python path, used where the kernel was not
built and checked against it by the tests.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os

#: The kernel's interface version (``wkw_abi()``); a library built from other sources is not used.
ABI = 2


def _load() -> ctypes.CDLL | None:
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, "_kernel" + suffix)
        if not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.wkw_abi.restype = ctypes.c_int64
            if lib.wkw_abi() != ABI:
                continue
        except (OSError, AttributeError):
            continue
        return lib
    return None


#: The loaded kernel library, or None where it was not built.
LIBRARY = _load()


def available() -> bool:
    """True when the native kernels were built and load."""
    return LIBRARY is not None


__all__ = ["ABI", "LIBRARY", "available"]
