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
    """``kind`` "array" (``meta`` set) or "group"; ``version`` 2 or 3; ``attributes``;
    ``consolidated``: the keys below a group that its consolidated metadata names (zarr v3
    ``consolidated_metadata`` in ``zarr.json``), empty when it has none."""

    kind: str
    version: int
    where: str
    attributes: dict[str, Any] = field(default_factory=dict)
    meta: ArrayMeta | None = None
    consolidated: tuple[str, ...] = ()


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
            cons = doc.get("consolidated_metadata")
            meta = cons.get("metadata") if isinstance(cons, dict) else None
            names = tuple(str(k) for k in meta) if isinstance(meta, dict) else ()
            return Node("group", 3, where, attrs, consolidated=names)
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


def child_names(store: Store, prefix: str, node: Node) -> list[str]:
    """The children of the group ``node`` at ``prefix`` that its metadata names, for a store
    that cannot list (plain HTTP): zarr v3 ``consolidated_metadata``, zarr v2 ``.zmetadata``
    (consolidated), and an OME-Zarr ``labels`` group's ``labels`` list; sorted."""
    keys: list[str] = list(node.consolidated)
    if node.version == 2:
        doc = read_json(store, _join(prefix, ".zmetadata"))
        meta = doc.get("metadata") if doc is not None else None
        if isinstance(meta, dict):
            keys.extend(str(k).rsplit("/", 1)[0] for k in meta if "/" in str(k))
    labels = node.attributes.get("labels")
    ome = node.attributes.get("ome")
    if labels is None and isinstance(ome, dict):
        labels = ome.get("labels")
    if isinstance(labels, list):
        keys.extend(str(v) for v in labels if isinstance(v, str))
    return sorted({k.split("/", 1)[0] for k in keys if k and not k.startswith(".")})


__all__ = ["Node", "read_node", "child_names", "MARKERS"]
