"""Errors of the zarr reader: every one is a ``FormatError`` subclass from
``viewer.format.errors`` (the shard index is a jump table by another name)."""

from __future__ import annotations

from viewer.format.errors import (
    ChecksumError,
    ChunkDecodeError,
    JumpTableError,
    MetadataError,
    UnsupportedFormatError,
)


class ShardIndexError(JumpTableError):
    """A shard's index is cut short, points outside the shard, or does not decode."""


__all__ = ["ShardIndexError", "ChecksumError", "ChunkDecodeError", "MetadataError",
           "UnsupportedFormatError"]
