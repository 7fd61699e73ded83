"""The target formats a candidate is projected for, and what each stores besides payloads.

This is a catalogue of encodings, not a reader: it names the formats it models and nothing
else in the program reads it.  For each target format it says how a chunk's voxels are laid
out as bytes, which chunks are stored at all, and the format's own overhead, small models
checked against the real writers in ``tests/advise``:

- **wkw** (the reference ``wkw`` writer): files of ``file_len``^3 blocks, each file a 16-byte
  header, then for LZ4/LZ4HC a jump table of one u64 per block, then every block of the
  file (blocks with no data are stored too: zeros, encoded).  Raw files hold every block at
  its full size.  ``header.wkw`` (16 bytes) at the root.  Bytes: channel fastest, then x, y, z.
- **zarr3** (as webKnossos writes it: a ``transpose`` to Fortran order, so bytes as WKW's):
  with sharding, one shard per ``shard``^3 voxels, each shard its stored chunks plus an index
  of 16 bytes per chunk and a 4-byte crc32c; without, one object per chunk.  Chunks that hold
  only the fill value are not stored (zarr-python's and tensorstore's default).  Edge chunks
  are stored at full size.
- **n5** (as tensorstore writes it): one file per chunk, a big-endian header (mode u16, ndim
  u16, one u32 per dimension) before the payload; big-endian voxels, x fastest, channels last;
  full-size edge chunks; fill-only chunks not stored.
- **precomputed** (neuroglancer, as tensorstore writes it): one object per chunk, x fastest
  then y, z, channel; edge chunks clipped to the extent; fill-only chunks not stored.  Sharded
  (``neuroglancer_uint64_sharded_v1``, identity hash, raw indexes): a shard file per aligned
  box of chunks holding data (the chunks whose compressed Morton codes share their high bits:
  ``shard`` voxels a side, as far as the grid has bits on each axis), each the shard index
  (16 bytes per minishard) and, per stored chunk, its bytes and 24 bytes of minishard index;
  ``2^minishard_bits`` about the square root of the chunks per shard (a reader's shard index
  and minishard index both stay small), the rest of the box's bits ``preshift_bits``.

The metadata files (``zarr.json``, ``attributes.json``, ``info``) are left out: a few hundred
bytes per array.  Qt-free; immutable; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.advise.codecs import Encoding

Vec3 = tuple[int, int, int]
Array = npt.NDArray[Any]

#: Formats this catalogue knows, with the encodings each writes.
FORMATS: dict[str, tuple[str, ...]] = {
    "wkw": ("raw", "lz4", "lz4hc"),
    "zarr3": ("raw", "zstd", "gzip", "blosc", "zfp"),
    "n5": ("raw", "gzip", "lz4", "zstd", "blosc"),
    "precomputed": ("raw", "gzip", "compressed_segmentation", "jpeg"),
}
#: Voxels per WKW file and zarr3 shard side unless asked otherwise (webKnossos' defaults).
DEFAULT_SHARD_VX = 1024
#: Bytes of a WKW file header (and of ``header.wkw``).
WKW_HEADER = 16
#: Bytes per chunk of a zarr v3 shard index, and its crc32c.
ZARR3_INDEX_ENTRY = 16
ZARR3_INDEX_CRC = 4
#: Bytes per minishard of a precomputed shard index, and per chunk of a (raw) minishard index.
PRECOMPUTED_SHARD_ENTRY = 16
PRECOMPUTED_MINISHARD_ENTRY = 24


@dataclass(frozen=True)
class TargetFormat:
    """A format as a candidate would be written in: ``name`` and, for WKW files and zarr3
    shards, the voxels per unit side (``shard_vx``; 0: one chunk per file or object)."""

    name: str
    shard_vx: int = 0

    @property
    def sharded(self) -> bool:
        return self.shard_vx > 0

    @property
    def stores_fill_chunks(self) -> bool:
        """Whether a chunk holding only the fill value is stored (WKW stores every block of a
        file it writes)."""
        return self.name == "wkw"

    @property
    def clips_edges(self) -> bool:
        """Whether an edge chunk is stored at its size inside the extent (else: padded)."""
        return self.name == "precomputed"

    def layout_key(self, dtype: np.dtype[Any], channels: int) -> tuple[str, str]:
        """What decides the bytes of a chunk in this format: the axis order and the byte
        order (equal keys: equal bytes, encoded once)."""
        order = "zyxc" if self.name in ("wkw", "zarr3") and channels > 1 else "czyx"
        endian = ">" if self.name == "n5" and dtype.itemsize > 1 else "<"
        return order, endian

    def layout(self, chunk: Array) -> Array:
        """A ``(C, X, Y, Z)`` chunk as a C-contiguous array whose bytes are this format's:
        ``(Z, Y, X, C)`` for WKW and zarr3, ``(C, Z, Y, X)`` for N5 (big-endian) and
        precomputed."""
        order, endian = self.layout_key(chunk.dtype, chunk.shape[0])
        arr = chunk.transpose(3, 2, 1, 0) if order == "zyxc" else chunk.transpose(0, 3, 2, 1)
        big = endian == ">" and chunk.dtype.itemsize > 1
        dtype = chunk.dtype.newbyteorder(">") if big else chunk.dtype.newbyteorder("<")
        return np.ascontiguousarray(arr, dtype=dtype)

    def chunks_per_unit(self, chunk_shape: Vec3, grid_dims: Vec3 | None = None) -> Vec3:
        """Chunks per storage unit along x, y, z (for a precomputed shard, ``grid_dims``, the
        chunk grid's size, says which axes still have bits of the Morton code to give)."""
        if not self.sharded:
            return (1, 1, 1)
        n = [max(1, self.shard_vx // c) for c in chunk_shape]
        if self.name == "precomputed":
            return morton_box(sum(_bits(v) for v in n), grid_dims or (1 << 30,) * 3)
        return (n[0], n[1], n[2])

    def sharding(self, chunk_shape: Vec3, grid_dims: Vec3) -> dict[str, int] | None:
        """A precomputed shard's ``preshift_bits``, ``minishard_bits`` and ``shard_bits`` (the
        ``sharding`` of its ``info``); None for other targets."""
        if self.name != "precomputed" or not self.sharded:
            return None
        box = self.chunks_per_unit(chunk_shape, grid_dims)
        k = sum(_bits(v) for v in box)
        minishard = k // 2
        total = sum(_bits(v) for v in grid_dims)
        return {"preshift_bits": k - minishard, "minishard_bits": minishard,
                "shard_bits": max(0, total - k)}

    def chunk_overhead(self, channels: int) -> int:
        """Bytes a stored chunk carries besides its payload (N5's block header, a precomputed
        shard's minishard index entry)."""
        if self.name == "n5":
            return 4 + 4 * (3 + (channels > 1))
        if self.name == "precomputed" and self.sharded:
            return PRECOMPUTED_MINISHARD_ENTRY
        return 0

    def unit_overhead(self, chunk_shape: Vec3, encoding: Encoding,
                      grid_dims: Vec3 | None = None) -> int:
        """Bytes a storage unit carries besides its chunks: a WKW file's header and jump table,
        a zarr3 shard's index, a precomputed shard's index."""
        n = int(np.prod(self.chunks_per_unit(chunk_shape, grid_dims)))
        if self.name == "wkw":
            return WKW_HEADER + (0 if encoding.name == "raw" else 8 * n)
        if self.name == "zarr3" and self.sharded:
            return ZARR3_INDEX_ENTRY * n + ZARR3_INDEX_CRC
        if self.name == "precomputed" and self.sharded:
            spec = self.sharding(chunk_shape, grid_dims or (1 << 30,) * 3)
            assert spec is not None
            return PRECOMPUTED_SHARD_ENTRY << spec["minishard_bits"]
        return 0

    @property
    def fixed_overhead(self) -> int:
        """Bytes stored once per array besides its units (``header.wkw``)."""
        return WKW_HEADER if self.name == "wkw" else 0

    def refuses(self, encoding: Encoding, dtype: np.dtype[Any], channels: int,
                chunk_shape: Vec3) -> str | None:
        """Why this format cannot store ``encoding`` of such chunks (None: it can)."""
        if encoding.name not in FORMATS.get(self.name, ()):
            return f"{self.name} has no {encoding.name} encoding"
        if self.name == "wkw":
            side = chunk_shape[0]
            if len(set(chunk_shape)) != 1 or side & (side - 1):
                return "WKW blocks are cubes of a power of two"
            files = max(1, self.shard_vx // side)
            if files & (files - 1):
                return "WKW files hold a power of two blocks per side"
            if channels * dtype.itemsize > 255:
                return "WKW stores at most 255 bytes per voxel"
        if encoding.name == "compressed_segmentation" and dtype not in (np.uint32, np.uint64):
            return "compressed_segmentation codes uint32 and uint64 only"
        if encoding.name == "jpeg" and (dtype != np.uint8 or channels not in (1, 3)):
            return "jpeg codes uint8 with 1 or 3 channels only"
        if encoding.name == "zfp" and dtype.kind != "f":
            return "zfp is offered for floating-point data"
        return None

    @property
    def label(self) -> str:
        if self.name == "wkw":
            return "wkw"
        return f"{self.name} sharded" if self.sharded else self.name


def _bits(n: int) -> int:
    """Bits to number ``n`` positions (0 for one)."""
    return max(0, int(n - 1).bit_length())


def morton_box(k: int, grid_dims: Vec3) -> Vec3:
    """The box of chunks whose compressed Morton codes share all but their ``k`` low bits:
    the bits go to x, y, z in turn, skipping an axis once the grid has no more bits on it."""
    have = [_bits(v) for v in grid_dims]
    got = [0, 0, 0]
    while k > 0 and any(got[a] < have[a] for a in range(3)):
        for a in range(3):
            if k > 0 and got[a] < have[a]:
                got[a] += 1
                k -= 1
    return (1 << got[0], 1 << got[1], 1 << got[2])


@dataclass(frozen=True)
class Candidate:
    """One way to store the data: a target format, an encoding, a chunk shape."""

    target: TargetFormat
    encoding: Encoding
    chunk_shape: Vec3

    @property
    def lossless(self) -> bool:
        return self.encoding.lossless

    @property
    def label(self) -> str:
        """``zarr3 sharded zstd 5, 32^3``."""
        c = self.chunk_shape
        shape = f"{c[0]}^3" if len(set(c)) == 1 else "x".join(map(str, c))
        return f"{self.target.label} {self.encoding.label}, {shape}"

    def to_json(self) -> dict[str, Any]:
        e = self.encoding
        return {"format": self.target.name, "encoding": e.name,
                "level": e.level, "options": dict(e.options), "sharded": self.target.sharded,
                "unit_vx": self.target.shard_vx or None,
                "chunk_shape": list(self.chunk_shape), "lossless": e.lossless,
                "label": self.label}


__all__ = ["TargetFormat", "Candidate", "FORMATS", "DEFAULT_SHARD_VX", "morton_box"]
