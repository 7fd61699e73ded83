"""The HueDataStore container of a ``.vds`` file, read without OpenVDS.

Measured on files written by the ``openvds`` package (3.4) and checked against the public
``HueBulkDataStoreFormat.h`` structures (little-endian throughout):

* **Header** (32 bytes): ``b"HueDataStore"``, version (i32, ``major << 16 | minor``; 1.0),
  file-table offset (i64), file-table count (i32), file-name length (i32).
* **File table**: ``count`` records of a 32-byte file header -- head page-directory offset
  (i64), chunk count, revision, index entries per page (i32 each), file type (4 characters:
  ``JSON`` or ``"VDS "``), chunk-metadata length and file-metadata length (i32 each) -- and the
  file's name, NUL-padded to the name length.  The files are the layout (``VolumeDataLayout``,
  one JSON chunk) and one per layer (``Dimensions_012LOD0``, ...).
* **Page directory** (at the head offset): previous directory offset (i64), previous chunk
  count and revision (i32 each), the file metadata (``file-metadata length`` bytes: for a layer
  the compression method (i32), tolerance (f32), chunks written (i32) and, for wavelet layers,
  a pad and 17 i64 adaptive-level totals), then one i64 offset per index page (0: the page was
  never written).
* **Index page**: per chunk an entry -- offset (i64), length (i32), reserved (i32) -- then the
  chunk metadata (``chunk-metadata length`` bytes; the first 8 are the volume-data hash, then
  for wavelet layers 16 adaptive-level bytes).  A hash of 0 means the chunk was never written;
  ``0xFFFFFFFFFFFFFFFF`` means all NoValue; a hash whose high 4 bytes are ``01 01 01 01`` means
  a constant chunk whose value is the f32 in its low 4 bytes (length 0: nothing stored).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import HeaderError, MetadataError
from viewer.format.store import Store

MAGIC = b"HueDataStore"
HEADER = struct.Struct("<12siqii")
FILE_HEADER = struct.Struct("<qiii4sii")
PAGE_DIRECTORY = struct.Struct("<qii")
#: Index entry: offset, length, reserved.
ENTRY_BYTES = 16
METHODS = {0: "None", 1: "Wavelet", 2: "RLE", 3: "Zip", 4: "WaveletNormalizeBlock",
           5: "WaveletLossless", 6: "WaveletNormalizeBlockLossless"}
WAVELET_METHODS = {1, 4, 5, 6}
HASH_NOVALUE = 0xFFFFFFFFFFFFFFFF
#: Most files a file table may list, and the longest name, before it is taken for damage.
MAX_FILES = 1 << 16
MAX_NAME = 1 << 12


@dataclass
class StoreFile:
    """One file of the container (the layout JSON or a layer)."""

    name: str
    head_page_directory: int
    chunk_count: int
    revision: int
    entries_per_page: int
    file_type: str
    chunk_metadata_length: int
    file_metadata_length: int
    table_offset: int

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.file_type, "chunks": self.chunk_count,
                "revision": self.revision, "entries_per_page": self.entries_per_page,
                "chunk_metadata_bytes": self.chunk_metadata_length,
                "file_metadata_bytes": self.file_metadata_length,
                "head_page_directory": self.head_page_directory}


@dataclass
class ChunkIndex:
    """A file's chunks: offsets, lengths, hashes and metadata, read from its index pages."""

    offsets: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    hashes: npt.NDArray[np.uint64]
    metadata: npt.NDArray[np.uint8]          # (chunks, chunk-metadata length)
    file_metadata: bytes
    pages: list[int]
    problems: list[str] = field(default_factory=list)

    @property
    def written(self) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = self.hashes != 0
        return out

    @property
    def constant(self) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = ((self.hashes >> np.uint64(32)) == np.uint64(0x01010101)) \
            & (self.lengths == 0)
        return out

    @property
    def novalue(self) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = (self.hashes == np.uint64(HASH_NOVALUE)) \
            & (self.lengths == 0)
        return out

    def constant_value(self, n: int) -> float:
        return float(np.asarray(self.hashes[n] & np.uint64(0xFFFFFFFF), dtype=np.uint32)
                     .view(np.float32))

    @property
    def method(self) -> int:
        return struct.unpack_from("<i", self.file_metadata, 0)[0] \
            if len(self.file_metadata) >= 4 else 0

    @property
    def tolerance(self) -> float:
        if len(self.file_metadata) < 8:
            return 0.0
        return float(f"{struct.unpack_from('<f', self.file_metadata, 4)[0]:.7g}")  # an f32

    def adaptive_totals(self) -> list[int]:
        """A wavelet layer's 17 totals (full size, then each adaptive level), if present."""
        if len(self.file_metadata) < 16 + 8 * 17:
            return []
        return [int(v) for v in struct.unpack_from("<17q", self.file_metadata, 16)]


@dataclass
class Container:
    """The parsed header and file table of a ``.vds`` file."""

    path: str
    size: int
    version: int
    file_table_offset: int
    name_length: int
    files: dict[str, StoreFile]
    #: The version of the file these were read from (``ObjectStat.version``): every later
    #: read of the file (indexes, chunks) asks for bytes of that version only.
    object_version: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"magic": MAGIC.decode(), "version": f"{self.version >> 16}.{self.version & 0xFFFF}",
                "file_table_offset": self.file_table_offset, "files": len(self.files),
                "file_name_length": self.name_length, "file_bytes": self.size}


def read_container(store: Store, key: str, path: str) -> Container:
    """Header and file table (``HeaderError`` naming what is wrong), both of the version
    ``Store.stat`` saw (``FileChangedError`` when the file changed in between)."""
    stat = store.stat(key)
    if stat is None:
        raise HeaderError("no such file", path)
    size, version = stat.size, stat.version
    head = read_of(store, key, 0, HEADER.size, version)
    if len(head) < HEADER.size:
        raise HeaderError(f"file of {len(head)} bytes is shorter than the {HEADER.size}-byte "
                          "HueDataStore header", path, offset=0)
    magic, hue_version, table, count, name_len = HEADER.unpack(head)
    if magic != MAGIC:
        raise HeaderError(f"not a VDS file: magic {magic!r}, expected {MAGIC!r}", path,
                          offset=0)
    if hue_version >> 16 != 1:
        raise HeaderError(f"HueDataStore version {hue_version >> 16}.{hue_version & 0xFFFF} "
                          "(this program reads 1.x)", path, offset=12)
    if not (0 < count <= MAX_FILES and 0 < name_len <= MAX_NAME):
        raise HeaderError(f"file table of {count} files with names of {name_len} bytes",
                          path, offset=24)
    record = FILE_HEADER.size + name_len
    if table < HEADER.size or table + count * record > size:
        raise HeaderError(f"file table of {count} x {record} bytes at {table} lies outside the "
                          f"file ({size} bytes)", path, offset=16)
    raw = read_of(store, key, table, count * record, version)
    files: dict[str, StoreFile] = {}
    for i in range(count):
        at = i * record
        hp, chunks, rev, per_page, ftype, cml, fml = FILE_HEADER.unpack_from(raw, at)
        name = raw[at + FILE_HEADER.size:at + record].split(b"\0", 1)[0].decode("latin-1")
        where = table + at
        if chunks < 0 or per_page <= 0 or cml < 0 or fml < 0 or not 0 <= hp < size:
            raise HeaderError(f"file {name!r}: impossible record (head page directory {hp}, "
                              f"{chunks} chunks, {per_page} entries per page, metadata "
                              f"{cml}/{fml} bytes)", path, offset=where)
        files[name] = StoreFile(name, hp, chunks, rev, per_page,
                                ftype.decode("latin-1"), cml, fml, where)
    return Container(path, size, hue_version, table, name_len, files, version)


def read_of(store: Store, key: str, offset: int, length: int, version: str | None) -> bytes:
    """``length`` bytes at ``offset`` of the file's version ``version``
    (``Store.read_ranges_of``)."""
    return store.read_ranges_of(key, [(offset, length)], version)[0]


def read_index(store: Store, key: str, path: str, container: Container,
               f: StoreFile) -> ChunkIndex:
    """Every chunk entry of file ``f`` from its page directory and index pages."""
    size = container.size
    pages_n = -(-f.chunk_count // f.entries_per_page) if f.chunk_count else 0
    dir_bytes = PAGE_DIRECTORY.size + f.file_metadata_length + 8 * pages_n
    if f.head_page_directory + dir_bytes > size:
        raise HeaderError(f"page directory of {f.name!r} ({dir_bytes} bytes at "
                          f"{f.head_page_directory}) runs past the end of the file ({size} "
                          "bytes)", path, offset=f.head_page_directory)
    raw = read_of(store, key, f.head_page_directory, dir_bytes, container.object_version)
    fmeta = raw[PAGE_DIRECTORY.size:PAGE_DIRECTORY.size + f.file_metadata_length]
    pages = np.frombuffer(raw, dtype="<i8", count=pages_n,
                          offset=PAGE_DIRECTORY.size + f.file_metadata_length).tolist()
    stride = ENTRY_BYTES + f.chunk_metadata_length
    n = f.chunk_count
    if n * stride > 64 * size + (1 << 20):
        raise HeaderError(f"{f.name!r} declares {n} chunks: their index ({n * stride} bytes) "
                          f"cannot be in a file of {size} bytes", path, offset=f.table_offset)
    offsets = np.zeros(n, np.int64)
    lengths = np.zeros(n, np.int64)
    hashes = np.zeros(n, np.uint64)
    meta = np.zeros((n, f.chunk_metadata_length), np.uint8)
    problems: list[str] = []
    for p, page in enumerate(pages):
        first = p * f.entries_per_page
        count = min(f.entries_per_page, n - first)
        if page == 0:
            problems.append(f"index page {p} of {f.name!r} was never written: chunks "
                            f"{first}-{first + count - 1} are absent")
            continue
        if page < 0 or page + count * stride > size:
            raise HeaderError(f"index page {p} of {f.name!r} ({count} entries at {page}) runs "
                              f"past the end of the file ({size} bytes)", path, offset=page)
        data = np.frombuffer(read_of(store, key, page, count * stride,
                                     container.object_version), np.uint8)
        if data.size < count * stride:
            raise HeaderError(f"index page {p} of {f.name!r} is truncated", path, offset=page)
        rows = data.reshape(count, stride)
        offsets[first:first + count] = rows[:, 0:8].copy().view("<i8")[:, 0]
        lengths[first:first + count] = rows[:, 8:12].copy().view("<i4")[:, 0]
        if f.chunk_metadata_length >= 8:
            hashes[first:first + count] = rows[:, 16:24].copy().view("<u8")[:, 0]
        else:
            hashes[first:first + count] = np.where(lengths[first:first + count] > 0, 1, 0)
        meta[first:first + count] = rows[:, 16:]
    return ChunkIndex(offsets, lengths, hashes, meta, fmeta, pages, problems)


def read_json_file(store: Store, key: str, path: str, container: Container,
                   name: str) -> bytes:
    """The bytes of a JSON file of the container (its one chunk)."""
    f = container.files.get(name)
    if f is None:
        raise MetadataError(f"the container has no {name!r} file (files: "
                            f"{', '.join(container.files)})", path)
    index = read_index(store, key, path, container, f)
    if f.chunk_count < 1 or not index.pages or index.pages[0] == 0:
        raise MetadataError(f"{name!r} holds no data", path, offset=f.table_offset)
    off, n = int(index.offsets[0]), int(index.lengths[0])
    if off < 0 or n < 0 or off + n > container.size:
        raise MetadataError(f"{name!r}: {n} bytes at {off} run past the end of the file "
                            f"({container.size} bytes)", path, offset=off)
    return read_of(store, key, off, n, container.object_version)


__all__ = ["Container", "StoreFile", "ChunkIndex", "read_container", "read_index",
           "read_json_file", "METHODS", "WAVELET_METHODS", "MAGIC"]
