"""Real datasets on disk, written with the project's writer, for the window and the rendering
tests (at the top of tests/, so that every test directory imports it by name)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from viewer.format import wkw
from viewer.format.wkw import writer


def write_dataset(root: Path, data: np.ndarray, block_len: int = 8, file_len: int = 2,
                  block_type: int = wkw.BLOCK_TYPE_LZ4HC) -> Path:
    """Write ``data`` ((X, Y, Z) or (C, X, Y, Z), each side a multiple of the file side) as a
    dataset of whole files with the project's writer."""
    if data.ndim == 3:
        data = data[None]
    header = wkw.Header(data.dtype, num_channels=data.shape[0], block_len=block_len,
                        file_len=file_len, block_type=block_type)
    ds = wkw.Dataset.create(str(root), header)
    side = header.file_len_vx
    for fz in range(data.shape[3] // side):
        for fy in range(data.shape[2] // side):
            for fx in range(data.shape[1] // side):
                part = np.ascontiguousarray(data[:, fx * side:(fx + 1) * side,
                                                 fy * side:(fy + 1) * side,
                                                 fz * side:(fz + 1) * side])
                writer.write_file(ds.file_path(fx, fy, fz), header, part)
    return root


