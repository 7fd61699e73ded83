"""Errors of the Neuroglancer precomputed reader: each a ``FormatError`` subclass naming the
file, the chunk id (``block``) and the chunk's grid position (``chunk``)."""

from __future__ import annotations

from viewer.format.errors import ChunkDecodeError, JumpTableError


class ShardIndexError(JumpTableError):
    """A shard file's index (one byte range per minishard) is cut short or points outside the
    file."""


class MinishardIndexError(JumpTableError):
    """A minishard index does not decode (gzip), is not three arrays of the same length,
    points outside its shard file, or lists a chunk id twice."""


class MissingChunkError(ChunkDecodeError):
    """A chunk's id is not where the sharding says it must be (another minishard or shard
    lists it), or a chunk file is named for a box the scale does not have."""


__all__ = ["ShardIndexError", "MinishardIndexError", "MissingChunkError"]
