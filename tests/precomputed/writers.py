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
