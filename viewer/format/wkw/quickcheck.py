"""The structure check of many WKW data files at once (``WkwVolume.sound_units``): the
16-byte header and the jump table of each file read by one call (``fileheads.read_heads``),
then judged as arrays for the whole batch.

A file is sound when it was read whole and unchanged, past the racy window, its first 8 header
bytes are those of the dataset's header.wkw (magic, version, geometry, block type, voxel
type and size: so it agrees with it), its dataOffset is the one its geometry implies, and
every check ``filecheck.file_problems(decode=False)`` makes passes: for compressed blocks
every range after the table, increasing, non-empty, within LZ4's bound, the last ending at
the end of the file; raw blocks all within the file.  Anything else (absent, damaged, a
different header, a file being written) is left to the one-by-one way, which says what is
wrong: so a batch never changes an answer, only its cost.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from viewer.format.fileheads import read_heads
from viewer.format.unitcheck import SoundUnits
from viewer.format.wkw.header import BLOCK_TYPE_NAMES, HEADER_SIZE, Header
from viewer.format.wkw.lz4block import compress_bound

Vec3 = tuple[int, int, int]

#: Bytes of header and jump table read per file at most (larger tables: one by one).
MAX_HEAD_BYTES = 16 + 8 * (32 ** 3 + 1)


def sound_units(root: str, header: Header, positions: Sequence[Vec3]) -> SoundUnits:
    """The sound files among the data files at ``positions`` of the dataset at ``root``
    (``header``: its header.wkw); see the module docstring."""
    n = header.num_blocks
    if not positions or header.data_offset not in (0, header.expected_data_offset):
        return SoundUnits.none(n)
    compressed = header.is_compressed
    data_offset = header.expected_data_offset
    want = HEADER_SIZE + 8 * n if compressed else HEADER_SIZE
    if want > MAX_HEAD_BYTES:
        return SoundUnits.none(n)
    prefix, sep = os.path.join(root, ""), os.sep
    paths = [f"{prefix}z{z}{sep}y{y}{sep}x{x}.wkw" for x, y, z in positions]
    heads = read_heads(paths, want)
    data, info = heads.data, heads.info
    sizes = heads.sizes
    expected = np.frombuffer(header.to_bytes(data_offset), np.uint8)
    ok = heads.read & heads.settled() & (info[:, 1] == want)
    ok &= (data[:, :HEADER_SIZE] == expected).all(axis=1)
    bb = header.block_bytes
    if compressed:
        ext = data[:, 8:want].copy().view("<u8").view(np.int64)  # [dataOffset, ends...]
        starts, ends = ext[:, :-1], ext[:, 1:]
        bad = ((starts < data_offset) | (ends <= starts) | (ends > sizes[:, None])
               | (ends - starts > compress_bound(bb)))
        ok &= ~bad.any(axis=1) & (ends[:, -1] == sizes)
        keep = np.flatnonzero(ok)
        offsets = np.ascontiguousarray(starts[keep])
        nbytes = ends[keep] - offsets
    else:
        ok &= sizes >= data_offset + n * bb
        keep = np.flatnonzero(ok)
        offsets = np.broadcast_to(data_offset + bb * np.arange(n, dtype=np.int64),
                                  (len(keep), n)).copy()
        nbytes = np.full((len(keep), n), bb, np.int64)
    return SoundUnits(keep.astype(np.int64), [paths[k] for k in keep.tolist()],
                      sizes[keep].copy(), offsets, nbytes, description(header))


def description(header: Header) -> dict[str, Any]:
    """The scalar fields of ``WkwUnit.describe`` that every sound file of a dataset shares."""
    h = header
    name = BLOCK_TYPE_NAMES.get(h.block_type, str(h.block_type))
    return {"magic": "WKW", "version": h.version, "block_len": h.block_len,
            "file_len": h.file_len, "block_type": h.block_type, "block_type_name": name,
            "voxel_type": h.dtype.name, "voxel_type_code": h.voxel_type_code,
            "num_channels": h.num_channels, "voxel_size": h.voxel_size,
            "data_offset": h.expected_data_offset, "header_bytes": HEADER_SIZE,
            "jump_table_bytes": 8 * h.num_blocks if h.is_compressed else 0,
            "compression": name}


__all__ = ["sound_units", "description", "MAX_HEAD_BYTES"]
