"""``attributes.json``: the metadata of an N5 group or dataset.

A group is a folder; its ``attributes.json`` (optional for a plain group) holds any JSON
object.  A *dataset* is a group whose attributes carry ``dimensions``, ``blockSize``,
``dataType`` and a compression: the current ``compression: {type, ...}`` object or the legacy
``compressionType`` string (N5 before 1.0, with parameters beside it).  ``dimensions[0]`` is
the axis that varies fastest on disk, so it is X.

Axes: N5 arrays have any number of dimensions.  The first three are X, Y, Z; a fourth axis
named ``c`` or ``channel`` in an ``axes`` attribute becomes the channel axis (one block may
hold all channels or some: ``viewer.format.n5.volume.make_volume``); any further axis of size
1 is dropped; a 2-D dataset is one Z slice.
Anything else is an ``UnsupportedFormatError`` naming the axes.

Bounds (a damaged or hostile file must not make the reader allocate gigabytes): the file is
read only up to ``MAX_ATTRIBUTES_BYTES``, a block holds at most ``MAX_BLOCK_BYTES`` decoded
bytes (the N5 limit of 2 GiB is far more than a viewer wants in one piece), and dimensions
stay below 2^40.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from viewer.format.errors import MetadataError, UnsupportedFormatError
from viewer.format.store import Store

ATTRIBUTES_FILE = "attributes.json"
#: Largest ``attributes.json`` read (Paintera and BigDataViewer write a few KiB).
MAX_ATTRIBUTES_BYTES = 16 << 20
#: Largest decoded block accepted (bytes, all channels).
MAX_BLOCK_BYTES = 1 << 30
MAX_DIMENSION = 1 << 40

#: N5 data types and their big-endian numpy types (as stored on disk).
DATA_TYPES: dict[str, str] = {
    "uint8": ">u1", "uint16": ">u2", "uint32": ">u4", "uint64": ">u8",
    "int8": ">i1", "int16": ">i2", "int32": ">i4", "int64": ">i8",
    "float32": ">f4", "float64": ">f8",
}

#: Compression types this reader decodes.
COMPRESSIONS = ("raw", "gzip", "bzip2", "xz", "lz4", "blosc", "zstd")

Vec3 = tuple[int, int, int]


def read_json(store: Store, key: str) -> dict[str, Any] | None:
    """The JSON object in ``key`` (``None`` when there is no such file).  ``MetadataError``
    when it is too large, not JSON, or not an object."""
    size = store.size(key)
    if size is None:
        return None
    where = store.location(key)
    if size > MAX_ATTRIBUTES_BYTES:
        raise MetadataError(f"{size} bytes: larger than the {MAX_ATTRIBUTES_BYTES} bytes an "
                            "attributes file may have", where)
    try:
        raw = store.read(key)
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MetadataError(f"not UTF-8 text (byte {exc.start})", where,
                            offset=exc.start) from None
    except json.JSONDecodeError as exc:
        raise MetadataError(f"not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})",
                            where, offset=exc.pos) from None
    except RecursionError:
        raise MetadataError("JSON nested too deeply", where) from None
    if not isinstance(doc, dict):
        raise MetadataError(f"not a JSON object but {type(doc).__name__}", where)
    return doc


def is_dataset(attrs: dict[str, Any] | None) -> bool:
    """Whether group attributes describe a dataset (``dimensions``, or ``blockSize`` with
    ``dataType``: one key missing is then the dataset's error, not a plain group; a
    BigDataViewer setup group has ``dataType`` alone)."""
    if attrs is None:
        return False
    return "dimensions" in attrs or ("blockSize" in attrs and "dataType" in attrs)


@dataclass(frozen=True)
class Compression:
    """A dataset's compression: ``type`` and its parameters as the attributes give them."""

    type: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def use_zlib(self) -> bool:
        return bool(self.params.get("useZlib", False))

    def describe(self) -> str:
        """``gzip``, ``gzip (zlib)``, ``blosc (lz4, shuffle 1)``, ... for people."""
        if self.type == "gzip" and self.use_zlib:
            return "gzip (zlib)"
        if self.type == "blosc":
            cname, shuffle = self.params.get("cname", "?"), self.params.get("shuffle", "?")
            return f"blosc ({cname}, shuffle {shuffle})"
        return self.type


@dataclass(frozen=True)
class DatasetAttributes:
    """The parsed attributes of one N5 dataset (see the module docstring).

    ``dimensions`` and ``block_size`` are in N5 order (all axes); ``shape`` and
    ``chunk_shape`` are the (X, Y, Z) view of them; ``channel_axis`` is the N5 axis that is
    the channel axis, if any; ``raw`` the whole attributes object."""

    dimensions: tuple[int, ...]
    block_size: tuple[int, ...]
    data_type: str
    compression: Compression
    raw: dict[str, Any]
    shape: Vec3
    chunk_shape: Vec3
    num_channels: int = 1
    channel_axis: int | None = None

    @property
    def ndim(self) -> int:
        return len(self.dimensions)

    @property
    def stored_dtype(self) -> np.dtype[Any]:
        """The big-endian type of an element on disk."""
        return np.dtype(DATA_TYPES[self.data_type])

    @property
    def dtype(self) -> np.dtype[Any]:
        """The native-endian type of one element (what reads return)."""
        return self.stored_dtype.newbyteorder("=")

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Chunks along each N5 axis."""
        return tuple(-(-d // b) for d, b in zip(self.dimensions, self.block_size, strict=True))

    def block_elements(self) -> int:
        return int(np.prod(self.block_size, dtype=np.int64))


def _int_list(value: Any, key: str, where: str, minimum: int) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise MetadataError(f"{key} must be a non-empty list of integers, not {value!r}"[:300],
                            where)
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                (isinstance(v, float) and not v.is_integer()):
            raise MetadataError(f"{key} must hold integers, not {v!r}"[:300], where)
        if not minimum <= int(v) <= MAX_DIMENSION:
            raise MetadataError(f"{key} entry {int(v)} is outside [{minimum}, {MAX_DIMENSION}]",
                                where)
        out.append(int(v))
    return tuple(out)


def parse_compression(attrs: dict[str, Any], where: str) -> Compression:
    """``compression: {type, ...}`` or the legacy ``compressionType`` (parameters beside it);
    no compression key at all means raw (what the oldest writers did)."""
    comp = attrs.get("compression")
    if comp is not None:
        if not isinstance(comp, dict) or not isinstance(comp.get("type"), str):
            raise MetadataError(f"compression must be an object with a string type, not "
                                f"{comp!r}"[:300], where)
        ctype = comp["type"]
        params = {k: v for k, v in comp.items() if k != "type"}
    elif "compressionType" in attrs:
        ctype = attrs["compressionType"]
        if not isinstance(ctype, str):
            raise MetadataError(f"compressionType must be a string, not {ctype!r}"[:300], where)
        params = {k: attrs[k] for k in ("level", "useZlib", "blockSize", "preset")
                  if k in attrs and k != "blockSize"}
    else:
        ctype, params = "raw", {}
    ctype = ctype.lower()
    if ctype not in COMPRESSIONS:
        raise UnsupportedFormatError(f"compression {ctype!r} is not one this program reads "
                                     f"({', '.join(COMPRESSIONS)})", where)
    return Compression(ctype, params)


def _axis_names(attrs: dict[str, Any], ndim: int) -> list[str] | None:
    axes = attrs.get("axes")
    if isinstance(axes, list) and len(axes) == ndim and all(isinstance(a, str) for a in axes):
        return [a.lower() for a in axes]
    return None


def parse_dataset(attrs: dict[str, Any], where: str) -> DatasetAttributes:
    """The dataset attributes in ``attrs`` (read from ``where``).  ``MetadataError`` for a
    missing or mistyped key, ``UnsupportedFormatError`` for a data type, compression or axis
    layout this program does not read."""
    for key in ("dimensions", "blockSize", "dataType"):
        if key not in attrs:
            raise MetadataError(f"missing key {key!r}: not an N5 dataset", where)
    dims = _int_list(attrs["dimensions"], "dimensions", where, 0)
    block = _int_list(attrs["blockSize"], "blockSize", where, 1)
    if len(dims) != len(block):
        raise MetadataError(f"dimensions has {len(dims)} entries, blockSize {len(block)}", where)
    dtype_name = attrs["dataType"]
    if not isinstance(dtype_name, str):
        raise MetadataError(f"dataType must be a string, not {dtype_name!r}"[:300], where)
    if dtype_name.lower() not in DATA_TYPES:
        raise UnsupportedFormatError(f"dataType {dtype_name!r} is not a numeric type this "
                                     f"program reads ({', '.join(DATA_TYPES)})", where)
    if attrs.get("isLabelMultiset") is True:
        raise UnsupportedFormatError("a Paintera label multiset dataset (isLabelMultiset): its "
                                     "chunks are not voxel arrays", where)
    compression = parse_compression(attrs, where)
    dtype_name = dtype_name.lower()
    itemsize = np.dtype(DATA_TYPES[dtype_name]).itemsize

    ndim = len(dims)
    names = _axis_names(attrs, ndim)
    channel_axis: int | None = None
    if ndim == 2:
        shape: Vec3 = (dims[0], dims[1], 1)
        chunk: Vec3 = (block[0], block[1], 1)
    else:
        shape = (dims[0], dims[1], dims[2])
        chunk = (block[0], block[1], block[2])
        extra = list(range(3, ndim))
        if extra and names is not None and names[3] in ("c", "channel", "channels"):
            channel_axis = 3  # split over blocks or not: ``make_volume`` stacks the blocks
            extra = extra[1:]
        big = [a for a in extra if dims[a] != 1]
        if big:
            label = ", ".join(f"{names[a] if names else f'axis {a}'} ({dims[a]})" for a in big)
            raise UnsupportedFormatError(f"axes beyond x, y, z of size above 1: {label}", where)
    channels = dims[channel_axis] if channel_axis is not None else 1
    if channel_axis is not None and channels == 0:
        raise MetadataError("the channel axis has size 0", where)
    nbytes = int(np.prod(block, dtype=np.int64)) * itemsize
    if nbytes > MAX_BLOCK_BYTES:
        raise UnsupportedFormatError(f"blockSize {list(block)} makes blocks of {nbytes} bytes, "
                                     f"more than the {MAX_BLOCK_BYTES} this program reads", where)
    return DatasetAttributes(dims, block, dtype_name, compression, attrs, shape, chunk,
                             channels, channel_axis)


__all__ = ["ATTRIBUTES_FILE", "DATA_TYPES", "COMPRESSIONS", "Compression", "DatasetAttributes",
           "read_json", "is_dataset", "parse_dataset", "parse_compression", "MAX_BLOCK_BYTES"]
