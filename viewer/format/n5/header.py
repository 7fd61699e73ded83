"""The N5 chunk header: the big-endian bytes in front of every chunk's payload.

```
mode         u16   0 default, 1 varlength, 2 object
ndim         u16   (not in object mode)
dims[ndim]   u32   the size of the block stored in this file (not in object mode)
num_elements u32   varlength and object mode only
payload            the compressed big-endian elements, x fastest
```

Java's N5 writes an edge block at its true, truncated size; tensorstore writes every block
at the full ``blockSize`` (padded).  A default-mode header holds ``prod(dims)`` elements.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from viewer.format.errors import HeaderError

MODE_DEFAULT = 0
MODE_VARLENGTH = 1
MODE_OBJECT = 2
MODE_NAMES = {MODE_DEFAULT: "default", MODE_VARLENGTH: "varlength", MODE_OBJECT: "object"}
#: More dimensions than any N5 writer makes; stops a damaged ``ndim`` from asking for a big read.
MAX_NDIM = 32


@dataclass(frozen=True)
class ChunkHeader:
    """A parsed chunk header: ``mode``, ``dims`` (N5 order; empty in object mode),
    ``num_elements`` and the header's length ``size`` in bytes (the payload starts there)."""

    mode: int
    dims: tuple[int, ...]
    num_elements: int
    size: int

    @property
    def mode_name(self) -> str:
        return MODE_NAMES.get(self.mode, str(self.mode))


def parse(data: bytes | memoryview, path: str, chunk: tuple[int, ...] | None = None
          ) -> ChunkHeader:
    """The header at the start of a chunk file's bytes; ``HeaderError`` (naming ``path``,
    the chunk and the byte offset) when it is truncated or holds an unknown mode."""
    n = len(data)
    if n < 2:
        raise HeaderError(f"chunk file of {n} bytes: too short for a chunk header", path,
                          offset=0, chunk=chunk)
    (mode,) = struct.unpack_from(">H", data, 0)
    if mode == MODE_OBJECT:
        if n < 6:
            raise HeaderError("object-mode header truncated", path, offset=2, chunk=chunk)
        (count,) = struct.unpack_from(">I", data, 2)
        return ChunkHeader(mode, (), count, 6)
    if mode not in (MODE_DEFAULT, MODE_VARLENGTH):
        raise HeaderError(f"unknown chunk mode {mode} (0 default, 1 varlength, 2 object)", path,
                          offset=0, chunk=chunk)
    if n < 4:
        raise HeaderError("chunk header truncated before its number of dimensions", path,
                          offset=2, chunk=chunk)
    (ndim,) = struct.unpack_from(">H", data, 2)
    if not 1 <= ndim <= MAX_NDIM:
        raise HeaderError(f"chunk header claims {ndim} dimensions", path, offset=2, chunk=chunk)
    size = 4 + 4 * ndim + (4 if mode == MODE_VARLENGTH else 0)
    if n < size:
        raise HeaderError(f"chunk header of {size} bytes truncated at {n}", path, offset=n,
                          chunk=chunk)
    dims = struct.unpack_from(f">{ndim}I", data, 4)
    count = 1
    for d in dims:
        count *= d
    if mode == MODE_VARLENGTH:
        (count,) = struct.unpack_from(">I", data, 4 + 4 * ndim)
    return ChunkHeader(mode, tuple(dims), count, size)


__all__ = ["ChunkHeader", "parse", "MODE_DEFAULT", "MODE_VARLENGTH", "MODE_OBJECT",
           "MODE_NAMES"]
