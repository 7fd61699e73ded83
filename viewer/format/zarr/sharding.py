"""The ``sharding_indexed`` codec of zarr v3: many inner chunks in one stored object (a
shard), found through an index.

The index is an array of ``prod(chunks_per_shard)`` pairs ``(offset, nbytes)`` (uint64, in C
order of the shard's inner chunk grid in the array's own axis order), encoded with the
``index_codecs`` (``bytes`` little- or big-endian, then usually ``crc32c``: 4 more bytes) and
stored at the shard's ``end`` (default) or ``start``.  An entry whose offset and nbytes are
both ``2**64 - 1`` is an absent inner chunk (it reads as the fill value).  Offsets count from
the shard's first byte.  A WKW file's jump table by another name: it is parsed once per shard
into numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import ChecksumError, UnsupportedFormatError
from viewer.format.zarr.codecs import ChunkCodec, CodecFailure, crc32c
from viewer.format.zarr.errors import ShardIndexError

ABSENT = np.uint64(0xFFFFFFFFFFFFFFFF)
#: Most inner chunks a shard may have (an index of 256 MiB).
MAX_CHUNKS_PER_SHARD = 1 << 24


@dataclass
class ShardSpec:
    """How a shard is laid out: ``chunks_per_shard`` (array axis order), ``inner`` (the inner
    chunks' codec), where the index is and how it is encoded."""

    chunks_per_shard: tuple[int, ...]
    inner: ChunkCodec
    index_at_start: bool
    index_big_endian: bool
    index_crc32c: bool
    config: dict[str, Any]

    @property
    def num_chunks(self) -> int:
        return int(np.prod(self.chunks_per_shard, dtype=np.int64))

    @property
    def index_nbytes(self) -> int:
        return 16 * self.num_chunks + (4 if self.index_crc32c else 0)


@dataclass
class ShardIndex:
    """A parsed shard index: per inner chunk ``offsets`` (int64, -1 absent), ``nbytes``
    (0 absent), ``present``, ``bad`` (an entry that points outside the shard's data, or is
    half absent: reading that chunk is its error), and the crc32c found (stored, computed)."""

    offsets: npt.NDArray[np.int64]
    nbytes: npt.NDArray[np.int64]
    present: npt.NDArray[np.bool_]
    bad: npt.NDArray[np.bool_]
    crc: tuple[int, int] | None


def parse_index(spec: ShardSpec, raw: bytes, shard_size: int, where: str,
                index_offset: int) -> ShardIndex:
    """Parse and check a shard's index bytes (``raw``, read at ``index_offset`` of a shard of
    ``shard_size`` bytes).  A short index is a ``ShardIndexError``, a crc32c mismatch a
    ``ChecksumError``; entries pointing outside the data are marked ``bad``."""
    n = spec.num_chunks
    if len(raw) != spec.index_nbytes:
        raise ShardIndexError(f"shard index cut short: {len(raw)} of {spec.index_nbytes} bytes "
                              f"(shard of {shard_size} bytes, index at the "
                              f"{'start' if spec.index_at_start else 'end'})", where,
                              offset=index_offset)
    body = raw[:16 * n]
    crc: tuple[int, int] | None = None
    if spec.index_crc32c:
        stored = int.from_bytes(raw[16 * n:16 * n + 4], "little")
        actual = crc32c(body)
        crc = (stored, actual)
        if stored != actual:
            raise ChecksumError(f"shard index fails its crc32c: stored {stored:#010x}, "
                                f"computed {actual:#010x}", where, offset=index_offset + 16 * n)
    table = np.frombuffer(body, dtype=">u8" if spec.index_big_endian else "<u8").reshape(n, 2)
    off_u, nb_u = table[:, 0], table[:, 1]
    absent_off, absent_nb = off_u == ABSENT, nb_u == ABSENT
    present = ~(absent_off & absent_nb)
    # the region that may hold chunk data: everything but the index
    lo = spec.index_nbytes if spec.index_at_start else 0
    hi = shard_size if spec.index_at_start else shard_size - spec.index_nbytes
    half = absent_off ^ absent_nb
    with np.errstate(over="ignore"):
        end = off_u + nb_u
    outside = present & ~half & ((off_u < lo) | (nb_u > np.uint64(hi)) | (end > np.uint64(hi))
                                 | (end < off_u))
    bad = half | outside
    ok = present & ~bad
    offsets = np.where(ok, off_u, 0).astype(np.int64)
    nbytes = np.where(ok, nb_u, 0).astype(np.int64)
    offsets[~present] = -1
    return ShardIndex(offsets, nbytes, present, bad, crc)


def shard_spec(config: dict[str, Any], inner: ChunkCodec, chunks_per_shard: tuple[int, ...],
               index_codecs: list[Any], where: str) -> ShardSpec:
    """The spec of a ``sharding_indexed`` codec whose parts are already parsed (index codecs
    as ``(name, configuration)`` pairs)."""
    location = config.get("index_location", "end")
    if location not in ("start", "end"):
        raise UnsupportedFormatError(f"sharding index_location {location!r} (start or end)",
                                     where)
    big = False
    crc = False
    names = [name for name, _ in index_codecs]
    if not names or names[0] != "bytes" or any(n not in ("bytes", "crc32c") for n in names) \
            or names.count("bytes") != 1 or names.count("crc32c") > 1:
        raise UnsupportedFormatError(f"shard index codecs {names} (this reader knows bytes, "
                                     "then optionally crc32c)", where)
    for name, conf in index_codecs:
        if name == "bytes":
            big = conf.get("endian", "little") == "big"
        elif name == "crc32c":
            crc = True
    return ShardSpec(chunks_per_shard, inner, location == "start", big, crc, config)


__all__ = ["ShardSpec", "ShardIndex", "parse_index", "shard_spec", "ABSENT",
           "MAX_CHUNKS_PER_SHARD", "CodecFailure"]
