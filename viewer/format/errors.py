"""Typed errors of the format layer.

Every error names the file it is about and, where it applies, the block (Morton index) and the
byte offset at which the problem was found, so that a person can go and look.  They derive from
``ValueError`` through one root, :class:`FormatError`, so ``except FormatError`` catches all of
them and nothing else.
"""

from __future__ import annotations

import copy
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

    def at(self, path: str | os.PathLike[str] | None = None, block: int | None = None,
           offset: int | None = None, chunk: tuple[int, ...] | None = None) -> FormatError:
        """A copy of this error (same class, same fields) that names ``path``, ``block``,
        ``offset`` and ``chunk`` where it named none: a failure met by a store, handed on
        for the chunk it was about."""
        out = copy.copy(self)
        if out.path is None and path is not None:
            out.path = os.fspath(path)
        if out.block is None and block is not None:
            out.block = int(block)
        if out.offset is None and offset is not None:
            out.offset = int(offset)
        if out.chunk is None and chunk is not None:
            out.chunk = tuple(int(c) for c in chunk)
        out.args = (out._compose(),)
        return out

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
class RemoteError(FormatError):
    """Bytes that could not be fetched from a server, after the store's retries (a timeout,
    a refused, reset or dropped connection, a body cut short, an answer for other bytes
    than asked for, a 5xx, a 4xx other than 404): the chunk was *not checked*, which a
    verdict never counts as valid nor as damaged.  ``viewer.format.remote.errors`` says
    more; its ``RemoteIOError`` (what a remote store raises) is one.  ``status``: the HTTP
    status of the last answer, None for a timeout or a dropped connection; ``byte_range``:
    ``(start, end)`` of the object asked for, None for the whole object or its size."""

    status: int | None = None
    byte_range: tuple[int, int] | None = None

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None,
                 block: int | None = None, offset: int | None = None,
                 chunk: tuple[int, ...] | None = None, *, status: int | None = None,
                 byte_range: tuple[int, int] | None = None) -> None:
        self.status = status
        self.byte_range = (int(byte_range[0]), int(byte_range[1])) \
            if byte_range is not None else None
        super().__init__(message, path, block=block, offset=offset, chunk=chunk)

    def _compose(self) -> str:
        text = super()._compose()
        rng = self.byte_range
        if rng is None or self.path is None or not text.startswith(self.path):
            return text
        return f"{self.path} bytes {rng[0]}-{rng[1] - 1}{text[len(self.path):]}"

    @property
    def url(self) -> str:
        """The URL of the object (or folder) the request was for."""
        return self.path or ""

    def for_range(self, start: int, end: int) -> RemoteError:
        """This error, for the range ``[start, end)`` (a part of the request that failed)."""
        if self.byte_range == (start, end):
            return self
        out = copy.copy(self)
        out.byte_range = (int(start), int(end))
        out.offset = None
        out.args = (out._compose(),)
        return out

    @classmethod
    def from_io(cls, exc: RemoteError, url: str | None = None, block: int | None = None,
                offset: int | None = None) -> RemoteError:
        return cls(exc.reason, exc.path or url, block=block, offset=offset, chunk=exc.chunk,
                   status=exc.status, byte_range=exc.byte_range)


def read_failure(exc: OSError, cls: type[FormatError], what: str,
                 path: str | os.PathLike[str] | None, block: int | None = None,
                 offset: int | None = None, chunk: tuple[int, ...] | None = None
                 ) -> FormatError:
    """The ``FormatError`` of a chunk or unit whose bytes could not be read: a failure that
    already is one (a remote store's ``RemoteIOError``: a ``RemoteError`` and an ``OSError``)
    keeps its class, so that "not reachable" is never taken for damage, and names the chunk;
    any other ``OSError`` becomes ``cls`` with ``what: <the system's message>``."""
    if isinstance(exc, FormatError):
        return exc.at(path, block, offset, chunk)
    return cls(f"{what}: {exc.strerror or exc}", path, block=block, offset=offset, chunk=chunk)


def _rebuild(cls: type[FormatError], reason: str, path: str | None, block: int | None,
             offset: int | None, chunk: tuple[int, ...] | None,
             state: dict[str, Any]) -> FormatError:
    # an error that is also an OSError (a remote failure) is made by OSError's constructor
    exc = OSError.__new__(cls) if issubclass(cls, OSError) else cls.__new__(cls)
    FormatError.__init__(exc, reason, path, block, offset, chunk)
    exc.__dict__.update(state)
    exc.args = (exc._compose(),)
    return exc
