"""Block-by-block comparison of one pair of data files (or one file against an absent one).

The unit of work is a *chunk*: a run of blocks of one file position, sized so that a task is
worth a thread hop (megabytes, not one block).  A chunk's stored bytes are read with one
``pread`` per side into a per-thread buffer (never mapped: a file truncated by another program
while it is compared gives errors, not a SIGBUS) and compared and decoded there.  When both
files are LZ4-compressed, blocks whose stored
bytes are identical are equal without decoding (a whole chunk is one ``memcmp`` when its jump
table entries agree); every other block is decoded (raw blocks are used in place) and compared
with ``memcmp``, and only blocks that differ get their voxels counted.  Block ranges are
checked against the file size before any byte is used.  A block whose bytes cannot be read or decoded
is reported as that block's problem, never taken for zeros.  Worker threads run these functions;
they touch nothing shared but the read-only plan.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.compare.diff import abs_difference
from viewer.core.compare.model import BlockResult, Vec3
from viewer.format import FormatError
from viewer.format.errors import BlockDecodeError
from viewer.format.handles import readinto_fd
from viewer.format.wkw import File, lz4block, morton


def _load_memcmp() -> Any:
    fn = None
    for name in (ctypes.util.find_library("c"), "msvcrt"):
        if not name:
            continue
        try:
            fn = ctypes.CDLL(name).memcmp
            break
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
    return _same((a, 0, int(a.ctypes.data)), (b, 0, int(b.ctypes.data)), a.nbytes)


@dataclass
class Side:
    """One dataset's data file at a file position: the parsed ``File`` (header, jump table).
    Its stored bytes are read per chunk of blocks with ``pread`` (``window``), never mapped:
    a file truncated by another program during a compare must give an error, not a SIGBUS.
    ``data`` holds the bytes from file offset ``base`` on, and ``address`` is the address file
    offset 0 would have (``address + offset`` is where byte ``offset`` is).  Read-only once
    built; shared by workers."""

    file: File
    data: npt.NDArray[np.uint8]
    address: int
    size: int
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    base: int = 0

    @classmethod
    def open(cls, file: File) -> Side:
        starts, ends = file.block_ranges()
        return cls(file, np.zeros(0, dtype=np.uint8), 0, file.file_size, starts, ends)

    def window(self, lo: int, hi: int, slot: str) -> Side:
        """The bytes ``[lo, hi)`` read into the thread's scratch buffer ``slot``, as a Side of
        its own; ``size`` is cut where the file now ends (blocks past it are errors).  A file
        changed by another program raises ``FileChangedError``."""
        buf = scratch(slot, max(hi - lo, 0))
        with self.file._reading() as fd:
            got = readinto_fd(fd, buf, lo) if hi > lo else 0
        return dataclasses.replace(self, data=buf, address=int(buf.ctypes.data) - lo if
                                   buf.size else 0, size=min(self.size, lo + got), base=lo)

    def close(self) -> None:
        self.data = np.zeros(0, dtype=np.uint8)
        self.address = 0


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


#: Bytes of one block somewhere: (buffer, offset in it, address of that byte).
Located = tuple[npt.NDArray[np.uint8], int, int]
#: A decoded block, or what stopped it being decoded.
Decoded = Located | FormatError


def _same(x: Located, y: Located, n: int) -> bool:
    """Whether ``n`` bytes at two places are equal: one ``memcmp`` (GIL released)."""
    if n == 0 or x[2] == y[2]:
        return True
    if _MEMCMP is not None:
        return bool(_MEMCMP(x[2], y[2], n) == 0)
    return bool(np.array_equal(x[0][x[1]:x[1] + n], y[0][y[1]:y[1] + n]))  # pragma: no cover


def _check(side: Side, idx: npt.NDArray[np.int64]
           ) -> tuple[list[int], list[int], dict[int, FormatError]]:
    """Start offsets and stored sizes of blocks ``idx``, and the error of each block whose
    range the jump table or the file size rules out (by position in ``idx``)."""
    f = side.file
    h = f.header
    starts = side.starts[idx]
    ends = side.ends[idx]
    size = ends - starts
    if h.is_compressed:
        ok = ((starts >= h.data_offset) & (size > 0) & (ends <= side.size)
              & (size <= lz4block.compress_bound(h.block_bytes)))
    else:
        ok = ends <= side.size
    errors: dict[int, FormatError] = {}
    if not ok.all():
        for k in np.flatnonzero(~ok).tolist():
            problem = f.block_problem(int(idx[k]))
            errors[k] = problem if problem is not None else BlockDecodeError(
                f"the {side.size}-byte file ends before the block does (bytes "
                f"{int(starts[k])}..{int(ends[k])})", f.path, block=int(idx[k]),
                offset=int(starts[k]))
    return starts.tolist(), size.tolist(), errors


def _decoded(side: Side, starts: list[int], sizes: list[int], errors: dict[int, FormatError],
             idx: npt.NDArray[np.int64], ks: list[int], block_bytes: int, slot: str
             ) -> list[Decoded]:
    """The decoded bytes of blocks ``ks`` (positions in ``idx``): raw blocks in place in the
    mapping, compressed blocks decoded into the thread's scratch buffer ``slot``."""
    f = side.file
    out: list[Decoded] = []
    if not f.header.is_compressed:
        for k in ks:
            out.append(errors[k] if k in errors
                       else (side.data, starts[k] - side.base, side.address + starts[k]))
        return out
    dst = scratch(slot, len(ks) * block_bytes)
    dst_address = int(dst.ctypes.data) if dst.size else 0
    data = side.data
    for j, k in enumerate(ks):
        if k in errors:
            out.append(errors[k])
            continue
        o, n = starts[k], sizes[k]
        at = j * block_bytes
        src: Any = data[o - side.base:o - side.base + n]  # only its length is read
        try:
            lz4block.decode_into(src, dst[at:at + block_bytes], src_address=side.address + o)
        except lz4block.LZ4Error as exc:
            out.append(BlockDecodeError(f"LZ4 block {exc}", f.path, block=int(idx[k]),
                                        offset=o))
            continue
        out.append((dst, at, dst_address + at))
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
    ks = list(range(n))
    a, b = plan.a, plan.b
    try:
        a = _window(a, idx, "stored a") if a is not None else None
        b = _window(b, idx, "stored b") if b is not None else None
    except FormatError as exc:  # a file changed under the compare: its blocks failed
        failed = [BlockResult(plan.name, int(i), _position(plan, int(i)), None, None, str(exc))
                  for i in idx.tolist()]
        return ChunkOutcome(failed, n, True, 0)
    ca = _check(a, idx) if a is not None else None
    cb = _check(b, idx) if b is not None else None
    if (a is not None and b is not None and ca is not None and cb is not None
            and a.file.header.is_compressed and b.file.header.is_compressed):
        # Identical stored bytes decode to identical voxels: only the rest is decoded.
        (sa, za, ea), (sb, zb, eb) = ca, cb
        if (not ea and not eb and za == zb and _contiguous(sa, za) and _contiguous(sb, zb)
                and _same((a.data, sa[0] - a.base, a.address + sa[0]),
                          (b.data, sb[0] - b.base, b.address + sb[0]), sum(za))):
            ks = []
        else:
            ks = [k for k in ks if k in ea or k in eb or za[k] != zb[k]
                  or not _same((a.data, sa[k] - a.base, a.address + sa[k]),
                               (b.data, sb[k] - b.base, b.address + sb[k]), za[k])]
    zeros = np.zeros(bb, dtype=np.uint8)
    zero: Decoded = (zeros, 0, int(zeros.ctypes.data))
    va = (_decoded(a, *ca, idx, ks, bb, "decoded a") if a is not None and ca is not None
          else [zero] * len(ks))
    vb = (_decoded(b, *cb, idx, ks, bb, "decoded b") if b is not None and cb is not None
          else [zero] * len(ks))
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
        if _same(x, y, bb):
            continue
        d = abs_difference(_voxels(plan, x[0][x[1]:x[1] + bb], index),
                           _voxels(plan, y[0][y[1]:y[1] + bb], index))
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


def _window(side: Side, idx: npt.NDArray[np.int64], slot: str) -> Side:
    """``side`` with the stored bytes of blocks ``idx`` read (one ``pread`` of the span of
    those whose range lies inside the file)."""
    starts = side.starts[idx]
    ends = side.ends[idx]
    ok = (ends > starts) & (starts >= 0) & (ends <= side.size)
    if not ok.any():
        return side.window(0, 0, slot)
    return side.window(int(starts[ok].min()), int(ends[ok].max()), slot)


def _contiguous(starts: list[int], sizes: list[int]) -> bool:
    """Whether the blocks follow one another without a gap (one memcmp covers them all)."""
    return bool(starts) and all(s + z == t for s, z, t in zip(starts, sizes, starts[1:]))


def _position(plan: FilePlan, index: int) -> Vec3:
    x, y, z = (int(v[()]) for v in morton.decode(index))
    b = plan.block_len
    ox, oy, oz = plan.origin
    return (ox + x * b, oy + y * b, oz + z * b)
