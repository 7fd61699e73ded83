"""Which candidates to try: ``--codecs`` as written, or a sensible default set for the voxel
type and the layer's category.

A candidate is written ``FORMAT[+shard]:ENCODING[:LEVEL]``, e.g. ``wkw:lz4hc:9``,
``zarr3+shard:zstd:5``, ``zarr3+shard:blosc-lz4-bitshuffle:5``, ``n5:gzip:6``, ``n5:lz4``,
``precomputed:compressed_segmentation``, ``precomputed+shard:compressed_segmentation``,
``precomputed:jpeg:75``, ``zarr3:zfp-rate:8`` (``zfp-precision:16``, ``zfp-accuracy:0.001``).
WKW is always files of blocks; ``+shard`` shards a zarr3 array or a precomputed scale.  A
segmentation layer is never offered a lossy encoding, even when asked for one.  Qt-free;
pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from viewer.core.advise.codecs import Encoding, EncodingUnavailable
from viewer.core.advise.targets import DEFAULT_SHARD_VX, FORMATS, Candidate, TargetFormat

Vec3 = tuple[int, int, int]

#: Level used when a candidate names none.
DEFAULT_LEVELS: dict[str, float] = {"lz4hc": 9, "zstd": 3, "gzip": 6, "blosc": 5, "jpeg": 75}
ZFP_DEFAULTS: dict[str, float] = {"rate": 8, "precision": 16, "accuracy": 1e-3}

_UINT8 = ["wkw:lz4hc:9", "wkw:lz4", "zarr3+shard:zstd:3", "zarr3+shard:zstd:5",
          "zarr3+shard:blosc-zstd-bitshuffle:5", "zarr3+shard:gzip:6", "n5:gzip:6",
          "precomputed:gzip:6", "precomputed:jpeg:75"]
_SEGMENTATION = ["wkw:lz4hc:9", "zarr3+shard:zstd:3", "zarr3+shard:zstd:5",
                 "zarr3+shard:blosc-lz4-shuffle:5", "n5:gzip:6",
                 "precomputed:compressed_segmentation",
                 "precomputed+shard:compressed_segmentation", "precomputed:gzip:6"]
_INTEGER = ["wkw:lz4hc:9", "zarr3+shard:zstd:3", "zarr3+shard:zstd:5",
            "zarr3+shard:blosc-zstd-shuffle:5", "zarr3+shard:blosc-lz4-bitshuffle:5",
            "n5:gzip:6", "precomputed:gzip:6"]
_FLOAT = ["wkw:lz4hc:9", "zarr3+shard:zstd:3", "zarr3+shard:blosc-zstd-shuffle:5",
          "n5:gzip:6", "zarr3+shard:zfp-rate:8", "zarr3+shard:zfp-precision:16",
          "zarr3+shard:zfp-accuracy:0.001"]


class CandidateError(ValueError):
    """A ``--codecs`` entry that does not parse (bad input: exit 2)."""


@dataclass(frozen=True)
class Skipped:
    """A candidate left out, and why (a format that cannot store it, a missing library, a
    lossy encoding of a segmentation)."""

    label: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"candidate": self.label, "why": self.why}


def default_specs(dtype: np.dtype[Any], segmentation: bool) -> list[str]:
    """The default candidates (as ``--codecs`` would write them) for this voxel type."""
    if segmentation:
        return list(_SEGMENTATION)
    if dtype.kind == "f":
        return list(_FLOAT)
    if dtype == np.uint8:
        return list(_UINT8)
    return list(_INTEGER)


def parse_spec(text: str, shard_vx: int = DEFAULT_SHARD_VX) -> tuple[TargetFormat, Encoding]:
    """One ``FORMAT[+shard]:ENCODING[:LEVEL]``; ``CandidateError`` when it does not parse."""
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise CandidateError(f"a candidate is FORMAT[+shard]:ENCODING[:LEVEL], not {text!r}")
    fmt, _, shard = parts[0].lower().partition("+")
    if fmt not in FORMATS:
        raise CandidateError(f"unknown format {fmt!r} in {text!r} (one of "
                             f"{', '.join(FORMATS)})")
    if shard not in ("", "shard") or (shard and fmt not in ("zarr3", "precomputed")):
        raise CandidateError(f"{text!r}: only zarr3 and precomputed take +shard (WKW is always "
                             "files of blocks)")
    words = parts[1].lower().split("-")
    name, options = words[0], words[1:]
    level: float | None = None
    if len(parts) == 3:
        try:
            level = float(parts[2])
        except ValueError:
            raise CandidateError(f"{text!r}: the level must be a number") from None
    opts: list[tuple[str, str]] = []
    if name == "blosc":
        if len(options) != 2 or options[0] not in ("lz4", "lz4hc", "zstd", "zlib", "blosclz") \
                or options[1] not in ("noshuffle", "shuffle", "bitshuffle"):
            raise CandidateError(f"{text!r}: blosc is written blosc-CNAME-SHUFFLE, e.g. "
                                 "blosc-lz4-bitshuffle")
        opts = [("cname", options[0]), ("shuffle", options[1])]
    elif name == "zfp":
        if len(options) != 1 or options[0] not in ZFP_DEFAULTS:
            raise CandidateError(f"{text!r}: zfp is written zfp-rate, zfp-precision or "
                                 "zfp-accuracy")
        opts = [("mode", options[0])]
        level = ZFP_DEFAULTS[options[0]] if level is None else level
    elif options:
        raise CandidateError(f"{text!r}: {name} takes no options")
    if fmt == "n5" and name == "lz4":
        opts = [("framing", "lz4java")]
    if name not in FORMATS[fmt]:
        raise CandidateError(f"{text!r}: {fmt} has no {name} encoding (it writes "
                             f"{', '.join(FORMATS[fmt])})")
    if level is None:
        level = DEFAULT_LEVELS.get(name)
    if name == "lz4" or name == "raw" or name == "compressed_segmentation":
        level = None
    unit = shard_vx if fmt == "wkw" or shard else 0
    return TargetFormat(fmt, unit), Encoding(name, level, tuple(opts))


def candidates(specs: Sequence[str], chunk_shapes: Sequence[Vec3], dtype: np.dtype[Any],
               channels: int, segmentation: bool, shard_vx: int = DEFAULT_SHARD_VX
               ) -> tuple[list[Candidate], list[Skipped]]:
    """Every spec at every chunk shape that its format can store, and the ones left out."""
    out: list[Candidate] = []
    skipped: list[Skipped] = []
    seen: set[Candidate] = set()
    parsed = [parse_spec(s, shard_vx) for s in specs]
    for shape in chunk_shapes:
        for target, enc in parsed:
            cand = Candidate(target, enc, shape)
            if cand in seen:
                continue
            seen.add(cand)
            why = target.refuses(enc, dtype, channels, shape)
            if why is None and segmentation and not enc.lossless:
                why = "a segmentation is never offered a lossy encoding"
            if why is None:
                try:
                    enc.check()
                except EncodingUnavailable as exc:
                    why = str(exc)
            if why is not None:
                skipped.append(Skipped(cand.label, why))
            else:
                out.append(cand)
    return out, skipped


def parse_chunk_shapes(text: str) -> list[Vec3]:
    """``--chunk 32,64`` (cubes) or ``--chunk 64x64x32``; ``CandidateError`` otherwise."""
    shapes: list[Vec3] = []
    for word in text.split(","):
        word = word.strip().lower()
        try:
            sides = [int(v) for v in word.split("x")]
        except ValueError:
            raise CandidateError(f"--chunk wants sides like 32,64 or 64x64x32, not "
                                 f"{text!r}") from None
        if len(sides) == 1:
            sides = sides * 3
        if len(sides) != 3 or min(sides) < 1 or max(sides) > 4096:
            raise CandidateError(f"--chunk wants sides between 1 and 4096, not {word!r}")
        shapes.append((sides[0], sides[1], sides[2]))
    return shapes


__all__ = ["default_specs", "parse_spec", "candidates", "parse_chunk_shapes", "Skipped",
           "CandidateError", "DEFAULT_LEVELS"]
