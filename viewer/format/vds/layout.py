"""The ``VolumeDataLayout`` JSON of a VDS: axes, channels and the brick layout."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from viewer.format.errors import MetadataError, UnsupportedFormatError

#: OpenVDS channel formats (``VolumeDataFormat``) as numpy dtypes (1-bit is not read).
FORMATS: dict[str, np.dtype[Any]] = {"Format_U8": np.dtype("<u1"), "Format_U16": np.dtype("<u2"),
           "Format_R32": np.dtype("<f4"), "Format_U32": np.dtype("<u4"),
           "Format_R64": np.dtype("<f8"), "Format_U64": np.dtype("<u8")}
FORMAT_CODES = {"Format_1Bit": 0, "Format_U8": 1, "Format_U16": 2, "Format_R32": 3,
                "Format_U32": 4, "Format_R64": 5, "Format_U64": 6}


@dataclass(frozen=True)
class Axis:
    name: str
    unit: str
    samples: int
    coordinate_min: float
    coordinate_max: float


@dataclass(frozen=True)
class Channel:
    name: str
    unit: str
    format: str
    components: int
    value_range: tuple[float, float]
    no_value: float
    use_no_value: bool
    integer_scale: float
    integer_offset: float

    @property
    def dtype(self) -> np.dtype[Any]:
        return FORMATS[self.format]


@dataclass(frozen=True)
class Layout:
    axes: list[Axis]
    channels: list[Channel]
    brick_size: int
    negative_margin: int
    positive_margin: int
    lod_levels: int
    brick_2d_multiplier: int
    metadata: Any
    #: The dimension the LODs keep at full resolution (``forceFullResolutionDimension``), or
    #: None when every dimension is halved per LOD.
    full_resolution_dimension: int | None = None

    @property
    def interior(self) -> int:
        """Voxels a brick holds apart from its margins (the chunk grid's step)."""
        return self.brick_size - self.negative_margin - self.positive_margin


def _get(doc: dict[str, Any], key: str, kind: type | tuple[type, ...], path: str,
         where: str) -> Any:
    if key not in doc:
        raise MetadataError(f"layout JSON: {where} has no {key!r}", path)
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise MetadataError(f"layout JSON: {where}.{key} is {value!r}", path)
    return value


def _enum_int(value: str, prefix: str, path: str) -> int:
    m = re.fullmatch(prefix + r"_(\d+)", value)
    if value == f"{prefix}_None":
        return 0
    if not m:
        raise MetadataError(f"layout JSON: {value!r} is not a {prefix} value", path)
    return int(m.group(1))


def parse_layout(raw: bytes, path: str) -> Layout:
    """The layout (``MetadataError`` for JSON that does not parse or lacks what is needed)."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataError(f"the VolumeDataLayout JSON does not parse: {exc}", path) from None
    except RecursionError:
        raise MetadataError("the VolumeDataLayout JSON is nested too deeply", path) from None
    if not isinstance(doc, dict):
        raise MetadataError("the VolumeDataLayout JSON is not an object", path)
    axes_doc = _get(doc, "axisDescriptors", list, path, "layout")
    if not 1 <= len(axes_doc) <= 6:
        raise MetadataError(f"layout JSON: {len(axes_doc)} axes (a VDS has 1 to 6)", path)
    axes = []
    for i, a in enumerate(axes_doc):
        if not isinstance(a, dict):
            raise MetadataError(f"layout JSON: axis {i} is not an object", path)
        n = _get(a, "numSamples", int, path, f"axis {i}")
        if not 1 <= n <= 1 << 31:
            raise MetadataError(f"layout JSON: axis {i} has {n} samples", path)
        axes.append(Axis(str(a.get("name", f"dim{i}")), str(a.get("unit", "")), n,
                         float(a.get("coordinateMin", 0.0)), float(a.get("coordinateMax", 0.0))))
    chans_doc = _get(doc, "channelDescriptors", list, path, "layout")
    if not chans_doc:
        raise MetadataError("layout JSON: no channel", path)
    channels = []
    for i, c in enumerate(chans_doc):
        if not isinstance(c, dict):
            raise MetadataError(f"layout JSON: channel {i} is not an object", path)
        fmt = _get(c, "format", str, path, f"channel {i}")
        if fmt not in FORMAT_CODES:
            raise MetadataError(f"layout JSON: channel {i} has format {fmt!r}", path)
        comps = _enum_int(str(c.get("components", "Components_1")), "Components", path)
        vr = c.get("valueRange", [0.0, 0.0])
        if not (isinstance(vr, list) and len(vr) == 2
                and all(isinstance(v, (int, float)) for v in vr)):
            raise MetadataError(f"layout JSON: channel {i} valueRange is {vr!r}", path)
        channels.append(Channel(str(c.get("name", f"channel{i}")), str(c.get("unit", "")), fmt,
                                comps, (float(vr[0]), float(vr[1])),
                                float(c.get("noValue", 0.0) or 0.0),
                                bool(c.get("useNoValue", False)),
                                float(c.get("integerScale", 1.0) or 1.0),
                                float(c.get("integerOffset", 0.0) or 0.0)))
    ld = _get(doc, "layoutDescriptor", dict, path, "layout")
    brick = _enum_int(_get(ld, "brickSize", str, path, "layoutDescriptor"), "BrickSize", path)
    neg = _get(ld, "negativeMargin", int, path, "layoutDescriptor")
    pos = _get(ld, "positiveMargin", int, path, "layoutDescriptor")
    lods = _enum_int(str(ld.get("lodLevels", "LODLevels_None")), "LODLevels", path)
    mult = int(ld.get("brickSize2DMultiplier", 4) or 4)
    largest = 1024 if len(axes) >= 3 else 4096
    if not (2 <= brick <= largest and neg >= 0 and pos >= 0 and brick - neg - pos >= 1
            and 0 <= lods <= 16):
        raise MetadataError(f"layout JSON: brick {brick} with margins {neg}/{pos} and {lods} "
                            "LOD levels", path)
    full = ld.get("fullResolutionDimension", -1)
    full_dim = full if ld.get("forceFullResolutionDimension") is True and isinstance(full, int) \
        and 0 <= full < len(axes) else None
    return Layout(axes, channels, brick, neg, pos, lods, mult, doc.get("metadata"), full_dim)


def check_primary(layout: Layout, path: str) -> Channel:
    """The primary channel, if this program reads its format."""
    ch = layout.channels[0]
    if ch.format not in FORMATS:
        raise UnsupportedFormatError(f"primary channel {ch.name!r} has format {ch.format} "
                                     "(read: U8, U16, U32, U64, R32, R64)", path)
    if ch.components != 1:
        raise UnsupportedFormatError(f"primary channel {ch.name!r} has {ch.components} "
                                     "components per sample (read: 1)", path)
    return ch


__all__ = ["Layout", "Axis", "Channel", "parse_layout", "check_primary", "FORMATS",
           "FORMAT_CODES"]
