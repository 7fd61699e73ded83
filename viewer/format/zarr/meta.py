"""Array metadata of both zarr versions, parsed into one model (``ArrayMeta``).

zarr v3 (``zarr.json``, ``node_type: "array"``): ``shape``, ``data_type``, ``chunk_grid``
(``regular``), ``chunk_key_encoding`` (``default``: ``c/0/1/2``, or ``v2``: ``0.1.2``),
``fill_value``, ``codecs``, ``dimension_names``.  zarr v2 (``.zarray``): ``shape``,
``chunks``, ``dtype`` (``<u2``), ``compressor``, ``filters``, ``fill_value``, ``order``,
``dimension_separator`` (``.`` or ``/``).

Every value is checked for type and range (errors name the file and the key); a codec or
data type this reader does not know is an ``UnsupportedFormatError`` that names it.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from viewer.format.errors import MetadataError, UnsupportedFormatError
from viewer.format.zarr.codecs import V3_BYTES_CODECS, BytesDecoder, ChunkCodec, v2_codec
from viewer.format.zarr.jsondoc import Doc
from viewer.format.zarr.sharding import MAX_CHUNKS_PER_SHARD, ShardSpec, shard_spec

#: Largest decoded chunk accepted (bounds the memory a damaged or hostile file can ask for).
MAX_CHUNK_BYTES = 1 << 31

V3_DATA_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "float32", "float64")


@dataclass
class ArrayMeta:
    """One zarr array's metadata (both versions).

    ``grid_shape``: the stored objects' shape (a shard when sharded, else a chunk);
    ``chunk_shape``: the inner chunk (equal to ``grid_shape`` without sharding); ``codec``:
    the (inner) chunk's codec; ``sharding``: the shard layout or None.  All in the array's own
    axis order."""

    zarr_format: int
    where: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fill_value: int | float
    grid_shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    codec: ChunkCodec
    sharding: ShardSpec | None
    dimension_names: tuple[str | None, ...] | None
    separator: str
    key_prefix: str
    document: dict[str, Any]
    attributes: dict[str, Any]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def key(self, coords: tuple[int, ...] | list[int]) -> str:
        """The object key of the chunk (or shard) at grid position ``coords``."""
        parts = [str(int(c)) for c in coords]
        if self.zarr_format == 3 and self.key_prefix:
            return self.separator.join([self.key_prefix, *parts])
        return self.separator.join(parts) if parts else "0"

    def parse_key(self, key: str) -> tuple[int, ...] | None:
        """The grid position named by an object key, or None when it names none."""
        parts = key.split(self.separator)
        if self.zarr_format == 3 and self.key_prefix:
            if not parts or parts[0] != self.key_prefix:
                return None
            parts = parts[1:]
        if len(parts) != self.ndim or not all(p.isdigit() for p in parts):
            return None
        return tuple(int(p) for p in parts)

    @property
    def compression(self) -> str:
        names = [c.name for c in self.codec.bytes_codecs if c.name != "crc32c"]
        return "+".join(names) if names else "raw"


# -- data types and fill values -------------------------------------------------------------------
_V2_DTYPE = re.compile(r"^[<>|=]?[iuf][1248]$")


def v2_dtype(value: Any, where: str) -> np.dtype[Any]:
    if not isinstance(value, str) or not _V2_DTYPE.match(value):
        if isinstance(value, str):
            raise UnsupportedFormatError(f"dtype {value!r} (this reader reads integer and "
                                         "float types)", where)
        raise MetadataError(f"dtype must be a string like '<u2', not {value!r}"[:200], where)
    dt = np.dtype(value)
    if dt.kind == "f" and dt.itemsize == 1:
        raise UnsupportedFormatError(f"dtype {value!r}", where)
    return dt


def v3_dtype(value: Any, where: str) -> np.dtype[Any]:
    if not isinstance(value, str):
        raise MetadataError(f"data_type must be a string, not {value!r}"[:200], where)
    if value not in V3_DATA_TYPES:
        raise UnsupportedFormatError(f"data_type {value!r} (this reader reads "
                                     f"{', '.join(V3_DATA_TYPES)})", where)
    return np.dtype(value)


def fill_value(value: Any, dtype: np.dtype[Any], where: str, version: int) -> int | float:
    """The fill value as a Python number of ``dtype``'s kind (v2 null: 0)."""
    if value is None:
        if version == 2:
            return 0 if dtype.kind in "iu" else 0.0
        raise MetadataError("fill_value must not be null", where)
    if isinstance(value, bool):
        value = int(value)
    if dtype.kind == "f":
        if isinstance(value, str):
            special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
            if value in special:
                return special[value]
            if re.fullmatch(r"0x[0-9a-fA-F]+", value) and len(value) - 2 == 2 * dtype.itemsize:
                fmt = {2: ">e", 4: ">f", 8: ">d"}[dtype.itemsize]
                return float(struct.unpack(fmt, bytes.fromhex(value[2:]))[0])
            raise MetadataError(f"fill_value {value!r} is not a number for {dtype.name}", where)
        if isinstance(value, (int, float)):
            return float(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not value.is_integer():
            raise MetadataError(f"fill_value {value!r} is not an integer for {dtype.name}",
                                where)
        info = np.iinfo(dtype)
        v = int(value)
        if not info.min <= v <= info.max:
            raise MetadataError(f"fill_value {v} does not fit {dtype.name}", where)
        return v
    raise MetadataError(f"fill_value {value!r} is not a value of {dtype.name}"[:200], where)


def _check_sizes(shape: tuple[int, ...], chunks: tuple[int, ...], dtype: np.dtype[Any],
                 where: str, what: str) -> None:
    if len(chunks) != len(shape):
        raise MetadataError(f"{what} has {len(chunks)} dimensions, shape has {len(shape)}",
                            where)
    if any(c < 1 for c in chunks):
        raise MetadataError(f"{what} entries must be at least 1: {list(chunks)}", where)
    nbytes = math.prod(chunks) * dtype.itemsize
    if nbytes > MAX_CHUNK_BYTES:
        raise UnsupportedFormatError(f"{what} {list(chunks)} of {dtype.name} is {nbytes} bytes, "
                                     f"beyond the {MAX_CHUNK_BYTES} this reader decodes", where)


# -- zarr v2 --------------------------------------------------------------------------------------
def parse_v2(obj: dict[str, Any], where: str, attributes: dict[str, Any] | None = None
             ) -> ArrayMeta:
    """``.zarray`` as ``ArrayMeta`` (``where``: its path, for messages)."""
    doc = Doc(obj, where)
    fmt = doc.require("zarr_format")
    if fmt not in (2, "2"):
        raise UnsupportedFormatError(f"zarr_format {fmt!r} in a .zarray (expected 2)", where)
    shape = doc.int_list("shape")
    chunks = doc.int_list("chunks", minimum=1)
    dtype = v2_dtype(doc.require("dtype"), where)
    _check_sizes(shape, chunks, dtype, where, "chunks")
    order = doc.get("order", "C")
    if order not in ("C", "F"):
        raise MetadataError(f"order must be 'C' or 'F', not {order!r}"[:200], where)
    sep = doc.get("dimension_separator", ".")
    if sep is None:
        sep = "."
    if sep not in (".", "/"):
        raise MetadataError(f"dimension_separator must be '.' or '/', not {sep!r}"[:200], where)
    compressor = doc.get("compressor")
    codecs: list[BytesDecoder] = []
    if compressor is not None:
        codecs.append(v2_codec(compressor, where, "compressor"))
    filters_doc = doc.get("filters")
    filters: list[BytesDecoder] = []
    if filters_doc is not None:
        if not isinstance(filters_doc, list):
            raise MetadataError("filters must be a list or null", where)
        filters = [v2_codec(f, where, "filter") for f in filters_doc]
    fv = fill_value(doc.get("fill_value"), dtype, where, 2)
    codec = ChunkCodec(chunks, dtype, fortran=order == "F" and len(chunks) > 1,
                       bytes_codecs=codecs, filters=filters)
    return ArrayMeta(2, where, shape, dtype.newbyteorder("="), fv, chunks, chunks, codec, None,
                     None, sep, "", obj, attributes or {})


# -- zarr v3 --------------------------------------------------------------------------------------
def _named(value: Any, where: str, what: str) -> tuple[str, dict[str, Any]]:
    """``(name, configuration)`` of a v3 named configuration (or a bare name)."""
    if isinstance(value, str):
        return value, {}
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise MetadataError(f"{what} must be an object with a string 'name', not "
                            f"{value!r}"[:200], where)
    conf = value.get("configuration", {})
    if conf is None:
        conf = {}
    if not isinstance(conf, dict):
        raise MetadataError(f"{what} {value['name']!r}: configuration must be an object", where)
    return value["name"], conf


def _codec_chain(codecs: Any, shape: tuple[int, ...], dtype: np.dtype[Any], where: str,
                 depth: int = 0) -> tuple[ChunkCodec, ShardSpec | None]:
    """The codec of a chunk of ``shape`` from a v3 ``codecs`` list, and the shard layout when
    the array-to-bytes codec is ``sharding_indexed`` (its inner chunks then use the
    returned codec)."""
    if not isinstance(codecs, list) or not codecs:
        raise MetadataError("codecs must be a non-empty list", where)
    order: tuple[int, ...] | None = None
    endian: str | None = None
    sharding: tuple[dict[str, Any], Any] | None = None
    bytes_codecs: list[BytesDecoder] = []
    stage = 0  # 0 array->array, 1 after array->bytes
    nd = len(shape)
    for item in codecs:
        name, conf = _named(item, where, "codec")
        if name == "transpose":
            if stage:
                raise MetadataError("transpose after the bytes codec", where)
            o = conf.get("order")
            if o == "C":
                o = list(range(nd))
            elif o == "F":
                o = list(range(nd))[::-1]
            if not isinstance(o, list) or sorted(o) != list(range(nd)) \
                    or any(isinstance(i, bool) for i in o):
                raise MetadataError(f"transpose order must be a permutation of 0..{nd - 1}, not "
                                    f"{o!r}"[:200], where)
            order = tuple(int(i) for i in o) if order is None else tuple(order[i] for i in o)
        elif name in ("bytes", "endian"):
            if stage:
                raise MetadataError("two array-to-bytes codecs", where)
            e = conf.get("endian", "little")
            if e not in ("little", "big") and not (e is None and dtype.itemsize == 1):
                raise MetadataError(f"bytes endian must be 'little' or 'big', not {e!r}"[:200],
                                    where)
            endian = e or "little"
            stage = 1
        elif name == "sharding_indexed":
            if stage:
                raise MetadataError("two array-to-bytes codecs", where)
            if depth:
                raise UnsupportedFormatError("sharding nested inside sharding", where)
            sharding = (conf, item)
            stage = 1
        elif name in V3_BYTES_CODECS:
            if not stage:
                raise MetadataError(f"codec {name!r} before the array-to-bytes codec", where)
            bytes_codecs.append(V3_BYTES_CODECS[name](conf))
        else:
            raise UnsupportedFormatError(f"unknown codec {name!r}", where)
    if not stage:
        raise MetadataError("codecs lack an array-to-bytes codec (bytes or sharding_indexed)",
                            where)
    if sharding is not None:
        if order is not None or bytes_codecs:
            raise UnsupportedFormatError("codecs around sharding_indexed (this reader reads "
                                         "sharding_indexed as the only codec)", where)
        conf = sharding[0]
        cdoc = Doc(conf, where, "sharding_indexed.")
        inner_shape = cdoc.int_list("chunk_shape", minimum=1)
        if len(inner_shape) != nd:
            raise MetadataError(f"sharding_indexed.chunk_shape has {len(inner_shape)} "
                                f"dimensions, the array {nd}", where)
        if any(s % c for s, c in zip(shape, inner_shape, strict=True)):
            raise MetadataError(f"shard shape {list(shape)} is not a multiple of the inner chunk "
                                f"shape {list(inner_shape)}", where)
        _check_sizes(shape, inner_shape, dtype, where, "sharding_indexed.chunk_shape")
        per = tuple(s // c for s, c in zip(shape, inner_shape, strict=True))
        if math.prod(per) > MAX_CHUNKS_PER_SHARD:
            raise UnsupportedFormatError(f"{math.prod(per)} chunks per shard (at most "
                                         f"{MAX_CHUNKS_PER_SHARD})", where)
        inner, _ = _codec_chain(cdoc.require("codecs"), inner_shape, dtype, where, depth + 1)
        raw_index = cdoc.get("index_codecs", [{"name": "bytes"}, {"name": "crc32c"}])
        if not isinstance(raw_index, list):
            raise MetadataError("sharding_indexed.index_codecs must be a list", where)
        index_codecs = [_named(c, where, "index codec") for c in raw_index]
        return inner, shard_spec(conf, inner, per, index_codecs, where)
    stored = dtype.newbyteorder("<" if endian == "little" else ">") if dtype.itemsize > 1 \
        else dtype
    return ChunkCodec(shape, stored, order=order, bytes_codecs=bytes_codecs), None


def parse_v3(obj: dict[str, Any], where: str) -> ArrayMeta:
    """``zarr.json`` of an array as ``ArrayMeta``."""
    doc = Doc(obj, where)
    fmt = doc.require("zarr_format")
    if fmt != 3:
        raise UnsupportedFormatError(f"zarr_format {fmt!r} in zarr.json (expected 3)", where)
    if doc.string("node_type") != "array":
        raise MetadataError(f"node_type is {obj.get('node_type')!r}, not 'array'", where)
    shape = doc.int_list("shape")
    dtype = v3_dtype(doc.require("data_type"), where)
    gname, gconf = _named(doc.require("chunk_grid"), where, "chunk_grid")
    if gname != "regular":
        raise UnsupportedFormatError(f"chunk_grid {gname!r} (this reader reads 'regular')",
                                     where)
    grid = Doc(gconf, where, "chunk_grid.configuration.").int_list("chunk_shape", minimum=1)
    if len(grid) != len(shape):
        raise MetadataError(f"chunk_grid.configuration.chunk_shape has {len(grid)} dimensions, "
                            f"shape has {len(shape)}", where)
    kname, kconf = _named(doc.get("chunk_key_encoding", {"name": "default"}), where,
                          "chunk_key_encoding")
    if kname not in ("default", "v2"):
        raise UnsupportedFormatError(f"chunk_key_encoding {kname!r}", where)
    sep = kconf.get("separator", "/" if kname == "default" else ".")
    if sep not in (".", "/"):
        raise MetadataError(f"chunk_key_encoding separator must be '.' or '/', not {sep!r}"[:200],
                            where)
    st = doc.get("storage_transformers", [])
    if st:
        raise UnsupportedFormatError("storage_transformers", where)
    names_raw = doc.get("dimension_names")
    names: tuple[str | None, ...] | None = None
    if names_raw is not None:
        if not isinstance(names_raw, list) or len(names_raw) != len(shape) or \
                not all(n is None or isinstance(n, str) for n in names_raw):
            raise MetadataError(f"dimension_names must be a list of {len(shape)} strings or "
                                "nulls", where)
        names = tuple(names_raw)
    codec, sharding = _codec_chain(doc.require("codecs"), grid, dtype, where)
    if sharding is None:
        _check_sizes(shape, grid, dtype, where, "chunk_grid chunk_shape")
    fv = fill_value(doc.require("fill_value"), dtype, where, 3)
    attrs = doc.get("attributes", {})
    return ArrayMeta(3, where, shape, dtype, fv, grid, codec.shape, codec, sharding, names,
                     sep, "c" if kname == "default" else "", obj,
                     attrs if isinstance(attrs, dict) else {})


__all__ = ["ArrayMeta", "parse_v2", "parse_v3", "fill_value", "v2_dtype", "v3_dtype",
           "MAX_CHUNK_BYTES"]
