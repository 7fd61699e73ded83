"""The N5 compressions: a chunk's payload (the bytes after its header) to its elements' bytes.

``raw`` (the bytes as they are), ``gzip`` (one or more gzip members as Apache Commons'
``GzipCompressorOutputStream`` writes them, or a zlib stream when the dataset says
``useZlib``; either is recognised by its first bytes), ``bzip2``, ``xz``, ``lz4`` (lz4-java's
block framing: ``viewer.format.n5.lz4java``), and the plugins ``blosc`` (a Blosc 1 chunk) and
``zstd`` (a Zstandard frame), which need the optional ``numcodecs`` package.

Every decoder is told how many bytes the chunk must decode to and stops one byte past it, so
a damaged or hostile payload can never make it allocate more than a chunk; the standard
library's decoders and lz4 release the GIL, so chunks decode in parallel on threads.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from typing import Any

from viewer.format.errors import ChecksumError, ChunkDecodeError, UnsupportedFormatError
from viewer.format.n5 import lz4java
from viewer.format.n5.attributes import Compression

GZIP_MAGIC = b"\x1f\x8b"


def numcodecs_available() -> bool:
    try:
        import numcodecs  # noqa: F401
    except ImportError:
        return False
    return True


class _Where:
    """The file, chunk and payload offset named by a decoder's errors."""

    __slots__ = ("path", "chunk", "base")

    def __init__(self, path: str, chunk: tuple[int, ...] | None, base: int) -> None:
        self.path, self.chunk, self.base = path, chunk, base

    def error(self, message: str, offset: int = 0) -> ChunkDecodeError:
        return ChunkDecodeError(message, self.path, offset=self.base + offset, chunk=self.chunk)


def stream_kind(compression: Compression, payload: bytes | memoryview) -> str:
    """What the payload of a ``gzip`` dataset really is: ``"gzip"`` or ``"zlib"``."""
    return "gzip" if bytes(payload[:2]) == GZIP_MAGIC else "zlib"


#: What zlib says when a stream's trailer disagrees with what it decoded to.
_TRAILER_ERRORS = ("incorrect data check", "incorrect length check")


def _inflate(payload: bytes | memoryview, expected: int, where: _Where) -> bytes:
    wbits = 31 if bytes(payload[:2]) == GZIP_MAGIC else 15
    kind = "gzip" if wbits == 31 else "zlib"
    data: bytes | memoryview = payload
    parts: list[bytes] = []
    got = 0
    consumed = 0
    while True:
        d = zlib.decompressobj(wbits)
        try:
            out = d.decompress(data, expected - got + 1)
        except zlib.error as exc:
            if any(t in str(exc) for t in _TRAILER_ERRORS):
                raise ChecksumError(f"{kind} trailer does not match the data: {exc}",
                                    where.path, offset=where.base + consumed,
                                    chunk=where.chunk) from None
            raise where.error(f"{kind} stream does not decompress: {exc}", consumed) from None
        got += len(out)
        parts.append(out)
        if got > expected:
            raise where.error(f"{kind} stream decodes to more than the {expected} bytes of the "
                              "chunk", consumed)
        if not d.eof:
            raise where.error(f"{kind} stream truncated (decoded {got} of {expected} bytes)",
                              len(payload))
        rest = d.unused_data
        consumed = len(payload) - len(rest)
        # Commons Compress reads concatenated gzip members; a zlib stream is one.
        if wbits != 31 or not rest or not rest.startswith(GZIP_MAGIC):
            break
        data = rest
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _bzip2(payload: bytes | memoryview, expected: int, where: _Where) -> bytes:
    data: bytes | memoryview = payload
    parts: list[bytes] = []
    got = 0
    while True:
        d = bz2.BZ2Decompressor()
        try:
            out = d.decompress(data, expected - got + 1)
        except (OSError, ValueError) as exc:
            raise where.error(f"bzip2 stream does not decompress: {exc}",
                              len(payload) - len(data)) from None
        got += len(out)
        parts.append(out)
        if got > expected:
            raise where.error(f"bzip2 stream decodes to more than the {expected} bytes of the "
                              "chunk")
        if not d.eof:
            raise where.error(f"bzip2 stream truncated (decoded {got} of {expected} bytes)",
                              len(payload))
        data = d.unused_data
        if not data.startswith(b"BZh"):
            break
    return b"".join(parts)


def _xz(payload: bytes | memoryview, expected: int, where: _Where) -> bytes:
    d = lzma.LZMADecompressor(lzma.FORMAT_AUTO)
    try:
        out = d.decompress(payload, expected + 1)
    except lzma.LZMAError as exc:
        raise where.error(f"xz stream does not decompress: {exc}") from None
    if len(out) > expected:
        raise where.error(f"xz stream decodes to more than the {expected} bytes of the chunk")
    if not d.eof:
        raise where.error(f"xz stream truncated (decoded {len(out)} of {expected} bytes)",
                          len(payload))
    return out


def _bare_lz4(payload: bytes | memoryview, expected: int, where: _Where) -> bytes:
    """z5py's ``lz4``: one bare LZ4 block, not lz4-java's framing (Java's N5 cannot read
    it; this program can)."""
    import lz4.block

    try:
        return bytes(lz4.block.decompress(payload, uncompressed_size=expected))
    except lz4.block.LZ4BlockError:
        raise where.error("no LZ4Block magic, and not a bare LZ4 block of the chunk's size "
                          "(as z5py writes) either") from None


def lz4_framing(payload: bytes | memoryview) -> str:
    """``"lz4-java"`` (N5's framing) or ``"bare block"`` (z5py's)."""
    return "lz4-java" if bytes(payload[:8]) == lz4java.MAGIC else "bare block"


def _blosc(payload: bytes | memoryview, expected: int, where: _Where) -> Any:
    if len(payload) < 16:
        raise where.error(f"blosc chunk of {len(payload)} bytes: shorter than its 16-byte "
                          "header")
    nbytes, _blocksize, cbytes = struct.unpack_from("<III", payload, 4)
    if nbytes != expected:
        raise where.error(f"blosc header says {nbytes} bytes, the chunk holds {expected}", 4)
    if cbytes > len(payload):
        raise where.error(f"blosc header says {cbytes} compressed bytes, the payload has "
                          f"{len(payload)}", 12)
    try:
        from numcodecs import blosc
    except ImportError:
        raise UnsupportedFormatError("blosc chunks need the numcodecs package (pip install "
                                     "'wkw-viewer[n5]')", where.path, chunk=where.chunk) from None
    import numpy as np

    dest = np.empty(expected, np.uint8)
    try:
        blosc.decompress(payload, dest)
    except Exception as exc:  # noqa: BLE001 - numcodecs raises RuntimeError and others
        raise where.error(f"blosc chunk does not decompress: {exc}") from None
    return dest


def _zstd(payload: bytes | memoryview, expected: int, where: _Where) -> Any:
    try:
        from numcodecs import zstd
    except ImportError:
        raise UnsupportedFormatError("zstd chunks need the numcodecs package (pip install "
                                     "'wkw-viewer[n5]')", where.path, chunk=where.chunk) from None
    import numpy as np

    declared = zstd_content_size(payload)
    if isinstance(declared, str):
        raise where.error(declared)
    if declared is not None and declared != expected:
        # numcodecs would fill the first bytes of a larger buffer and say nothing
        raise where.error(f"zstd frame declares {declared} bytes, the chunk holds {expected}", 5)
    dest = np.empty(expected, np.uint8)
    try:
        zstd.decompress(payload, dest)
    except Exception as exc:  # noqa: BLE001 - numcodecs raises RuntimeError and others
        raise where.error(f"zstd frame does not decompress to {expected} bytes: {exc}") from None
    return dest


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def zstd_content_size(payload: bytes | memoryview) -> int | str | None:
    """The content size a Zstandard frame header declares, None when it declares none (a
    streaming writer's frame), or why it is not a frame header."""
    if len(payload) < 5 or bytes(payload[:4]) != ZSTD_MAGIC:
        return "no Zstandard frame magic"
    fhd = payload[4]
    fcs_flag, single, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if size == 0:
        return None
    if len(payload) < pos + size:
        return "Zstandard frame header truncated"
    value = int.from_bytes(bytes(payload[pos:pos + size]), "little")
    return value + 256 if size == 2 else value


def decompress(compression: Compression, payload: bytes | memoryview, expected: int,
               path: str, chunk: tuple[int, ...] | None = None, base: int = 0) -> Any:
    """The ``expected`` bytes a payload decodes to (``bytes`` or a uint8 array).  A
    ``ChunkDecodeError`` (naming ``path``, ``chunk`` and the byte offset, counted from
    ``base``) when it does not decode, or decodes to more or fewer bytes; a
    ``ChecksumError`` when it fails a checksum the stream carries.  The whole payload is
    always decoded, so that every checksum is reached."""
    where = _Where(path, chunk, base)
    ctype = compression.type
    out: Any
    if ctype == "raw":
        out = payload
    elif ctype == "gzip":
        out = _inflate(payload, expected, where)
    elif ctype == "lz4":
        if bytes(payload[:8]) != lz4java.MAGIC and len(payload) >= 1:
            out = _bare_lz4(payload, expected, where)
        else:
            out = lz4java.decode(payload, path, chunk, base, limit=expected)
    elif ctype == "bzip2":
        out = _bzip2(payload, expected, where)
    elif ctype == "xz":
        out = _xz(payload, expected, where)
    elif ctype == "blosc":
        out = _blosc(payload, expected, where)
    elif ctype == "zstd":
        out = _zstd(payload, expected, where)
    else:
        raise UnsupportedFormatError(f"compression {ctype!r} is not one this program reads",
                                     path, chunk=chunk)
    n = len(out)
    if n != expected:
        what = "holds" if ctype == "raw" else "decodes to"
        raise where.error(f"{ctype} payload {what} {n} bytes, the chunk header asks for "
                          f"{expected}")
    return out


__all__ = ["decompress", "numcodecs_available", "stream_kind", "lz4_framing"]
