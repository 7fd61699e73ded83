"""Benchmark datasets, built once into ``benchmarks/.cache/`` and reused.

Every dataset is EM-like synthetic data (``viewer.core.synthetic.EMVolume``), generated file by
file on the file grid (so it is the same whatever builds it) and written with the project's
writer.  A dataset folder is complete when its ``.complete`` marker exists; an interrupted build
is redone.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from viewer.core.synthetic import EMVolume
from viewer.format import wkw
from viewer.format.wkw import writer

CACHE = Path(os.environ.get("WKW_BENCH_CACHE", Path(__file__).resolve().parent / ".cache"))
#: Voxels are generated in cubes of this side (bounded float32 memory, whatever the file size).
CHUNK = 256


def em_file_data(volume: EMVolume, origin: tuple[int, int, int], side: int,
                 size: tuple[int, int, int]) -> np.ndarray:
    """The ``(1, side, side, side)`` uint8 data of one file at ``origin``, generated chunk by
    chunk on the fixed CHUNK grid; voxels at or past ``size`` (file-local) are zero."""
    data = np.zeros((1, side, side, side), dtype=np.uint8)
    step = min(CHUNK, side)
    for z in range(0, min(size[2], side), step):
        for y in range(0, min(size[1], side), step):
            for x in range(0, min(size[0], side), step):
                box = (origin[0] + x, origin[1] + y, origin[2] + z)
                data[0, x:x + step, y:y + step, z:z + step] = volume.em(box, (step,) * 3)
    data[:, size[0]:, :, :] = 0
    data[:, :, size[1]:, :] = 0
    data[:, :, :, size[2]:] = 0
    return data


def em_dataset(name: str, shape: tuple[int, int, int], block_type: int = wkw.BLOCK_TYPE_LZ4HC,
               file_len: int = 32, block_len: int = 32, seed: int = 1) -> Path:
    """Path of an EM-like uint8 dataset of ``shape`` voxels (multiples of the file side are
    filled whole; other sizes are filled up to ``shape`` within the last files)."""
    root = CACHE / name
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    header = wkw.Header(wkw.VOXEL_TYPES[1], block_len=block_len, file_len=file_len,
                        block_type=block_type)
    ds = wkw.Dataset.create(str(root), header)
    side = header.file_len_vx
    volume = EMVolume(seed)
    grid = [max(1, -(-s // side)) for s in shape]
    started = time.perf_counter()
    total = grid[0] * grid[1] * grid[2]
    done = 0
    for fz in range(grid[2]):
        for fy in range(grid[1]):
            for fx in range(grid[0]):
                origin = (fx * side, fy * side, fz * side)
                size = (min(side, shape[0] - origin[0]), min(side, shape[1] - origin[1]),
                        min(side, shape[2] - origin[2]))
                data = em_file_data(volume, origin, side, size)
                writer.write_file(ds.file_path(fx, fy, fz), header, data)
                done += 1
                print(f"\rbuilding {name}: file {done}/{total} "
                      f"({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    (root / ".complete").write_text("ok\n")
    return root
