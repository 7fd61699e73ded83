"""Native batch kernels: C code built with the package where a compiler exists (``setup.py``
marks the extension optional), loaded here with ctypes.  Each kernel does for a whole batch
of chunks what the Python paths do chunk by chunk, without the interpreter lock (ctypes
releases it for the call) and without starting threads of its own: callers share a batch
over their own threads.  Every caller keeps its Python path, used where the kernel was not
built and checked against it by the tests.  One library (``_planes``: the plane assembly)
takes Python objects and releases the lock itself (``ctypes.PyDLL``); it includes Python.h,
so it is built on its own and may be missing where the others are not.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os

#: The kernel's interface version (``wkw_abi()``); a library built from other sources is not used.
ABI = 4


def load(name: str, abi_function: str, abi: int, python: bool = False) -> ctypes.CDLL | None:
    """The built library ``name`` of this folder (``_kernel``, ``_heads``, ``_planes``) whose
    ``abi_function()`` answers ``abi``; None where it was not built, does not load, or was
    built from other sources.  ``python``: its functions take Python objects and manage the
    interpreter lock themselves (``ctypes.PyDLL``: the lock held on entry)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(here, name + suffix)
        if not os.path.exists(path):
            continue
        try:
            lib = ctypes.PyDLL(path) if python else ctypes.CDLL(path)
            version = getattr(lib, abi_function)  # a C symbol looked up by name: ctypes' way
            version.restype = ctypes.c_int64
            if version() != abi:
                continue
        except (OSError, AttributeError):
            continue
        return lib
    return None


#: The loaded kernel library, or None where it was not built.
LIBRARY = load("_kernel", "wkw_abi", ABI)


def available() -> bool:
    """True when the native kernels were built and load."""
    return LIBRARY is not None


__all__ = ["ABI", "LIBRARY", "available", "load"]
