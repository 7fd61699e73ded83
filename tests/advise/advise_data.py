"""The advise tests' cases: small WKW datasets of four kinds of voxels, and helpers to
measure what real writers make of them (shared by the tests and ``conftest.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import wkw

#: Voxels per chunk side and per WKW file side of the test datasets.
CHUNK = 16
FILE = 64


def _write_wkw(root: Path, data: np.ndarray, block_type: int,
               absent: tuple[tuple[int, int, int], ...] = (), chunk: int = CHUNK) -> Path:
    """``data`` (X, Y, Z) as a WKW dataset of 64^3-voxel files of ``chunk``^3 blocks; the
    files at ``absent`` (file grid positions) are left out (sparse data)."""
    header = wkw.Header(data.dtype, block_len=chunk, file_len=FILE // chunk,
                        block_type=block_type)
    ds = wkw.Dataset.create(str(root), header)
    for fx in range(data.shape[0] // FILE):
        for fy in range(data.shape[1] // FILE):
            for fz in range(data.shape[2] // FILE):
                if (fx, fy, fz) in absent:
                    continue
                part = data[fx * FILE:(fx + 1) * FILE, fy * FILE:(fy + 1) * FILE,
                            fz * FILE:(fz + 1) * FILE]
                ds.write((fx * FILE, fy * FILE, fz * FILE), np.ascontiguousarray(part))
    ds.close()
    return root


def as_stored(data: np.ndarray, absent: tuple[tuple[int, int, int], ...]) -> np.ndarray:
    """The voxels a reader sees: zeros where a file is absent."""
    out = data.copy()
    for fx, fy, fz in absent:
        out[fx * FILE:(fx + 1) * FILE, fy * FILE:(fy + 1) * FILE, fz * FILE:(fz + 1) * FILE] = 0
    return out


def smooth_u8() -> np.ndarray:
    rng = np.random.default_rng(1)
    x, y, z = np.meshgrid(np.arange(256), np.arange(256), np.arange(128), indexing="ij",
                          sparse=True)
    field = 110 + 60 * np.sin(x / 17.0) * np.cos(y / 23.0) + 40 * np.sin(z / 11.0 + x / 31.0)
    field = field + rng.normal(0, 2.0, (256, 256, 128))
    out = np.clip(field, 0, 255).astype(np.uint8)
    out[:, 200:, :] //= 16  # a dim "background" part
    return out


def noisy_u8() -> np.ndarray:
    rng = np.random.default_rng(2)
    x, y, z = np.meshgrid(np.arange(256), np.arange(256), np.arange(128), indexing="ij",
                          sparse=True)
    tissue = (x - 110) ** 2 + (y - 130) ** 2 + (2 * (z - 64)) ** 2 < 100 ** 2
    out = np.where(tissue, rng.integers(0, 256, (256, 256, 128)),
                   rng.integers(0, 2, (256, 256, 128))).astype(np.uint8)
    out[:, :, 64:80] = 0  # chunks of zeros inside files that hold data
    return out


def segmentation_u64() -> np.ndarray:
    x, y, z = np.meshgrid(np.arange(128), np.arange(128), np.arange(64), indexing="ij",
                          sparse=True)
    a = (x + 6 * np.sin(y / 7.0)) // 13
    b = (y + 5 * np.cos(z / 5.0)) // 11
    c = (z + 4 * np.sin(x / 9.0)) // 9
    labels = (a * 1_000 + b * 37 + c * 3 + 10**12).astype(np.uint64)
    labels[:20, :30, :] = 0
    return labels


def float_f32() -> np.ndarray:
    rng = np.random.default_rng(4)
    x, y, z = np.meshgrid(np.arange(128), np.arange(128), np.arange(64), indexing="ij",
                          sparse=True)
    field = np.sin(x / 13.0) * np.cos(y / 7.0) + 0.3 * np.sin(z / 5.0)
    return (field + rng.normal(0, 0.02, (128, 128, 64))).astype(np.float32)


class Case:
    """A test dataset: its name, voxels (as read), the WKW source folder, absent files, the
    chunk side."""

    def __init__(self, name: str, data: np.ndarray, root: Path,
                 absent: tuple[tuple[int, int, int], ...], chunk: int) -> None:
        self.name = name
        self.data = data
        self.root = root
        self.absent = absent
        self.chunk = chunk


#: name -> (voxels, absent files, chunk side): the segmentation in 8^3 chunks, so that its
#: 5 % sample is a hundred chunks.
CASES = {
    "smooth": (smooth_u8, ((3, 3, 1),), CHUNK),
    "noisy": (noisy_u8, ((0, 0, 0),), CHUNK),
    "segmentation": (segmentation_u64, (), 8),
    "float": (float_f32, ((1, 1, 0),), CHUNK),
}


def tree_bytes(root: Path, skip: tuple[str, ...] = ()) -> int:
    """Bytes of every file under ``root`` but those named in ``skip``."""
    total = 0
    for folder, _, files in os.walk(root):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files if f not in skip)
    return total


def write_wkw_lz4hc(root: Path, case: Case) -> Path:
    """The case's voxels as the reference ``wkw`` writes them in LZ4HC (the same files)."""
    return _write_wkw(root, case.data, wkw.Header.BLOCK_TYPE_LZ4HC, case.absent, case.chunk)


#: Every lossless candidate the accuracy tests look at, per case (one exhaustive run each).
EXACT_SPECS: dict[str, tuple[str, ...]] = {
    "smooth": ("wkw:lz4hc:9", "zarr3+shard:zstd:3", "zarr3+shard:blosc-lz4-bitshuffle:5",
               "zarr3+shard:gzip:6", "n5:gzip:6", "precomputed:raw"),
    "noisy": ("wkw:lz4hc:9", "zarr3+shard:zstd:3", "zarr3+shard:blosc-lz4-bitshuffle:5",
              "zarr3+shard:gzip:6", "n5:gzip:6", "n5:lz4", "precomputed:gzip:6", "n5:raw",
              "precomputed+shard:raw"),
    "segmentation": ("wkw:lz4hc:9", "zarr3+shard:zstd:3", "zarr3+shard:gzip:6", "n5:gzip:6",
                     "precomputed:compressed_segmentation",
                     "zarr3+shard:blosc-lz4-shuffle:5",
                     "precomputed+shard:compressed_segmentation"),
    "float": ("wkw:lz4hc:9", "zarr3+shard:zstd:3", "zarr3+shard:gzip:6", "n5:gzip:6"),
}


def projected(report: Any, spec: str) -> int:
    """The exact projected bytes of candidate ``spec`` in an exhaustive report."""
    from viewer.core.advise import parse_spec

    target, encoding = parse_spec(spec, FILE)
    for p in report.projections:
        if p.candidate.target == target and p.candidate.encoding == encoding:
            assert p.interval == (p.projected_bytes, p.projected_bytes)  # exact
            return int(p.projected_bytes)
    raise AssertionError(f"{spec} was not measured: {report.skipped}")
