"""Stored VDS chunks that need no OpenVDS: None, Zip and RLE.

Each starts with a 24-byte block descriptor (i32 each: dimensionality, size x, size y, size z,
channel format code, components) -- the stored extent of the brick, clipped at the end of the
data -- then the payload: the samples themselves (None), a zlib stream of them (Zip), or an
RLE payload (RLE): i32 payload bytes (including this 12-byte header), i32 decoded bytes, i32
element size, then codes.  A code byte holds the count minus one in its low 6 bits, a
literal flag in bit 6 and, in bit 7, that one more byte follows with 8 more high bits of the
count (``count - 1 = (b0 & 0x3f) | b1 << 6``).  A literal copies ``count`` elements; a run
repeats the one element that follows ``count`` times.  Samples are little-endian, x fastest.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

DESCRIPTOR = struct.Struct("<6i")
RLE_HEADER = struct.Struct("<3i")


class CodecError(ValueError):
    """Stored bytes that do not decode."""


@dataclass(frozen=True)
class Descriptor:
    dimensionality: int
    size: tuple[int, int, int]
    format_code: int
    components: int

    @property
    def voxels(self) -> int:
        return self.size[0] * self.size[1] * self.size[2]


def parse_descriptor(data: bytes | memoryview) -> Descriptor:
    if len(data) < DESCRIPTOR.size:
        raise CodecError(f"{len(data)} bytes: shorter than the 24-byte block descriptor")
    dims, sx, sy, sz, fmt, comps = DESCRIPTOR.unpack_from(data, 0)
    if not (1 <= dims <= 3 and sx >= 1 and sy >= 1 and sz >= 1 and 0 <= fmt <= 6
            and comps in (1, 2, 4)):
        raise CodecError(f"impossible block descriptor (dimensionality {dims}, size "
                         f"{sx}x{sy}x{sz}, format {fmt}, components {comps})")
    return Descriptor(dims, (sx, sy, sz), fmt, comps)


def inflate(payload: bytes | memoryview, expected: int) -> bytes:
    """A Zip payload: one zlib stream of exactly ``expected`` bytes, its Adler-32 checked
    (asking for one byte more than expected lets zlib read on to the trailer)."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(payload, expected + 1)
    except zlib.error as exc:
        raise CodecError(f"zlib stream does not decode: {exc}") from None
    if len(out) != expected or d.unconsumed_tail:
        raise CodecError(f"zlib stream decodes to {len(out)}{'+' if d.unconsumed_tail else ''}"
                         f" bytes, expected {expected}")
    if not d.eof:
        raise CodecError("zlib stream is truncated")
    return out


def unrle(payload: bytes | memoryview, expected: int) -> bytes:
    """An RLE payload (see the module docstring) of exactly ``expected`` decoded bytes."""
    data = bytes(payload)
    if len(data) < RLE_HEADER.size:
        raise CodecError("RLE payload shorter than its 12-byte header")
    total, decoded, elem = RLE_HEADER.unpack_from(data, 0)
    if decoded != expected:
        raise CodecError(f"RLE header says {decoded} decoded bytes, expected {expected}")
    if elem not in (1, 2, 4, 8):
        raise CodecError(f"RLE element size {elem}")
    if total > len(data) or total < RLE_HEADER.size:
        raise CodecError(f"RLE payload of {total} bytes, {len(data)} stored: truncated")
    out = bytearray(expected)
    pos, o, end = RLE_HEADER.size, 0, total
    while o < expected:
        if pos >= end:
            raise CodecError(f"RLE codes end after {o} of {expected} bytes: truncated")
        b0 = data[pos]
        pos += 1
        count = b0 & 0x3F
        if b0 & 0x80:
            if pos >= end:
                raise CodecError("RLE code cut short: truncated")
            count |= data[pos] << 6
            pos += 1
        count += 1
        n = count * elem
        if o + n > expected:
            raise CodecError(f"RLE code at byte {pos} writes past the {expected} decoded bytes")
        if b0 & 0x40:
            if pos + n > end:
                raise CodecError("RLE literal runs past the payload: truncated")
            out[o:o + n] = data[pos:pos + n]
            pos += n
        else:
            if pos + elem > end:
                raise CodecError("RLE run value cut short: truncated")
            out[o:o + n] = data[pos:pos + elem] * count
            pos += elem
        o += n
    return bytes(out)


__all__ = ["Descriptor", "parse_descriptor", "inflate", "unrle", "CodecError"]
