"""Data and byte-level helpers of the inspector tests (no project code in the parsers)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

BLOCK_LEN = 8
FILE_LEN = 4
SIDE = BLOCK_LEN * FILE_LEN
#: Block (1, 0, 0) of file (0, 0, 0) holds random bytes (incompressible); block (0, 0, 0) zeros.
RANDOM_BLOCK = (1, 0, 0)


def known_volume() -> np.ndarray:
    """Two files side by side along x: file (0,0,0) has a random block at block (1,0,0) and
    zeros elsewhere except a gradient in its top z half; file (1,0,0) holds a constant 7."""
    rng = np.random.default_rng(1234)
    data = np.zeros((2 * SIDE, SIDE, SIDE), dtype=np.uint8)
    b = BLOCK_LEN
    data[b:2 * b, 0:b, 0:b] = rng.integers(0, 256, (b, b, b), dtype=np.uint8)
    data[0:SIDE, :, SIDE // 2:] = (np.arange(SIDE)[:, None, None] * 3).astype(np.uint8)
    data[SIDE:, :, :] = 7
    return data


def parse_independently(path: Path) -> dict[str, object]:
    """Header fields and per-block (start, end, size) straight from the file's bytes, without
    the project's library."""
    raw = path.read_bytes()
    magic, version, per_dim, block_type, vtype, vsize, data_offset = struct.unpack(
        "<3sBBBBBQ", raw[:16])
    n = (1 << (per_dim >> 4)) ** 3
    ends = list(struct.unpack(f"<{n}Q", raw[16:16 + 8 * n]))
    starts = [data_offset, *ends[:-1]]
    return {"magic": magic, "version": version, "per_dim": per_dim, "block_type": block_type,
            "voxel_type": vtype, "voxel_size": vsize, "data_offset": data_offset,
            "starts": starts, "ends": ends,
            "sizes": [e - s for s, e in zip(starts, ends, strict=True)],
            "raw16": raw[:16], "file_size": len(raw)}


def damage_jump_table(path: Path, entries: dict[int, int]) -> None:
    """Overwrite jump-table entries (block index -> end offset) in place."""
    with open(path, "r+b") as fh:
        for index, value in entries.items():
            fh.seek(16 + 8 * index)
            fh.write(struct.pack("<Q", value))
