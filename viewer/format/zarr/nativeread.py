"""Zarr chunks decoded by the native chunk kernel (``viewer.format.native.chunks``): a task's
chunks (their stored bytes read by the unit, as on the Python path) decoded in one call
without the interpreter lock, each checked (zstd's content checksum when the frame has one,
gzip's CRC32 and length, zlib's Adler-32) and its part copied into the output through the
chunk's strides, so the array's axis order, a transpose, ``order: "F"`` and big-endian bytes
cost no pass of their own.

The kernel takes chunks whose codecs are one of zstd, gzip, zlib or none after ``bytes``
(no filters, no other codec) and whose stored type is the volume's in either byte order;
others, and any chunk the kernel does not decode, go through the Python path
(``ZarrVolume.decode_chunk``), which raises the error a read without the kernel raises.
``ENABLED`` off reads every chunk on that path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.native import chunks
from viewer.format.volume import IntArray
from viewer.format.zarr.axes import AxisMap
from viewer.format.zarr.codecs import ChunkCodec, Gzip, Zlib, Zstd

#: Whether reads use the kernel where it can (the tests turn it off to compare the paths).
ENABLED = True

_CODECS: dict[type, int] = {Zstd: chunks.ZSTD, Gzip: chunks.GZIP, Zlib: chunks.ZLIB}


@dataclass(frozen=True)
class Layout:
    """How a decoded chunk maps onto ``(C, X, Y, Z)``: ``axes`` (0 c, 1 x, 2 y, 3 z) in copy
    order, innermost last; ``strides``: bytes between neighbours in the decoded chunk along
    c, x, y, z (0 where the array has no such axis)."""

    codec: int
    nbytes: int
    itemsize: int
    swap: bool
    strides: tuple[int, int, int, int]
    axes: tuple[int, int, int, int]


def layout(codec: ChunkCodec, axes: AxisMap, dtype: np.dtype[Any]) -> Layout | None:
    """The kernel's view of chunks of ``codec`` read as ``dtype``, or None when the kernel
    cannot decode them."""
    if codec.filters or len(codec.bytes_codecs) > 1:
        return None
    kind = chunks.RAW if not codec.bytes_codecs else _CODECS.get(type(codec.bytes_codecs[0]))
    stored = np.dtype(codec.dtype)
    if kind is None or not chunks.usable(kind) or stored.newbyteorder("=") != dtype:
        return None
    size = stored.itemsize
    shape = codec.shape
    per_axis: list[int] = []
    if codec.fortran:
        step = size
        for n in shape:
            per_axis.append(step)
            step *= n
    else:
        enc = codec.encoded_shape
        enc_strides = [size * int(np.prod(enc[k + 1:], dtype=np.int64)) for k in range(len(enc))]
        inverse = codec.inverse or tuple(range(len(shape)))
        per_axis = [enc_strides[inverse[i]] for i in range(len(shape))]
    strides = tuple(per_axis[a] if a is not None else 0 for a in (axes.c, axes.x, axes.y, axes.z))
    order = sorted(range(4), key=lambda k: -strides[k])
    return Layout(kind, codec.nbytes, size, size > 1 and not stored.isnative,
                  (strides[0], strides[1], strides[2], strides[3]),
                  (order[0], order[1], order[2], order[3]))


def decode_into(lay: Layout, out: npt.NDArray[Any], channels: int, address: IntArray,
                length: IntArray, src_lo: IntArray, src_hi: IntArray,
                dst_lo: IntArray) -> npt.NDArray[np.int64]:
    """Decode the stored chunk of ``length[k]`` bytes at ``address[k]`` (kept alive by the
    caller) and copy its box ``[src_lo[k], src_hi[k])`` (x, y, z in the chunk; the first
    ``channels`` channels) to ``dst_lo[k]`` in ``out``, every chunk in one call, their jobs
    made with array arithmetic (no Python per chunk); the status of each (``chunks.OK``:
    placed; anything else: its part of ``out`` untouched)."""
    n = len(address)
    ss, order = lay.strides, lay.axes
    os_ = out.strides
    count = np.empty((n, 4), dtype=np.int64)
    count[:, 0] = channels
    count[:, 1:] = np.asarray(src_hi) - np.asarray(src_lo)
    jobs = np.empty((n, chunks.JOB_FIELDS), dtype=np.int64)
    jobs[:, 0] = address
    jobs[:, 1] = length
    jobs[:, 2] = lay.codec
    jobs[:, 3] = lay.nbytes
    jobs[:, 4] = out.ctypes.data + np.asarray(dst_lo) @ np.asarray(os_[1:4], dtype=np.int64)
    jobs[:, 5] = np.asarray(src_lo) @ np.asarray(ss[1:4], dtype=np.int64)
    jobs[:, 6:10] = count[:, list(order)]
    jobs[:, 10:14] = [ss[k] for k in order]
    jobs[:, 14:18] = [os_[k] for k in order]
    return chunks.run_jobs(jobs, lay.itemsize, lay.swap)


def decode_whole(lay: Layout, shape: tuple[int, int, int, int], dtype: np.dtype[Any],
                 stored: Sequence[bytes | memoryview]
                 ) -> tuple[list[npt.NDArray[Any]], list[int]]:
    """Whole chunks decoded in one call, each as a new ``(C, cx, cy, cz)`` Fortran-order array
    of ``shape``; and the positions the kernel did not decode (their arrays hold nothing)."""
    arrays = [np.empty(shape, dtype=dtype, order="F") for _ in stored]
    if not arrays:
        return arrays, []
    st = arrays[0].strides
    batch = chunks.Batch(lay.itemsize, lay.swap)
    order = lay.axes
    count = [shape[k] for k in order]
    src = [lay.strides[k] for k in order]
    dst = [st[k] for k in order]
    for s, arr in zip(stored, arrays, strict=True):
        batch.add(s, lay.codec, lay.nbytes, arr.ctypes.data, 0, count, src, dst)
    status = batch.run().tolist()
    return arrays, [k for k, v in enumerate(status) if v != chunks.OK]


__all__ = ["ENABLED", "Layout", "decode_into", "decode_whole", "layout"]
