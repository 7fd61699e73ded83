"""The codecs a zarr chunk passes through, as decoders.

zarr v3 (``codecs`` of ``zarr.json``, applied in order when writing, in reverse when reading):
array-to-array ``transpose``, array-to-bytes ``bytes`` (either endianness) or
``sharding_indexed`` (see ``sharding``), bytes-to-bytes ``zstd``, ``gzip``, ``blosc`` and
``crc32c``.  zarr v2 (``.zarray``): one ``compressor`` (``zstd``, ``blosc``, ``gzip``,
``zlib``, ``lz4`` or null; any other numcodecs compressor through ``numcodecs.get_codec``),
``filters`` through numcodecs, C or F ``order``.

Decoders are plain objects whose ``decode(data, limit)`` returns the decoded bytes and raises
``CodecFailure`` (no path, no chunk: the caller names them) when the bytes do not decode or
would decode to more than ``limit`` bytes (memory stays bounded on damaged input).  zstd and
zlib release the GIL while they work, so chunks decode in parallel on threads.
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import MetadataError, UnsupportedFormatError

Buffer = bytes | bytearray | memoryview


class CodecFailure(Exception):
    """Stored bytes that do not decode (``checksum``: they fail a checksum)."""

    def __init__(self, message: str, checksum: bool = False) -> None:
        super().__init__(message)
        self.checksum = checksum


class BytesDecoder:
    """A bytes-to-bytes codec (a compressor or a checksum)."""

    name: str = ""
    #: Fixed bytes the codec adds when encoding (a checksum), else ``None`` (variable).
    fixed_overhead: int | None = None

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def decode(self, data: Buffer, limit: int) -> Buffer:
        raise NotImplementedError

    def describe(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in sorted(self.config.items()))
        return f"{self.name}({args})" if args else self.name


# -- zstd -------------------------------------------------------------------------------------
_zstd_local = threading.local()


def _zstd_decompressor() -> Any:
    d = getattr(_zstd_local, "d", None)
    if d is None:
        import zstandard

        d = _zstd_local.d = zstandard.ZstdDecompressor()
    return d


class Zstd(BytesDecoder):
    """A zstd frame (its content checksum, when written, is checked by libzstd)."""

    name = "zstd"

    def decode(self, data: Buffer, limit: int) -> Buffer:
        import zstandard

        try:
            params = zstandard.get_frame_parameters(data)
        except zstandard.ZstdError as exc:
            raise CodecFailure(f"not a zstd frame: {exc}") from None
        if params.content_size not in (zstandard.CONTENTSIZE_UNKNOWN,
                                       zstandard.CONTENTSIZE_ERROR) \
                and params.content_size > limit:
            raise CodecFailure(f"zstd frame declares {params.content_size} bytes, more than "
                               f"the {limit} a chunk holds")
        try:
            out: bytes = _zstd_decompressor().decompress(data, max_output_size=limit)
        except zstandard.ZstdError as exc:
            text = str(exc)
            raise CodecFailure(f"zstd: {text}", checksum="checksum" in text.lower()) from None
        return out


# -- gzip / zlib ------------------------------------------------------------------------------
class Zlib(BytesDecoder):
    """A zlib stream (``wbits`` 15), a gzip member (31), or either (47)."""

    name = "zlib"
    wbits = 15

    def decode(self, data: Buffer, limit: int) -> Buffer:
        d = zlib.decompressobj(self.wbits)
        try:
            out = d.decompress(data, limit + 1)
        except zlib.error as exc:
            text = str(exc)
            raise CodecFailure(f"{self.name}: {text}", checksum="incorrect data check" in text
                               or "incorrect length check" in text) from None
        if len(out) > limit:
            raise CodecFailure(f"{self.name} stream decodes to more than the {limit} bytes a "
                               "chunk holds")
        if not d.eof:
            raise CodecFailure(f"{self.name} stream is cut short")
        return out


class Gzip(Zlib):
    name = "gzip"
    wbits = 31


# -- blosc ------------------------------------------------------------------------------------
class Blosc(BytesDecoder):
    """A blosc buffer (self-describing header: sizes, shuffle, inner compressor)."""

    name = "blosc"

    def decode(self, data: Buffer, limit: int) -> Buffer:
        from numcodecs import blosc

        buf = bytes(data) if not isinstance(data, bytes) else data
        if len(buf) < 16:
            raise CodecFailure(f"blosc buffer of {len(buf)} bytes is shorter than its header")
        try:
            nbytes, cbytes, _ = blosc._cbuffer_sizes(buf) if hasattr(blosc, "_cbuffer_sizes") \
                else blosc.cbuffer_sizes(buf)
        except Exception as exc:  # noqa: BLE001 - numcodecs raises plain errors
            raise CodecFailure(f"blosc header: {exc}") from None
        if nbytes > limit:
            raise CodecFailure(f"blosc header declares {nbytes} bytes, more than the {limit} a "
                               "chunk holds")
        if cbytes != len(buf):
            raise CodecFailure(f"blosc header declares {cbytes} stored bytes, the chunk has "
                               f"{len(buf)}")
        try:
            out: bytes = blosc.decompress(buf)
        except Exception as exc:  # noqa: BLE001
            raise CodecFailure(f"blosc: {exc}") from None
        return out


# -- lz4 (numcodecs' framing: a 4-byte little-endian size, then an lz4 block) -----------------
class Lz4(BytesDecoder):
    name = "lz4"

    def decode(self, data: Buffer, limit: int) -> Buffer:
        import lz4.block

        mv = memoryview(data)
        if len(mv) < 4:
            raise CodecFailure("lz4 buffer shorter than its 4-byte size")
        size = int.from_bytes(mv[:4], "little")
        if size > limit:
            raise CodecFailure(f"lz4 size prefix says {size} bytes, more than the {limit} a "
                               "chunk holds")
        try:
            out: bytes = lz4.block.decompress(mv[4:], uncompressed_size=size)
        except lz4.block.LZ4BlockError as exc:
            raise CodecFailure(f"lz4: {exc}") from None
        return out


# -- crc32c -----------------------------------------------------------------------------------
def crc32c(data: Buffer) -> int:
    """The CRC-32C (Castagnoli) of ``data``."""
    import google_crc32c

    return int(google_crc32c.value(bytes(data) if isinstance(data, memoryview) else data))


class Crc32c(BytesDecoder):
    """The bytes followed by their CRC-32C, 4 bytes little-endian."""

    name = "crc32c"
    fixed_overhead = 4

    def decode(self, data: Buffer, limit: int) -> Buffer:
        mv = memoryview(data)
        if len(mv) < 4:
            raise CodecFailure("shorter than its 4-byte crc32c")
        body = mv[:-4]
        stored = int.from_bytes(mv[-4:], "little")
        actual = crc32c(body)
        if stored != actual:
            raise CodecFailure(f"crc32c mismatch: stored {stored:#010x}, computed "
                               f"{actual:#010x}", checksum=True)
        return body


# -- any other numcodecs codec (zarr v2 compressors and filters) -------------------------------
class Numcodecs(BytesDecoder):
    def __init__(self, config: dict[str, Any], codec: Any) -> None:
        super().__init__(config)
        self.codec = codec
        self.name = str(config.get("id", "?"))

    def decode(self, data: Buffer, limit: int) -> Buffer:
        try:
            out = self.codec.decode(data)
        except Exception as exc:  # noqa: BLE001 - a foreign codec's errors are its own
            raise CodecFailure(f"{self.name}: {exc}") from None
        arr = np.ascontiguousarray(out)
        if arr.nbytes > limit:
            raise CodecFailure(f"{self.name} decodes to more than {limit} bytes")
        if not arr.flags.c_contiguous:
            return arr.tobytes()
        return memoryview(arr.view(np.uint8).reshape(-1).data)


V3_BYTES_CODECS: dict[str, type[BytesDecoder]] = {
    "zstd": Zstd, "gzip": Gzip, "blosc": Blosc, "crc32c": Crc32c,
}
V2_COMPRESSORS: dict[str, type[BytesDecoder]] = {
    "zstd": Zstd, "gzip": Gzip, "zlib": Zlib, "blosc": Blosc, "lz4": Lz4,
}


def v2_codec(config: Any, where: str, what: str) -> BytesDecoder:
    """A zarr v2 compressor or filter from its numcodecs config ``{"id": ..., ...}``."""
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise MetadataError(f"{what} must be an object with a string 'id', not {config!r}"[:200],
                            where)
    cid = config["id"]
    if what == "compressor" and cid in V2_COMPRESSORS:
        return V2_COMPRESSORS[cid](config)
    try:
        import numcodecs

        codec = numcodecs.get_codec(dict(config))
    except Exception:  # noqa: BLE001 - unknown id, bad arguments
        raise UnsupportedFormatError(f"unknown {what} {cid!r}", where) from None
    return Numcodecs(config, codec)


@dataclass
class ChunkCodec:
    """Everything between a chunk's stored bytes and its array: ``decode(stored)`` gives the
    chunk (``shape``, in the array's own axis order) as an array of the stored ``dtype``.

    ``order``: the transposes of zarr v3 composed (``encoded = decoded.transpose(order)``);
    ``fortran``: zarr v2 ``order: "F"``; ``bytes_codecs``: applied in reverse when decoding;
    ``filters``: zarr v2 filters (numcodecs), applied in reverse after them."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    order: tuple[int, ...] | None = None
    fortran: bool = False
    bytes_codecs: list[BytesDecoder] = field(default_factory=list)
    filters: list[BytesDecoder] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        if self.order is not None:
            self.encoded_shape = tuple(self.shape[i] for i in self.order)
            self.inverse = tuple(int(i) for i in np.argsort(self.order))
        else:
            self.encoded_shape = self.shape
            self.inverse = ()

    def decode(self, stored: Buffer) -> npt.NDArray[Any]:
        """The chunk's array; ``CodecFailure`` when the bytes do not decode to it."""
        data: Buffer = stored
        limit = self.nbytes + 64
        for codec in reversed(self.bytes_codecs):
            data = codec.decode(data, limit)
        for f in reversed(self.filters):
            data = f.decode(data, limit)
        if len(data) != self.nbytes:
            raise CodecFailure(f"decodes to {len(data)} bytes, a chunk of "
                               f"{'x'.join(map(str, self.shape))} {self.dtype.name} holds "
                               f"{self.nbytes}")
        arr = np.frombuffer(data, dtype=self.dtype)
        if self.fortran:
            return arr.reshape(self.shape, order="F")
        arr = arr.reshape(self.encoded_shape)
        if self.inverse:
            arr = arr.transpose(self.inverse)
        return arr

    def describe(self) -> list[str]:
        out = []
        if self.order is not None:
            out.append(f"transpose(order={list(self.order)})")
        if self.fortran:
            out.append("order F")
        out.append(f"bytes({'big' if self.dtype.byteorder == '>' else 'little'})")
        out.extend(c.describe() for c in self.filters)
        out.extend(c.describe() for c in self.bytes_codecs)
        return out


__all__ = ["ChunkCodec", "BytesDecoder", "CodecFailure", "Zstd", "Gzip", "Zlib", "Blosc",
           "Lz4", "Crc32c", "crc32c", "v2_codec", "V3_BYTES_CODECS", "V2_COMPRESSORS"]
