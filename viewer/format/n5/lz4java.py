"""lz4-java's ``LZ4BlockOutputStream`` framing, as N5's ``lz4`` compression writes it.

Not the LZ4 frame format and not a bare LZ4 block: a sequence of frames, each a 21-byte header
followed by its payload, ending with an empty frame.  The header (integers little-endian):

```
magic          8 bytes  "LZ4Block"
token          u8       method (high nibble: 0x10 raw, 0x20 lz4) | level (low nibble)
compressed     u32      payload bytes that follow
original       u32      bytes the payload decodes to, at most 2^(10 + level)
checksum       u32      xxhash32 (seed 0x9747b28c) of the decoded bytes, masked to 28 bits
```

A raw frame stores its bytes as they are (the writer falls back to it when LZ4 does not
shrink them); an empty frame (both lengths 0, checksum 0) ends the stream.  The reader here
follows lz4-java's ``LZ4BlockInputStream`` in what it refuses, and checks the checksums when
the ``xxhash`` package is installed (``checksums_available``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import lz4.block

from viewer.format.errors import ChecksumError, ChunkDecodeError

MAGIC = b"LZ4Block"
HEADER_LENGTH = 21
METHOD_RAW = 0x10
METHOD_LZ4 = 0x20
METHOD_NAMES = {METHOD_RAW: "raw", METHOD_LZ4: "lz4"}
COMPRESSION_LEVEL_BASE = 10
CHECKSUM_SEED = 0x9747B28C
CHECKSUM_MASK = 0xFFFFFFF

_xxhash: Any
try:
    import xxhash as _xxhash
except ImportError:  # pragma: no cover - depends on the environment
    _xxhash = None

#: Whether frame checksums are verified (the optional ``xxhash`` package is installed).
checksums_available = _xxhash is not None


def checksum(data: bytes | memoryview) -> int:
    """lz4-java's frame checksum of ``data`` (needs ``xxhash``)."""
    if _xxhash is None:
        raise RuntimeError("the xxhash package is not installed")
    return int(_xxhash.xxh32_intdigest(data, seed=CHECKSUM_SEED)) & CHECKSUM_MASK


@dataclass(frozen=True)
class Frame:
    """One frame: where its header starts in the payload, its method, level, the lengths
    and the stored checksum."""

    offset: int
    method: int
    level: int
    compressed: int
    original: int
    checksum: int

    @property
    def method_name(self) -> str:
        return METHOD_NAMES.get(self.method, hex(self.method))

    @property
    def is_end(self) -> bool:
        return self.compressed == 0 and self.original == 0

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "method": "end" if self.is_end else self.method_name,
                "level": self.level, "compressed_bytes": self.compressed,
                "original_bytes": self.original, "checksum": f"{self.checksum:07x}"}


def parse_frames(data: bytes | memoryview, path: str, chunk: tuple[int, ...] | None = None,
                 base: int = 0, limit: int | None = None) -> tuple[list[Frame], int]:
    """The frames of an lz4-java stream, the end frame included, and the offset just past
    it.  ``base``: where ``data`` starts in the file (for messages).  ``limit``: most decoded
    bytes accepted in all (a chunk's expected size).  ``ChunkDecodeError`` for a bad magic,
    a truncated frame, an impossible length, or a stream without its end frame."""
    frames: list[Frame] = []
    pos = 0
    total = 0
    n = len(data)
    while True:
        if pos + HEADER_LENGTH > n:
            what = "ends without its end frame" if pos == n else "frame header truncated"
            raise ChunkDecodeError(f"lz4-java stream {what}", path, offset=base + pos,
                                   chunk=chunk)
        if bytes(data[pos:pos + 8]) != MAGIC:
            raise ChunkDecodeError("no LZ4Block magic", path, offset=base + pos,
                                   chunk=chunk)
        token = data[pos + 8]
        compressed, original, check = struct.unpack_from("<III", data, pos + 9)
        method, level = token & 0xF0, token & 0x0F
        if method not in METHOD_NAMES:
            raise ChunkDecodeError(f"lz4-java frame with unknown method 0x{method:02x}", path,
                                   offset=base + pos + 8, chunk=chunk)
        bad = (original > 1 << (COMPRESSION_LEVEL_BASE + level)
               or compressed >= 1 << 31 or original >= 1 << 31
               or (original == 0) != (compressed == 0)
               or (method == METHOD_RAW and original != compressed))
        if bad:
            raise ChunkDecodeError(
                f"lz4-java frame with impossible lengths (compressed {compressed}, original "
                f"{original}, level {level})", path, offset=base + pos + 9, chunk=chunk)
        frame = Frame(base + pos, method, level, compressed, original, check)
        frames.append(frame)
        pos += HEADER_LENGTH
        if frame.is_end:
            if check != 0:
                raise ChunkDecodeError("lz4-java end frame with a non-zero checksum", path,
                                       offset=base + pos - 4, chunk=chunk)
            return frames, pos
        if pos + compressed > n:
            raise ChunkDecodeError(f"lz4-java frame payload of {compressed} bytes truncated at "
                                   f"{n - pos}", path, offset=base + n, chunk=chunk)
        total += original
        if limit is not None and total > limit:
            raise ChunkDecodeError(f"lz4-java stream decodes to more than the {limit} bytes "
                                   "of the chunk", path, offset=base + pos - HEADER_LENGTH,
                                   chunk=chunk)
        pos += compressed


def decode(data: bytes | memoryview, path: str, chunk: tuple[int, ...] | None = None,
           base: int = 0, limit: int | None = None, verify: bool = True) -> bytes:
    """The bytes an lz4-java stream holds (see ``parse_frames`` for the errors; a frame that
    does not decompress is a ``ChunkDecodeError``, a checksum mismatch a ``ChecksumError``)."""
    frames, _ = parse_frames(data, path, chunk, base, limit)
    view = memoryview(data)
    parts: list[bytes] = []
    check = verify and _xxhash is not None
    for f in frames[:-1]:
        start = f.offset - base + HEADER_LENGTH
        payload = view[start:start + f.compressed]
        if f.method == METHOD_RAW:
            out = bytes(payload)
        else:
            try:
                out = lz4.block.decompress(payload, uncompressed_size=f.original)
            except lz4.block.LZ4BlockError as exc:
                raise ChunkDecodeError(f"lz4-java frame does not decompress: {exc}", path,
                                       offset=f.offset, chunk=chunk) from None
            if len(out) != f.original:
                raise ChunkDecodeError(f"lz4-java frame decoded to {len(out)} bytes, its header "
                                       f"says {f.original}", path, offset=f.offset, chunk=chunk)
        if check and checksum(out) != f.checksum:
            raise ChecksumError(f"lz4-java frame checksum {checksum(out):07x} does not match "
                                f"the stored {f.checksum:07x}", path, offset=f.offset + 17,
                                chunk=chunk)
        parts.append(out)
    return parts[0] if len(parts) == 1 else b"".join(parts)


__all__ = ["Frame", "parse_frames", "decode", "checksum", "checksums_available", "MAGIC"]
