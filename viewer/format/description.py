"""What a storage unit says of itself: ``StorageUnit.describe()`` as typed values.

A format knows its unit's header; the inspector's Header tab, ``info``'s unit rows and the
scan show it without knowing the format.  ``UnitDescription`` holds:

- ``fields``: the header's entries as the format names them (name -> value): every entry
  but the display ones below;
- ``compression``: the unit's compression as the format names it (None: it does not say);
- ``raw_header``: the unit's header bytes as stored (empty: the format gives none);
- ``header_fields``: each field as stored (``HeaderField``: byte range, raw value, meaning and
  the ``fields`` keys it encodes that must agree with the volume's header), or None when the
  format lists none (then every scalar entry of ``fields`` is shown as a field);
- ``derived``: ``(name, value)`` rows of geometry computed from the header.

A format writes its ``describe`` as a function returning a mapping with these keys (and any
others, which become ``fields``) and wraps it with ``described``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

#: Keys of a format's mapping that carry display structure, not fields.
DISPLAY_KEYS = ("raw_header", "header_fields", "derived")

U = TypeVar("U")


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

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "first_byte": self.first_byte, "length": self.length,
                "raw": self.raw, "meaning": self.meaning, "concerns": list(self.concerns)}


@dataclass(frozen=True)
class UnitDescription:
    """A storage unit's own header (see the module docstring)."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    compression: str | None = None
    raw_header: bytes = b""
    header_fields: tuple[HeaderField, ...] | None = None
    derived: tuple[tuple[str, str], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        """``fields[key]``, else ``default``."""
        return self.fields.get(key, default)

    @classmethod
    def of(cls, given: Mapping[str, Any]) -> UnitDescription:
        """From a format's mapping (see the module docstring)."""
        raw = given.get("raw_header")
        raw_bytes = b""
        if isinstance(raw, str):
            try:
                raw_bytes = bytes.fromhex(raw.replace(" ", ""))
            except ValueError:
                raw_bytes = b""
        elif isinstance(raw, (bytes, bytearray, memoryview)):
            raw_bytes = bytes(raw)
        listed = given.get("header_fields")
        header_fields: tuple[HeaderField, ...] | None = None
        if isinstance(listed, (list, tuple)):
            header_fields = tuple(
                HeaderField(str(f.get("name", "")), f.get("first_byte"), f.get("length"),
                            f.get("raw"), str(f.get("meaning", "")),
                            tuple(str(c) for c in f.get("concerns", ())))
                for f in listed if isinstance(f, Mapping))
        derived = given.get("derived")
        rows = tuple((str(name), str(value)) for name, value in derived) \
            if isinstance(derived, (list, tuple)) else ()
        compression = given.get("compression")
        return cls({k: v for k, v in given.items() if k not in DISPLAY_KEYS},
                   str(compression) if compression is not None else None,
                   raw_bytes, header_fields, rows)

    def as_dict(self) -> dict[str, Any]:
        """Everything as one JSON-ready mapping (the format's keys)."""
        out = dict(self.fields)
        if self.raw_header:
            out["raw_header"] = self.raw_header.hex(" ")
        if self.header_fields is not None:
            out["header_fields"] = [f.as_dict() for f in self.header_fields]
        if self.derived:
            out["derived"] = [list(row) for row in self.derived]
        return out


def described(method: Callable[[U], Mapping[str, Any]]) -> Callable[[U], UnitDescription]:
    """A format's ``describe`` written as a mapping, made to return a ``UnitDescription``."""
    @functools.wraps(method)
    def describe(self: U) -> UnitDescription:
        return UnitDescription.of(method(self))
    return describe


__all__ = ["UnitDescription", "HeaderField", "described", "DISPLAY_KEYS"]
