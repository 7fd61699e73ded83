"""Typed errors of the format layer.

Every error names the file it is about and, where it applies, the block (Morton index) and the
byte offset at which the problem was found, so that a person can go and look.  They derive from
``ValueError`` through one root, :class:`FormatError`, so ``except FormatError`` catches all of
them and nothing else.
"""

from __future__ import annotations

import os
from typing import Any


class FormatError(ValueError):
    """Root of every error about the content or layout of an on-disk dataset."""

    def __init__(
        self,
        message: str,
        path: str | os.PathLike[str] | None = None,
        block: int | None = None,
        offset: int | None = None,
        chunk: tuple[int, ...] | None = None,
    ) -> None:
        self.reason = message
        self.path = os.fspath(path) if path is not None else None
        self.block = block
        self.offset = offset
        #: Grid position of the chunk concerned, for formats that name chunks by position.
        self.chunk = tuple(int(c) for c in chunk) if chunk is not None else None
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.chunk is not None:
            where.append(f"chunk {'/'.join(map(str, self.chunk))}")
        if self.block is not None:
            where.append(f"block {self.block}")
        if self.offset is not None:
            where.append(f"byte offset {self.offset}")
        return f"{': '.join([', '.join(where), self.reason]) if where else self.reason}"

    def __reduce__(self) -> tuple[Any, ...]:
        # keep the fields through pickling (multiprocessing, subprocess tests)
        return (_rebuild, (type(self), self.reason, self.path, self.block, self.offset,
                           self.chunk, dict(self.__dict__)))


class HeaderError(FormatError):
    """The 16-byte file header is missing, truncated or holds a value the format does not allow."""


class JumpTableError(FormatError):
    """The jump table of a compressed file is truncated, decreasing or points outside the file."""


class BlockDecodeError(FormatError):
    """A block's bytes are missing, do not decode, or decode to the wrong size."""


class DatasetLayoutError(FormatError):
    """A dataset directory is not laid out as the format requires (no header.wkw, files that
    disagree with it, a path that is not a dataset at all)."""


class MetadataError(FormatError):
    """A metadata document (``attributes.json``, ``zarr.json``, ``.zarray``, a layout) is
    missing, not JSON, or lacks or mistypes a key the format requires."""


class ChunkDecodeError(BlockDecodeError):
    """A chunk's stored bytes are missing, truncated, do not decode, or decode to the wrong
    size (the formats other than WKW; a WKW block's is ``BlockDecodeError`` itself)."""


class ChecksumError(ChunkDecodeError):
    """Stored bytes fail the checksum the format keeps for them (a zarr shard index's
    crc32c, a zstd frame's checksum)."""


class UnsupportedFormatError(FormatError):
    """The path is none of the formats this program reads, or uses a feature of one (a codec,
    a compression, a data type) that it does not read."""


class FileChangedError(FormatError):
    """A file changed (rewritten, truncated or replaced by another program) while it was open
    for reading: what was read may mix two versions, so it is refused; open the file again."""


class FileChangingError(FileChangedError):
    """A file kept changing (another program is writing it) for longer than a read waits for
    it to settle (``viewer.format.handles.SETTLE_NS``, the racy-timestamp rule): nothing of it
    is returned now; it is worth reading again once it settles."""


def _rebuild(cls: type[FormatError], reason: str, path: str | None, block: int | None,
             offset: int | None, chunk: tuple[int, ...] | None,
             state: dict[str, Any]) -> FormatError:
    exc = cls.__new__(cls)
    FormatError.__init__(exc, reason, path, block, offset, chunk)
    exc.__dict__.update(state)
    return exc
