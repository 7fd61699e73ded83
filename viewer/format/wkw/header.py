"""The 16-byte WKW file header (seed 000, corrected by shared/FORMAT-NOTES.md).

Layout, little-endian::

    0  "WKW"            magic
    3  version          only 1 exists
    4  perDimLog2       low nibble: log2 voxels per block side;
                        high nibble: log2 blocks per file side
    5  blockType        1 raw, 2 LZ4, 3 LZ4HC
    6  voxelType        1 u8, 2 u16, 3 u32, 4 u64, 5 f32, 6 f64, 7 i8, 8 i16, 9 i32, 10 i64
    7  voxelSize        bytes per voxel, all channels together
    8  dataOffset       u64, first byte of block 0 (0 in a dataset's header.wkw)

``Header`` mirrors the reference binding's constructor: ``block_len`` is in voxels, ``file_len``
in blocks, ``voxel_type`` a numpy type (an int code 1-10 is accepted too).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from viewer.format.errors import HeaderError
from viewer.format.wkw.lz4block import compress_bound

MAGIC = b"WKW"
HEADER_SIZE = 16
VERSION = 1

BLOCK_TYPE_RAW = 1
BLOCK_TYPE_LZ4 = 2
BLOCK_TYPE_LZ4HC = 3
BLOCK_TYPE_NAMES = {BLOCK_TYPE_RAW: "raw", BLOCK_TYPE_LZ4: "LZ4", BLOCK_TYPE_LZ4HC: "LZ4HC"}

#: voxelType code -> numpy dtype (little-endian); 7-10 are the signed types the seed table omits.
VOXEL_TYPES: dict[int, np.dtype[Any]] = {
    1: np.dtype("<u1"),
    2: np.dtype("<u2"),
    3: np.dtype("<u4"),
    4: np.dtype("<u8"),
    5: np.dtype("<f4"),
    6: np.dtype("<f8"),
    7: np.dtype("<i1"),
    8: np.dtype("<i2"),
    9: np.dtype("<i4"),
    10: np.dtype("<i8"),
}
_CODE_OF_DTYPE = {dt: code for code, dt in VOXEL_TYPES.items()}
_CODE_OF_TYPE: dict[Any, int] = {dt.type: code for code, dt in VOXEL_TYPES.items()}

_STRUCT = struct.Struct("<3sBBBBBQ")


def voxel_type_code(voxel_type: Any) -> int:
    """The header's voxelType code of a numpy type, dtype, or code."""
    try:
        return _CODE_OF_TYPE[voxel_type]
    except (KeyError, TypeError):
        pass
    if isinstance(voxel_type, (int, np.integer)) and not isinstance(voxel_type, bool):
        code = int(voxel_type)
        if code not in VOXEL_TYPES:
            raise HeaderError(f"unknown voxel type code {code} (valid: 1-10)")
        return code
    try:
        dt = np.dtype(voxel_type).newbyteorder("<")
    except TypeError as exc:
        raise HeaderError(f"{voxel_type!r} is not a voxel type") from exc
    if dt.itemsize == 1:
        dt = np.dtype(dt.str.replace(">", "<").replace("|", "<"))
    for candidate, code in _CODE_OF_DTYPE.items():
        if candidate == dt:
            return code
    raise HeaderError(f"{np.dtype(voxel_type)} is not a WKW voxel type")


def _log2_of_power_of_two(value: int, what: str) -> int:
    if value < 1 or value & (value - 1):
        raise HeaderError(f"{what} must be a power of two, not {value}")
    log2 = value.bit_length() - 1
    if log2 > 15:
        raise HeaderError(f"{what} {value} does not fit the header's 4-bit log2 field")
    return log2


@dataclass(init=False, eq=False)
class Header:
    """One file's (or a dataset's) header.

    ``block_len``: voxels per block side.  ``file_len``: blocks per file side.  ``data_offset`` is
    0 for a dataset's header.wkw and the offset of block 0 inside a data file.
    """

    BLOCK_TYPE_RAW = BLOCK_TYPE_RAW
    BLOCK_TYPE_LZ4 = BLOCK_TYPE_LZ4
    BLOCK_TYPE_LZ4HC = BLOCK_TYPE_LZ4HC

    version: int
    block_len: int
    file_len: int
    block_type: int
    voxel_type: type
    num_channels: int
    data_offset: int

    def __init__(
        self,
        voxel_type: Any,
        num_channels: int = 1,
        version: int = 1,
        block_len: int = 32,
        file_len: int = 32,
        block_type: int = 1,
        data_offset: int = 0,
    ) -> None:
        if version != VERSION:
            raise HeaderError(f"unknown version {version} (only {VERSION} exists)")
        if block_type not in BLOCK_TYPE_NAMES:
            raise HeaderError(f"unknown block type {block_type} (valid: 1 raw, 2 LZ4, 3 LZ4HC)")
        code = voxel_type_code(voxel_type)
        _log2_of_power_of_two(int(block_len), "block_len")
        _log2_of_power_of_two(int(file_len), "file_len")
        if int(num_channels) < 1:
            raise HeaderError(f"num_channels must be at least 1, not {num_channels}")
        if int(num_channels) * VOXEL_TYPES[code].itemsize > 255:
            raise HeaderError(
                f"{num_channels} channels of {VOXEL_TYPES[code]} exceed the 255-byte voxelSize"
            )
        self.version = int(version)
        self.block_len = int(block_len)
        self.file_len = int(file_len)
        self.block_type = int(block_type)
        self.voxel_type = VOXEL_TYPES[code].type
        self.num_channels = int(num_channels)
        self.data_offset = int(data_offset)
        self._derive(code)

    def _derive(self, code: int) -> None:
        """Work out the numbers readers ask for per block and per read, once (a header never
        changes after it is made; ``replace`` makes a new one)."""
        self._dtype = VOXEL_TYPES[code]
        self._voxel_size = self._dtype.itemsize * self.num_channels
        self._block_bytes = self.block_len**3 * self._voxel_size

    # -- derived geometry ---------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype[Any]:
        return self._dtype

    @property
    def voxel_type_code(self) -> int:
        return voxel_type_code(self.voxel_type)

    @property
    def voxel_size(self) -> int:
        """Bytes per voxel, all channels together (the header's voxelSize)."""
        return self._voxel_size

    @property
    def is_compressed(self) -> bool:
        return self.block_type != BLOCK_TYPE_RAW

    @property
    def block_len_log2(self) -> int:
        return self.block_len.bit_length() - 1

    @property
    def file_len_log2(self) -> int:
        return self.file_len.bit_length() - 1

    @property
    def file_len_vx(self) -> int:
        """Voxels per file side."""
        return self.block_len * self.file_len

    @property
    def block_voxels(self) -> int:
        return self.block_len**3

    @property
    def block_bytes(self) -> int:
        return self._block_bytes

    @property
    def num_blocks(self) -> int:
        """Blocks per file."""
        return self.file_len**3

    @property
    def expected_data_offset(self) -> int:
        """Where block 0 starts in a data file: right after the header, and the jump table."""
        if self.is_compressed:
            return HEADER_SIZE + 8 * self.num_blocks
        return HEADER_SIZE

    @property
    def block_type_name(self) -> str:
        return BLOCK_TYPE_NAMES[self.block_type]

    # -- bytes --------------------------------------------------------------------------------
    def to_bytes(self, data_offset: int | None = None) -> bytes:
        offset = self.data_offset if data_offset is None else data_offset
        per_dim = (self.file_len_log2 << 4) | self.block_len_log2
        return _STRUCT.pack(
            MAGIC,
            self.version,
            per_dim,
            self.block_type,
            self.voxel_type_code,
            self.voxel_size,
            offset,
        )

    @classmethod
    def from_bytes(cls, raw: bytes, path: str | os.PathLike[str] | None = None) -> Header:
        """Parse 16 header bytes; every value the format does not allow is a HeaderError."""
        if len(raw) < HEADER_SIZE:
            what = "empty file" if len(raw) == 0 else f"truncated header ({len(raw)} of 16 bytes)"
            raise HeaderError(what, path, offset=0)
        magic, version, per_dim, block_type, vtype, vsize, data_offset = _STRUCT.unpack(
            raw[:HEADER_SIZE]
        )
        if magic != MAGIC:
            raise HeaderError(f"wrong magic {magic!r} (expected b'WKW'): not a WKW file", path,
                              offset=0)
        if version != VERSION:
            raise HeaderError(f"unknown version {version} (only {VERSION} exists)", path, offset=3)
        if block_type not in BLOCK_TYPE_NAMES:
            raise HeaderError(
                f"unknown block type {block_type} (valid: 1 raw, 2 LZ4, 3 LZ4HC)", path, offset=5
            )
        if vtype not in VOXEL_TYPES:
            raise HeaderError(f"unknown voxel type {vtype} (valid: 1-10)", path, offset=6)
        itemsize = VOXEL_TYPES[vtype].itemsize
        if vsize == 0 or vsize % itemsize:
            raise HeaderError(
                f"voxelSize {vsize} is not a multiple of the {VOXEL_TYPES[vtype]} size {itemsize}",
                path,
                offset=7,
            )
        return cls._trusted(version, 1 << (per_dim & 0x0F), 1 << (per_dim >> 4), block_type,
                            vtype, vsize // itemsize, data_offset)

    @classmethod
    def _trusted(cls, version: int, block_len: int, file_len: int, block_type: int,
                 code: int, num_channels: int, data_offset: int) -> Header:
        """Build from fields already checked (``from_bytes``): skips re-validation, which is
        most of the cost of opening a file."""
        self = cls.__new__(cls)
        self.version = version
        self.block_len = block_len
        self.file_len = file_len
        self.block_type = block_type
        self.voxel_type = VOXEL_TYPES[code].type
        self.num_channels = num_channels
        self.data_offset = data_offset
        self._derive(code)
        return self

    # -- comparison ---------------------------------------------------------------------------
    def same_geometry(self, other: Header) -> bool:
        """Equal in everything a reader needs to place voxels (block type aside)."""
        return (
            self.block_len == other.block_len
            and self.file_len == other.file_len
            and self.voxel_type_code == other.voxel_type_code
            and self.num_channels == other.num_channels
        )

    def differences(self, other: Header) -> list[str]:
        """Human-readable field differences, ``self`` first (data_offset ignored)."""
        out = []
        for name in ("version", "block_len", "file_len", "block_type", "num_channels"):
            a, b = getattr(self, name), getattr(other, name)
            if a != b:
                out.append(f"{name} {a} vs {b}")
        if self.voxel_type_code != other.voxel_type_code:
            out.append(f"voxel_type {self.dtype} vs {other.dtype}")
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Header):
            return NotImplemented
        return self.same_geometry(other) and self.block_type == other.block_type

    def __hash__(self) -> int:
        return hash((self.block_len, self.file_len, self.voxel_type_code, self.num_channels,
                     self.block_type))

    def replace(self, **changes: Any) -> Header:
        fields: dict[str, Any] = dict(
            voxel_type=self.voxel_type,
            num_channels=self.num_channels,
            version=self.version,
            block_len=self.block_len,
            file_len=self.file_len,
            block_type=self.block_type,
            data_offset=self.data_offset,
        )
        fields.update(changes)
        return Header(**fields)

    def __repr__(self) -> str:
        return (
            f"Header(voxel_type={self.dtype.name}, num_channels={self.num_channels}, "
            f"version={self.version}, block_len={self.block_len}, file_len={self.file_len}, "
            f"block_type={self.block_type})"
        )


#: Largest block this reader accepts (what LZ4 can encode; no real dataset comes near).
MAX_BLOCK_BYTES = 0x7E000000


#: What ```wkw.File`` uses of a header: ``(num_blocks, block_bytes, is_compressed, data_offset,
#: LZ4 bound of a block, dtype, block shape (C, X, Y, Z), its strides over the stored
#: [z, y, x, c] bytes)``.
Numbers = tuple[int, int, bool, int, int, np.dtype[Any], tuple[int, int, int, int],
                 tuple[int, int, int, int]]
#: Parsed headers by their 16 bytes (every file of a dataset has the same), with their
#: numbers: a file opened costs a dict look-up instead of parsing and checking its header.
_HEADERS: dict[bytes, tuple[Header, Numbers]] = {}
_HEADERS_KEPT = 256


def numbers_of(header: Header) -> Numbers:
    """The numbers ``File`` uses of ``header``."""
    bb = header.block_bytes
    c, b = header.num_channels, header.block_len
    dtype = header.dtype
    item = dtype.itemsize
    return (header.num_blocks, bb, header.is_compressed, header.data_offset,
            compress_bound(bb), dtype, (c, b, b, b),
            (item, item * c, item * c * b, item * c * b * b))


def parse_header(raw: bytes, path: str | None = None) -> tuple[Header, Numbers]:
    """``Header.from_bytes`` and ``check_limits`` of a data file's 16 header bytes, and the
    header's numbers (remembered by the bytes: the same ``Header`` object, never to be
    changed, comes back for the same bytes)."""
    got = _HEADERS.get(raw)
    if got is None:
        header = Header.from_bytes(raw, path)
        check_limits(header, path)
        got = (header, numbers_of(header))
        if len(_HEADERS) >= _HEADERS_KEPT:
            _HEADERS.clear()
        _HEADERS[raw] = got
    return got


def check_limits(header: Header, path: str | os.PathLike[str] | None = None) -> None:
    """Refuse geometry no real file has and that would make a reader allocate absurd memory
    (a garbage header can claim 2^15-voxel blocks)."""
    if header.block_bytes > MAX_BLOCK_BYTES:
        raise HeaderError(
            f"blocks of {header.block_len}^3 voxels x {header.voxel_size} bytes "
            f"({header.block_bytes} bytes) exceed the largest block LZ4 can hold "
            f"({MAX_BLOCK_BYTES} bytes)", path, offset=4)
