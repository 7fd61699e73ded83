"""A storage unit's header, for people: the inspector's Header tab.

Built from what every format offers (``viewer.format``): the volume's header
(``Volume.info().header``, e.g. WKW's header.wkw) and the unit's own (``StorageUnit.describe()``).
A format may put these keys in ``describe()`` for a richer display:

- ``raw_header``: the unit's header bytes as stored, hex pairs (WKW: its 16 bytes);
- ``header_fields``: ``[{name, first_byte, length, raw, meaning, concerns}]``, each field as
  stored (``concerns``: the ``describe`` keys the field encodes that must agree with the
  volume's header; a difference marks the field);
- ``derived``: ``[(name, value)]``, geometry computed from the header.

Without them every other scalar ``describe()`` entry is a field.  A key that the volume's
header and the unit's description both hold (with ``header_fields``: that a field concerns)
must agree: a difference is shown, and is a problem of the unit (``differences`` /
``difference_problem``).

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

#: Bytes of a unit that does not open shown as its raw start.
RAW_START_BYTES = 16
#: ``describe()`` keys that carry display structure, not fields.
DISPLAY_KEYS = ("raw_header", "header_fields", "derived")


@dataclass(frozen=True)
class HeaderField:
    """One header field as stored: its byte range, the raw value and what it means."""

    name: str
    first_byte: int | None
    length: int | None
    raw: Any
    meaning: str
    concerns: tuple[str, ...] = ()

    @property
    def bytes_text(self) -> str:
        if self.first_byte is None or self.length is None:
            return ""
        return f"{self.first_byte}..{self.first_byte + self.length - 1}"


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


def differences(volume_header: Mapping[str, Any], description: Mapping[str, Any]
                ) -> dict[str, str]:
    """Keys that the volume's header and a unit's description both hold, with different
    values: key -> ``"volume vs unit"``.  When the description lists ``header_fields``, only
    the keys they ``concern`` must agree (a unit may differ legitimately in others, e.g. where
    its data start)."""
    fields = description.get("header_fields")
    keys: set[str] | None = None
    if isinstance(fields, list):
        keys = {str(c) for f in fields if isinstance(f, Mapping) for c in f.get("concerns", ())}
    out: dict[str, str] = {}
    for key, a in volume_header.items():
        if key in DISPLAY_KEYS or key not in description or (keys is not None
                                                               and key not in keys):
            continue
        b = description[key]
        if _scalar(a) and _scalar(b) and str(a) != str(b):
            out[key] = f"{a} vs {b}"
    return out


def difference_problem(volume_header: Mapping[str, Any], description: Mapping[str, Any],
                       path: str) -> FormatError | None:
    """The unit's disagreement with the volume's header as a problem (None: they agree)."""
    diffs = differences(volume_header, description)
    if not diffs:
        return None
    text = "; ".join(f"{k} {v}" for k, v in diffs.items())
    return DatasetLayoutError(f"unit header differs from the volume's (volume vs unit: {text})",
                              path, offset=0)


def _fields(description: Mapping[str, Any]) -> tuple[HeaderField, ...]:
    given = description.get("header_fields")
    if isinstance(given, list):
        out = []
        for f in given:
            if isinstance(f, Mapping):
                out.append(HeaderField(str(f.get("name", "")), f.get("first_byte"),
                                       f.get("length"), f.get("raw"),
                                       str(f.get("meaning", "")),
                                       tuple(str(c) for c in f.get("concerns", ()))))
        return tuple(out)
    return tuple(HeaderField(str(k), None, None, v, "") for k, v in description.items()
                 if k not in DISPLAY_KEYS and _scalar(v))


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
    raw_hex = desc.get("raw_header")
    raw = b""
    if isinstance(raw_hex, str):
        try:
            raw = bytes.fromhex(raw_hex.replace(" ", ""))
        except ValueError:
            raw = b""
    elif isinstance(raw_hex, (bytes, bytearray)):
        raw = bytes(raw_hex)
    derived = desc.get("derived")
    if isinstance(derived, list):
        rows.extend((str(name), str(value)) for name, value in derived)
    return HeaderReport(table.path, raw, _fields(desc), tuple(rows), error, table.size,
                        differences(volume_header, desc))


__all__ = ["HeaderField", "HeaderReport", "header_report", "differences",
           "difference_problem", "geometry", "DISPLAY_KEYS", "RAW_START_BYTES"]
