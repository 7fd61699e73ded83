"""An N5 box read through the native chunk kernel (``viewer.format.native.chunks``): the chunk
files of a group read here (``read_chunk_bytes``: one version of each file), their headers
checked, then one kernel call per group decodes every chunk whole (gzip's CRC32 and length,
zlib's Adler-32) and copies its part into the output with the byte swap from big-endian, no
interpreter lock held.  Groups go to the shared read pool, so one thread reads files while
another decodes.

A chunk the kernel does not decode is decoded again by the volume's Python path, which raises
the error a read without the kernel raises (or decodes a stream the kernel leaves to it);
``ENABLED`` off reads every chunk on that path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from viewer.format import handles, pool
from viewer.format.errors import FormatError
from viewer.format.n5.attributes import DatasetAttributes
from viewer.format.n5.header import ChunkHeader
from viewer.format.native import chunks
from viewer.format.volume import StoredResult

Vec3 = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]


class N5Volume(Protocol):
    """What a read here needs of the dataset (``viewer.format.n5.volume.N5Volume``)."""

    attrs: DatasetAttributes
    dtype: np.dtype[Any]
    chunk_shape: Vec3
    num_channels: int
    channel_offset: int
    fill_value: int | float
    small_units: bool

    def chunk_folder(self) -> str: ...
    def read_chunk_bytes(self, unit: Vec3) -> StoredResult: ...
    def grid_position(self, unit: Sequence[int]) -> tuple[int, ...]: ...
    def unit_path(self, unit: Vec3) -> str: ...
    def _layout(self, unit: Sequence[int], stored: bytes | memoryview, path: str,
                grid: tuple[int, ...]) -> tuple[ChunkHeader, int, int, int, int]: ...
    def _decode_view(self, unit: Sequence[int], stored: bytes | memoryview, path: str,
                     grid: tuple[int, ...] | None = None) -> npt.NDArray[Any]: ...
    def _place(self, out: npt.NDArray[Any], off: IntArray, lo: IntArray, hi: IntArray,
               unit: Sequence[int], view: npt.NDArray[Any]) -> None: ...
    def decode_chunk(self, unit: Sequence[int], stored: bytes | memoryview,
                     path: str | None = None, grid: tuple[int, ...] | None = None
                     ) -> npt.NDArray[Any]: ...

#: Whether reads use the kernel where it can (the tests turn it off to compare the paths).
ENABLED = True
#: Chunks per kernel call: a pool thread reads a group's files, then decodes them.
GROUP = 4
#: The N5 compressions the kernel decodes.
CODECS = {"gzip": chunks.GZIP_MEMBERS, "raw": chunks.RAW}


def usable(volume: N5Volume, out: npt.NDArray[Any] | None) -> bool:
    """True when the kernel can read ``volume``'s chunks (into ``out``, when given)."""
    codec = CODECS.get(volume.attrs.compression.type)
    stored = np.dtype(volume.attrs.stored_dtype)
    # the kernel places a block's channels from the block's start: no run starting inside it
    return (ENABLED and codec is not None and chunks.usable(codec)
            and volume.channel_offset == 0
            and (out is None or out.dtype == volume.dtype)
            and stored.newbyteorder("=") == volume.dtype)


def decode_chunks(volume: N5Volume, items: Sequence[tuple[Vec3, bytes, str, tuple[int, ...]]]
                  ) -> list[npt.NDArray[Any] | FormatError]:
    """Whole chunks, each ``(unit, stored bytes, path, N5 grid position)``, decoded in one call:
    per item the chunk as ``decode_chunk`` gives it (``(C, cx, cy, cz)`` Fortran order, an edge
    chunk padded with the fill value) or its error.  Call only where ``usable``."""
    stored_dtype = np.dtype(volume.attrs.stored_dtype)
    itemsize = stored_dtype.itemsize
    codec = CODECS[volume.attrs.compression.type]
    batch = chunks.Batch(itemsize, itemsize > 1 and not stored_dtype.isnative)
    cx, cy, cz = (int(v) for v in volume.chunk_shape)
    nc = volume.num_channels
    results: list[npt.NDArray[Any] | FormatError] = []
    jobs: list[int] = []
    for unit, stored, path, grid in items:
        try:
            h, channels, sx, sy, sz = volume._layout(unit, stored, path, grid)
        except FormatError as exc:
            results.append(exc)
            continue
        arr = np.empty((nc, cx, cy, cz), dtype=volume.dtype, order="F")
        results.append(arr)
        if channels < nc:
            continue  # left to the Python path below
        if (sx, sy, sz) != (cx, cy, cz):
            arr[...] = volume.fill_value
        st = arr.strides
        sxy = sx * sy
        batch.add(memoryview(stored)[h.size:], codec, h.num_elements * itemsize, arr.ctypes.data,
                  0, [nc, min(sz, cz), min(sy, cy), min(sx, cx)],
                  [sxy * sz * itemsize, sxy * itemsize, sx * itemsize, itemsize],
                  [st[0], st[3], st[2], st[1]])
        jobs.append(len(results) - 1)
    status = batch.run().tolist() if jobs else []
    done = {k for k, s in zip(jobs, status, strict=True) if s == chunks.OK}
    for k, (unit, stored, path, grid) in enumerate(items):
        if k in done or isinstance(results[k], FormatError):
            continue
        try:
            results[k] = volume.decode_chunk(unit, stored, path, grid)
        except FormatError as exc:
            results[k] = exc
    return results


def read_into(volume: N5Volume, out: npt.NDArray[Any], off: IntArray, lo: IntArray,
              hi: IntArray, units: Sequence[Vec3]) -> list[FormatError | None]:
    """Read the chunks ``units`` into ``out`` (whose first voxel is at ``off``), the box
    ``[lo, hi)`` of each; the error of each unit (None: read, or absent), in ``units`` order.
    Call only where ``usable``.  On a local disk the kernel reads the chunk files too
    (``read_files_into``)."""
    if volume.small_units and reads_files():
        return read_files_into(volume, out, off, lo, hi, units)
    groups = [units[k:k + GROUP] for k in range(0, len(units), GROUP)]
    errors: list[list[FormatError | None]] = [[] for _ in groups]

    def run(k: int) -> None:
        errors[k] = _group(volume, out, off, lo, hi, groups[k])

    pool.share(len(groups), run, max(2, pool.cores()))
    return [e for group in errors for e in group]


def spec(volume: N5Volume, out: npt.NDArray[Any]) -> chunks.N5Spec:
    """The kernel's view of ``volume``'s chunk files, read into ``out``."""
    attrs = volume.attrs
    stored_dtype = np.dtype(attrs.stored_dtype)
    s = chunks.N5Spec()
    s.folder = os.fsencode(volume.chunk_folder())
    s.ndim = attrs.ndim
    position = volume.grid_position((0, 0, 0))
    for i in range(attrs.ndim):
        s.block[i] = int(attrs.block_size[i])
        s.dims[i] = int(attrs.dimensions[i])
        s.tail[i] = int(position[i])
    s.channel_axis = -1 if attrs.channel_axis is None else attrs.channel_axis
    s.channels = volume.num_channels
    s.chunk[:] = [int(v) for v in volume.chunk_shape]
    s.codec = CODECS[attrs.compression.type]
    s.itemsize = stored_dtype.itemsize
    s.swap = int(stored_dtype.itemsize > 1 and not stored_dtype.isnative)
    st = out.strides
    s.dst_stride[:] = [st[0], st[3], st[2], st[1]]  # c, z, y, x: x innermost (stored fastest)
    s.racy_ns, s.coarse_ns = handles.RACY_WINDOW_NS, handles.COARSE_WINDOW_NS
    return s


def reads_files() -> bool:
    """True when the kernel reads the chunk files itself (``read_files_into``,
    ``read_whole_chunks``)."""
    return chunks.reads_n5_files()


#: ``read_whole_chunks``' answer for a file the kernel left to the Python path.
LEFT = "left"


def read_whole_chunks(volume: N5Volume, units: Sequence[Vec3]
                      ) -> list[npt.NDArray[Any] | None | str]:
    """Whole chunks of a local dataset, each file read, checked and decoded by the kernel in
    one call on this thread: per unit the chunk as ``decode_chunk`` gives it (an edge chunk
    padded with the fill value), None for a missing file, or ``LEFT``: a file the kernel left
    to the Python path (which reads it again and says what is wrong).  Call only where
    ``usable`` and ``reads_files``."""
    if not units:
        return []
    c = [int(v) for v in volume.chunk_shape]
    nc = volume.num_channels
    arrays = [np.empty((nc, *c), dtype=volume.dtype, order="F") for _ in units]
    n = len(units)
    grid = np.asarray(units, dtype=np.int64).reshape(n, 3)
    first = grid * np.asarray(c, dtype=np.int64)
    jobs = np.empty((n, chunks.N5_FIELDS), dtype=np.int64)
    jobs[:, 0:3] = grid
    jobs[:, 3] = [a.ctypes.data for a in arrays]
    jobs[:, 4:7] = first
    jobs[:, 7:10] = first
    jobs[:, 10:13] = first + np.asarray(c, dtype=np.int64)
    # a chunk at the dataset's far edge may be stored truncated: the rest is the fill value
    dims = [int(d) for d in volume.attrs.dimensions[:3]]
    block = [int(b) for b in volume.attrs.block_size[:3]]
    edge = np.zeros(n, dtype=np.bool_)
    for i in range(min(volume.attrs.ndim, 3)):
        edge |= (grid[:, i] + 1) * block[i] > dims[i]
    for k in np.flatnonzero(edge).tolist():
        arrays[k][...] = volume.fill_value
    status = chunks.read_n5_files(spec(volume, arrays[0]), jobs, 1).tolist()
    return [a if s == chunks.OK else None if s == chunks.ABSENT else LEFT
            for a, s in zip(arrays, status, strict=True)]


def read_files_into(volume: N5Volume, out: npt.NDArray[Any], off: IntArray, lo: IntArray,
                    hi: IntArray, units: Sequence[Vec3]) -> list[FormatError | None]:
    """``read_into`` with the chunk files read by the kernel as well: one call per thread
    reads, checks, decodes and places them all, each thread taking the next file.  A file
    the kernel leaves (missing is kept: absent) is read again here, on the Python path, which
    raises what is wrong with it."""
    n = len(units)
    jobs = np.empty((n, chunks.N5_FIELDS), dtype=np.int64)
    jobs[:, 0:3] = np.asarray(units, dtype=np.int64).reshape(n, 3)
    jobs[:, 3] = out.ctypes.data
    jobs[:, 4:7] = off
    jobs[:, 7:10] = lo
    jobs[:, 10:13] = hi
    status = chunks.read_n5_files(spec(volume, out), jobs, max(2, pool.cores()))
    results: list[FormatError | None] = [None] * n
    for i in np.flatnonzero((status != chunks.OK) & (status != chunks.ABSENT)).tolist():
        unit = units[i]
        stored = volume.read_chunk_bytes(unit)
        if stored is None or isinstance(stored, FormatError):
            results[i] = stored
            continue
        results[i] = _on_python_path(volume, out, off, lo, hi, unit, stored,
                                     volume.unit_path(unit))
    return results


def _on_python_path(volume: N5Volume, out: npt.NDArray[Any], off: IntArray, lo: IntArray,
                    hi: IntArray, unit: Vec3, stored: bytes | memoryview, path: str
                    ) -> FormatError | None:
    """A chunk the kernel left, decoded and placed by the Python path; its error, or None."""
    try:
        view = volume._decode_view(unit, stored, path)
    except FormatError as exc:
        return exc
    volume._place(out, off, lo, hi, unit, view)
    return None


def _group(volume: N5Volume, out: npt.NDArray[Any], off_: IntArray, lo_: IntArray,
           hi_: IntArray, units: Sequence[Vec3]) -> list[FormatError | None]:
    stored_dtype = np.dtype(volume.attrs.stored_dtype)
    itemsize = stored_dtype.itemsize
    codec = CODECS[volume.attrs.compression.type]
    batch = chunks.Batch(itemsize, itemsize > 1 and not stored_dtype.isnative)
    c = [int(v) for v in volume.chunk_shape]
    lo, hi, off = lo_.tolist(), hi_.tolist(), off_.tolist()
    nc = volume.num_channels
    base = out.ctypes.data
    st = out.strides
    dst_stride = [st[0], st[3], st[2], st[1]]  # c, z, y, x: x innermost (stored fastest)
    results: list[FormatError | None] = [None] * len(units)
    jobs: list[tuple[int, bytes | memoryview, str]] = []
    again: list[tuple[int, bytes | memoryview, str]] = []
    for i, unit in enumerate(units):
        stored = volume.read_chunk_bytes(unit)
        if stored is None or isinstance(stored, FormatError):
            results[i] = stored
            continue
        grid = volume.grid_position(unit)
        path = volume.unit_path(unit)
        try:
            h, channels, sx, sy, sz = volume._layout(unit, stored, path, grid)
        except FormatError as exc:
            results[i] = exc
            continue
        if channels < nc:
            again.append((i, stored, path))
            continue
        g = [u * b for u, b in zip(unit, c, strict=True)]
        s_lo = [max(p, q) for p, q in zip(g, lo, strict=True)]
        s_hi = [min(p + b, q, p + s) for p, b, q, s in zip(g, c, hi, (sx, sy, sz), strict=True)]
        n = [max(q - p, 0) for p, q in zip(s_lo, s_hi, strict=True)]
        a = [p - q for p, q in zip(s_lo, g, strict=True)]
        d = [p - q for p, q in zip(s_lo, off, strict=True)]
        # a box the stored block does not reach is still decoded: its checksums are checked
        count = [nc, n[2], n[1], n[0]] if min(n) > 0 else [0, 0, 0, 0]
        sxy = sx * sy
        batch.add(memoryview(stored)[h.size:], codec, h.num_elements * itemsize,
                  base + d[0] * st[1] + d[1] * st[2] + d[2] * st[3],
                  (a[0] + a[1] * sx + a[2] * sxy) * itemsize, count,
                  [sxy * sz * itemsize, sxy * itemsize, sx * itemsize, itemsize], dst_stride)
        jobs.append((i, stored, path))
    status = batch.run()
    again.extend(job for job, s in zip(jobs, status.tolist(), strict=True) if s != chunks.OK)
    for i, stored, path in again:
        results[i] = _on_python_path(volume, out, off_, lo_, hi_, units[i], stored, path)
    return results


__all__ = ["CODECS", "ENABLED", "GROUP", "LEFT", "decode_chunks", "read_files_into", "read_into",
           "read_whole_chunks", "reads_files", "spec", "usable"]
