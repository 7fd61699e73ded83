"""Reading and checking the JSON metadata documents (``zarr.json``, ``.zarray``, ``.zgroup``,
``.zattrs``) through a ``Store``, with bounded size and nesting, and typed accessors that name
the document and key when a value has the wrong type."""

from __future__ import annotations

import json
import math
from typing import Any

from viewer.format.errors import MetadataError
from viewer.format.store import Store

#: Largest metadata document read (a real one is a few KiB).
MAX_DOCUMENT_BYTES = 16 << 20
#: Most dimensions an array may have.
MAX_NDIM = 32
#: Bound on shape and chunk entries (far beyond any real array; safe in int64 products).
MAX_EXTENT = 1 << 40


def read_json(store: Store, key: str) -> dict[str, Any] | None:
    """The JSON object stored at ``key``; ``None`` when there is no such object.  A document
    that is too big, not JSON, or not an object is a ``MetadataError``."""
    size = store.size(key)
    if size is None:
        return None
    where = store.location(key)
    if size > MAX_DOCUMENT_BYTES:
        raise MetadataError(f"metadata document of {size} bytes is too big to be one", where)
    raw = store.read(key)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise MetadataError("metadata nested too deeply to read", where) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MetadataError(f"not valid JSON: {exc}", where) from None
    if not isinstance(doc, dict):
        raise MetadataError(f"must be a JSON object, not {type(doc).__name__}", where)
    return doc


class Doc:
    """A metadata object with typed access: ``Doc(obj, where, prefix)``; errors name ``where``
    (the file) and the dotted key."""

    def __init__(self, obj: dict[str, Any], where: str, prefix: str = "") -> None:
        self.obj = obj
        self.where = where
        self.prefix = prefix

    def error(self, key: str, message: str) -> MetadataError:
        return MetadataError(f"{self.prefix}{key}: {message}", self.where)

    def has(self, key: str) -> bool:
        return key in self.obj

    def get(self, key: str, default: Any = None) -> Any:
        return self.obj.get(key, default)

    def require(self, key: str) -> Any:
        if key not in self.obj:
            raise MetadataError(f"missing required key {self.prefix}{key!r}", self.where)
        return self.obj[key]

    def sub(self, key: str, value: Any = None) -> Doc:
        v = self.require(key) if value is None else value
        if not isinstance(v, dict):
            raise self.error(key, f"must be an object, not {_kind(v)}")
        return Doc(v, self.where, f"{self.prefix}{key}.")

    def string(self, key: str, default: str | None = None) -> str:
        v = self.obj.get(key, default) if default is not None else self.require(key)
        if not isinstance(v, str):
            raise self.error(key, f"must be a string, not {_kind(v)}")
        return v

    def int_list(self, key: str, minimum: int = 0, value: Any = None) -> tuple[int, ...]:
        v = self.require(key) if value is None else value
        if not isinstance(v, list) or len(v) > MAX_NDIM:
            raise self.error(key, f"must be a list of at most {MAX_NDIM} integers, not "
                             f"{_kind(v)}")
        out = []
        for item in v:
            if not is_int(item) or not minimum <= int(item) <= MAX_EXTENT:
                raise self.error(key, f"entries must be integers in [{minimum}, {MAX_EXTENT}],"
                                 f" not {item!r}")
            out.append(int(item))
        return tuple(out)

    def integer(self, key: str, default: int | None = None) -> int:
        v = self.obj.get(key, default)
        if v is None or not is_int(v):
            raise self.error(key, f"must be an integer, not {_kind(v)}")
        return int(v)


def is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {value!r}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    return {"list": "a list", "dict": "an object"}.get(type(value).__name__,
                                                        type(value).__name__)


__all__ = ["read_json", "Doc", "is_int", "MAX_NDIM", "MAX_EXTENT", "MAX_DOCUMENT_BYTES"]
