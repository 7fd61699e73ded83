"""On-disk formats, free of Qt: numpy, lz4 and the standard library only.

``from viewer.format import wkw, FormatError`` gives the WKW reader/writer (``wkw.Dataset``,
``wkw.Header``, ``wkw.File``) and the root of every format error.
"""

from viewer.format import wkw
from viewer.format.errors import (
    BlockDecodeError,
    DatasetLayoutError,
    FormatError,
    HeaderError,
    JumpTableError,
)

__all__ = [
    "wkw",
    "FormatError",
    "HeaderError",
    "JumpTableError",
    "BlockDecodeError",
    "DatasetLayoutError",
]
