"""A box read of one WKW file by the native kernel (``viewer/format/native/wkwbox.c``): the
blocks the box meets, their stored bytes, decoding and the copy into the output in one call
per thread, with no Python between blocks.  ``boxread.read_into`` uses it where the kernel
was built and the output's x rows are contiguous; its errors are the ones the Python path
raises, built by the same methods of the file.

Two reads go by path, the file opened, checked and closed inside the same call: a small box
of a file a ``Dataset`` has not opened but parsed before (``read_path``), and a batch of
one-block files (``read_files``, for ``WkwVolume.read_units``).  Both leave every file that
is not the sound common case (absent, changed a moment ago or meanwhile, not the version
remembered, damaged, another header) to the ordinary way, which says what is wrong."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import native, pool
from viewer.format.handles import COARSE_WINDOW_NS, RACY_WINDOW_NS, Identity
from viewer.format.wkw import lz4block, morton
from viewer.format.wkw.blockfile import MERGE_GAP, BlockFile
from viewer.format.wkw.header import HEADER_SIZE, Header, Numbers

#: What ``file.remembered`` gives of a file opened before: its identity, header, numbers and
#: extended jump table (None: raw).
Remembered = tuple[Identity, Header, Numbers, "npt.NDArray[np.uint64] | None"]

_i64 = ctypes.c_int64


class _Box(ctypes.Structure):
    _fields_ = [("fd", _i64), ("block_len", _i64), ("voxel_bytes", _i64), ("compressed", _i64),
                ("data_offset", _i64), ("file_size", _i64), ("ranges", ctypes.c_void_p),
                ("num_blocks", _i64), ("whole", ctypes.c_void_p), ("partial", ctypes.c_void_p),
                ("lo", _i64 * 3), ("hi", _i64 * 3), ("out", ctypes.c_void_p),
                ("stride_y", _i64), ("stride_z", _i64), ("shift", _i64 * 3),
                ("merge_gap", _i64), ("group", _i64), ("stream_over", _i64)]


class _Ident(ctypes.Structure):
    _fields_ = [("dev", _i64), ("ino", _i64), ("size", _i64), ("mtime", _i64), ("ctime", _i64),
                ("window", _i64), ("coarse_window", _i64)]


class _Status(ctypes.Structure):
    _fields_ = [("kind", _i64), ("block", _i64), ("start", _i64), ("end", _i64),
                ("got", _i64), ("wanted", _i64), ("partial", _i64), ("error", _i64)]


_OK, _RANGE, _DECODE, _SHORT, _OS, _MEMORY, _RETRY = range(7)

#: Blocks a thread takes at a time from a shared read (neighbours in the file: fewer preads).
GROUP = 8
#: A compressed read whose output is larger than this many bytes (more than a last-level
#: cache holds) stores x-neighbour blocks of 32-byte rows as whole cache lines, bypassing the
#: caches: no line of the output is read before it is written (where its memory is aligned
#: to a line, as ``bigmemory``'s is).
STREAM_OVER_BYTES = 32 << 20


def _functions() -> tuple[Any, Any, Any, int | None, int | None, Any, Any, Any] | None:
    lib = native.LIBRARY
    if lib is None:
        return None
    new, work, free = lib.wkw_plan_new, lib.wkw_plan_work, lib.wkw_plan_free
    listed = lib.wkw_read_blocks
    listed.argtypes = [ctypes.POINTER(_Box), ctypes.c_void_p, _i64, ctypes.c_void_p,
                       ctypes.c_void_p]
    listed.restype = _i64
    new.argtypes = [ctypes.POINTER(_Box), ctypes.POINTER(_Status)]
    new.restype = ctypes.c_void_p
    work.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Status)]
    work.restype = _i64
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    by_path, files = lib.wkw_read_path, lib.wkw_read_files
    by_path.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Box), ctypes.POINTER(_Ident),
                        ctypes.POINTER(_Status)]
    by_path.restype = _i64
    files.argtypes = [ctypes.c_char_p, ctypes.c_void_p, _i64, ctypes.c_char_p,
                      ctypes.POINTER(_Box), ctypes.POINTER(_Ident), ctypes.c_void_p,
                      ctypes.c_void_p, ctypes.c_void_p]
    files.restype = _i64
    whole, partial = lz4block.whole_decoder(), lz4block.partial_decoder()
    return (new, work, free,
            ctypes.cast(whole, ctypes.c_void_p).value if whole is not None else None,
            ctypes.cast(partial, ctypes.c_void_p).value if partial is not None else None,
            listed, by_path, files)


_FUNCTIONS = _functions()


def usable(compressed: bool) -> bool:
    """True when the kernel can read files of this kind (compressed ones need liblz4)."""
    if _FUNCTIONS is None:
        return False
    return not compressed or (_FUNCTIONS[3] is not None and _FUNCTIONS[4] is not None)


def read(f: BlockFile, rows: npt.NDArray[np.uint8], lo: Sequence[int], hi: Sequence[int],
         shift: Sequence[int], threads: int) -> None:
    """Read the box ``[lo, hi)`` (file voxels, clipped to the file) of ``f`` into ``rows``
    (the output as ``(Z, Y, X * bytes per voxel)`` bytes, x rows contiguous), file voxel
    ``v`` landing at output voxel ``v + shift``; on ``threads`` threads (the calling one and
    the shared pool's).  Raises the error the Python path raises for the lowest damaged
    block.  Call only where ``usable``."""
    assert _FUNCTIONS is not None
    new, work, free = _FUNCTIONS[:3]
    box = _box_of(f.header, f.file_size, f._ranges_i64)
    box.lo[:], box.hi[:], box.shift[:] = lo, hi, shift
    box.out, box.stride_y, box.stride_z = rows.ctypes.data, rows.strides[1], rows.strides[0]
    status = _Status()
    with f._reading() as fd:
        box.fd = fd
        handle = new(ctypes.byref(box), ctypes.byref(status))
        if not handle:
            _raise(f, status, lo, hi)
            return
        try:
            if threads > 1:
                statuses = [_Status() for _ in range(threads)]
                pool.share(threads, lambda k: work(handle, ctypes.byref(statuses[k])), threads)
                failed = [s for s in statuses if s.kind != _OK]
                if failed:
                    status = min(failed, key=lambda s: s.block)
            else:
                work(handle, ctypes.byref(status))
        finally:
            free(handle)
    if status.kind != _OK:
        _raise(f, status, lo, hi)


def read_path(path: str, known: Remembered, as_file: Callable[[str, Remembered], BlockFile],
              rows: npt.NDArray[np.uint8], lo: Sequence[int], hi: Sequence[int],
              shift: Sequence[int]) -> bool:
    """``read`` of a small box on this thread (``boxread.small_native`` gives ``rows``,
    ``lo``, ``hi``, ``shift``) from the data file at ``path`` without a ``File``: open,
    ``fstat``, the box read, ``fstat``, close, in one call, when the file is still the
    version ``known`` describes (its identity, header, numbers and jump table as
    ``file.remembered`` gives them) and was not changed a moment ago.  True when read; False
    when the caller must read it the ordinary way (the file absent, replaced, changing, or
    changed during the read); a damaged block raises the error ``read`` raises, worded by
    ``as_file(path, known)`` (a closed file of that version).  Call only where ``usable``."""
    ident, header = known[0], known[1]
    assert _FUNCTIONS is not None
    template = _TEMPLATES.get(path)
    if template is None or template[0] is not known:
        template = (known, bytes(_box_of(header, ident[2], known[3])), _ident(ident))
        if len(_TEMPLATES) >= _TEMPLATES_KEEP:
            _TEMPLATES.clear()
        _TEMPLATES[path] = template
    box = _Box.from_buffer_copy(template[1])
    box.lo[:], box.hi[:], box.shift[:] = lo, hi, shift
    box.out, box.stride_y, box.stride_z = rows.ctypes.data, rows.strides[1], rows.strides[0]
    status = _Status()
    kind = _FUNCTIONS[6](os.fsencode(path), ctypes.byref(box), ctypes.byref(template[2]),
                         ctypes.byref(status))
    if kind == _RETRY:
        return False
    if kind != _OK:
        _raise(as_file(path, known), status, lo, hi)
    return True


def read_files(paths: list[str], header: Header, dst: list[int]
               ) -> npt.NDArray[np.int64] | None:
    """Files of one block each (``header``'s geometry, their 16 header bytes exactly
    ``header``'s) read, checked and decoded into ``dst[k]`` (``block_bytes`` each) in one
    call: each file opened, its ``fstat`` taken, written-to files waited for, read whole,
    ``fstat`` again, closed.  None when every file was read; else ``[kind, errno]`` per
    file (kind 0: read), and a file of any other kind is the caller's to read the ordinary
    way (absent: errno ``ENOENT``; changed, damaged, different: the ordinary way says).
    Call only where ``usable``."""
    assert _FUNCTIONS is not None
    encoded = [os.fsencode(p) for p in paths]
    starts = np.zeros(len(encoded), dtype=np.int64)
    if len(encoded) > 1:
        np.cumsum([len(p) + 1 for p in encoded[:-1]], out=starts[1:])
    joined = b"\0".join(encoded) + b"\0"
    n = len(paths)
    kinds = np.empty((2, n), dtype=np.int64)
    addresses = np.asarray(dst, dtype=np.uint64)
    box = _box_of(header, 0, None)
    windows = _ident((0, 0, 0, 0, 0))
    left = _FUNCTIONS[7](joined, starts.ctypes.data, n, header.to_bytes(), ctypes.byref(box),
                         ctypes.byref(windows), addresses.ctypes.data, kinds[0].ctypes.data,
                         kinds[1].ctypes.data)
    if left < 0:
        raise MemoryError(f"no memory for a read of {n} files")
    return kinds.T if left else None


def files_usable(header: Header) -> bool:
    """Whether ``read_files`` reads files of this header (one block; compressed ones need
    liblz4; a compressed file's data right after its one-entry jump table)."""
    if not usable(header.is_compressed) or header.num_blocks != 1:
        return False
    return header.data_offset == (HEADER_SIZE + 8 if header.is_compressed else HEADER_SIZE)


#: ``read_path``'s kernel descriptions of files, by path: ``(remembered entry, box bytes,
#: identity)``; cleared when it holds ``_TEMPLATES_KEEP``.
_TEMPLATES: dict[str, tuple[Remembered, bytes, _Ident]] = {}
_TEMPLATES_KEEP = 1024


def _ident(ident: Sequence[int]) -> _Ident:
    out = _Ident(*ident)
    out.window, out.coarse_window = RACY_WINDOW_NS, COARSE_WINDOW_NS
    return out


def read_blocks(f: BlockFile, fd: int, indices: Sequence[int], dst: Sequence[int]
                ) -> npt.NDArray[np.int64] | None:
    """Whole blocks ``indices`` (each within the file's block count: the caller checks) decoded
    or read from ``fd`` into the memory at ``dst[k]`` (``block_bytes`` each), in one call; the
    kernel checks every block's byte range against the table and the file's size as
    ``BlockFile.bad_ranges`` does.  None when all went well; else one row per block,
    ``[kind, block, start, end, got, wanted, partial, errno]`` (kind 0: that block is good),
    for ``block_error``.  Call only where ``usable``."""
    assert _FUNCTIONS is not None
    n = len(indices)
    idx = (_i64 * n)(*indices)
    addresses = (ctypes.c_uint64 * n)(*dst)
    status = np.zeros((n, 8), dtype=np.int64)
    box = _Box.from_buffer_copy(_box_template(f))
    box.fd = fd
    failed = _FUNCTIONS[5](ctypes.byref(box), idx, n, addresses, status.ctypes.data)
    if failed < 0:
        raise MemoryError(f"{f.path}: no memory for a read of {n} blocks")
    return status if failed else None


def _box_template(f: BlockFile) -> _Box:
    """The kernel's description of ``f`` (made once per open file: its header, size and table
    do not change; each read copies it and sets its own descriptor)."""
    box: _Box | None = f.kernel_box
    if box is None:
        box = _box_of(f.header, f.file_size, f._ranges_i64)
        f.kernel_box = box
    return box


def block_error(f: BlockFile, row: npt.NDArray[np.int64]) -> Exception | None:
    """The error of one row of ``read_blocks``' outcome (None: the block is good), as the
    Python path words it."""
    kind, block, start, end, got, wanted, partial, error = (int(v) for v in row)
    if kind == _OK:
        return None
    if kind == _RANGE:
        return f._range_problem(block, start, end) or f._short(block, start, end)
    if kind == _DECODE:
        return f._decode_error(block, start, got, wanted, bool(partial))
    if kind == _SHORT:
        return f._short(block, start, end)
    return OSError(error, os.strerror(error), f.path)


def _box_of(h: Header, file_size: int, table: npt.NDArray[Any] | None) -> _Box:
    """The kernel's description of a file of header ``h``, ``file_size`` bytes and extended
    jump ``table`` (kept alive by the caller; the box and the output left for the caller)."""
    assert _FUNCTIONS is not None
    box = _Box()
    box.block_len, box.voxel_bytes = h.block_len, h.voxel_size
    box.compressed, box.data_offset = int(h.is_compressed), h.data_offset
    box.file_size = file_size
    box.ranges = table.ctypes.data if table is not None else None
    box.num_blocks, box.whole, box.partial = h.num_blocks, _FUNCTIONS[3], _FUNCTIONS[4]
    box.merge_gap, box.group, box.stream_over = MERGE_GAP, GROUP, STREAM_OVER_BYTES
    return box


def _raise(f: BlockFile, s: _Status, lo: Sequence[int], hi: Sequence[int]) -> None:
    if s.kind == _RANGE:
        b = f.header.block_len
        blo = (lo[0] // b, lo[1] // b, lo[2] // b)
        bhi = ((hi[0] - 1) // b + 1, (hi[1] - 1) // b + 1, (hi[2] - 1) // b + 1)
        indices = morton.box_indices(blo, bhi)
        problem = f._first_problem(indices, *f._ranges_of(indices))
        if problem is not None:
            raise problem
        raise f._range_problem(s.block, s.start, s.end) or f._short(s.block, s.start, s.end)
    if s.kind == _DECODE:
        raise f._decode_error(s.block, s.start, s.got, s.wanted, bool(s.partial))
    if s.kind == _SHORT:
        raise f._short(s.block, s.start, s.end)
    if s.kind == _OS:
        raise OSError(s.error, os.strerror(s.error), f.path)
    raise MemoryError(f"{f.path}: no memory for a box read")


__all__ = ["GROUP", "block_error", "files_usable", "read", "read_blocks", "read_files",
           "read_path", "usable"]
