"""Neuroglancer precomputed volumes written by tensorstore's ``neuroglancer_precomputed``
driver for the tests, and gzip-compressed chunk files as CloudVolume writes them."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import numpy as np

IDENTITY = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 1, "hash": "identity",
            "minishard_bits": 2, "shard_bits": 2, "minishard_index_encoding": "raw",
            "data_encoding": "raw"}
MURMUR_GZIP = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 0,
               "hash": "murmurhash3_x86_128", "minishard_bits": 2, "shard_bits": 3,
               "minishard_index_encoding": "gzip", "data_encoding": "gzip"}

#: The extent of the tests' scale 0: not a multiple of the chunk size (16, 16, 8).
SIZE = (50, 40, 20)
#: The offset of the sharded image's scale 0 (chunk-aligned, not 0).
OFFSET = (32, 16, 8)


def spec(path: Path, scale: dict[str, Any] | None = None, scale_index: int | None = None,
         multiscale: dict[str, Any] | None = None, create: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"driver": "neuroglancer_precomputed",
                           "kvstore": {"driver": "file", "path": str(path) + "/"}}
    if multiscale is not None:
        out["multiscale_metadata"] = multiscale
    if scale is not None:
        out["scale_metadata"] = scale
    if scale_index is not None:
        out["scale_index"] = scale_index
    if create:
        out["create"] = True
    return out


def write_scale(path: Path, data: np.ndarray, *, dtype: str, kind: str = "image",
                encoding: str = "raw", chunk: tuple[int, int, int] = (16, 16, 8),
                resolution: tuple[float, float, float] = (4, 4, 40),
                offset: tuple[int, int, int] = (0, 0, 0), sharding: dict[str, Any] | None = None,
                region: tuple[slice, slice, slice] | None = None) -> None:
    """Add a scale to the volume at ``path`` (made on the first call) holding ``data``
    (``(C, X, Y, Z)``); only ``region`` (of ``data``'s own indices) is written, so that the
    chunks outside it stay absent."""
    import tensorstore as ts

    scale: dict[str, Any] = {"size": list(data.shape[1:]), "chunk_size": list(chunk),
                             "encoding": encoding, "resolution": list(resolution),
                             "voxel_offset": list(offset)}
    if sharding is not None:
        scale["sharding"] = sharding
    if encoding == "compressed_segmentation":
        scale["compressed_segmentation_block_size"] = [8, 8, 4]
    if encoding == "jpeg":
        scale["jpeg_quality"] = 80
    multi = {"type": kind, "data_type": dtype, "num_channels": int(data.shape[0])}
    t = ts.open(spec(path, scale, multiscale=multi, create=True)).result()
    xyzc = np.moveaxis(data, 0, 3)
    region = region or (slice(None),) * 3
    lo = [offset[a] + (region[a].start or 0) for a in range(3)]
    part = xyzc[region]
    t[lo[0]:lo[0] + part.shape[0], lo[1]:lo[1] + part.shape[1],
      lo[2]:lo[2] + part.shape[2]].write(part).result()


def read_scale(path: Path, index: int) -> np.ndarray:
    """Scale ``index`` as tensorstore reads it: ``(C, X, Y, Z)`` over its extent."""
    import tensorstore as ts

    t = ts.open(spec(path, scale_index=index)).result()
    return np.asfortranarray(np.moveaxis(t.read().result(), 3, 0))


def gzip_chunks(folder: Path, suffix_every: int = 2) -> list[Path]:
    """Compress every chunk file of an unsharded scale with gzip, as CloudVolume writes them:
    every ``suffix_every``-th with a ``.gz`` name (its local file store), the rest under
    their own name (what an object store holds with ``Content-Encoding: gzip``)."""
    out = []
    for k, name in enumerate(sorted(os.listdir(folder))):
        p = folder / name
        data = gzip.compress(p.read_bytes(), compresslevel=6)
        if k % suffix_every == 0:
            p.unlink()
            p = folder / (name + ".gz")
        p.write_bytes(data)
        out.append(p)
    return out


def sample(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    return rng.integers(0, min(info.max, 60000), shape, dtype=dtype, endpoint=True)


def segments(shape: tuple[int, int, int], dtype: str, seed: int) -> np.ndarray:
    """Blocky labels (few ids per compressed_segmentation block), large ids for uint64."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 6, tuple(-(-s // 4) for s in shape))
    labels = coarse.repeat(4, 0).repeat(4, 1).repeat(4, 2)[:shape[0], :shape[1], :shape[2]]
    scale = 1_000_000_007 if dtype == "uint64" else 1009
    return (labels.astype(np.uint64) * scale).astype(dtype)[None]


def downsample(data: np.ndarray, f: tuple[int, int, int]) -> np.ndarray:
    """Every ``f``-th voxel (a mag of the test data: what the second scale holds)."""
    return np.ascontiguousarray(data[:, ::f[0], ::f[1], ::f[2]])


def hand_parse_shard(path: Path, minishard_bits: int, gzip_index: bool
                     ) -> tuple[list[tuple[int, int]], dict[int, tuple[int, int, int]]]:
    """A shard file parsed here, apart from the reader: the shard index as absolute
    ``(start, end)`` per minishard, and per chunk id ``(minishard, offset, size)``."""
    import zlib

    raw = path.read_bytes()
    n = 1 << minishard_bits
    end_of_index = 16 * n
    entries = np.frombuffer(raw[:end_of_index], "<u8").reshape(n, 2)
    index = [(end_of_index + int(a), end_of_index + int(b)) for a, b in entries]
    chunks: dict[int, tuple[int, int, int]] = {}
    for m, (a, b) in enumerate(index):
        data = raw[a:b]
        if not data:
            continue
        if gzip_index:
            data = zlib.decompress(data, 31)
        arr = np.frombuffer(data, "<u8").reshape(3, -1).astype(np.int64)
        chunk_id, at = 0, end_of_index
        for k in range(arr.shape[1]):
            chunk_id += int(arr[0, k])
            at += int(arr[1, k])
            chunks[chunk_id] = (m, at, int(arr[2, k]))
            at += int(arr[2, k])
    return index, chunks


def morton_position(chunk_id: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    """The grid position of a compressed Morton code (bits of each axis interleaved while the
    axis needs them: ``(grid - 1).bit_length()``)."""
    bits = [max(g - 1, 0).bit_length() for g in grid]
    pos, j = [0, 0, 0], 0
    for i in range(max(bits)):
        for d in range(3):
            if i < bits[d]:
                pos[d] |= ((chunk_id >> j) & 1) << i
                j += 1
    return (pos[0], pos[1], pos[2])
