"""Small real dataset pairs on disk for the comparison tests (block_len 8, file_len 4: files of
32^3 voxels), written by the project's writer and, where it matters, by the reference ``wkw``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.format import wkw

BLOCK_LEN = 8
FILE_LEN = 4
SIDE = BLOCK_LEN * FILE_LEN


def volume(shape: tuple[int, int, int] = (64, 64, 32), dtype: Any = np.uint8,
           seed: int = 0) -> np.ndarray:
    """Noisy, textured data: every block is non-constant and unlike its neighbours."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    top = min(info.max, 250) if info is not None else 250
    return rng.integers(1, top, size=shape).astype(dtype)


def write_project(path: Path, data: np.ndarray, block_type: int = wkw.BLOCK_TYPE_RAW,
                  channels: int = 1) -> Path:
    """Write ``data`` ((X, Y, Z) or (C, X, Y, Z)) with the project's writer."""
    header = wkw.Header(data.dtype, num_channels=channels, block_len=BLOCK_LEN,
                        file_len=FILE_LEN, block_type=block_type)
    with wkw.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), data)
    return path


def write_reference(path: Path, data: np.ndarray,
                    block_type: int = wkw.BLOCK_TYPE_LZ4HC) -> Path:
    """Write ``data`` (X, Y, Z) with the reference ``wkw`` package (whole files)."""
    import wkw as ref

    header = ref.Header(data.dtype.type, block_len=BLOCK_LEN, file_len=FILE_LEN,
                        block_type=block_type)
    with ref.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), np.asfortranarray(data))
    return path


@pytest.fixture
def make(tmp_path: Path) -> Callable[..., Path]:
    """``make(name, data, block_type=..., writer="project"|"reference")`` -> dataset path."""

    def _make(name: str, data: np.ndarray, block_type: int = wkw.BLOCK_TYPE_RAW,
              writer: str = "project", channels: int = 1) -> Path:
        path = tmp_path / name
        if writer == "reference":
            return write_reference(path, data, block_type)
        return write_project(path, data, block_type, channels)

    return _make


def copy_dataset(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def file_of(root: Path, fx: int, fy: int, fz: int) -> Path:
    return root / f"z{fz}" / f"y{fy}" / f"x{fx}.wkw"


def corrupt_block(path: Path, index: int) -> int:
    """Overwrite the middle of compressed block ``index`` with garbage; return its start."""
    with wkw.File.open(str(path)) as f:
        starts, ends = f.block_ranges()
    start, end = int(starts[index]), int(ends[index])
    with open(path, "r+b") as fh:
        fh.seek(start)
        fh.write(b"\xff" * (end - start))
    os.sync()
    return start
