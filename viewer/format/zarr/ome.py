"""OME-Zarr (NGFF) 0.4 and 0.5 ``multiscales`` metadata: the levels of a multiscale image, its
axes (names, types, units) and each level's ``coordinateTransformations`` scale.

0.4 keeps it in a zarr v2 group's ``.zattrs`` (``{"multiscales": [...]}``), 0.5 in a zarr v3
group's ``zarr.json`` attributes under ``"ome"`` (``{"ome": {"version", "multiscales"}}``).
webKnossos writes the same for its zarr layers (``c, x, y, z`` axes, levels named by mag).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from viewer.format.dataset import ChannelInfo
from viewer.format.errors import MetadataError


@dataclass
class Level:
    """One level: its array's path (relative to the group) and its scale per axis."""

    path: str
    scale: list[float] | None


@dataclass
class Multiscale:
    version: str
    name: str | None
    axis_names: list[str] | None
    axis_types: list[str | None] | None
    axis_units: list[str | None] | None
    levels: list[Level]

    def level(self, path: str) -> Level | None:
        for lv in self.levels:
            if lv.path.strip("/") == path.strip("/"):
                return lv
        return None


def multiscales_of(attributes: dict[str, Any]) -> tuple[list[Any], str] | None:
    """The raw ``multiscales`` list of a group's attributes and the OME version, or None."""
    ome = attributes.get("ome")
    if isinstance(ome, dict) and isinstance(ome.get("multiscales"), list):
        return ome["multiscales"], str(ome.get("version", "0.5"))
    ms = attributes.get("multiscales")
    if isinstance(ms, list):
        version = ms[0].get("version", "0.4") if ms and isinstance(ms[0], dict) else "0.4"
        return ms, str(version)
    return None


def _scale(transforms: Any, n: int | None, where: str) -> list[float] | None:
    if transforms is None:
        return None
    if not isinstance(transforms, list):
        raise MetadataError("coordinateTransformations must be a list", where)
    scale: list[float] | None = None
    for t in transforms:
        if not isinstance(t, dict):
            raise MetadataError("a coordinateTransformation must be an object", where)
        if t.get("type") == "scale":
            s = t.get("scale")
            if not isinstance(s, list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                    for v in s) or (n is not None and len(s) != n):
                raise MetadataError(f"scale must be a list of {n or ''} positive numbers, not "
                                    f"{s!r}"[:200], where)
            scale = [float(v) for v in s] if scale is None else \
                [a * float(b) for a, b in zip(scale, s, strict=True)]
    return scale


def omero_channels(attributes: dict[str, Any]) -> list[ChannelInfo]:
    """The ``omero`` channels of an image group's attributes (0.4: beside ``multiscales``;
    0.5: inside ``ome``): label, colour, window and ``active`` per channel; malformed
    entries give what they can (a transitional, loosely specified block)."""
    ome = attributes.get("ome")
    omero = (ome if isinstance(ome, dict) else {}).get("omero", attributes.get("omero"))
    channels = omero.get("channels") if isinstance(omero, dict) else None
    if not isinstance(channels, list):
        return []
    out: list[ChannelInfo] = []
    for ch in channels[:1024]:
        if not isinstance(ch, dict):
            out.append(ChannelInfo())
            continue
        label = ch.get("label")
        color = ch.get("color")
        colour = f"#{color.upper()}" if isinstance(color, str) and len(color) == 6 and all(
            c in "0123456789abcdefABCDEF" for c in color) else None
        window = ch.get("window")
        win: tuple[float, float] | None = None
        if isinstance(window, dict):
            lo, hi = window.get("start"), window.get("end")
            if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) \
                    and not isinstance(lo, bool) and not isinstance(hi, bool) and hi > lo:
                win = (float(lo), float(hi))
        active = ch.get("active")
        out.append(ChannelInfo(label if isinstance(label, str) else None, colour, win,
                               active if isinstance(active, bool) else True))
    return out


def parse_multiscale(raw: list[Any], version: str, where: str) -> Multiscale:
    """The first multiscale of a ``multiscales`` list; a ``MetadataError`` when malformed."""
    if not raw or not isinstance(raw[0], dict):
        raise MetadataError("multiscales must be a non-empty list of objects", where)
    ms = raw[0]
    names: list[str] | None = None
    types: list[str | None] | None = None
    units: list[str | None] | None = None
    axes = ms.get("axes")
    if axes is not None:
        if not isinstance(axes, list) or not axes:
            raise MetadataError("multiscales axes must be a non-empty list", where)
        names, types, units = [], [], []
        for a in axes:
            if isinstance(a, str):  # 0.3
                names.append(a)
                types.append(None)
                units.append(None)
            elif isinstance(a, dict) and isinstance(a.get("name"), str):
                names.append(a["name"])
                t, u = a.get("type"), a.get("unit")
                types.append(t if isinstance(t, str) else None)
                units.append(u if isinstance(u, str) else None)
            else:
                raise MetadataError(f"a multiscales axis must be a name or an object with a "
                                    f"name, not {a!r}"[:200], where)
    n = len(names) if names is not None else None
    datasets = ms.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        raise MetadataError("multiscales datasets must be a non-empty list", where)
    global_scale = _scale(ms.get("coordinateTransformations"), n, where)
    levels = []
    for d in datasets[:64]:
        if not isinstance(d, dict) or not isinstance(d.get("path"), str):
            raise MetadataError(f"a multiscales dataset must have a string path, not "
                                f"{d!r}"[:200], where)
        scale = _scale(d.get("coordinateTransformations"), n, where)
        if scale is not None and global_scale is not None:
            scale = [a * b for a, b in zip(scale, global_scale, strict=True)]
        levels.append(Level(d["path"], scale))
    name = ms.get("name")
    return Multiscale(version, name if isinstance(name, str) else None, names, types, units,
                      levels)


__all__ = ["Multiscale", "Level", "multiscales_of", "parse_multiscale", "omero_channels"]
