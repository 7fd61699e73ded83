"""A storage unit's header, for people: the inspector's Header tab.

Built from what every format offers (``viewer.format``): the volume's header
(``Volume.info().header``, e.g. WKW's header.wkw) and the unit's own (``StorageUnit.describe()``,
a ``viewer.format.description.UnitDescription``: its fields, raw header bytes, the fields as
stored with their byte ranges, derived geometry).  Without ``header_fields`` every scalar
field is shown as one.  A key that the volume's header and the unit's fields both hold (with
``header_fields``: that a field concerns) must agree: a difference is shown, and is a problem
of the unit (``differences`` / ``difference_problem``).

A unit that does not open is shown with its error and, for a local file, its first bytes.
Qt-free; any thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from viewer.core.inspect.chunks import UnitTable
from viewer.format import DatasetLayoutError, FormatError, Volume
from viewer.format.description import DISPLAY_KEYS, HeaderField, UnitDescription

#: Bytes of a unit that does not open shown as its raw start.
RAW_START_BYTES = 16


@dataclass(frozen=True)
class HeaderReport:
    """What the inspector shows of one unit's header.

    ``raw``: the header bytes as stored (empty when the format gives none and the unit
    opened).  ``fields``: the unit's own header fields.  ``geometry``: ``(name, value)`` rows,
    the chunk geometry every format has, then the format's derived ones.  ``differences``:
    field -> ``"volume value vs unit value"``.  ``error``: why the unit did not open."""

    path: str
    raw: bytes
    fields: tuple[HeaderField, ...]
    geometry: tuple[tuple[str, str], ...]
    error: FormatError | None
    size: int | None
    differences: dict[str, str] = field(default_factory=dict)

    @property
    def hex(self) -> str:
        """The raw header bytes as hex pairs, space-separated."""
        return self.raw.hex(" ")

    @property
    def marked_fields(self) -> set[str]:
        """Names of the fields that a difference concerns (highlighted)."""
        marked = set()
        for f in self.fields:
            if f.name in self.differences or set(f.concerns) & set(self.differences):
                marked.add(f.name)
        return marked


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def differences(volume_header: Mapping[str, Any], description: UnitDescription
                ) -> dict[str, str]:
    """Keys that the volume's header and a unit's fields both hold, with different values:
    key -> ``"volume vs unit"``.  When the description lists ``header_fields``, only the keys
    they ``concern`` must agree (a unit may differ legitimately in others, e.g. where its data
    start)."""
    listed = description.header_fields
    keys = None if listed is None else {c for f in listed for c in f.concerns}
    fields = description.fields
    out: dict[str, str] = {}
    for key, a in volume_header.items():
        if key in DISPLAY_KEYS or key not in fields or (keys is not None and key not in keys):
            continue
        b = fields[key]
        if _scalar(a) and _scalar(b) and str(a) != str(b):
            out[key] = f"{a} vs {b}"
    return out


def difference_problem(volume_header: Mapping[str, Any], description: UnitDescription,
                       path: str) -> FormatError | None:
    """The unit's disagreement with the volume's header as a problem (None: they agree)."""
    diffs = differences(volume_header, description)
    if not diffs:
        return None
    text = "; ".join(f"{k} {v}" for k, v in diffs.items())
    return DatasetLayoutError(f"unit header differs from the volume's (volume vs unit: {text})",
                              path, offset=0)


def _fields(description: UnitDescription) -> tuple[HeaderField, ...]:
    if description.header_fields is not None:
        return description.header_fields
    return tuple(HeaderField(str(k), None, None, v, "") for k, v in description.fields.items()
                 if _scalar(v))


def _raw_start(path: str) -> bytes:
    if "://" in path or not os.path.isfile(path):
        return b""
    try:
        with open(path, "rb") as fh:
            return fh.read(RAW_START_BYTES)
    except OSError:
        return b""


def geometry(volume: Volume, table: UnitTable | None) -> list[tuple[str, str]]:
    """The chunk geometry every format has, as ``(name, value)`` rows."""
    c, u = volume.chunk_shape, volume.unit_shape
    rows = [
        ("format", f"{volume.format}"),
        ("chunk shape", f"{c[0]} x {c[1]} x {c[2]} voxels"),
        ("chunks per unit", f"{u[0]} x {u[1]} x {u[2]} = {u[0] * u[1] * u[2]:,}"),
        ("chunk bytes (decoded)", f"{volume.chunk_nbytes:,}"),
    ]
    if table is not None:
        stored = int(table.stored.sum())
        rows.append(("chunks stored", f"{stored:,} of {table.num_chunks:,}"))
        rows.append(("unit size", f"{table.size:,} B"))
    return rows


def header_report(volume: Volume, path: str, table: UnitTable | None,
                  error: FormatError | None = None,
                  volume_header: Mapping[str, Any] | None = None) -> HeaderReport:
    """The Header tab of the unit at ``path``: from its ``table`` (its ``describe()``), or,
    when it did not open, its ``error`` and first bytes.  Never raises a FormatError."""
    if volume_header is None:
        try:
            volume_header = volume.info().header
        except FormatError:
            volume_header = {}
    rows = geometry(volume, table)
    if table is None:
        raw = _raw_start(path)
        size: int | None
        try:
            size = os.path.getsize(path) if "://" not in path else None
        except OSError:
            size = None
        return HeaderReport(path, raw, (), tuple(rows), error, size)
    desc = table.description
    rows.extend(desc.derived)
    raw = desc.raw_header
    return HeaderReport(table.path, raw, _fields(desc), tuple(rows), error, table.size,
                        differences(volume_header, desc))


__all__ = ["HeaderField", "HeaderReport", "header_report", "differences",
           "difference_problem", "geometry", "DISPLAY_KEYS", "RAW_START_BYTES"]
