"""Typed errors of the format layer.

Every error names the file it is about and, where it applies, the block (Morton index) and the
byte offset at which the problem was found, so that a person can go and look.  They derive from
``ValueError`` through one root, :class:`FormatError`, so ``except FormatError`` catches all of
them and nothing else.
"""

from __future__ import annotations

import os


class FormatError(ValueError):
    """Root of every error about the content or layout of an on-disk dataset."""

    def __init__(
        self,
        message: str,
        path: str | os.PathLike[str] | None = None,
        block: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.reason = message
        self.path = os.fspath(path) if path is not None else None
        self.block = block
        self.offset = offset
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.block is not None:
            where.append(f"block {self.block}")
        if self.offset is not None:
            where.append(f"byte offset {self.offset}")
        return f"{': '.join([', '.join(where), self.reason]) if where else self.reason}"

    def __reduce__(self) -> tuple[type, tuple[str, str | None, int | None, int | None]]:
        # keep the fields through pickling (multiprocessing, subprocess tests)
        return (type(self), (self.reason, self.path, self.block, self.offset))


class HeaderError(FormatError):
    """The 16-byte file header is missing, truncated or holds a value the format does not allow."""


class JumpTableError(FormatError):
    """The jump table of a compressed file is truncated, decreasing or points outside the file."""


class BlockDecodeError(FormatError):
    """A block's bytes are missing, do not decode, or decode to the wrong size."""


class DatasetLayoutError(FormatError):
    """A dataset directory is not laid out as the format requires (no header.wkw, files that
    disagree with it, a path that is not a dataset at all)."""


class FileChangedError(FormatError):
    """A file changed (rewritten, truncated or replaced by another program) while it was open
    for reading: what was read may mix two versions, so it is refused; open the file again."""
