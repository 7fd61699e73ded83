"""What sits at a key prefix of a store: a zarr v3 node (``zarr.json``: array or group), a
zarr v2 array (``.zarray``) or group (``.zgroup``), with its attributes (``.zattrs`` or
``zarr.json`` ``attributes``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from viewer.format.errors import MetadataError, UnsupportedFormatError
from viewer.format.store import Store
from viewer.format.zarr.jsondoc import read_json
from viewer.format.zarr.meta import ArrayMeta, parse_v2, parse_v3

MARKERS = ("zarr.json", ".zarray", ".zgroup")


@dataclass
class Node:
    """``kind`` "array" (``meta`` set) or "group"; ``version`` 2 or 3; ``attributes``."""

    kind: str
    version: int
    where: str
    attributes: dict[str, Any] = field(default_factory=dict)
    meta: ArrayMeta | None = None


def _join(prefix: str, name: str) -> str:
    return f"{prefix}{name}"


def read_node(store: Store, prefix: str) -> Node | None:
    """The node at ``prefix`` (``""`` or ending in ``/``), or None when there is none."""
    key = _join(prefix, "zarr.json")
    doc = read_json(store, key)
    if doc is not None:
        where = store.location(key)
        fmt = doc.get("zarr_format")
        if fmt != 3:
            raise UnsupportedFormatError(f"zarr_format {fmt!r} in zarr.json (expected 3)", where)
        kind = doc.get("node_type")
        attrs = doc.get("attributes", {})
        if not isinstance(attrs, dict):
            raise MetadataError("attributes must be an object", where)
        if kind == "array":
            return Node("array", 3, where, attrs, parse_v3(doc, where))
        if kind == "group":
            return Node("group", 3, where, attrs)
        raise MetadataError(f"node_type must be 'array' or 'group', not {kind!r}"[:200], where)
    attrs_doc = read_json(store, _join(prefix, ".zattrs")) or {}
    key = _join(prefix, ".zarray")
    doc = read_json(store, key)
    if doc is not None:
        where = store.location(key)
        return Node("array", 2, where, attrs_doc, parse_v2(doc, where, attrs_doc))
    key = _join(prefix, ".zgroup")
    doc = read_json(store, key)
    if doc is not None:
        where = store.location(key)
        if doc.get("zarr_format") not in (2, "2"):
            raise UnsupportedFormatError(f"zarr_format {doc.get('zarr_format')!r} in .zgroup "
                                         "(expected 2)", where)
        return Node("group", 2, where, attrs_doc)
    return None


__all__ = ["Node", "read_node", "MARKERS"]
