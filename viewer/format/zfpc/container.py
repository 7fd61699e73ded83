"""The zfpc container: a 23-byte header, an index, then zfp streams (see seeds/002 and
FORMAT-NOTES: the seed's "15 bytes" is stale).

Header, little-endian: ``b"zfpc"``, version (u8, 0), one byte packing the zfp scalar type
(bits 0-2: 1 int32, 2 int64, 3 float32, 4 float64), the zfp mode (bits 3-5: 1 expert, 2 fixed
rate, 3 fixed precision, 4 fixed accuracy, 5 reversible) and C order (bit 7), then ``nx ny nz
nw`` (u32 each; 0 for a dimension the array does not have: zeros only at the end), then one
byte whose bits 0-3 say which of x, y, z, w are *correlated*.

Index: u64 offset of the first stream, then one u64 size per stream.  There is one stream per
position of the uncorrelated dimensions that are larger than 1, in Fortran order (x fastest,
w slowest); the streams follow each other from the first offset.  Each stream is a complete
zfp stream of the array's slice at that position, the uncorrelated dimensions dropped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import HeaderError
from viewer.format.zfpc.zfp import ZFP_TYPES

MAGIC = b"zfpc"
HEADER_SIZE = 23
VERSION = 0
MODE_NAMES = {0: "none", 1: "expert", 2: "fixed-rate", 3: "fixed-precision",
              4: "fixed-accuracy", 5: "reversible"}
DIM_NAMES = ("x", "y", "z", "w")


@dataclass(frozen=True)
class Header:
    version: int
    dtype: np.dtype[Any]
    type_code: int
    mode: int
    c_order: bool
    #: ``(nx, ny, nz, nw)`` as stored (0: the array does not have that dimension).
    sizes: tuple[int, int, int, int]
    correlated: tuple[bool, bool, bool, bool]

    @property
    def ndim(self) -> int:
        return sum(1 for s in self.sizes if s > 0)

    @property
    def extent(self) -> tuple[int, int, int, int]:
        """``(nx, ny, nz, nw)`` with absent dimensions as 1."""
        s = tuple(max(v, 1) for v in self.sizes)
        return (s[0], s[1], s[2], s[3])

    @property
    def split(self) -> tuple[bool, bool, bool, bool]:
        """Which dimensions the streams split (uncorrelated and larger than 1)."""
        e = self.extent
        return tuple(not self.correlated[d] and e[d] > 1 for d in range(4))  # type: ignore

    @property
    def num_streams(self) -> int:
        n = 1
        for d, s in enumerate(self.split):
            if s:
                n *= self.extent[d]
        return n

    @property
    def stream_shape(self) -> tuple[int, ...]:
        """The numpy shape of each stream's array: the array's correlated dimensions."""
        return tuple(self.sizes[d] for d in range(self.ndim) if self.correlated[d])

    @property
    def mode_name(self) -> str:
        return MODE_NAMES.get(self.mode, f"unknown ({self.mode})")


def parse_header(data: bytes, path: str) -> Header:
    """The container header (``HeaderError`` naming what is wrong)."""
    if len(data) < HEADER_SIZE:
        raise HeaderError(f"file of {len(data)} bytes is shorter than the {HEADER_SIZE}-byte "
                          "zfpc header", path, offset=0)
    if data[:4] != MAGIC:
        raise HeaderError(f"not a zfpc file: magic {data[:4]!r}, expected {MAGIC!r}", path,
                          offset=0)
    version = data[4]
    if version != VERSION:
        raise HeaderError(f"zfpc version {version} (only version {VERSION} exists)", path,
                          offset=4)
    packed = data[5]
    type_code = packed & 0b111
    mode = (packed >> 3) & 0b111
    if type_code not in ZFP_TYPES:
        raise HeaderError(f"zfp type code {type_code} in byte 5 (1 int32, 2 int64, 3 float32, "
                          "4 float64)", path, offset=5)
    if mode not in MODE_NAMES or mode == 0:
        raise HeaderError(f"zfp mode code {mode} in byte 5 (1-5)", path, offset=5)
    nx, ny, nz, nw = struct.unpack_from("<4I", data, 6)
    sizes = (nx, ny, nz, nw)
    ndim = sum(1 for s in sizes if s > 0)
    if ndim == 0 or any(s == 0 for s in sizes[:ndim]):
        raise HeaderError(f"sizes {list(sizes)}: a zfpc array has 1 to 4 dimensions, unused "
                          "ones 0 at the end", path, offset=6)
    bits = data[22]
    correlated = tuple(bool((bits >> d) & 1) for d in range(4))
    if not any(correlated[:ndim]):
        raise HeaderError("no correlated dimension: every stream would be one value", path,
                          offset=22)
    return Header(version, ZFP_TYPES[type_code], type_code, mode, bool(packed >> 7), sizes,
                  correlated)  # type: ignore[arg-type]


def parse_index(data: bytes, header: Header, file_size: int,
                path: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """``(offsets, sizes, first)`` of the streams from the index bytes that follow the
    header.  Sizes are as stored (they are checked against the file when read)."""
    n = header.num_streams
    need = HEADER_SIZE + 8 * (n + 1)
    if need > file_size:
        raise HeaderError(f"the index of {n} streams needs {need} bytes; the file has "
                          f"{file_size}", path, offset=HEADER_SIZE)
    raw = np.frombuffer(data, dtype="<u8", count=n + 1, offset=HEADER_SIZE)
    first = int(raw[0])
    if first < need or first > file_size:
        raise HeaderError(f"first stream offset {first} is outside [{need}, {file_size}]", path,
                          offset=HEADER_SIZE)
    # sizes past the file are clipped to it for the arithmetic (and then fail when read)
    sizes = np.minimum(raw[1:], np.uint64(file_size + 1)).astype(np.int64)
    offsets = np.empty(n, dtype=np.int64)
    offsets[0] = first
    if n > 1:
        np.cumsum(sizes[:-1], out=offsets[1:])
        offsets[1:] += first
    return offsets, sizes, first


__all__ = ["Header", "parse_header", "parse_index", "MAGIC", "HEADER_SIZE", "DIM_NAMES"]
