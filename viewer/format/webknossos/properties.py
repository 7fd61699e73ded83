"""``datasource-properties.json``: the file that makes a folder a webKnossos dataset.

It names the voxel size (``scale``) and the layers; per layer its category (``color`` or
``segmentation``), data format, element class, channels, bounding box (in mag-1 voxels) and
mags.  Both generations of the file are read:

- voxel size: ``scale: {"factor": [x, y, z], "unit": "nanometer"}`` or legacy ``scale: [x, y, z]``
  (nanometres);
- mags: ``mags: [{"mag": [x, y, z], "path": "./color/1", ...}]`` or legacy
  ``wkwResolutions: [{"resolution": 1 | [x, y, z], "cubeLength": 1024}]`` (the folder is then
  found by name inside the layer folder).

A problem with one layer entry (a missing key, an unknown element class) is reported, and the
other layers still open; only a file that is not a JSON object with a ``dataLayers`` list (or
holds no usable ``scale``) is an error for the whole dataset.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from viewer.format import atomic, jsonsafe
from viewer.format.geometry import (
    UNIT_NANOMETERS,
    BoundingBox,
    VoxelSize,
    _is_int,
    mag_name,
    parse_mag,
)
from viewer.format.webknossos.errors import PropertiesError, WebknossosError

PROPERTIES_FILE = "datasource-properties.json"

Vec3 = tuple[int, int, int]

#: elementClass -> (numpy dtype of one channel, channels the class itself implies).
ELEMENT_CLASSES: dict[str, tuple[np.dtype[Any], int]] = {
    "uint8": (np.dtype("<u1"), 1),
    "uint16": (np.dtype("<u2"), 1),
    "uint24": (np.dtype("<u1"), 3),  # RGB: three uint8 channels, one WKW voxel of 3 bytes
    "uint32": (np.dtype("<u4"), 1),
    "uint64": (np.dtype("<u8"), 1),
    "int8": (np.dtype("<i1"), 1),
    "int16": (np.dtype("<i2"), 1),
    "int32": (np.dtype("<i4"), 1),
    "int64": (np.dtype("<i8"), 1),
    "float": (np.dtype("<f4"), 1),
    "double": (np.dtype("<f8"), 1),
}
#: Spellings some writers use for the same classes.
_ELEMENT_CLASS_ALIASES = {"float32": "float", "float64": "double"}

CATEGORIES = ("color", "segmentation")
#: Layers opened from one properties file; the rest are reported as a problem (2,001 layers
#: made the window reserve tens of GB of address space for their loaders' threads).
MAX_LAYERS = 64


def element_class_of(dtype: np.dtype[Any], num_channels: int) -> str:
    """The elementClass webKnossos gives a WKW voxel type: 3 x uint8 is ``uint24``."""
    dt = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).itemsize > 1 else np.dtype(dtype)
    if dt == np.dtype("u1") and num_channels == 3:
        return "uint24"
    for name, (candidate, channels) in ELEMENT_CLASSES.items():
        if channels == 1 and candidate == dt:
            return name
    raise ValueError(f"{dtype} has no webKnossos element class")


def voxel_matches(dtype: np.dtype[Any], num_channels: int, declared: np.dtype[Any],
                  declared_channels: int) -> bool:
    """Whether a mag of ``num_channels`` x ``dtype`` is what a layer declaring
    ``declared_channels`` x ``declared`` holds: the same, or (a layer of channels) ``declared``
    naming the whole voxel, as the ``webknossos`` package writes it (elementClass uint32 for two
    uint16 channels)."""
    if num_channels != declared_channels:
        return False
    if dtype == declared:
        return True
    return (num_channels > 1 and dtype.kind == declared.kind
            and dtype.itemsize * num_channels == declared.itemsize)


@dataclass(frozen=True)
class MagProperties:
    """One entry of ``mags`` (or ``wkwResolutions``): the factor and where it is stored.
    ``path`` is None when the file does not say (legacy entries never do)."""

    mag: Vec3
    path: str | None = None
    cube_length: int | None = None


@dataclass
class LayerProperties:
    """One entry of ``dataLayers``, as the file states it (``num_channels`` resolved: uint24
    means 3 uint8 channels)."""

    name: str
    category: str
    data_format: str
    bounding_box: BoundingBox
    element_class: str
    num_channels: int
    mags: list[MagProperties]
    largest_segment_id: int | None = None
    #: Which key listed the mags: ``"mags"``, ``"wkwResolutions"``, or None (neither).
    mags_key: str | None = "mags"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy type of one channel (uint24: uint8)."""
        return ELEMENT_CLASSES[self.element_class][0]

    def to_json(self, legacy: bool = False) -> dict[str, Any]:
        """The entry as webKnossos writes it; ``legacy`` lists ``wkwResolutions`` instead of
        ``mags`` (with ``resolution`` an int when all factors agree)."""
        out: dict[str, Any] = dict(self.raw)
        out.pop("mags", None)
        out.pop("wkwResolutions", None)
        out.update({
            "name": self.name,
            "category": self.category,
            "boundingBox": self.bounding_box.to_json(),
            "elementClass": self.element_class,
            "dataFormat": self.data_format,
            "numChannels": self.num_channels,
        })
        if self.category == "segmentation":
            out["largestSegmentId"] = self.largest_segment_id
        if legacy:
            out["wkwResolutions"] = [
                {"resolution": m.mag[0] if m.mag[0] == m.mag[1] == m.mag[2] else list(m.mag),
                 "cubeLength": m.cube_length if m.cube_length is not None else 1024}
                for m in self.mags]
        else:
            entries = []
            for m in self.mags:
                entry: dict[str, Any] = {"mag": list(m.mag)}
                entry["path"] = m.path if m.path is not None else f"./{self.name}/{mag_name(m.mag)}"
                if m.cube_length is not None:
                    entry["cubeLength"] = m.cube_length
                entries.append(entry)
            out["mags"] = entries
        return out


@dataclass
class DatasetProperties:
    """The whole properties file: voxel size and layer entries (the valid ones)."""

    voxel_size: VoxelSize
    layers: list[LayerProperties]
    #: Whether ``scale`` was the legacy bare list.
    legacy_scale: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def to_json(self, legacy: bool = False) -> dict[str, Any]:
        """The file's content; ``legacy`` writes the bare-list ``scale`` and ``wkwResolutions``."""
        out: dict[str, Any] = dict(self.raw)
        out.setdefault("id", {"name": "", "team": ""})
        out["scale"] = self.voxel_size.to_json(legacy)
        out["dataLayers"] = [layer.to_json(legacy) for layer in self.layers]
        if not legacy:
            out.setdefault("version", 1)
        return out


# -- reading ----------------------------------------------------------------------------------
def read_properties(path: str | os.PathLike[str]
                    ) -> tuple[DatasetProperties, list[WebknossosError]]:
    """Parse a ``datasource-properties.json`` file.

    Returns the properties with every layer entry that could be parsed, and the problems of the
    others (``PropertiesError`` naming the layer).  Raises ``PropertiesError`` when the file as a
    whole is unusable, and ``FileNotFoundError`` when it does not exist."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        raw_bytes = fh.read(jsonsafe.MAX_BYTES + 1)
    doc = jsonsafe.loads(raw_bytes, path, PropertiesError)  # bounded depth and size
    return parse_properties(doc, path)


def parse_properties(doc: Any, path: str | None = None
                     ) -> tuple[DatasetProperties, list[WebknossosError]]:
    """Parse the decoded JSON of a properties file (see :func:`read_properties`)."""
    if not isinstance(doc, dict):
        raise PropertiesError("the file must hold a JSON object", path)
    layers_doc = doc.get("dataLayers")
    if not isinstance(layers_doc, list):
        raise PropertiesError("no dataLayers list", path)
    voxel_size, legacy_scale = _parse_scale(doc.get("scale"), path)
    problems: list[WebknossosError] = []
    layers: list[LayerProperties] = []
    seen: set[str] = set()
    for index, entry in enumerate(layers_doc):
        if len(layers) >= MAX_LAYERS:
            problems.append(PropertiesError(
                f"{len(layers_doc) - index} more dataLayers entries are not opened (at most "
                f"{MAX_LAYERS} layers: each costs worker threads and memory)", path))
            break
        try:
            layer = parse_layer(entry, path, index)
        except PropertiesError as exc:
            problems.append(exc)
            continue
        if layer.name in seen:
            problems.append(PropertiesError(f"a second layer named {layer.name!r} is ignored",
                                            path, layer=layer.name))
            continue
        seen.add(layer.name)
        layers.append(layer)
    return DatasetProperties(voxel_size, layers, legacy_scale, raw=doc), problems


def _parse_scale(value: Any, path: str | None) -> tuple[VoxelSize, bool]:
    if isinstance(value, dict):
        factor = _float_vec(value.get("factor"), "scale.factor", path)
        unit = value.get("unit", "nanometer")
        if not isinstance(unit, str) or unit not in UNIT_NANOMETERS:
            raise PropertiesError(f"unknown scale.unit {unit!r}", path)
        return VoxelSize(factor, unit), False
    if isinstance(value, list):
        return VoxelSize(_float_vec(value, "scale", path), "nanometer"), True
    raise PropertiesError(f"scale must be {{factor, unit}} or [x, y, z], not {value!r}", path)


def parse_layer(entry: Any, path: str | None = None, index: int = 0) -> LayerProperties:
    """Parse one ``dataLayers`` entry; ``PropertiesError`` (naming the layer) when it lacks a
    key or holds a value this program cannot interpret."""
    if not isinstance(entry, dict):
        raise PropertiesError(f"dataLayers[{index}] is not an object", path)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise PropertiesError(f"dataLayers[{index}] has no name", path)

    def bad(message: str) -> PropertiesError:
        return PropertiesError(message, path, layer=name)

    category = entry.get("category")
    if not isinstance(category, str) or category not in CATEGORIES:
        raise bad(f"category must be 'color' or 'segmentation', not {category!r}")
    data_format = entry.get("dataFormat", "wkw")
    if not isinstance(data_format, str):
        raise bad(f"dataFormat must be a string, not {data_format!r}")
    element_class = entry.get("elementClass")
    if isinstance(element_class, str):
        element_class = _ELEMENT_CLASS_ALIASES.get(element_class, element_class)
    if not isinstance(element_class, str) or element_class not in ELEMENT_CLASSES:
        raise bad(f"unknown elementClass {element_class!r} "
                  f"(known: {', '.join(ELEMENT_CLASSES)})")
    implied = ELEMENT_CLASSES[element_class][1]
    num_channels_raw = entry.get("numChannels")
    if num_channels_raw is None:
        num_channels = implied
    elif not _is_int(num_channels_raw) or int(num_channels_raw) < 1:
        raise bad(f"numChannels must be a positive integer, not {num_channels_raw!r}")
    elif implied > 1:
        # uint24 already says "3 channels"; some writers put 3, older ones 1.
        if int(num_channels_raw) not in (1, implied):
            raise bad(f"elementClass {element_class} is {implied} channels, "
                      f"numChannels says {num_channels_raw}")
        num_channels = implied
    else:
        num_channels = int(num_channels_raw)
    try:
        bounding_box = BoundingBox.from_json(entry.get("boundingBox"))
    except ValueError as exc:
        raise bad(str(exc)) from None
    largest = entry.get("largestSegmentId")
    if largest is not None and (isinstance(largest, bool) or not isinstance(largest, (int, float))
                                or not float(largest).is_integer()
                                or not -(1 << 63) <= int(largest) < (1 << 64)):
        raise bad(f"largestSegmentId must be an integer or null, not {largest!r}")
    mags, key = _parse_mags(entry, bad)
    return LayerProperties(
        name=name, category=category, data_format=data_format, bounding_box=bounding_box,
        element_class=element_class, num_channels=num_channels, mags=mags,
        largest_segment_id=int(largest) if largest is not None else None, mags_key=key,
        raw=entry)


def _parse_mags(entry: dict[str, Any], bad: Any) -> tuple[list[MagProperties], str | None]:
    if entry.get("mags") is not None:
        key = "mags"
    elif entry.get("wkwResolutions") is not None:
        key = "wkwResolutions"
    else:
        return [], None
    items = entry[key]
    if not isinstance(items, list):
        raise bad(f"{key} must be a list")
    out: list[MagProperties] = []
    seen: set[Vec3] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise bad(f"{key}[{i}] is not an object")
        value = item.get("mag" if key == "mags" else "resolution")
        try:
            mag = parse_mag(value)
        except ValueError as exc:
            raise bad(f"{key}[{i}]: {exc}") from None
        path = item.get("path") if key == "mags" else None
        if path is not None and not isinstance(path, str):
            raise bad(f"{key}[{i}].path must be a string, not {path!r}")
        cube = item.get("cubeLength")
        if cube is not None and not _is_int(cube):
            raise bad(f"{key}[{i}].cubeLength must be an integer, not {cube!r}")
        if mag in seen:
            raise bad(f"{key} lists mag {mag_name(mag)} twice")
        seen.add(mag)
        out.append(MagProperties(mag, path, int(cube) if cube is not None else None))
    return out, key


# -- writing ----------------------------------------------------------------------------------
def write_properties(dataset_dir: str | os.PathLike[str], properties: DatasetProperties,
                     legacy: bool = False) -> str:
    """Write ``datasource-properties.json`` into ``dataset_dir`` (atomically); its path."""
    path = os.path.join(os.fspath(dataset_dir), PROPERTIES_FILE)
    os.makedirs(os.fspath(dataset_dir), exist_ok=True)
    text = json.dumps(properties.to_json(legacy), indent=2) + "\n"
    atomic.write_atomically(path, text.encode("utf-8"))
    return path


# -- helpers ----------------------------------------------------------------------------------


def _float_vec(value: Any, what: str, path: str | None) -> tuple[float, float, float]:
    if (not isinstance(value, list) or len(value) != 3
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            or not all(math.isfinite(v) and v > 0 for v in value)):
        raise PropertiesError(f"{what} must be three positive numbers [x, y, z], not {value!r}",
                              path)
    return (float(value[0]), float(value[1]), float(value[2]))


__all__ = [
    "PROPERTIES_FILE",
    "ELEMENT_CLASSES",
    "voxel_matches",
    "UNIT_NANOMETERS",
    "VoxelSize",
    "BoundingBox",
    "MagProperties",
    "LayerProperties",
    "DatasetProperties",
    "read_properties",
    "parse_properties",
    "parse_layer",
    "write_properties",
    "element_class_of",
]
