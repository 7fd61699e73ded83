"""Writing WKW data files.

Every write is atomic: the new file is assembled in a temporary file next to the target,
fsynced and renamed over it, so a crash or a kill never leaves a half-written file.  Raw files
are allocated to full size (sparse, as the reference does); a write into part of one patches a
copy of the file (its holes kept) that then replaces it.  LZ4/LZ4HC files are always written
whole.  A write
that covers part of a compressed file merges with what the file held: untouched blocks keep
their compressed bytes, touched blocks are decoded, patched and re-encoded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import atomic
from viewer.format.errors import DatasetLayoutError, FormatError
from viewer.format.wkw import lz4block, morton
from viewer.format.wkw.file import File
from viewer.format.wkw.header import HEADER_SIZE, Header

#: Blocks decoded or encoded per batch when a whole file is converted.
BATCH_BLOCKS = 512


def write_atomically(path: str, payload: bytes | Iterable[bytes | memoryview]) -> None:
    """Write ``payload`` to a temporary file beside ``path``, fsync, and rename it over (the
    file mode follows the umask; ``viewer.format.atomic``)."""
    atomic.write_atomically(path, payload)


def block_bytes_of(data: npt.NDArray[Any]) -> bytes:
    """The on-disk bytes of one block given as ``(C, B, B, B)`` (channel fastest, then x, y, z)."""
    return np.ascontiguousarray(data.transpose(3, 2, 1, 0)).astype(
        data.dtype.newbyteorder("<"), copy=False).tobytes()


def encode_block(header: Header, raw: bytes) -> bytes:
    if header.block_type == Header.BLOCK_TYPE_RAW:
        return raw
    return lz4block.encode(raw, high_compression=header.block_type == Header.BLOCK_TYPE_LZ4HC)


def assemble_compressed(header: Header, blocks: Sequence[bytes | memoryview]
                        ) -> list[bytes | memoryview]:
    """Header, jump table and blocks of a compressed file, as a list of byte strings."""
    n = header.num_blocks
    if len(blocks) != n:
        raise ValueError(f"a file holds {n} blocks, not {len(blocks)}")
    data_offset = HEADER_SIZE + 8 * n
    sizes = np.fromiter((len(b) for b in blocks), dtype=np.uint64, count=n)
    table = (data_offset + np.cumsum(sizes, dtype=np.uint64)).astype("<u8")
    return [header.to_bytes(data_offset), table.tobytes(), *blocks]


def write_into_file(path: str, header: Header, local_offset: Sequence[int],
                    part: npt.NDArray[Any]) -> None:
    """Write ``part`` (``(C, X, Y, Z)``) at file-local voxel ``local_offset`` of the data file
    ``path`` of a dataset with ``header``."""
    existing: File | None
    try:
        existing = File.open(path)
    except FileNotFoundError:
        existing = None
    try:
        if existing is not None and not existing.header.same_geometry(header):
            # Writing with the dataset's geometry would scramble a file laid out otherwise.
            diffs = "; ".join(header.differences(existing.header))
            raise DatasetLayoutError(f"file header differs from the dataset's (dataset vs "
                                     f"file: {diffs}); not writing into it", path, offset=0)
        if header.block_type == Header.BLOCK_TYPE_RAW and (
                existing is None or existing.header.block_type == Header.BLOCK_TYPE_RAW):
            _write_raw_patched(path, header, existing, local_offset, part)
        else:
            _rewrite_whole(path, header, existing, local_offset, part)
    finally:
        if existing is not None:
            existing.close()


def _touched_blocks(header: Header, lo: Sequence[int], shape: Sequence[int]
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    b = header.block_len
    lo_a = np.asarray(lo, dtype=np.int64)
    hi_a = lo_a + np.asarray(shape, dtype=np.int64)
    coords = morton.block_grid(tuple(lo_a // b), tuple((hi_a - 1) // b + 1))
    return coords, morton.encode(coords[:, 0], coords[:, 1], coords[:, 2])


def _patch(block: npt.NDArray[Any], coord: npt.NDArray[np.int64], b: int,
           lo: Sequence[int], part: npt.NDArray[Any]) -> bool:
    """Copy the overlap of ``part`` (at ``lo``) into ``block`` (``(C, B, B, B)`` at block
    ``coord``); return whether the block is covered whole."""
    base = coord * b
    s = [max(int(lo[a]) - int(base[a]), 0) for a in range(3)]
    e = [min(int(lo[a]) + part.shape[1 + a] - int(base[a]), b) for a in range(3)]
    block[:, s[0]:e[0], s[1]:e[1], s[2]:e[2]] = part[
        :, base[0] + s[0] - lo[0]:base[0] + e[0] - lo[0],
        base[1] + s[1] - lo[1]:base[1] + e[1] - lo[1],
        base[2] + s[2] - lo[2]:base[2] + e[2] - lo[2]]
    return s == [0, 0, 0] and e == [b, b, b]


def _write_raw_patched(path: str, header: Header, existing: File | None,
                        lo: Sequence[int], part: npt.NDArray[Any]) -> None:
    """Patch the blocks ``part`` touches into a copy of the raw file (or a new one) and
    rename the copy over the file (``atomic.replace_copy``)."""
    h = header.replace(data_offset=HEADER_SIZE)
    full_size = HEADER_SIZE + h.num_blocks * h.block_bytes
    coords, indices = _touched_blocks(h, lo, part.shape[1:])
    b = h.block_len
    with atomic.replace_copy(path, full_size) as fd:
        if existing is None:
            os.pwrite(fd, h.to_bytes(), 0)
        for coord, index in zip(coords, indices.tolist(), strict=True):
            block = np.zeros((h.num_channels, b, b, b), dtype=h.dtype, order="F")
            start = HEADER_SIZE + index * h.block_bytes
            if existing is not None:
                raw = os.pread(fd, h.block_bytes, start)
                block = np.frombuffer(raw, dtype=h.dtype).reshape(
                    b, b, b, h.num_channels).transpose(3, 2, 1, 0).copy(order="F")
            _patch(block, coord, b, lo, part)
            os.pwrite(fd, block_bytes_of(block), start)


def _rewrite_whole(path: str, header: Header, existing: File | None,
                   lo: Sequence[int], part: npt.NDArray[Any]) -> None:
    h = header
    coords, indices = _touched_blocks(h, lo, part.shape[1:])
    b = h.block_len
    blocks: list[bytes | memoryview | None] = [None] * h.num_blocks
    touched = dict(zip(indices.tolist(), coords, strict=True))
    old: list[npt.NDArray[Any] | FormatError] = []
    if existing is not None:
        old = existing.read_blocks(indices)
    for k, (index, coord) in enumerate(touched.items()):
        if existing is not None:
            previous = old[k]
            if isinstance(previous, FormatError):
                raise previous
            block = np.array(previous, order="F")
        else:
            block = np.zeros((h.num_channels, b, b, b), dtype=h.dtype, order="F")
        _patch(block, coord, b, lo, part)
        blocks[index] = encode_block(h, block_bytes_of(block))
    untouched = [i for i in range(h.num_blocks) if blocks[i] is None]
    if existing is not None and existing.header.block_type == h.block_type and h.is_compressed:
        _copy_compressed(existing, untouched, blocks)
    elif existing is not None:
        for start in range(0, len(untouched), BATCH_BLOCKS):
            batch = untouched[start:start + BATCH_BLOCKS]
            for index, arr in zip(batch, existing.read_blocks(batch), strict=True):
                if isinstance(arr, FormatError):
                    raise arr
                blocks[index] = encode_block(h, block_bytes_of(arr))
    else:
        zero = encode_block(h, bytes(h.block_bytes))
        for index in untouched:
            blocks[index] = zero
    _write_file(path, h, blocks)  # type: ignore[arg-type]


def _copy_compressed(existing: File, indices: list[int], blocks: list[Any]) -> None:
    """Reuse the stored bytes of blocks a write does not touch (after checking their ranges)."""
    if not indices:
        return
    idx = np.asarray(indices, dtype=np.int64)
    for _k, index, raw in existing._fetch(idx):
        if isinstance(raw, FormatError):
            raise raw
        blocks[index] = bytes(raw)


def _write_file(path: str, header: Header, blocks: Sequence[bytes | memoryview]) -> None:
    if header.is_compressed:
        write_atomically(path, assemble_compressed(header, blocks))
    else:
        write_atomically(path, [header.to_bytes(HEADER_SIZE), *blocks])


def compress_file(src: str, dst: str, header: Header | None = None,
                  block_type: int = Header.BLOCK_TYPE_LZ4HC,
                  progress: Callable[[int, int], None] | None = None) -> None:
    """Re-encode the data file ``src`` as ``dst`` with ``block_type`` (default LZ4HC)."""
    with File.open(src) as f:
        if header is not None and not f.header.same_geometry(header):
            raise DatasetLayoutError("file header differs from the dataset's", src, offset=0)
        h = f.header.replace(block_type=block_type, data_offset=0)
        blocks: list[bytes] = []
        n = h.num_blocks
        for start in range(0, n, BATCH_BLOCKS):
            batch = range(start, min(start + BATCH_BLOCKS, n))
            for arr in f.read_blocks(np.fromiter(batch, dtype=np.int64)):
                if isinstance(arr, FormatError):
                    raise arr
                blocks.append(encode_block(h, block_bytes_of(arr)))
            if progress is not None:
                progress(min(start + BATCH_BLOCKS, n), n)
    _write_file(dst, h, blocks)


def write_file(path: str, header: Header, data: npt.NDArray[Any]) -> None:
    """Write a whole data file from ``data`` (``(C, S, S, S)``, S = voxels per file side)."""
    h = header
    s = h.file_len_vx
    if data.shape[1:] != (s, s, s):
        raise ValueError(f"a whole file is {s}^3 voxels, not {data.shape[1:]}")
    b = h.block_len
    coords = np.stack(morton.decode(np.arange(h.num_blocks)), axis=1) * b
    blocks = [encode_block(h, block_bytes_of(data[:, x:x + b, y:y + b, z:z + b]))
              for x, y, z in coords.tolist()]
    _write_file(path, h, blocks)
