"""Block-by-block comparison of one pair of data files (or one file against an absent one).

The unit of work is a *chunk*: a run of blocks of one file position, sized so that a task is
worth a thread hop (megabytes, not one block).  Each side's stored bytes for the chunk are
fetched with one read into a numpy buffer (``os.preadv``: no copy, GIL released).  When both
files are LZ4-compressed, blocks whose stored bytes are identical are equal without decoding;
every other block is decoded (raw blocks are used in place) and compared with ``memcmp``, and
only blocks that differ get their voxels counted.  A block whose bytes cannot be read or decoded
is reported as that block's problem, never taken for zeros.  Worker threads run these functions;
they touch nothing shared but the read-only plan.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.compare.diff import abs_difference
from viewer.core.compare.model import BlockResult, Vec3
from viewer.format import FormatError
from viewer.format.errors import BlockDecodeError
from viewer.format.wkw import File, lz4block, morton


def _load_memcmp() -> Any:
    name = ctypes.util.find_library("c")
    try:
        fn = ctypes.CDLL(name).memcmp if name else None
    except (OSError, AttributeError):
        fn = None
    if fn is not None:
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        fn.restype = ctypes.c_int
    return fn


_MEMCMP = _load_memcmp()


def same_bytes(a: npt.NDArray[np.uint8], b: npt.NDArray[np.uint8]) -> bool:
    """Whether two contiguous uint8 buffers hold the same bytes (memcmp when libc has it)."""
    if a.nbytes != b.nbytes:
        return False
    if a.nbytes == 0:
        return True
    if _MEMCMP is not None:
        return bool(_MEMCMP(a.ctypes.data, b.ctypes.data, a.nbytes) == 0)
    return bool(np.array_equal(a, b))


@dataclass
class Side:
    """One dataset's data file at a file position: the parsed ``File`` (header, jump table)
    and a descriptor of its own for byte reads.  Read-only once built; shared by workers."""

    file: File
    fd: int
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]

    @classmethod
    def open(cls, file: File) -> Side:
        starts, ends = file.block_ranges()
        fd = os.open(file.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        return cls(file, fd, starts, ends)

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class FilePlan:
    """What to compare at one file position.  ``a`` or ``b`` is None where that dataset has no
    file (it reads as zeros).  ``clips`` maps a Morton index to the block-local voxel box
    ``(lo, hi)`` (x, y, z) when only part of that block lies inside the comparison box."""

    name: str
    origin: Vec3
    a: Side | None
    b: Side | None
    indices: npt.NDArray[np.int64]
    block_len: int
    dtype: np.dtype[Any]
    channels: int
    tolerance: float
    clips: dict[int, tuple[Vec3, Vec3]] = field(default_factory=dict)

    @property
    def block_bytes(self) -> int:
        return int(self.block_len**3 * self.channels * self.dtype.itemsize)

    def close(self) -> None:
        for side in (self.a, self.b):
            if side is not None:
                side.close()


@dataclass
class ChunkOutcome:
    """What one chunk found: the blocks that differ (or failed), how many blocks it covered,
    whether any voxel differed from the other side at all (tolerance aside), and the largest
    difference met."""

    results: list[BlockResult]
    compared: int
    any_difference: bool
    max_abs_diff: int | float


@dataclass
class _Stored:
    """A chunk's stored (on-disk) block bytes from one file, in one buffer."""

    buf: npt.NDArray[np.uint8]
    off: npt.NDArray[np.int64]
    size: npt.NDArray[np.int64]
    errors: dict[int, FormatError]

    def block(self, k: int) -> npt.NDArray[np.uint8]:
        o = int(self.off[k])
        return self.buf[o:o + int(self.size[k])]


_local = threading.local()


def scratch(slot: str, nbytes: int) -> npt.NDArray[np.uint8]:
    """A uint8 buffer of ``nbytes`` private to the calling thread and ``slot``, reused from
    call to call: fresh multi-megabyte buffers are new mappings whose page faults cost as much
    as the decoding.  Valid until the same thread asks for the same slot again."""
    buffers: dict[str, npt.NDArray[np.uint8]] | None = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(max(nbytes, 1), dtype=np.uint8)
        buffers[slot] = buf
    return buf[:nbytes]


def _pread(fd: int, offset: int, length: int, slot: str | None = None) -> npt.NDArray[np.uint8]:
    """Up to ``length`` bytes at ``offset`` into a numpy buffer (shorter at end of file): the
    thread's scratch buffer ``slot`` when given, else a new one."""
    buf = scratch(slot, length) if slot is not None else np.empty(length, dtype=np.uint8)
    got = 0
    view = memoryview(buf)  # type: ignore[arg-type]
    while got < length:
        if hasattr(os, "preadv"):
            n = os.preadv(fd, [view[got:]], offset + got)
        else:  # pragma: no cover - platforms without preadv
            chunk = os.pread(fd, length - got, offset + got)
            n = len(chunk)
            buf[got:got + n] = np.frombuffer(chunk, dtype=np.uint8)
        if n <= 0:
            break
        got += n
    return buf[:got]


def _read_stored(side: Side, idx: npt.NDArray[np.int64], slot: str) -> _Stored:
    """Fetch the stored bytes of blocks ``idx`` (sorted) of one file; blocks the jump table
    or the file size rule out get their error instead."""
    f = side.file
    h = f.header
    starts = side.starts[idx]
    ends = side.ends[idx]
    size = ends - starts
    if h.is_compressed:
        ok = ((starts >= h.data_offset) & (size > 0) & (ends <= f.file_size)
              & (size <= lz4block.compress_bound(h.block_bytes)))
    else:
        ok = ends <= f.file_size
    errors: dict[int, FormatError] = {}
    for k in np.flatnonzero(~ok).tolist():
        problem = f.block_problem(int(idx[k]))
        errors[k] = problem if problem is not None else BlockDecodeError(
            f"block needs bytes {int(starts[k])}..{int(ends[k])}", f.path, block=int(idx[k]),
            offset=int(starts[k]))
    good = np.flatnonzero(ok)
    off = np.zeros(len(idx), dtype=np.int64)
    if good.size == 0:
        return _Stored(np.empty(0, dtype=np.uint8), off, size, errors)
    lo = int(starts[good].min())
    hi = int(ends[good].max())
    need = int(size[good].sum())
    if hi - lo <= 2 * need + (1 << 20):
        buf = _pread(side.fd, lo, hi - lo, slot)
        off[good] = starts[good] - lo
    else:  # scattered blocks (a box through a big file, or a disordered table): one read each
        buf = scratch(slot, need)
        pos = 0
        for k in good.tolist():
            n = int(size[k])
            part = _pread(side.fd, int(starts[k]), n)
            buf[pos:pos + len(part)] = part
            off[k] = pos
            pos += n
    for k in good.tolist():
        if int(off[k]) + int(size[k]) > len(buf):
            errors[k] = BlockDecodeError(
                f"file ends before the block does (needs bytes up to {int(ends[k])})", f.path,
                block=int(idx[k]), offset=int(starts[k]))
    return _Stored(buf, off, size, errors)


def _decoded(side: Side, stored: _Stored, idx: npt.NDArray[np.int64], ks: list[int],
             block_bytes: int, slot: str) -> list[npt.NDArray[np.uint8] | FormatError]:
    """The decoded bytes of blocks ``ks`` (positions in ``idx``): raw blocks in place,
    compressed blocks decoded into one new buffer."""
    f = side.file
    if not f.header.is_compressed:
        return [stored.errors[k] if k in stored.errors else stored.block(k) for k in ks]
    dst = scratch(slot, len(ks) * block_bytes)
    base = stored.buf.ctypes.data if stored.buf.size else 0
    src = memoryview(stored.buf)  # type: ignore[arg-type]
    out: list[npt.NDArray[np.uint8] | FormatError] = []
    for j, k in enumerate(ks):
        if k in stored.errors:
            out.append(stored.errors[k])
            continue
        o, n = int(stored.off[k]), int(stored.size[k])
        view = dst[j * block_bytes:(j + 1) * block_bytes]
        try:
            lz4block.decode_into(src[o:o + n], view, src_address=base + o)
        except lz4block.LZ4Error as exc:
            out.append(BlockDecodeError(f"LZ4 block {exc}", f.path, block=int(idx[k]),
                                        offset=int(side.starts[idx[k]])))
            continue
        out.append(view)
    return out


def _voxels(plan: FilePlan, buf: npt.NDArray[np.uint8], index: int) -> npt.NDArray[Any]:
    """A decoded block as ``[z, y, x, c]``, cut to its clip box when it has one."""
    b = plan.block_len
    arr = buf.view(plan.dtype).reshape(b, b, b, plan.channels)
    clip = plan.clips.get(index)
    if clip is None:
        return arr
    (x0, y0, z0), (x1, y1, z1) = clip
    return arr[z0:z1, y0:y1, x0:x1, :]


def compare_chunk(plan: FilePlan, idx: npt.NDArray[np.int64]) -> ChunkOutcome:
    """Compare blocks ``idx`` (sorted Morton indices) of one file position.  Any thread."""
    bb = plan.block_bytes
    n = len(idx)
    sa = _read_stored(plan.a, idx, "stored a") if plan.a is not None else None
    sb = _read_stored(plan.b, idx, "stored b") if plan.b is not None else None
    ks = list(range(n))
    if (plan.a is not None and plan.b is not None and sa is not None and sb is not None
            and plan.a.file.header.is_compressed and plan.b.file.header.is_compressed):
        # Identical stored bytes decode to identical voxels: only the rest is decoded.
        ks = [k for k in ks if k in sa.errors or k in sb.errors
              or sa.size[k] != sb.size[k] or not same_bytes(sa.block(k), sb.block(k))]
    zeros = np.zeros(bb, dtype=np.uint8)
    va: list[npt.NDArray[np.uint8] | FormatError] = (
        _decoded(plan.a, sa, idx, ks, bb, "decoded a") if plan.a is not None and sa is not None
        else [zeros] * len(ks))
    vb: list[npt.NDArray[np.uint8] | FormatError] = (
        _decoded(plan.b, sb, idx, ks, bb, "decoded b") if plan.b is not None and sb is not None
        else [zeros] * len(ks))
    results: list[BlockResult] = []
    any_difference = False
    top: int | float = 0
    for j, k in enumerate(ks):
        x, y = va[j], vb[j]
        index = int(idx[k])
        if isinstance(x, FormatError) or isinstance(y, FormatError):
            problems = [f"{name}: {e}" for name, e in (("A", x), ("B", y))
                        if isinstance(e, FormatError)]
            results.append(BlockResult(plan.name, index, _position(plan, index), None, None,
                                       "; ".join(problems)))
            any_difference = True
            continue
        if same_bytes(x, y):
            continue
        d = abs_difference(_voxels(plan, x, index), _voxels(plan, y, index))
        if d.size == 0:
            continue
        peak = d.max()
        peak_value: int | float = int(peak) if d.dtype.kind == "u" else float(peak)
        if peak_value == 0:
            continue  # different bytes, same values (e.g. -0.0 and 0.0), or outside the box
        any_difference = True
        top = max(top, peak_value)
        tol: int | float = (int(plan.tolerance) if d.dtype.kind == "u"
                            and float(plan.tolerance).is_integer() else plan.tolerance)
        count = int(np.count_nonzero((d > tol).any(axis=-1)))
        if count:
            results.append(BlockResult(plan.name, index, _position(plan, index), count,
                                       peak_value))
    return ChunkOutcome(results, n, any_difference, top)


def _position(plan: FilePlan, index: int) -> Vec3:
    x, y, z = (int(v[()]) for v in morton.decode(index))
    b = plan.block_len
    ox, oy, oz = plan.origin
    return (ox + x * b, oy + y * b, oz + z * b)
