"""Decoding JSON metadata files (webKnossos properties; later N5 attributes, zarr.json) with
bounds: a file nested deeper than ``MAX_DEPTH`` or larger than ``MAX_BYTES`` is refused with
the caller's ``FormatError`` subclass, before the decoder's own recursion can fail with an
untyped ``RecursionError`` (a file nested 1,000 deep did) or a huge file fills memory."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from viewer.format.errors import FormatError

#: Deepest nesting of arrays and objects accepted (real metadata files nest 4-6 deep).
MAX_DEPTH = 64
#: Largest metadata file accepted.
MAX_BYTES = 64 << 20

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of ``[`` / ``{`` in JSON text ``raw`` (brackets inside strings do
    not count).  Linear, in compiled code."""
    bare = _STRING.sub(b'""', raw)
    b = np.frombuffer(bare, dtype=np.uint8)
    if not b.size:
        return 0
    step = ((b == ord("[")) | (b == ord("{"))).astype(np.int32) \
        - ((b == ord("]")) | (b == ord("}"))).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


def loads(raw: bytes, path: str | None, error: type[FormatError] = FormatError,
          max_depth: int = MAX_DEPTH) -> Any:
    """Decode the UTF-8 JSON document ``raw`` of file ``path``; anything wrong with it (not
    UTF-8, not JSON, too deep, too large) is an ``error`` naming the file (and the byte offset
    where JSON's decoder stopped)."""
    if len(raw) > MAX_BYTES:
        raise error(f"{len(raw)} bytes: larger than any metadata file this program reads "
                    f"({MAX_BYTES} bytes)", path)
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise error(f"JSON nested {depth} levels deep (at most {max_depth} are read)", path)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        offset = getattr(exc, "pos", None)
        raise error(f"not valid JSON: {exc}", path,
                    offset=offset if isinstance(offset, int) else None) from None
    except RecursionError:  # deeper than the interpreter allows, below max_depth: never
        raise error("JSON nested too deep to decode", path) from None
