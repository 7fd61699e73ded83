"""zfp streams: their header read in Python, their data decoded by the zfp library.

**Header** (``parse_header``): a zfp stream written with a full header starts with 32 bits of
magic (``z``, ``f``, ``p``, the codec version), 52 bits of field metadata (scalar type,
dimensionality, sizes) and a 12-bit compression mode (64 bits for the "expert" parameters),
packed least significant bit first into little-endian 64-bit words.  Read here without zfp, so
the inspector shows a stream's mode and sizes even where decoding fails.

**Data** (``decode_into``): decoded by ``libzfp`` itself, the copy ``zfpy`` ships
(``zfpy.libs/libzfp*.so``), called through ``ctypes`` (the GIL is released for the call, so
the loader's threads decode in parallel) straight into a strided view of the caller's array
(no intermediate copy).  zfp reads its input without bounds checks, so the stream is first
copied into a zero-padded buffer as long as the most a decoder of this mode and size can read,
and the bytes zfp reports it consumed are compared with the stream's length: a truncated or
damaged stream is an error, never a read past the buffer, never silent zeros.  Where the
library cannot be loaded, ``zfpy.decompress_numpy`` decodes (with the same size checks).
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

#: zfp scalar types (``zfp_type``), as numpy dtypes.
ZFP_TYPES: dict[int, np.dtype[Any]] = {1: np.dtype("<i4"), 2: np.dtype("<i8"),
                                       3: np.dtype("<f4"), 4: np.dtype("<f8")}
ZFP_MAX_BITS = 16658
ZFP_MAX_PREC = 64
ZFP_MIN_EXP = -1074
ZFP_MODE_SHORT_MAX = (1 << 12) - 2
#: Most bits a full header takes (32 magic + 52 metadata + 64 mode).
HEADER_MAX_BITS = 148


class ZfpError(ValueError):
    """A zfp stream whose header or data does not decode."""


@dataclass(frozen=True)
class StreamHeader:
    """What a zfp stream's full header says."""

    codec_version: int
    dtype: np.dtype[Any]
    #: zfp's sizes ``(nx, ny, nz, nw)`` of the dimensions used (zfp's x varies fastest).
    zfp_shape: tuple[int, ...]
    mode: str            # "fixed-rate", "fixed-precision", "fixed-accuracy", "reversible", "expert"
    minbits: int
    maxbits: int
    maxprec: int
    minexp: int
    header_bits: int

    @property
    def dims(self) -> int:
        return len(self.zfp_shape)

    @property
    def numpy_shape(self) -> tuple[int, ...]:
        """The array shape as numpy (and zfpy) see it: zfp's sizes reversed."""
        return tuple(reversed(self.zfp_shape))

    @property
    def blocks(self) -> int:
        n = 1
        for s in self.zfp_shape:
            n *= (s + 3) // 4
        return n

    @property
    def rate(self) -> float:
        """Bits per value (fixed-rate mode)."""
        return self.maxbits / float(4 ** self.dims)

    @property
    def tolerance(self) -> float:
        """Absolute error bound (fixed-accuracy mode)."""
        return float(2.0 ** self.minexp)

    def max_read_bytes(self) -> int:
        """The most bytes a decoder of this stream can read: the header, then per block at most
        ``maxbits`` bits, and never more than every bit plane of the block's values with their
        group tests (``2 * size + 1`` bits each) plus its exponent and flags."""
        values = 4 ** self.dims
        planes = 8 * self.dtype.itemsize
        per_block = max(self.minbits, min(self.maxbits, 64 + planes * (2 * values + 1)))
        bits = HEADER_MAX_BITS + self.blocks * per_block
        return int((bits + 63) // 64 * 8 + 16)

    def padded_size(self, length: int) -> int:
        """Bytes of the buffer a stream of ``length`` bytes is decoded from."""
        return max(self.max_read_bytes(), length + 16)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"zfp_codec_version": self.codec_version,
                               "zfp_type": self.dtype.name,
                               "zfp_sizes": list(self.zfp_shape), "zfp_mode": self.mode}
        if self.mode == "fixed-rate":
            out["rate_bits_per_value"] = self.rate
        elif self.mode == "fixed-precision":
            out["precision_bits"] = self.maxprec
        elif self.mode == "fixed-accuracy":
            out["tolerance"] = self.tolerance
        elif self.mode == "expert":
            out.update(minbits=self.minbits, maxbits=self.maxbits, maxprec=self.maxprec,
                       minexp=self.minexp)
        out["header_bits"] = self.header_bits
        return out


def parse_header(data: bytes | memoryview) -> StreamHeader:
    """The full header at the start of a zfp stream (``ZfpError`` when it is not one)."""
    head = bytes(data[:24])
    if len(head) < 12:
        raise ZfpError(f"stream of {len(head)} bytes is too short for a zfp header")
    bits = int.from_bytes(head.ljust(24, b"\0"), "little")
    if head[:3] != b"zfp":
        raise ZfpError(f"stream does not start with the zfp magic (found {head[:3]!r})")
    version = head[3]
    pos = 32
    meta = (bits >> pos) & ((1 << 52) - 1)
    pos += 52
    ztype = (meta & 3) + 1
    dims = ((meta >> 2) & 3) + 1
    rest = meta >> 4
    if dims == 1:
        shape: tuple[int, ...] = ((rest & 0xFFFFFFFF) + 1,)
    else:
        width = {2: 24, 3: 16, 4: 12}[dims]
        mask = (1 << width) - 1
        shape = tuple(((rest >> (width * i)) & mask) + 1 for i in range(dims))
    mode = (bits >> pos) & 0xFFF
    pos += 12
    if mode > ZFP_MODE_SHORT_MAX:
        if len(head) < 19:
            raise ZfpError("stream too short for its 64-bit zfp mode")
        mode += ((bits >> pos) & ((1 << 52) - 1)) << 12
        pos += 52
    name, minbits, maxbits, maxprec, minexp = _mode_params(mode)
    if not (minbits <= maxbits and 0 < maxprec <= ZFP_MAX_PREC):
        raise ZfpError(f"zfp mode word {mode:#x} holds impossible parameters")
    return StreamHeader(version, ZFP_TYPES[ztype], shape, name, minbits, maxbits, maxprec,
                        minexp, pos)


def _mode_params(mode: int) -> tuple[str, int, int, int, int]:
    if mode <= ZFP_MODE_SHORT_MAX:
        if mode < 2048:
            return "fixed-rate", mode + 1, mode + 1, ZFP_MAX_PREC, ZFP_MIN_EXP
        if mode < 2048 + 128:
            return "fixed-precision", 1, ZFP_MAX_BITS, mode + 1 - 2048, ZFP_MIN_EXP
        if mode == 2048 + 128:
            return "reversible", 1, ZFP_MAX_BITS, ZFP_MAX_PREC, ZFP_MIN_EXP - 1
        return ("fixed-accuracy", 1, ZFP_MAX_BITS, ZFP_MAX_PREC,
                mode + ZFP_MIN_EXP - (2048 + 128 + 1))
    m = mode >> 12
    minbits = (m & 0x7FFF) + 1
    m >>= 15
    maxbits = (m & 0x7FFF) + 1
    m >>= 15
    maxprec = (m & 0x7F) + 1
    m >>= 7
    minexp = (m & 0x7FFF) - 16495
    return "expert", minbits, maxbits, maxprec, minexp


# -- the library ---------------------------------------------------------------------------------
_lib: Any = None
_lib_lock = threading.Lock()
_lib_tried = False


def _load() -> Any:
    """libzfp from the zfpy wheel, with the prototypes used here; None when not found."""
    global _lib, _lib_tried
    with _lib_lock:
        if _lib_tried:
            return _lib
        _lib_tried = True
        try:
            import zfpy
        except ImportError:
            return None
        base = os.path.dirname(os.path.abspath(zfpy.__file__))
        names = []
        for folder in (os.path.join(base, "zfpy.libs"), os.path.join(base, ".dylibs"), base):
            names += sorted(glob.glob(os.path.join(folder, "libzfp*")))
            names += sorted(glob.glob(os.path.join(folder, "zfp*.dll")))
        for name in names:
            try:
                lib = ctypes.CDLL(name)
                _prototypes(lib)
            except (OSError, AttributeError):
                continue
            _lib = lib
            break
        return _lib


def _prototypes(lib: Any) -> None:
    vp, sz, pd = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_ssize_t
    lib.stream_open.argtypes, lib.stream_open.restype = [vp, sz], vp
    lib.stream_close.argtypes, lib.stream_close.restype = [vp], None
    lib.zfp_stream_open.argtypes, lib.zfp_stream_open.restype = [vp], vp
    lib.zfp_stream_close.argtypes, lib.zfp_stream_close.restype = [vp], None
    lib.zfp_field_alloc.argtypes, lib.zfp_field_alloc.restype = [], vp
    lib.zfp_field_free.argtypes, lib.zfp_field_free.restype = [vp], None
    lib.zfp_read_header.argtypes = [vp, vp, ctypes.c_uint]
    lib.zfp_read_header.restype = sz
    lib.zfp_field_set_pointer.argtypes, lib.zfp_field_set_pointer.restype = [vp, vp], None
    lib.zfp_field_set_stride_1d.argtypes = [vp, pd]
    lib.zfp_field_set_stride_2d.argtypes = [vp, pd, pd]
    lib.zfp_field_set_stride_3d.argtypes = [vp, pd, pd, pd]
    lib.zfp_field_set_stride_4d.argtypes = [vp, pd, pd, pd, pd]
    for f in ("1d", "2d", "3d", "4d"):
        getattr(lib, f"zfp_field_set_stride_{f}").restype = None
    lib.zfp_decompress.argtypes, lib.zfp_decompress.restype = [vp, vp], sz


def library_available() -> bool:
    return _load() is not None


def decode_into(stream: bytes | memoryview, header: StreamHeader,
                out: npt.NDArray[Any]) -> None:
    """Decode ``stream`` (a full-header zfp stream) into ``out``, a (possibly strided) array of
    the stream's numpy shape and type.  ``ZfpError`` when the stream does not decode or is
    shorter than what it encodes."""
    if out.shape != header.numpy_shape or out.dtype != header.dtype:
        raise ZfpError(f"stream holds {header.dtype.name} {header.numpy_shape}, expected "
                       f"{out.dtype.name} {out.shape}")
    if header.blocks > 8 * len(stream):
        raise ZfpError(f"stream of {len(stream)} bytes cannot hold the {header.blocks} zfp "
                       f"blocks of {header.numpy_shape} (at least one bit each): truncated")
    if _load() is None:
        _decode_zfpy(stream, header, out)
        return
    buf = np.empty(header.padded_size(len(stream)), dtype=np.uint8)
    buf[:len(stream)] = np.frombuffer(stream, dtype=np.uint8)
    decode_padded(buf, len(stream), header, out)


def decode_padded(buf: npt.NDArray[np.uint8], length: int, header: StreamHeader,
                  out: npt.NDArray[Any]) -> None:
    """As ``decode_into``, from a buffer of at least ``header.padded_size(length)`` bytes whose
    first ``length`` are the stream (what follows need only be readable memory: a read past
    ``length`` is found from the bytes zfp says it used)."""
    lib = _load()
    if lib is None:
        _decode_zfpy(buf[:length].tobytes(), header, out)
        return
    if out.shape != header.numpy_shape or out.dtype != header.dtype:
        raise ZfpError(f"stream holds {header.dtype.name} {header.numpy_shape}, expected "
                       f"{out.dtype.name} {out.shape}")
    if header.blocks > 8 * length:
        raise ZfpError(f"stream of {length} bytes cannot hold the {header.blocks} zfp "
                       f"blocks of {header.numpy_shape} (at least one bit each): truncated")
    need = header.padded_size(length)
    if buf.dtype != np.uint8 or buf.ndim != 1 or len(buf) < need or \
            not buf.flags.c_contiguous:
        raise ValueError(f"decode_padded needs a contiguous uint8 buffer of {need} bytes")
    bs = lib.stream_open(buf.ctypes.data, need)
    zs = lib.zfp_stream_open(bs)
    field = lib.zfp_field_alloc()
    try:
        if not (bs and zs and field) or lib.zfp_read_header(zs, field, 7) == 0:
            raise ZfpError("zfp does not accept the stream's header")
        item = out.dtype.itemsize
        strides = [s // item for s in reversed(out.strides)]
        lib.zfp_field_set_pointer(field, out.ctypes.data)
        getattr(lib, f"zfp_field_set_stride_{len(strides)}d")(field, *strides)
        used = lib.zfp_decompress(zs, field)
    finally:
        if field:
            lib.zfp_field_free(field)
        if zs:
            lib.zfp_stream_close(zs)
        if bs:
            lib.stream_close(bs)
    if used == 0:
        raise ZfpError("zfp could not decompress the stream")
    if used > length:
        raise ZfpError(f"stream is truncated: decoding it needs {used} bytes, it has "
                       f"{length}")


def _decode_zfpy(stream: bytes | memoryview, header: StreamHeader,
                 out: npt.NDArray[Any]) -> None:
    import zfpy

    need = max(header.max_read_bytes(), len(stream) + 16)
    padded = bytes(stream) + bytes(need - len(stream))
    try:
        arr = zfpy.decompress_numpy(padded)
    except Exception as exc:  # noqa: BLE001 - zfpy raises plain exceptions
        raise ZfpError(f"zfpy could not decompress the stream: {exc}") from None
    if arr.shape != out.shape:
        raise ZfpError(f"stream decodes to {arr.shape}, expected {out.shape}")
    out[...] = arr


__all__ = ["StreamHeader", "ZfpError", "parse_header", "decode_into", "decode_padded",
           "library_available"]
