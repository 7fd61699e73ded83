"""Decoding a batch of N5 or zarr chunks by the native kernel (``chunkbatch.c``): per chunk its
stored bytes decoded (gzip, zlib, zstd, raw), every checksum its stream carries verified, and
its box copied into the output through strides, byte-swapped where stored big-endian; one call
per batch, without the interpreter lock.

The codec libraries are loaded here with ctypes and passed to the kernel as function pointers:
libdeflate for gzip and zlib (it checks gzip's CRC32 and length and zlib's Adler-32 as zlib
does, and decodes a whole chunk in one call), libzstd for zstd (it checks a frame's content
checksum when the frame has one).  Where a library is absent its codec is not ``usable`` and
the callers decode on their Python paths.

A chunk the kernel could not decode (damaged, or a stream it leaves to Python, such as a gzip
header carrying its own CRC) is left untouched in the output and reported; the caller decodes
it again on its Python path, which raises the same typed error a read without the kernel
raises, so the two paths cannot differ in what they accept.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import native, pool

RAW, GZIP_MEMBERS, GZIP, ZLIB, ZSTD = range(5)
#: Status of a job: decoded and placed; not decoded (damaged); left to Python; no memory;
#: (files read by the kernel) no such file; the file left to Python (its read or header).
OK, FAILED, REFUSED, MEMORY, ABSENT, UNREAD = range(6)
#: Fields of a job row (int64 each, pointers as integers), as ``zk_job`` lays them out.
JOB_FIELDS = 18
#: Fields of an N5 file job: unit (x y z), output address, the output's first voxel (x y z),
#: the box's low and high corners (x y z each).
N5_FIELDS = 13
#: Most N5 axes the kernel's file reads take (``header.MAX_NDIM``).
N5_MAX_NDIM = 32


class _Codecs(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in (
        "deflate_new", "deflate_free", "gzip", "zlib", "zstd_new", "zstd_free", "zstd",
        "zstd_is_error", "zstd_content", "zstd_frame")]


class N5Spec(ctypes.Structure):
    """An N5 dataset and a read of its chunk files (``zk_n5``): ``folder`` with a separator
    after it, N5 ``ndim``, ``block`` sizes and ``dims``, grid positions ``tail`` of the axes
    past z, the ``channel_axis`` (-1: none) and the ``channels`` placed, the volume's
    ``chunk`` shape, codec, element size, byte swap, the output's strides (c, z, y, x) and
    the racy windows of ``viewer.format.handles``."""

    _fields_ = [("folder", ctypes.c_char_p), ("ndim", ctypes.c_int64),
                ("block", ctypes.c_int64 * N5_MAX_NDIM), ("dims", ctypes.c_int64 * N5_MAX_NDIM),
                ("tail", ctypes.c_int64 * N5_MAX_NDIM), ("channel_axis", ctypes.c_int64),
                ("channels", ctypes.c_int64), ("chunk", ctypes.c_int64 * 3),
                ("codec", ctypes.c_int64), ("itemsize", ctypes.c_int64),
                ("swap", ctypes.c_int64), ("dst_stride", ctypes.c_int64 * 4),
                ("racy_ns", ctypes.c_int64), ("coarse_ns", ctypes.c_int64)]


def _library(short: str, names: Sequence[str]) -> Any:
    """The library by its usual file names, else as ``ctypes.util.find_library`` finds it
    (last: it runs ``ldconfig``, which would cost every start-up)."""
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    found = ctypes.util.find_library(short)
    if found:
        try:
            return ctypes.CDLL(found)
        except OSError:
            return None
    return None


def _address(lib: Any, name: str) -> int | None:
    if lib is None:
        return None
    try:
        value: int | None = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        return value
    except AttributeError:
        return None


def _load() -> tuple[Any, _Codecs, frozenset[int], Any, Any] | None:
    lib = native.LIBRARY
    if lib is None:
        return None
    files: Any
    ranges: Any
    try:
        files = lib.zk_n5_read  # absent from a library built before it: then not used
        files.argtypes = [ctypes.POINTER(_Codecs), ctypes.POINTER(N5Spec), ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
        files.restype = ctypes.c_int64
        ranges = lib.zk_read_ranges
        ranges.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        ranges.restype = ctypes.c_int64
    except AttributeError:
        files = ranges = None
    fn = lib.zk_decode
    fn.argtypes = [ctypes.POINTER(_Codecs), ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                   ctypes.c_int64, ctypes.c_void_p]
    fn.restype = ctypes.c_int64
    deflate = _library("deflate", ["libdeflate.so.0", "libdeflate.dylib", "libdeflate.so"])
    zstd = _library("zstd", ["libzstd.so.1", "libzstd.1.dylib", "libzstd.dylib", "libzstd.so"])
    c = _Codecs()
    c.deflate_new = _address(deflate, "libdeflate_alloc_decompressor")
    c.deflate_free = _address(deflate, "libdeflate_free_decompressor")
    c.gzip = _address(deflate, "libdeflate_gzip_decompress_ex")
    c.zlib = _address(deflate, "libdeflate_zlib_decompress_ex")
    c.zstd_new = _address(zstd, "ZSTD_createDCtx")
    c.zstd_free = _address(zstd, "ZSTD_freeDCtx")
    c.zstd = _address(zstd, "ZSTD_decompressDCtx")
    c.zstd_is_error = _address(zstd, "ZSTD_isError")
    c.zstd_content = _address(zstd, "ZSTD_getFrameContentSize")
    c.zstd_frame = _address(zstd, "ZSTD_findFrameCompressedSize")
    codecs = {RAW}
    if c.deflate_new and c.deflate_free and c.gzip and c.zlib:
        codecs |= {GZIP_MEMBERS, GZIP, ZLIB}
    if all((c.zstd_new, c.zstd_free, c.zstd, c.zstd_is_error, c.zstd_content, c.zstd_frame)):
        codecs.add(ZSTD)
    return fn, c, frozenset(codecs), files, ranges


_LOADED = _load()


def usable(codec: int) -> bool:
    """True when the kernel was built and the library of ``codec`` loaded."""
    return _LOADED is not None and codec in _LOADED[2]


def reads_n5_files() -> bool:
    """True when the kernel reads N5 chunk files itself (``read_n5_files``)."""
    return _LOADED is not None and _LOADED[3] is not None


def read_n5_files(spec: N5Spec, jobs: npt.NDArray[np.int64], threads: int
                  ) -> npt.NDArray[np.int64]:
    """Read, check, decode and place the N5 chunk files of ``jobs`` (rows of ``N5_FIELDS``),
    taken in turn by ``threads`` calls at once (the calling thread and pool threads); the
    status of each job.  Call only where ``reads_n5_files`` and the codec is ``usable``."""
    assert _LOADED is not None and _LOADED[3] is not None
    _, codecs, _, files, _ = _LOADED
    jobs = np.ascontiguousarray(jobs, dtype=np.int64)
    n = len(jobs)
    status = np.full(n, UNREAD, dtype=np.int64)
    if n == 0:
        return status
    counter = np.zeros(1, dtype=np.int64)
    args = (ctypes.byref(codecs), ctypes.byref(spec), jobs.ctypes.data, n,
            counter.ctypes.data, status.ctypes.data)

    def run(_: int) -> None:
        files(*args)

    pool.share(min(threads, n), run, threads)
    return status


def read_ranges(path: str, ranges: Sequence[tuple[int, int]], racy_ns: int, coarse_ns: int
                ) -> tuple[bytearray, npt.NDArray[np.int64], npt.NDArray[np.int64],
                           tuple[int, int, int, int, int]] | None:
    """``(offset, length)`` ranges of the file at ``path`` read by the kernel in one call as
    one version of it (settled, no write in progress, the same identity after the reads):
    ``(buffer, start, got, identity)``, range ``i`` being ``got[i]`` bytes (shorter only at
    the end of the file) at ``start[i]`` of ``buffer``, and the file's identity
    (``handles.identity``); None where the kernel is not built or left the file to the
    Python path (``store.read_file_ranges``: missing, racy, changed, unreadable)."""
    if _LOADED is None or _LOADED[4] is None:
        return None
    spans = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    if len(spans) and int(spans.min()) < 0:
        return None
    buf = bytearray(int(spans[:, 1].sum()))
    got = np.zeros(len(spans), dtype=np.int64)
    ident = np.zeros(5, dtype=np.int64)
    address = np.frombuffer(buf, dtype=np.uint8).ctypes.data if len(buf) else 0
    if _LOADED[4](os.fsencode(path), spans.ctypes.data, len(spans), address, got.ctypes.data,
                  racy_ns, coarse_ns, ident.ctypes.data) != OK:
        return None
    start = np.zeros(len(spans), dtype=np.int64)
    if len(spans) > 1:
        np.cumsum(spans[:-1, 1], out=start[1:])
    dev, ino, size, mtime, ctime = ident.tolist()
    # device and inode numbers are unsigned: as the 64-bit pattern the kernel gave
    return buf, start, got, (dev % (1 << 64), ino % (1 << 64), size, mtime, ctime)


class Batch:
    """Jobs for one call: ``add`` one per chunk, then ``run``.  Keeps the stored bytes alive
    until the call is done."""

    __slots__ = ("rows", "keep", "itemsize", "swap")

    def __init__(self, itemsize: int, swap: bool) -> None:
        self.rows: list[list[int]] = []
        self.keep: list[Any] = []
        self.itemsize = itemsize
        self.swap = swap

    def add(self, stored: bytes | bytearray | memoryview, codec: int, expected: int,
            dst: int, src_off: int, count: Sequence[int], src_stride: Sequence[int],
            dst_stride: Sequence[int]) -> None:
        """One chunk: ``stored`` decodes (``codec``) to ``expected`` bytes, of which the box of
        ``count`` elements (four axes, the last innermost) starting ``src_off`` bytes in, at
        ``src_stride`` bytes apart, goes to address ``dst``, ``dst_stride`` bytes apart."""
        buf = np.frombuffer(stored, dtype=np.uint8)
        self.keep.append(buf)
        self.rows.append([buf.ctypes.data if len(buf) else 0, len(buf), codec, expected, dst,
                          src_off, *count, *src_stride, *dst_stride])

    def run(self) -> npt.NDArray[np.int64]:
        """Decode and place every job; the status of each (``OK``: its box is in the
        output; anything else: the output is untouched there)."""
        n = len(self.rows)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        status = run_jobs(np.asarray(self.rows, dtype=np.int64), self.itemsize, self.swap)
        self.keep.clear()
        return status


def run_jobs(jobs: npt.NDArray[np.int64], itemsize: int, swap: bool) -> npt.NDArray[np.int64]:
    """Decode and place the jobs of ``jobs`` (``(N, JOB_FIELDS)`` rows as ``Batch.add``
    makes them; the stored bytes they point to kept alive by the caller) in one call; the
    status of each, as ``Batch.run``."""
    assert _LOADED is not None
    fn, codecs, _, _, _ = _LOADED
    jobs = np.ascontiguousarray(jobs, dtype=np.int64)
    n = len(jobs)
    status = np.zeros(n, dtype=np.int64)
    if n:
        fn(ctypes.byref(codecs), jobs.ctypes.data, n, itemsize, int(swap), status.ctypes.data)
    return status


__all__ = ["ABSENT", "Batch", "FAILED", "GZIP", "GZIP_MEMBERS", "JOB_FIELDS", "MEMORY",
           "N5Spec", "N5_FIELDS", "N5_MAX_NDIM", "OK", "RAW", "REFUSED", "UNREAD", "ZLIB",
           "ZSTD", "read_n5_files", "read_ranges", "reads_n5_files", "run_jobs", "usable"]
