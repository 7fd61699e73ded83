"""The encodings a candidate may use, each as its format writes a chunk's payload.

An ``Encoding`` turns one chunk, laid out as its target format lays out voxels (a C-contiguous
array whose ``tobytes()`` is the format's byte order: ``targets.TargetFormat.layout``), into
the payload bytes that format stores, and back.  These are this module's own encoders, calling
the libraries the formats' writers use (python-lz4, zstandard, zlib, numcodecs' blosc,
compressed-segmentation, Pillow, zfpy), so that a projected size is the size a writer would
produce; ``tests/advise`` checks them against the real writers' files.

Names follow the formats' metadata: ``lz4`` / ``lz4hc`` (a bare LZ4 block, as WKW stores
it; with the option ``framing lz4java``: lz4-java's ``LZ4Block`` frames, N5's ``lz4``),
``zstd``, ``gzip``, ``blosc``, ``raw``, ``compressed_segmentation``, ``jpeg``, ``zfp``.

Every method may run on any thread; encoders hold no state between chunks.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import lz4.block
import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]

#: lz4-java's frame: magic, token, compressed and original lengths, checksum (21 bytes).
LZ4JAVA_MAGIC = b"LZ4Block"
LZ4JAVA_HEADER = struct.Struct("<8sBIII")
#: N5's lz4 writes 64 KiB frames (``Lz4Compression`` default block size).
LZ4JAVA_BLOCK = 1 << 16
_LZ4JAVA_SEED = 0x9747B28C


class EncodingUnavailable(Exception):  # noqa: N818 - says what is missing, not a failure
    """The library an encoding needs is not installed (the message says which)."""


@dataclass(frozen=True)
class Encoding:
    """One encoding with its parameters.  ``name`` as the format's metadata spells it;
    ``level`` its main parameter (a compression level, a JPEG quality, a zfp rate, precision
    or tolerance; None where there is none); ``options`` the rest (blosc's ``cname`` and
    ``shuffle``, zfp's ``mode``) as sorted ``(key, value)`` pairs."""

    name: str
    level: float | None = None
    options: tuple[tuple[str, str], ...] = ()

    # -- description ------------------------------------------------------------------------------
    @property
    def lossless(self) -> bool:
        return self.name not in ("jpeg", "zfp")

    def option(self, key: str, default: str = "") -> str:
        return dict(self.options).get(key, default)

    @property
    def label(self) -> str:
        """``zstd 5``, ``blosc lz4 bitshuffle 5``, ``zfp rate 8``, ``raw``."""
        words = [self.name, *(v for _, v in self.options)]
        if self.level is not None:
            words.append(f"{self.level:g}")
        return " ".join(words)

    def check(self) -> None:
        """``EncodingUnavailable`` when the library this encoding needs is missing."""
        needs = {"blosc": "numcodecs", "zstd": "zstandard", "jpeg": "PIL",
                 "compressed_segmentation": "compressed_segmentation", "zfp": "zfpy"}
        module = needs.get(self.name)
        if module is None:
            return
        try:
            __import__(module)
        except ImportError:
            pip = {"PIL": "Pillow", "compressed_segmentation": "compressed-segmentation"}
            raise EncodingUnavailable(
                f"{self.label} needs the {pip.get(module, module)} package "
                f"(pip install 'wkw-viewer[advise]')") from None

    # -- coding -----------------------------------------------------------------------------------
    def encode(self, arr: Array) -> bytes:
        """The payload of ``arr`` (C-contiguous, in the format's byte order)."""
        n = self.name
        level = self.level
        if n == "raw":
            return arr.tobytes()
        if n == "lz4" and self.option("framing") == "lz4java":
            return _lz4java_encode(arr.tobytes())
        if n in ("lz4", "lz4hc"):
            return bytes(lz4.block.compress(arr.tobytes(), store_size=False,
                                            mode="high_compression" if n == "lz4hc" else "default",
                                            compression=int(level or 9) if n == "lz4hc" else 0))
        if n == "zstd":
            import zstandard

            checksum = self.option("checksum", "") == "checksum"
            return bytes(zstandard.ZstdCompressor(level=int(level or 3), write_checksum=checksum,
                                                  write_content_size=True).compress(arr.tobytes()))
        if n == "gzip":
            # zlib's gzip member (no file name, mtime 0), as numcodecs (zarr-python), z5py and
            # Java N5 write it.  tensorstore deflates with Chromium's zlib, whose output
            # differs by a few per cent either way (docs/cli.md gives the figures).
            co = zlib.compressobj(int(level if level is not None else 6), zlib.DEFLATED, 31)
            return co.compress(arr.tobytes()) + co.flush()
        if n == "blosc":
            from numcodecs import blosc

            shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[self.option("shuffle",
                                                                               "shuffle")]
            data = np.ascontiguousarray(arr).reshape(-1)
            return bytes(blosc.compress(data, self.option("cname", "lz4").encode(),
                                        int(level if level is not None else 5), shuffle))
        if n == "compressed_segmentation":
            import compressed_segmentation as cseg

            # (C, Z, Y, X) C order is (X, Y, Z, C) Fortran order: the codec's own layout.
            out = cseg.compress(arr.T, block_size=_cseg_block(self), order="F")
            return bytes(out)
        if n == "jpeg":
            return _jpeg_encode(arr, int(level or 75))
        if n == "zfp":
            import zfpy

            mode = self.option("mode", "rate")
            kw: dict[str, Any] = {{"rate": "rate", "precision": "precision",
                                   "accuracy": "tolerance"}[mode]: level}
            if mode == "precision":
                kw["precision"] = int(level or 16)
            return bytes(zfpy.compress_numpy(np.ascontiguousarray(_squeeze(arr)), **kw))
        raise ValueError(f"unknown encoding {n!r}")

    def decode(self, data: bytes, like: Array) -> Array:
        """The array ``data`` decodes to, of ``like``'s shape and dtype (the encoded layout)."""
        n = self.name
        dtype, shape = like.dtype, like.shape
        nbytes = int(like.nbytes)
        if n == "raw":
            raw = data
        elif n == "lz4" and self.option("framing") == "lz4java":
            raw = _lz4java_decode(data)
        elif n in ("lz4", "lz4hc"):
            raw = lz4.block.decompress(data, uncompressed_size=nbytes)
        elif n == "zstd":
            import zstandard

            raw = zstandard.ZstdDecompressor().decompress(data, max_output_size=nbytes)
        elif n == "gzip":
            raw = zlib.decompress(data, 31)
        elif n == "blosc":
            from numcodecs import blosc

            raw = bytes(blosc.decompress(data))
        elif n == "compressed_segmentation":
            import compressed_segmentation as cseg

            out = cseg.decompress(data, shape[::-1], dtype, block_size=_cseg_block(self),
                                  order="F")
            return np.ascontiguousarray(np.asarray(out).T)
        elif n == "jpeg":
            return _jpeg_decode(data, like)
        elif n == "zfp":
            import zfpy

            return np.asarray(zfpy.decompress_numpy(data)).reshape(shape).astype(dtype,
                                                                                 copy=False)
        else:
            raise ValueError(f"unknown encoding {n!r}")
        return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _squeeze(arr: Array) -> Array:
    """zfp codes at most 4-D fields; one channel (first or last axis) drops its axis."""
    out: Array = arr
    if arr.ndim == 4 and arr.shape[0] == 1:
        out = arr[0]
    elif arr.ndim == 4 and arr.shape[-1] == 1:
        out = arr[..., 0]
    return out


def _cseg_block(enc: Encoding) -> tuple[int, int, int]:
    side = int(enc.option("block", "8"))
    return (side, side, side)


def _lz4java_checksum(data: bytes) -> int:
    try:
        import xxhash
    except ImportError:  # the checksum's value does not change any size: 0 then
        return 0
    return int(xxhash.xxh32_intdigest(data, seed=_LZ4JAVA_SEED)) & 0xFFFFFFF


def _lz4java_encode(data: bytes) -> bytes:
    """lz4-java's ``LZ4BlockOutputStream``: 64 KiB frames, each LZ4 or (when that does not
    shrink it) raw, then an empty frame."""
    level = LZ4JAVA_BLOCK.bit_length() - 1 - 10
    out = io.BytesIO()
    for start in range(0, len(data), LZ4JAVA_BLOCK):
        part = data[start:start + LZ4JAVA_BLOCK]
        packed = lz4.block.compress(part, store_size=False)
        method, payload = (0x20, packed) if len(packed) < len(part) else (0x10, part)
        out.write(LZ4JAVA_HEADER.pack(LZ4JAVA_MAGIC, method | level, len(payload), len(part),
                                      _lz4java_checksum(part)))
        out.write(payload)
    out.write(LZ4JAVA_HEADER.pack(LZ4JAVA_MAGIC, 0x10 | level, 0, 0, 0))
    return out.getvalue()


def _lz4java_decode(data: bytes) -> bytes:
    parts: list[bytes] = []
    pos = 0
    while True:
        _, token, compressed, original, _ = LZ4JAVA_HEADER.unpack_from(data, pos)
        pos += LZ4JAVA_HEADER.size
        if compressed == 0 and original == 0:
            return b"".join(parts)
        payload = data[pos:pos + compressed]
        pos += compressed
        parts.append(payload if token & 0xF0 == 0x10
                     else lz4.block.decompress(payload, uncompressed_size=original))


def _jpeg_planes(arr: Array) -> Array:
    """A chunk ``(C, Z, Y, X)`` as neuroglancer's precomputed jpeg lays it out: an image
    ``X`` wide and ``Y * Z`` high, channels interleaved."""
    c, z, y, x = arr.shape
    return np.ascontiguousarray(arr.reshape(c, z * y, x).transpose(1, 2, 0)).squeeze(axis=2) \
        if c == 1 else np.ascontiguousarray(arr.reshape(c, z * y, x).transpose(1, 2, 0))


def _jpeg_encode(arr: Array, quality: int) -> bytes:
    from PIL import Image

    if arr.dtype != np.uint8 or arr.shape[0] not in (1, 3):
        raise ValueError("jpeg codes uint8 chunks of 1 or 3 channels")
    buf = io.BytesIO()
    Image.fromarray(_jpeg_planes(arr)).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def _jpeg_decode(data: bytes, like: Array) -> Array:
    from PIL import Image

    c, z, y, x = like.shape
    img = np.asarray(Image.open(io.BytesIO(data)))
    if c == 1:
        return np.ascontiguousarray(img.reshape(1, z, y, x))
    return np.ascontiguousarray(img.reshape(z * y, x, c).transpose(2, 0, 1).reshape(c, z, y, x))


__all__ = ["Encoding", "EncodingUnavailable", "LZ4JAVA_BLOCK"]
