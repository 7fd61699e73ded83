"""The ``info`` file of a Neuroglancer precomputed volume, parsed and checked.

``InfoFile`` holds what the whole volume shares (``type``, ``data_type``,
``num_channels``) and one ``ScaleInfo`` per scale (``key``, ``size``, ``voxel_offset``,
``resolution``, its one chunk size, ``encoding``, the compressed_segmentation block size and
the ``sharding`` spec).  A scale's extent is ``[voxel_offset, voxel_offset + size)``; its chunk
grid starts at ``voxel_offset``.  A value the spec does not allow is a ``MetadataError`` naming
the file and the key.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from viewer.format.errors import MetadataError, UnsupportedFormatError

Vec3 = tuple[int, int, int]

INFO_FILE = "info"
VOLUME_TYPE = "neuroglancer_multiscale_volume"
SHARDED_TYPE = "neuroglancer_uint64_sharded_v1"
#: Every ``data_type`` tensorstore and neuroglancer write.
DATA_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
              "float32", "float64")
ENCODINGS = ("raw", "jpeg", "png", "compressed_segmentation", "compresso")
HASHES = ("identity", "murmurhash3_x86_128")


@dataclass(frozen=True)
class ShardingSpec:
    """A scale's ``sharding`` member (``neuroglancer_uint64_sharded_v1``)."""

    preshift_bits: int
    hash: str
    minishard_bits: int
    shard_bits: int
    minishard_index_encoding: str = "raw"
    data_encoding: str = "raw"

    @property
    def shard_index_nbytes(self) -> int:
        """Bytes of the index at the start of every shard file (16 per minishard)."""
        return 16 << self.minishard_bits

    def shard_name(self, shard: int) -> str:
        """The shard file's name: the number in lower-case hex, ``ceil(shard_bits / 4)``
        digits, then ``.shard``."""
        digits = (self.shard_bits + 3) // 4
        return f"{shard:0{digits}x}.shard" if digits else f"{shard:x}.shard"

    def to_json(self) -> dict[str, Any]:
        return {"@type": SHARDED_TYPE, "preshift_bits": self.preshift_bits, "hash": self.hash,
                "minishard_bits": self.minishard_bits, "shard_bits": self.shard_bits,
                "minishard_index_encoding": self.minishard_index_encoding,
                "data_encoding": self.data_encoding}


@dataclass(frozen=True)
class ScaleInfo:
    """One entry of ``scales``."""

    index: int
    key: str
    size: Vec3
    voxel_offset: Vec3
    resolution: tuple[float, float, float]
    chunk_size: Vec3
    encoding: str
    block_size: Vec3 | None = None
    sharding: ShardingSpec | None = None
    jpeg_quality: int | None = None

    @property
    def grid_shape(self) -> Vec3:
        """Chunks along x, y, z: ``ceil(size / chunk_size)``."""
        return (-(-self.size[0] // self.chunk_size[0]), -(-self.size[1] // self.chunk_size[1]),
                -(-self.size[2] // self.chunk_size[2]))

    @property
    def aligned(self) -> bool:
        """Whether ``voxel_offset`` is a multiple of the chunk size on every axis, so that
        the scale's chunk grid is the grid of absolute coordinates."""
        return all(o % c == 0 for o, c in zip(self.voxel_offset, self.chunk_size, strict=True))


@dataclass(frozen=True)
class InfoFile:
    """The whole ``info`` document, checked."""

    where: str
    type: str
    data_type: str
    num_channels: int
    scales: tuple[ScaleInfo, ...]
    document: dict[str, Any]

    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(self.data_type).newbyteorder("<")


def parse_info(raw: bytes, where: str) -> InfoFile:
    """The ``info`` file's bytes parsed; ``MetadataError`` naming the key that is wrong."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MetadataError(f"not JSON: {exc}", where) from None
    if not isinstance(doc, dict):
        raise MetadataError("not a JSON object", where)
    kind = doc.get("@type", VOLUME_TYPE)
    if kind != VOLUME_TYPE:
        raise UnsupportedFormatError(f"@type {kind!r} is not a volume ({VOLUME_TYPE})", where)
    vtype = doc.get("type", "image")
    if vtype not in ("image", "segmentation"):
        raise MetadataError(f"type {vtype!r} is neither 'image' nor 'segmentation'", where)
    data_type = str(doc.get("data_type", "")).lower()
    if data_type not in DATA_TYPES:
        raise UnsupportedFormatError(f"data_type {doc.get('data_type')!r} is not one of "
                                     f"{', '.join(DATA_TYPES)}", where)
    channels = doc.get("num_channels", 1)
    if not _is_int(channels) or channels < 1:
        raise MetadataError(f"num_channels {channels!r} is not a positive integer", where)
    scales = doc.get("scales")
    if not isinstance(scales, list) or not scales:
        raise MetadataError("no scales", where)
    parsed = tuple(_scale(i, s, where, data_type, int(channels)) for i, s in enumerate(scales))
    return InfoFile(where, vtype, data_type, int(channels), parsed, doc)


def _scale(i: int, s: Any, where: str, data_type: str, channels: int) -> ScaleInfo:
    at = f"scales[{i}]"
    if not isinstance(s, dict):
        raise MetadataError(f"{at} is not an object", where)
    key = s.get("key")
    if not isinstance(key, str) or not key:
        raise MetadataError(f"{at}.key is missing", where)
    size = _vec(s.get("size"), f"{at}.size", where, positive=True)
    offset = _vec(s.get("voxel_offset", [0, 0, 0]), f"{at}.voxel_offset", where)
    res = s.get("resolution")
    if (not isinstance(res, list) or len(res) != 3
            or not all(isinstance(r, int | float) and not isinstance(r, bool)
                       and math.isfinite(r) and r > 0 for r in res)):
        raise MetadataError(f"{at}.resolution {res!r} is not three positive numbers", where)
    sizes = s.get("chunk_sizes")
    if not isinstance(sizes, list) or not sizes:
        raise MetadataError(f"{at}.chunk_sizes is missing", where)
    chunk = _vec(sizes[0], f"{at}.chunk_sizes[0]", where, positive=True)
    encoding = str(s.get("encoding", "raw")).lower()
    if encoding not in ENCODINGS:
        raise UnsupportedFormatError(f"{at}.encoding {s.get('encoding')!r} is not one of "
                                     f"{', '.join(ENCODINGS)}", where)
    block: Vec3 | None = None
    if encoding == "compressed_segmentation":
        if data_type not in ("uint32", "uint64"):
            raise MetadataError(f"{at}: compressed_segmentation needs uint32 or uint64, not "
                                f"{data_type}", where)
        block = _vec(s.get("compressed_segmentation_block_size"),
                     f"{at}.compressed_segmentation_block_size", where, positive=True)
    if encoding == "jpeg" and (data_type != "uint8" or channels not in (1, 3)):
        raise MetadataError(f"{at}: jpeg needs uint8 with 1 or 3 channels", where)
    if encoding == "png" and (data_type not in ("uint8", "uint16") or channels > 4):
        raise MetadataError(f"{at}: png needs uint8 or uint16 with 1 to 4 channels", where)
    sharding = _sharding(s.get("sharding"), f"{at}.sharding", where)
    quality: Any = s.get("jpeg_quality")
    return ScaleInfo(i, key, size, offset,
                     (float(res[0]), float(res[1]), float(res[2])), chunk, encoding, block,
                     sharding, int(quality) if _is_int(quality) else None)


def _sharding(spec: Any, at: str, where: str) -> ShardingSpec | None:
    if spec is None:
        return None
    if not isinstance(spec, dict) or spec.get("@type") != SHARDED_TYPE:
        raise UnsupportedFormatError(f"{at}: @type must be {SHARDED_TYPE!r}", where)
    bits: dict[str, int] = {}
    for name in ("preshift_bits", "minishard_bits", "shard_bits"):
        v: Any = spec.get(name)
        if not _is_int(v) or not 0 <= int(v) <= 64:
            raise MetadataError(f"{at}.{name} {v!r} is not an integer in 0..64", where)
        bits[name] = int(v)
    if bits["minishard_bits"] + bits["shard_bits"] > 64:
        raise MetadataError(f"{at}: minishard_bits + shard_bits exceed 64", where)
    if bits["minishard_bits"] > 32:
        raise UnsupportedFormatError(f"{at}: more than 2^32 minishards per shard", where)
    hash_ = spec.get("hash")
    if hash_ not in HASHES:
        raise UnsupportedFormatError(f"{at}.hash {hash_!r} is not one of {', '.join(HASHES)}",
                                     where)
    enc = {}
    for name in ("minishard_index_encoding", "data_encoding"):
        v = spec.get(name, "raw")
        if v not in ("raw", "gzip"):
            raise UnsupportedFormatError(f"{at}.{name} {v!r} is neither 'raw' nor 'gzip'",
                                         where)
        enc[name] = str(v)
    return ShardingSpec(bits["preshift_bits"], str(hash_), bits["minishard_bits"],
                        bits["shard_bits"], enc["minishard_index_encoding"],
                        enc["data_encoding"])


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _vec(v: Any, at: str, where: str, positive: bool = False) -> Vec3:
    if (not isinstance(v, list) or len(v) != 3 or not all(_is_int(x) for x in v)
            or (positive and min(v) < 1) or max(abs(x) for x in v) > 1 << 53):
        what = "three positive integers" if positive else "three integers"
        raise MetadataError(f"{at} {v!r} is not {what}", where)
    return (int(v[0]), int(v[1]), int(v[2]))


__all__ = ["INFO_FILE", "VOLUME_TYPE", "SHARDED_TYPE", "DATA_TYPES", "ENCODINGS",
           "ShardingSpec", "ScaleInfo", "InfoFile", "parse_info"]
