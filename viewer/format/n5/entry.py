"""N5's place in the format registry, and how an N5 container becomes a ``Dataset``.

What opens:

* a dataset folder (``attributes.json`` with ``dimensions``): one layer with one mag;
* a multiscale group (children ``s0, s1, ...`` that are datasets): one layer whose mags are
  the levels (``viewer.format.n5.multiscale``);
* any other group, an N5 root included: every dataset and multiscale group below it is a
  layer named by its path (a walk that never enters a dataset's chunk folders, bounded in
  depth and in folders visited).

Where the store lists nothing (plain HTTP), groups and levels are found from metadata: the
``attributes.json`` of the names the conventions give (levels ``s0, s1, ...``; the N5
viewer's channels ``c0, c1, ...``; BigDataViewer's ``setup{i}/timepoint{t}``; Paintera's
``data`` group), so what opens from disk opens from a URL.

A level or dataset whose attributes cannot be read is a problem of the ``Dataset`` and the
rest opens.  A webKnossos layer with ``dataFormat: "n5"`` opens each mag folder through the
registry, that is through here.
"""

from __future__ import annotations

import os
from typing import Any

from viewer.format.dataset import Dataset, Layer, Mag
from viewer.format.errors import DatasetLayoutError, FormatError, MetadataError
from viewer.format.geometry import BoundingBox, VoxelSize
from viewer.format.n5.attributes import (
    ATTRIBUTES_FILE,
    DatasetAttributes,
    is_dataset,
    parse_dataset,
    read_json,
)
from viewer.format.n5.multiscale import Level, level_factors, level_index, voxel_size
from viewer.format.n5.volume import make_volume
from viewer.format.registry import FormatEntry, register
from viewer.format.store import Store, is_url, open_store

#: How deep and how wide the walk of a container goes.
MAX_DEPTH = 8
MAX_GROUPS = 1024
MAX_LEVELS = 32


def _key(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _attrs_key(key: str) -> str:
    return _key(key, ATTRIBUTES_FILE)


def _subfolders(store: Store, key: str, limit: int = 4096) -> list[str]:
    """Child folders of a group worth visiting (digit-only names are chunk folders of a
    dataset, never groups)."""
    out = []
    for name in store.list_dir(key)[:limit]:
        if name.isdigit() or name.startswith("."):
            continue
        if store.is_dir(_key(key, name)):
            out.append(name)
    return out


#: Child groups the N5 conventions name, looked for by their attributes where the store lists
#: nothing (plain HTTP): ``(prefix, digits)`` for numbered children, counted from 0 until
#: one is missing (the N5 viewer's channels ``c0, c1, ...``; BigDataViewer's ``setup0`` /
#: ``setup00`` and ``timepoint0`` / ``timepoint00000``).
NUMBERED_CHILDREN = (("c", 1), ("setup", 1), ("setup", 2), ("timepoint", 1), ("timepoint", 5))
#: Paintera keeps a dataset's pyramid in the ``data`` group of the group that says
#: ``painteraData``.
PAINTERA_DATA = "data"


def _probed_children(store: Store, key: str, attrs: dict[str, Any] | None) -> list[str]:
    """The child groups of ``key`` found from metadata alone, where the store cannot list:
    the conventional names above whose ``attributes.json``, or whose first level's
    (``s0/attributes.json``: a group need not have attributes), exists (a request or two
    each, the numbered ones until the first missing)."""

    def there(name: str) -> bool:
        sub = _key(key, name)
        return store.exists(_attrs_key(sub)) or store.exists(_attrs_key(_key(sub, "s0")))

    found: list[str] = []
    if attrs and "painteraData" in attrs and there(PAINTERA_DATA):
        found.append(PAINTERA_DATA)
    for prefix, digits in NUMBERED_CHILDREN:
        for k in range(MAX_GROUPS):
            name = f"{prefix}{k:0{digits}d}"
            if name in found or not there(name):
                break
            found.append(name)
    return found


def _children(store: Store, key: str, attrs: dict[str, Any] | None) -> list[str]:
    """Child groups of ``key`` to visit: the listing, else (a store that lists nothing, such
    as plain HTTP) those the conventions name (``_probed_children``)."""
    return _subfolders(store, key) or _probed_children(store, key, attrs)


def _level_names(store: Store, key: str) -> list[tuple[int, str]]:
    """``(k, "s{k}")`` of the levels below ``key``: from the listing, else (a store that
    lists nothing) ``s0, s1, ...`` while their ``attributes.json`` exists."""
    listed = sorted((k, n) for n in _subfolders(store, key)
                    if (k := level_index(n)) is not None)
    if listed:
        return listed
    out: list[tuple[int, str]] = []
    for k in range(MAX_LEVELS):
        if not store.exists(_attrs_key(_key(key, f"s{k}"))):
            break
        out.append((k, f"s{k}"))
    return out


#: Child folders whose ``attributes.json`` the detection of a folder without one looks for,
#: at most: an N5 container names a dataset within its first few groups, while the folders of
#: another format (a WKW dataset's ``z*/y*``: thousands of them) are not worth reading on the
#: GUI thread as a dataset opens.
DETECT_PROBES = 128


def detect(path: str) -> bool:
    """A folder holding ``attributes.json`` (a dataset, a group or a root), the file itself,
    or a folder without one whose child groups (two levels down at most, ``DETECT_PROBES``
    of them at most) hold N5 datasets (tensorstore writes no root attributes)."""
    if is_url(path):  # remote: the attributes through the store (no listing)
        store = open_store(path)
        return store.exists(ATTRIBUTES_FILE) or any(
            store.exists(_attrs_key(first)) for first in ("s0", "c0", "setup0"))
    if os.path.isfile(path):
        return os.path.basename(path) == ATTRIBUTES_FILE
    if not os.path.isdir(path):
        return False
    if os.path.isfile(os.path.join(path, ATTRIBUTES_FILE)):
        return True
    store = open_store(path)
    left = [DETECT_PROBES]

    def has_dataset(key: str, depth: int) -> bool:
        for name in _subfolders(store, key, 64)[:64]:
            if left[0] <= 0:
                return False
            left[0] -= 1
            sub = _key(key, name)
            try:
                attrs = read_json(store, _attrs_key(sub))
            except FormatError:
                continue
            if is_dataset(attrs):
                return True
            if depth > 0 and has_dataset(sub, depth - 1):
                return True
        return False

    return has_dataset("", 1)


def _element_class(dtype_name: str, channels: int) -> str:
    if dtype_name == "uint8" and channels == 3:
        return "uint24"
    return {"float32": "float", "float64": "double"}.get(dtype_name, dtype_name)


def _max_id(docs: list[dict[str, Any]]) -> int | None:
    """Paintera's ``maxId`` (the largest label id), from the first document that has it."""
    for doc in docs:
        value = doc.get("maxId")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _category(name: str, max_id: int | None) -> str:
    """``segmentation`` for a label dataset (a ``maxId``, or seg / label in the name)."""
    low = name.lower()
    labels = max_id is not None or "seg" in low or "label" in low
    return "segmentation" if labels else "color"


def _open_levels(store: Store, key: str, groups: list[dict[str, Any]],
                 problems: list[FormatError]) -> list[Level]:
    """The levels of the multiscale group at ``key`` (empty when it is not one)."""
    names = _level_names(store, key)
    parsed: list[tuple[int, str, str, DatasetAttributes]] = []
    for index, name in names[:MAX_LEVELS]:
        sub = _key(key, name)
        where = store.location(_attrs_key(sub))
        try:
            doc = read_json(store, _attrs_key(sub))
            if doc is None:
                continue
            parsed.append((index, name, sub, parse_dataset(doc, where)))
        except FormatError as exc:
            problems.append(exc)
    if not parsed:
        return []
    finest = parsed[0][3]
    levels = []
    seen: set[tuple[int, int, int]] = set()
    for index, name, sub, attrs in parsed:
        if attrs.data_type != finest.data_type or attrs.num_channels != finest.num_channels:
            problems.append(MetadataError(
                f"level {name} holds {attrs.data_type}, level {parsed[0][1]} "
                f"{finest.data_type}: left out", store.location(_attrs_key(sub))))
            continue
        mag, source = level_factors(index, attrs, finest, groups)
        if mag in seen:
            problems.append(MetadataError(f"level {name} has the factors {list(mag)} of an "
                                          "earlier level: left out",
                                          store.location(_attrs_key(sub))))
            continue
        seen.add(mag)
        levels.append(Level(name, sub, attrs, mag, source))
    return levels


def _mag(store: Store, layer: str, key: str, attrs: DatasetAttributes,
         mag: tuple[int, int, int]) -> Mag:
    return Mag(mag, store.location(key), layer=layer, dtype=attrs.dtype,
               num_channels=attrs.num_channels, rel_path=key or ".",
               opener=lambda: make_volume(store, key, attrs))


def _layer(store: Store, name: str, key: str, mags: list[Mag], finest: DatasetAttributes,
           group: dict[str, Any] | None = None) -> Layer:
    box = BoundingBox((0, 0, 0), finest.shape)
    max_id = _max_id([d for d in (group, finest.raw) if d])
    return Layer(name, _category(name, max_id),
                 _element_class(finest.data_type, finest.num_channels), finest.num_channels,
                 box, mags, store.location(key), largest_segment_id=max_id, data_format="n5",
                 properties=group if group else finest.raw, dtype=finest.dtype)


class _Walk:
    """One visit of a container: the layers found, the problems met, the voxel size."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.layers: list[Layer] = []
        self.problems: list[FormatError] = []
        self.scale: VoxelSize | None = None
        self.groups = 0

    def _scale(self, docs: list[tuple[dict[str, Any] | None, str]]) -> None:
        size = voxel_size(docs, self.problems)
        if size is not None and self.scale is None:
            self.scale = size

    def visit(self, key: str, attrs: dict[str, Any] | None, depth: int,
              above: tuple[tuple[dict[str, Any], str], ...] = ()) -> str:
        """Add what ``key`` holds; returns its kind (``array``, ``group`` or ``root``).
        ``above``: the attributes of the groups above it (nearest first) and where they
        are."""
        store = self.store
        where = store.location(_attrs_key(key))
        name = key or os.path.basename(os.path.abspath(store.root)) or "n5"
        if is_dataset(attrs):
            assert attrs is not None
            parsed = parse_dataset(attrs, where)
            self._scale([(attrs, where), *above])
            self.layers.append(_layer(store, name, key, [_mag(store, name, key, parsed,
                                                              (1, 1, 1))], parsed))
            return "array"
        group = attrs or {}
        chain = ((group, where), *above)
        levels = _open_levels(store, key, [g for g, _ in chain], self.problems)
        if levels:
            s0 = levels[0]
            self._scale([*chain, (s0.attrs.raw, store.location(_attrs_key(s0.key)))])
            mags = [_mag(store, name, lv.key, lv.attrs, lv.mag) for lv in levels]
            self.layers.append(_layer(store, name, key, mags, s0.attrs, group))
            return "group"
        if depth >= MAX_DEPTH:
            return "root"
        for child in _children(store, key, attrs):
            self.groups += 1
            if self.groups > MAX_GROUPS:
                self.problems.append(DatasetLayoutError(
                    f"more than {MAX_GROUPS} groups: the rest were not visited",
                    store.location(key)))
                return "root"
            sub = _key(key, child)
            try:
                sub_attrs = read_json(store, _attrs_key(sub))
                self.visit(sub, sub_attrs, depth + 1, chain)
            except FormatError as exc:
                self.problems.append(exc)
        return "root"


def open_dataset(path: str) -> Dataset:
    """The N5 dataset, multiscale group or container at ``path`` (see the module
    docstring).  Raises the ``FormatError`` of the path's own attributes when it is a
    dataset that cannot be read, and ``DatasetLayoutError`` when nothing below it opens."""
    if os.path.isfile(path) and os.path.basename(path) == ATTRIBUTES_FILE:
        path = os.path.dirname(path) or "."
    store = open_store(path)
    attrs = read_json(store, ATTRIBUTES_FILE)
    walk = _Walk(store)
    kind = walk.visit("", attrs, 0)
    if not walk.layers:
        if walk.problems:
            raise walk.problems[0]
        raise DatasetLayoutError("no N5 dataset or multiscale group found here", path)
    if kind == "root":
        kind = "dataset"
    return Dataset(path, "n5", walk.layers, walk.problems, walk.scale, kind=kind)


register(FormatEntry("n5", detect, open_dataset, priority=50, names=("n5",),
                     describes="an N5 container, group or dataset (attributes.json)"))


__all__ = ["detect", "open_dataset"]
