"""A zarr path as a ``Dataset``: an array folder (one layer, one mag), an OME-Zarr 0.4/0.5
multiscale group (one layer whose mags are the levels: factors from each level's scale
relative to level 0, level 0's scale and the axes' unit as the voxel size; ``labels``
become segmentation layers), or a plain group (each array or multiscale group below it a
layer).

Where the store lists nothing (plain HTTP) a group's children are those its metadata names
(consolidated metadata, an OME-Zarr ``labels`` list); a multiscale's levels always come from
its metadata.

An array opened on its own takes its axis names from the OME-Zarr multiscale of its parent
group when that lists it (webKnossos' zarr v2 mags have no ``dimension_names``: the layer
group's ``axes`` say ``c, x, y, z``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from viewer.format.dataset import Dataset, Layer, Mag
from viewer.format.errors import DatasetLayoutError, FormatError, MetadataError
from viewer.format.geometry import UNIT_NANOMETERS, VoxelSize
from viewer.format.store import Store, is_url, open_store
from viewer.format.volume import Volume
from viewer.format.zarr.axes import AxisMap, axis_map
from viewer.format.zarr.node import Node, child_names, read_node
from viewer.format.zarr.ome import (
    Multiscale,
    multiscales_of,
    omero_channels,
    parse_multiscale,
)
from viewer.format.zarr.volume import make_volume

#: Children of a plain group looked at, and how deep.
MAX_CHILDREN = 256
MAX_DEPTH = 3


def element_class(dtype: np.dtype[Any], channels: int) -> str:
    if dtype == np.uint8 and channels == 3:
        return "uint24"
    return {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)


def format_name(version: int) -> str:
    return "zarr3" if version == 3 else "zarr"


def _units(ms: Multiscale | None, axes: AxisMap) -> tuple[str, str, str] | None:
    if ms is None or ms.axis_units is None or len(ms.axis_units) != axes.ndim:
        return None
    units = [ms.axis_units[a] if a is not None else None for a in axes.spatial]
    if all(u is None for u in units):
        return None
    return (units[0] or "", units[1] or "", units[2] or "")


def array_volume(store: Store, prefix: str, node: Node, ms: Multiscale | None = None,
                 fallback_names: list[str] | None = None) -> Volume:
    """The volume of an array node (a ``ChannelStack`` when its channels are chunked apart);
    ``ms``: the multiscale that lists it (axis names); ``fallback_names``: axis names to use
    when neither the array nor ``ms`` has any."""
    assert node.meta is not None
    axes = array_axes(node, ms, fallback_names)
    return make_volume(store, prefix, node.meta, axes, _units(ms, axes))


def array_axes(node: Node, ms: Multiscale | None = None,
               fallback_names: list[str] | None = None) -> AxisMap:
    """Which axes of an array node are x, y, z, c and extra (see ``array_volume``)."""
    meta = node.meta
    assert meta is not None
    names: list[str | None] | None = None
    types: list[str | None] | None = None
    if meta.dimension_names is not None and any(n for n in meta.dimension_names):
        names = list(meta.dimension_names)
    if ms is not None and ms.axis_names is not None and len(ms.axis_names) == meta.ndim:
        if names is None:
            names = list(ms.axis_names)
        types = ms.axis_types
    if names is None and fallback_names is not None and len(fallback_names) == meta.ndim:
        names = list(fallback_names)
    return axis_map(meta.shape, names, types, meta.where)


def open_array_volume(path: str) -> Volume:
    """The volume of the array at folder ``path`` (axis names from a parent multiscale)."""
    store = open_store(path)
    node = read_node(store, "")
    if node is None or node.kind != "array":
        raise DatasetLayoutError("not a zarr array (no zarr.json array node, no .zarray)", path)
    return array_volume(store, "", node, _parent_multiscale(path), _webknossos_axes(path))


def _webknossos_axes(path: str) -> list[str] | None:
    """Axis names of a webKnossos mag folder from the dataset's properties file: the mag's
    ``axisOrder`` (``{"c": 0, "x": 1, "y": 2, "z": 3}``), else webKnossos' own ``c, x, y,
    z`` for a zarr layer.  None when the folder is not a mag of a webKnossos dataset."""
    import json

    mag_dir = _normalized(path)
    layer_dir = _parent(mag_dir)
    dataset_dir = _parent(layer_dir)
    try:
        store = open_store(dataset_dir)
        size = store.size("datasource-properties.json")
        if size is None or size > (16 << 20):
            return None
        props = json.loads(store.read("datasource-properties.json"))
    except (OSError, ValueError, RecursionError, FormatError):
        return None
    layers = props.get("dataLayers") if isinstance(props, dict) else None
    if not isinstance(layers, list):
        return None
    for layer in layers:
        if not isinstance(layer, dict) or layer.get("name") != _name(layer_dir):
            continue
        if layer.get("dataFormat") not in ("zarr", "zarr3"):
            return None
        for m in layer.get("mags") or []:
            if not isinstance(m, dict) or not isinstance(m.get("path"), str):
                continue
            target = m["path"] if os.path.isabs(m["path"]) or is_url(m["path"]) else \
                _join(dataset_dir, m["path"])
            if _normalized(target) != mag_dir:
                continue
            order = m.get("axisOrder")
            if isinstance(order, dict) and all(isinstance(v, int) and not isinstance(v, bool)
                                               for v in order.values()):
                n = max(order.values()) + 1
                names = ["" for _ in range(n)]
                for k, v in order.items():
                    if 0 <= v < n:
                        names[v] = str(k)
                return names
        return ["c", "x", "y", "z"]
    return None


def _normalized(path: str) -> str:
    """A folder path made absolute and normal, or a URL without a trailing slash and with
    ``.`` and ``..`` parts resolved."""
    if not is_url(path):
        return os.path.normpath(os.path.abspath(path))
    scheme, _, rest = path.partition("://")
    host, _, key = rest.partition("/")
    parts: list[str] = []
    for part in key.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return f"{scheme}://{host}/" + "/".join(parts)


def _parent(path: str) -> str:
    return path.rpartition("/")[0] if is_url(path) else os.path.dirname(path)


def _name(path: str) -> str:
    return path.rpartition("/")[2] if is_url(path) else os.path.basename(path)


def _join(folder: str, rel: str) -> str:
    return f"{folder}/{rel}" if is_url(folder) else os.path.join(folder, rel)


def _parent_multiscale(path: str) -> Multiscale | None:
    """The OME-Zarr multiscale of the group above the array at ``path`` (a folder or a URL)
    when it lists the array."""
    where = _normalized(path)
    parent, name = _parent(where), _name(where)
    if not parent or not name or parent.endswith("://") or parent.endswith(":/"):
        return None
    try:
        pnode = read_node(open_store(parent), "")
    except FormatError:
        return None
    if pnode is None or pnode.kind != "group":
        return None
    found = multiscales_of(pnode.attributes)
    if found is None:
        return None
    try:
        ms = parse_multiscale(found[0], found[1], pnode.where)
    except FormatError:
        return None
    return ms if ms.level(name) is not None else None


def _voxel_size(ms: Multiscale, axes: AxisMap, where: str,
                problems: list[FormatError]) -> VoxelSize | None:
    lv0 = ms.levels[0]
    if lv0.scale is None or len(lv0.scale) != axes.ndim:
        return None
    factor = [lv0.scale[a] if a is not None else 1.0 for a in axes.spatial]
    units = _units(ms, axes)
    if units is None:
        return None
    known = [u for u in units if u]
    if not known:
        return None
    for u in known:
        if u not in UNIT_NANOMETERS:
            problems.append(MetadataError(f"unknown axis unit {u!r}: voxel size not set", where))
            return None
    if len(set(known)) == 1:
        return VoxelSize((factor[0], factor[1], factor[2]), known[0])
    nm = [f * UNIT_NANOMETERS[u or "nanometer"] for f, u in zip(factor, units, strict=True)]
    return VoxelSize((nm[0], nm[1], nm[2]), "nanometer")


def _mag_of(scale: list[float] | None, base: list[float] | None, axes: AxisMap
            ) -> tuple[int, int, int] | None:
    if scale is None or base is None:
        return None
    out = []
    for a in axes.spatial:
        if a is None:
            out.append(1)
            continue
        r = scale[a] / base[a]
        k = round(r)
        if k < 1 or not math.isclose(r, k, rel_tol=1e-3):
            return None
        out.append(int(k))
    return (out[0], out[1], out[2])


def multiscale_layer(store: Store, prefix: str, root: str, node: Node, name: str,
                     category: str, problems: list[FormatError]
                     ) -> tuple[Layer, VoxelSize | None, int]:
    """The layer of an OME-Zarr multiscale group at ``prefix``."""
    found = multiscales_of(node.attributes)
    assert found is not None
    ms = parse_multiscale(found[0], found[1], node.where)
    lv0 = ms.levels[0]
    p0 = f"{prefix}{lv0.path.strip('/')}/"
    n0 = read_node(store, p0)
    if n0 is None or n0.kind != "array":
        raise DatasetLayoutError(f"multiscale level 0 {lv0.path!r} is not a zarr array",
                                 store.location(p0.rstrip("/")))
    vol0 = array_volume(store, p0, n0, ms)
    axes = array_axes(n0, ms)
    mags: list[Mag] = []
    seen: set[tuple[int, int, int]] = set()
    for i, lv in enumerate(ms.levels):
        mag = (1, 1, 1) if i == 0 else _mag_of(lv.scale, lv0.scale, axes)
        lpath = f"{prefix}{lv.path.strip('/')}"
        if mag is None:
            problems.append(DatasetLayoutError(
                f"multiscale level {lv.path!r}: its scale {lv.scale} is not an integer "
                f"multiple of level 0's {lv0.scale} along x, y, z; level skipped",
                store.location(lpath)))
            continue
        if mag in seen:
            problems.append(DatasetLayoutError(f"multiscale level {lv.path!r} repeats mag {mag}"
                                               "; level skipped", store.location(lpath)))
            continue
        seen.add(mag)
        opener = _fixed(vol0) if i == 0 else _level_opener(store, lpath + "/", ms)
        mags.append(Mag(mag, store.location(lpath), layer=name, dtype=vol0.dtype,
                        num_channels=vol0.num_channels, rel_path=lv.path, opener=opener))
    scale = _voxel_size(ms, axes, node.where, problems)
    layer = Layer(ms.name or name, category, element_class(vol0.dtype, vol0.num_channels),
                  vol0.num_channels, None, mags, store.location(prefix.rstrip("/")),
                  data_format=format_name(n0.version), dtype=vol0.dtype,
                  properties=node.attributes)
    layer.channel_info = omero_channels(node.attributes)[:vol0.num_channels]
    return layer, scale, n0.version


def _fixed(volume: Volume) -> Callable[[], Volume]:
    return lambda: volume


def _level_opener(store: Store, prefix: str, ms: Multiscale) -> Callable[[], Volume]:
    def open_level() -> Volume:
        node = read_node(store, prefix)
        if node is None or node.kind != "array":
            raise DatasetLayoutError("multiscale level is not a zarr array",
                                     store.location(prefix.rstrip("/")))
        return array_volume(store, prefix, node, ms)
    return open_level


def _category(name: str, node: Node) -> str:
    if "image-label" in node.attributes or (isinstance(node.attributes.get("ome"), dict)
                                            and "image-label" in node.attributes["ome"]):
        return "segmentation"
    return "segmentation" if "seg" in name.lower() or "label" in name.lower() else "color"


def open_dataset(path: str) -> Dataset:
    """The dataset at ``path`` (see the module docstring)."""
    if os.path.isfile(path):
        path = os.path.dirname(path) or "."
    store = open_store(path)
    node = read_node(store, "")
    if node is None:
        raise DatasetLayoutError("not a zarr array or group (no zarr.json, .zarray or .zgroup)",
                                 path)
    name = os.path.basename(os.path.abspath(path))
    problems: list[FormatError] = []
    if node.kind == "array":
        vol = array_volume(store, "", node, _parent_multiscale(path), _webknossos_axes(path))
        mag = Mag((1, 1, 1), path, layer=name, dtype=vol.dtype, num_channels=vol.num_channels,
                  opener=lambda: vol)
        layer = Layer(name, _category(name, node), element_class(vol.dtype, vol.num_channels),
                      vol.num_channels, None, [mag], path, data_format=vol.format,
                      dtype=vol.dtype)
        return Dataset(path, vol.format, [layer], kind="array")
    layers: list[Layer] = []
    versions: list[int] = []
    scales: list[VoxelSize] = []
    _collect(store, "", name, node, layers, problems, versions, 0, scales)
    scale = scales[0] if scales else None
    if not layers:
        if problems:
            raise problems[0]
        raise DatasetLayoutError("zarr group holds no arrays", path)
    fmt = format_name(versions[0] if versions else node.version)
    return Dataset(path, fmt, layers, problems, scale, kind="group")


def _collect(store: Store, prefix: str, name: str, node: Node, layers: list[Layer],
             problems: list[FormatError], versions: list[int], depth: int,
             scales: list[VoxelSize]) -> None:
    if multiscales_of(node.attributes) is not None:
        try:
            layer, sc, version = multiscale_layer(store, prefix, "", node, name,
                                                  _category(name, node), problems)
        except FormatError as exc:
            problems.append(exc)
        else:
            if sc is not None:
                scales.append(sc)
            layers.append(layer)
            versions.append(version)
        labels = read_node_safe(store, f"{prefix}labels/", problems)
        if labels is not None and labels.kind == "group" and depth < MAX_DEPTH:
            _children(store, f"{prefix}labels/", labels, layers, problems, versions, depth + 1,
                      scales, label=True)
        return
    if node.kind == "array":
        try:
            vol = array_volume(store, prefix, node)
        except FormatError as exc:
            problems.append(exc)
            return
        mag = Mag((1, 1, 1), vol.path, layer=name, dtype=vol.dtype,
                  num_channels=vol.num_channels, rel_path=prefix.rstrip("/"),
                  opener=_fixed(vol))
        layers.append(Layer(name, _category(name, node), element_class(vol.dtype,
                                                                      vol.num_channels),
                            vol.num_channels, None, [mag], vol.path, data_format=vol.format,
                            dtype=vol.dtype))
        versions.append(node.version)
        return
    if depth < MAX_DEPTH:
        _children(store, prefix, node, layers, problems, versions, depth + 1, scales)


def read_node_safe(store: Store, prefix: str, problems: list[FormatError]) -> Node | None:
    try:
        return read_node(store, prefix)
    except FormatError as exc:
        problems.append(exc)
        return None


def _children(store: Store, prefix: str, node: Node, layers: list[Layer],
              problems: list[FormatError], versions: list[int], depth: int,
              scales: list[VoxelSize], label: bool = False) -> None:
    root = prefix.rstrip("/")
    listed = store.list_dir(root)
    # A store that lists nothing (plain HTTP): the children the metadata names.
    named = not listed
    for child in (listed or child_names(store, prefix, node))[:MAX_CHILDREN]:
        if child.startswith("."):
            continue
        sub = f"{prefix}{child}/"
        if not named and not store.is_dir(sub.rstrip("/")):
            continue
        cnode = read_node_safe(store, sub, problems)
        if cnode is None:
            continue
        name = f"{root}/{child}" if root else child
        before = len(layers)
        _collect(store, sub, name, cnode, layers, problems, versions, depth, scales)
        if label:
            for layer in layers[before:]:
                layer.category = "segmentation"


__all__ = ["open_dataset", "open_array_volume", "array_volume", "multiscale_layer",
           "element_class", "format_name"]
