"""Chunk encodings of Neuroglancer precomputed: ``raw``, ``jpeg``, ``png``,
``compressed_segmentation`` and ``compresso``, each chunk possibly gzip-compressed (a sharded
scale's ``data_encoding: gzip``, or an unsharded chunk file as CloudVolume writes it).

A stored chunk holds the voxels of its box clipped to the scale's extent, as an ``[x, y, z,
channel]`` array in Fortran order (x fastest); ``decode_chunk`` returns it as ``(C, cx, cy, cz)``
of the full chunk shape (an edge chunk padded with zeros).  A stream that does not decode, or
decodes to another number of voxels than the box has, is a ``CodecFailure`` (the caller names
the chunk).  compressed_segmentation is decoded here (``precomputed.cseg``, checked); the
image codecs come from an optional package (Pillow, the ``precomputed`` extra), compresso
from ``compresso``: without them such a scale's chunks fail naming the package.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.precomputed import cseg

Vec3 = tuple[int, int, int]
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
EXTRA = "precomputed"
#: The package that decodes each encoding beyond raw, for messages about a missing one.
PACKAGES = {"jpeg": "pillow", "png": "pillow", "compresso": "compresso"}


class CodecFailure(Exception):
    """A chunk's bytes do not decode (the message says how)."""


class MissingDecoder(CodecFailure):
    """The package that decodes this encoding is not installed."""


@dataclass(frozen=True)
class ChunkCodec:
    """How a scale's chunks decode: ``encoding``, one channel's ``dtype`` (little-endian),
    ``channels``, the full ``chunk_shape``, the compressed_segmentation ``block_size`` and
    whether every chunk is gzip-compressed (``gzip``)."""

    encoding: str
    dtype: np.dtype[Any]
    channels: int
    chunk_shape: Vec3
    block_size: Vec3 | None = None
    gzip: bool = False

    def describe(self) -> str:
        out = self.encoding
        if self.block_size is not None:
            out += f" (blocks {'x'.join(map(str, self.block_size))})"
        return out + (" + gzip" if self.gzip else "")

    def unwrap(self, stored: bytes | memoryview, box: Vec3) -> tuple[bytes | memoryview, bool]:
        """The chunk's encoded bytes with any gzip (or zstd) layer removed, and whether there
        was one.  An unsharded chunk is gzip (zstd) when it starts with that format's magic
        and is not a raw chunk of exactly the box's size (as CloudVolume stores chunks:
        compressed under their own name, or with ``.gz`` / ``.zstd`` added)."""
        gz = self.gzip
        zst = False
        if not gz:
            head = bytes(stored[:4])
            raw_len = box[0] * box[1] * box[2] * self.channels * self.dtype.itemsize
            plain = self.encoding == "raw" and len(stored) == raw_len
            gz = head[:2] == GZIP_MAGIC and not plain
            zst = head == ZSTD_MAGIC and not plain
        if zst:
            try:
                import zstandard

                # a frame may omit its size: at most what any encoding of the box takes
                return zstandard.ZstdDecompressor().decompress(
                    stored, max_output_size=4 * raw_len + (1 << 16)), True
            except zstandard.ZstdError as exc:
                raise CodecFailure(f"zstd stream does not decode: {exc}") from None
        if not gz:
            return stored, False
        try:
            return zlib.decompress(stored, 47), True
        except zlib.error as exc:
            raise CodecFailure(f"gzip stream does not decode: {exc}") from None

    def decode(self, stored: bytes | memoryview, box: Vec3) -> npt.NDArray[Any]:
        """The chunk of box size ``box`` (clipped to the extent) as ``(C, cx, cy, cz)`` of the
        full chunk shape."""
        data, _ = self.unwrap(stored, box)
        arr = self._decode_box(data, box)  # (C, bx, by, bz)
        if box == self.chunk_shape:
            return arr
        full = np.zeros((self.channels, *self.chunk_shape), dtype=self.dtype, order="F")
        full[:, :box[0], :box[1], :box[2]] = arr
        return full

    def decode_part(self, stored: bytes | memoryview, box: Vec3, lo: Vec3, hi: Vec3
                    ) -> npt.NDArray[Any]:
        """The voxels ``[lo, hi)`` of the chunk (inside ``box``) as ``(C, ...)``: a
        compressed_segmentation chunk decodes only the blocks (and the z layers of them)
        that the box meets; other encodings decode the chunk and cut the box out."""
        if self.encoding != "compressed_segmentation" or self.block_size is None:
            return self.decode(stored, box)[:, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        data, _ = self.unwrap(stored, box)
        try:
            return cseg.decode_checked(data, box, self.channels, self.block_size, self.dtype,
                                       lo, hi)
        except cseg.CsegError as exc:
            raise CodecFailure(f"compressed_segmentation stream does not decode to "
                               f"{'x'.join(map(str, box))} voxels: {exc}") from None

    def _decode_box(self, data: bytes | memoryview, box: Vec3) -> npt.NDArray[Any]:
        c = self.channels
        n = box[0] * box[1] * box[2]
        enc = self.encoding
        if enc == "raw":
            want = n * c * self.dtype.itemsize
            if len(data) != want:
                raise CodecFailure(f"raw chunk of {len(data)} bytes, {want} expected for "
                                   f"{'x'.join(map(str, box))} voxels x {c} channel(s)")
            flat = np.frombuffer(data, dtype=self.dtype)
            return _cxyz(flat.reshape(c, box[2], box[1], box[0]))
        if enc in ("jpeg", "png"):
            pixels = _image(data, enc)
            if pixels.size != n * c:
                raise CodecFailure(f"{enc} image of {pixels.size} values, {n * c} expected for "
                                   f"{'x'.join(map(str, box))} voxels x {c} channel(s)")
            if pixels.dtype != self.dtype:
                pixels = pixels.astype(self.dtype)
            # rows of the image concatenated are the [x, y, z] voxels, channels interleaved
            return _cxyz(pixels.reshape(box[2], box[1], box[0], c).transpose(3, 0, 1, 2))
        if enc == "compressed_segmentation":
            return self._cseg(data, box)
        return self._compresso(data, box)

    def _cseg(self, data: bytes | memoryview, box: Vec3) -> npt.NDArray[Any]:
        assert self.block_size is not None
        try:
            return cseg.decode(data, box, self.channels, self.block_size, self.dtype)
        except cseg.CsegError as exc:
            raise CodecFailure(f"compressed_segmentation stream does not decode to "
                               f"{'x'.join(map(str, box))} voxels: {exc}") from None

    def _compresso(self, data: bytes | memoryview, box: Vec3) -> npt.NDArray[Any]:
        try:
            import compresso
        except ImportError:
            raise MissingDecoder(_missing("compresso")) from None
        raw = bytes(data)
        try:
            if not compresso.valid(raw):
                raise CodecFailure("compresso stream does not decode: its header or its "
                                   "sections are not consistent with its length")
            arr = np.asarray(compresso.decompress(raw))
        except CodecFailure:
            raise
        except Exception as exc:  # noqa: BLE001 - the codec's own errors are not typed
            raise CodecFailure(f"compresso stream does not decode: {exc}") from None
        if arr.shape[:3] != box:
            raise CodecFailure(f"compresso decoded to {arr.shape}, {box} expected")
        arr = arr.reshape(*box, -1).astype(self.dtype, copy=False)
        return np.asfortranarray(np.moveaxis(arr, 3, 0))


def _cxyz(czyx: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A ``(C, z, y, x)`` C-order array as ``(C, x, y, z)`` in Fortran order (a view for one
    channel, a copy for several)."""
    out = czyx.transpose(0, 3, 2, 1)
    return out if out.flags.f_contiguous else np.asfortranarray(out)


def _image(data: bytes | memoryview, enc: str) -> npt.NDArray[Any]:
    try:
        from PIL import Image
    except ImportError:
        raise MissingDecoder(_missing(enc)) from None
    try:
        with Image.open(io.BytesIO(data)) as im:
            if enc == "jpeg" and im.format != "JPEG" or enc == "png" and im.format != "PNG":
                raise CodecFailure(f"not a {enc} stream ({im.format})")
            im.load()
            return np.asarray(im)
    except CodecFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - Pillow raises many types for a bad stream
        raise CodecFailure(f"{enc} stream does not decode: {exc}") from None


def _missing(enc: str) -> str:
    return (f"{enc} chunks need the {PACKAGES[enc]} package (pip install "
            f"'wkw-viewer[{EXTRA}]' or pip install {PACKAGES[enc]})")


__all__ = ["ChunkCodec", "CodecFailure", "MissingDecoder", "GZIP_MAGIC", "EXTRA"]
