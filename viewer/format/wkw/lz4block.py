"""Bare LZ4 blocks, as WKW stores them (no frame, no size prefix).

Decoding goes through the system liblz4 via ctypes when it is there, straight into a caller's
numpy buffer, and can stop early: ``LZ4_decompress_safe_partial`` decodes only a prefix of a
block, which is all an XY plane needs (x fastest, then y, then z).  Without liblz4 the ``lz4``
package decodes whole blocks.  Encoding always uses the ``lz4`` package (LZ4HC at level 9, as
the reference writes).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

import lz4.block
import numpy as np
import numpy.typing as npt

#: The reference writes LZ4HC at this level.
LZ4HC_LEVEL = 9


class LZ4Error(Exception):
    """A block that does not decode, or decodes to a size other than expected."""


def _load_liblz4() -> Any:
    for name in (ctypes.util.find_library("lz4"), "liblz4.so.1", "liblz4.dylib", "liblz4.so"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            fn = lib.LZ4_decompress_safe_partial
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        lib.LZ4_decompress_safe.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int
        ]
        lib.LZ4_decompress_safe.restype = ctypes.c_int
        return lib
    return None


_LIB = _load_liblz4()

#: True when partial decoding (and zero-copy decoding into numpy buffers) is available.
HAVE_PARTIAL = _LIB is not None


def decode_into(
    src: bytes | bytearray | memoryview,
    dst: npt.NDArray[np.uint8],
    prefix: int | None = None,
    *,
    src_address: int | None = None,
) -> None:
    """Decode one block from ``src`` into ``dst`` (a contiguous uint8 buffer of the block size).

    With ``prefix``, at least the first ``prefix`` bytes of ``dst`` are valid afterwards (the
    rest is undefined); without, the block must decode to exactly ``dst.nbytes`` bytes.
    ``src_address`` lets a caller that holds ``src`` alive pass its address and save a lookup.
    """
    capacity = dst.nbytes
    n = len(src)
    if _LIB is None:
        try:
            out = lz4.block.decompress(src, uncompressed_size=capacity)
        except lz4.block.LZ4BlockError as exc:
            raise LZ4Error(str(exc)) from None
        if len(out) != capacity:
            raise LZ4Error(f"decoded to {len(out)} bytes, expected {capacity}")
        dst[:] = np.frombuffer(out, dtype=np.uint8)
        return
    if src_address is None:
        src_address = np.frombuffer(src, dtype=np.uint8).ctypes.data if n else 0
    if prefix is not None and prefix < capacity:
        got = _LIB.LZ4_decompress_safe_partial(src_address, dst.ctypes.data, n, prefix, capacity)
        if got < prefix:
            raise LZ4Error(
                "does not decode" if got < 0 else f"decoded to only {got} bytes, needed {prefix}"
            )
        return
    got = _LIB.LZ4_decompress_safe(src_address, dst.ctypes.data, n, capacity)
    if got < 0:
        raise LZ4Error("does not decode (corrupt LZ4 data or a block larger than expected)")
    if got != capacity:
        raise LZ4Error(f"decoded to {got} bytes, expected {capacity}")


def whole_decoder() -> Any:
    """liblz4's ``LZ4_decompress_safe(src, dst, size, capacity)`` by address, or None."""
    return None if _LIB is None else _LIB.LZ4_decompress_safe


def partial_decoder() -> Any:
    """liblz4's ``LZ4_decompress_safe_partial(src, dst, size, prefix, capacity)`` by address
    (returns the bytes decoded, at least ``prefix`` on success), or None."""
    return None if _LIB is None else _LIB.LZ4_decompress_safe_partial


def decode_many(src: list[int], sizes: list[int], dst: list[int], prefixes: list[int],
                capacity: int) -> list[int]:
    """Decode blocks given by address: block ``k`` has ``sizes[k]`` compressed bytes at
    address ``src[k]`` and decodes into ``capacity`` bytes at ``dst[k]``, stopping after
    ``prefixes[k]`` bytes when that is less than ``capacity``.

    Returns per block the bytes decoded, or a negative number when it does not decode.  A whole
    block (``prefix >= capacity``) must return exactly ``capacity``; a prefix at least
    ``prefix``.  The GIL is released inside each call, so two threads decode in parallel.
    The caller keeps the memory behind the addresses alive.
    """
    if _LIB is None:
        return [_decode_fallback(s, n, d, p, capacity)
                for s, n, d, p in zip(src, sizes, dst, prefixes, strict=True)]
    partial = _LIB.LZ4_decompress_safe_partial
    whole = _LIB.LZ4_decompress_safe
    return [whole(s, d, n, capacity) if p >= capacity else partial(s, d, n, p, capacity)
            for s, n, d, p in zip(src, sizes, dst, prefixes, strict=True)]


def _decode_fallback(src: int, size: int, dst: int, prefix: int, capacity: int) -> int:
    try:
        out = lz4.block.decompress(ctypes.string_at(src, size), uncompressed_size=capacity)
    except lz4.block.LZ4BlockError:
        return -1
    ctypes.memmove(dst, out, min(len(out), capacity))
    return len(out)


def copy_many(src: list[int], dst: list[int], size: int) -> None:
    """Copy ``size`` bytes from each ``src[k]`` to ``dst[k]`` (raw blocks, by address)."""
    move = ctypes.memmove
    for s, d in zip(src, dst, strict=True):
        move(d, s, size)


def decode(src: bytes | bytearray | memoryview, size: int) -> npt.NDArray[np.uint8]:
    """Decode a whole block into a new uint8 array of ``size`` bytes."""
    dst = np.empty(size, dtype=np.uint8)
    decode_into(src, dst)
    return dst


def encode(data: bytes | memoryview | npt.NDArray[Any], high_compression: bool = True) -> bytes:
    """Encode one block as a bare LZ4 block (LZ4HC level 9, or LZ4 default)."""
    out: bytes
    if high_compression:
        out = lz4.block.compress(
            data, mode="high_compression", compression=LZ4HC_LEVEL, store_size=False
        )
    else:
        out = lz4.block.compress(data, mode="default", store_size=False)
    return out


def compress_bound(size: int) -> int:
    """LZ4_COMPRESSBOUND: the largest a block of ``size`` bytes can encode to."""
    return size + size // 255 + 16
