"""A zfpc file as a ``Volume``.

The array is ``arr[x, y, z, w]`` (zfpc's own convention: x first), ``w`` the channel: X is
``nx``, the channels are ``nw`` (1 when the array has fewer than four dimensions).

**Chunks are streams.**  The streams split the array along its uncorrelated dimensions, so the
chunk grid follows them: along x, y and z a chunk spans the whole dimension when it is
correlated (or of size 1) and one voxel when the streams split it; e.g. a vector field
``[x, y, z, 2]`` with correlated ``x, y`` has ``nz`` chunks of ``(nx, ny, 1)``.  When ``w`` is
split too (one stream per channel), a chunk is made of its ``nw`` streams, one per channel;
otherwise one stream carries every channel of its chunk.  The whole file is one storage unit;
its ``ChunkTable`` is the stream index (a chunk of several streams: the first one's offset and
the sum of their sizes; ``describe_chunk`` lists each stream).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.description import described
from viewer.format.errors import (
    ChunkDecodeError,
    DatasetLayoutError,
    FileChangedError,
    FileChangingError,
    FormatError,
    read_failure,
)
from viewer.format.handles import changing_error, identity, settle, settle_deadline
from viewer.format.pool import decode_pool
from viewer.format.store import LocalStore, Store, file_version, split, version_changed
from viewer.format.volume import (
    ChunkTable,
    StorageUnit,
    StoredResult,
    Vec3,
    Volume,
    VolumeInfo,
    chunk_grid,
)
from viewer.format.zfpc import container
from viewer.format.zfpc.container import DIM_NAMES, HEADER_SIZE, Header
from viewer.format.zfpc.zfp import ZfpError, decode_into, decode_padded, parse_header


@dataclass(frozen=True)
class Layout:
    """Where the streams are in one version of the file: its size, the index (offsets,
    sizes as stored and as used) and that version (``ObjectStat.version``).  Replaced whole
    when the file was rewritten (``ZfpcVolume.reload``), so a read takes one and uses only it."""

    file_size: int
    raw_sizes: npt.NDArray[np.uint64]
    offsets: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    first_offset: int
    version: str | None


def load(store: Store, key: str, path: str) -> tuple[Header, Layout]:
    """The header and the stream index of the zfpc file at ``key``, both from the version
    ``Store.stat`` saw (a file rewritten in between is looked at again; one still changing
    after ``handles.SETTLE_NS``: ``FileChangingError``)."""
    deadline = settle_deadline()
    while True:
        try:
            stat = store.stat(key)
            if stat is None:
                raise DatasetLayoutError("no such file", path)
            size = stat.size
            head = store.read_ranges_of(key, [(0, HEADER_SIZE)], stat.version)[0]
            h = container.parse_header(head, path)
            need = HEADER_SIZE + 8 * (h.num_streams + 1)
            data = head + store.read_ranges_of(key, [(HEADER_SIZE, need - HEADER_SIZE)],
                                               stat.version)[0] if need <= size else head
        except FileChangingError:
            raise
        except FileChangedError:
            if time.monotonic_ns() > deadline:
                raise changing_error(path) from None
            continue
        offsets, sizes, first = container.parse_index(data, h, size, path)
        raw = np.frombuffer(data, dtype="<u8", count=h.num_streams, offset=HEADER_SIZE + 8)
        return h, Layout(size, raw, offsets, sizes, first, stat.version)


class ZfpcUnit(StorageUnit):
    """The zfpc file as the one storage unit of its volume (its index parsed once)."""

    def __init__(self, volume: ZfpcVolume) -> None:
        self.volume = volume
        self.path = volume.path
        self.num_chunks = volume.num_chunks
        self.table_bytes = 16 * volume.header.num_streams
        self._table: ChunkTable | None = None

    @property
    def size(self) -> int:
        return self.volume.file_size

    def _streams(self, index: int) -> list[int]:
        v = self.volume
        return [index + v.num_chunks * j for j in range(v.streams_per_chunk)]

    def chunk_table(self) -> ChunkTable:
        if self._table is None:
            v = self.volume
            spc = v.streams_per_chunk
            sizes = v.stream_sizes.reshape(spc, v.num_chunks)
            offsets = v.stream_offsets.reshape(spc, v.num_chunks)
            self._table = ChunkTable(offsets[0].copy(), sizes.sum(axis=0),
                                     np.ones(v.num_chunks, np.bool_))
        return self._table

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        """The chunks' streams, read through the index of the file's version they are read
        from (a file rewritten since its index was read: the index read again)."""
        v = self.volume
        deadline = 0
        while True:
            lay = v.layout
            try:
                return self._read_stored(indices, lay)
            except FileChangingError as exc:
                return [exc.at(chunk=v.chunk_position(int(i))) for i in indices]
            except FileChangedError:
                deadline = deadline or settle_deadline()
                if time.monotonic_ns() > deadline:
                    err = changing_error(v.path)
                    return [err.at(chunk=v.chunk_position(int(i))) for i in indices]
            try:
                v.reload(lay)
            except FormatError as exc:
                return [exc.at(chunk=v.chunk_position(int(i))) for i in indices]

    def _read_stored(self, indices: Sequence[int], lay: Layout) -> list[StoredResult]:
        v = self.volume
        out: list[StoredResult] = [None] * len(indices)
        ranges: list[tuple[int, int]] = []
        wanted: list[int] = []
        for k, index in enumerate(indices):
            index = int(index)
            if not 0 <= index < v.num_chunks:
                out[k] = FormatError(f"no chunk {index} (the file has {v.num_chunks})", v.path)
                continue
            bad = None
            for s in self._streams(index):
                off, n = int(lay.offsets[s]), int(lay.sizes[s])
                if off + n > lay.file_size:
                    bad = ChunkDecodeError(
                        f"stream {s} ({v.stream_label(s)}) of {int(lay.raw_sizes[s])} bytes "
                        f"at {off} runs past the end of the file ({lay.file_size} bytes)",
                        v.path, offset=off, chunk=v.chunk_position(index))
                    break
            if bad is not None:
                out[k] = bad
                continue
            wanted.append(k)
            ranges.extend((int(lay.offsets[s]), int(lay.sizes[s]))
                          for s in self._streams(index))
        if not ranges:
            return out
        try:
            blobs = v.store.read_ranges_of(v.key, ranges, lay.version)
        except OSError as exc:
            err = read_failure(exc, FormatError, "cannot read", v.path)
            for k in wanted:
                out[k] = err
            return out
        spc = v.streams_per_chunk
        for n, k in enumerate(wanted):
            parts = blobs[n * spc:(n + 1) * spc]
            out[k] = parts[0] if spc == 1 else b"".join(parts)
        return out

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        v = self.volume
        v.check_stream_sizes(index, stored)
        c = v.chunk_shape
        arr = np.empty((v.num_channels, c[0], c[1], c[2]), dtype=v.dtype, order="F")
        v.decode_chunk_into(index, stored, arr)
        return arr

    @described
    def describe(self) -> dict[str, Any]:
        return self.volume.header_fields()

    def describe_chunk(self, index: int) -> dict[str, Any]:
        v = self.volume
        streams = []
        for s in self._streams(int(index)):
            off, n = int(v.stream_offsets[s]), int(v.stream_raw_sizes[s])
            entry: dict[str, Any] = {"stream": s, "slice": v.stream_label(s), "offset": off,
                                     "size": n}
            if n:
                entry["ratio"] = round(v.stream_nbytes / n, 3)
            try:
                head = v.store.read(v.key, off, min(24, max(n, 0)))
                entry.update(parse_header(head).describe())
            except (ZfpError, OSError) as exc:
                entry["zfp_header_error"] = str(exc)
            streams.append(entry)
        return {"streams": streams}

    def close(self) -> None:
        """Nothing: the volume owns it."""


class ZfpcVolume(Volume):
    """A ``.zfpc`` file (see the module docstring)."""

    format = "zfpc"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        store, key = split(self.path)
        self.store: Store = store
        self.key = key
        h, self.layout = load(store, key, self.path)
        self.header: Header = h
        e = h.extent
        sp = h.split
        self.dtype = h.dtype
        self.num_channels = e[3]
        self.chunk_shape = (1 if sp[0] else e[0], 1 if sp[1] else e[1], 1 if sp[2] else e[2])
        self.unit_shape = (e[0] if sp[0] else 1, e[1] if sp[1] else 1, e[2] if sp[2] else 1)
        self.num_chunks = self.unit_shape[0] * self.unit_shape[1] * self.unit_shape[2]
        self.streams_per_chunk = e[3] if sp[3] else 1
        #: Channels one stream carries.
        self.stream_channels = 1 if sp[3] else e[3]
        self.stream_nbytes = int(np.prod(h.stream_shape)) * h.dtype.itemsize
        self._unit = ZfpcUnit(self)
        self._lock = threading.Lock()

    # -- the file's version ------------------------------------------------------------------------
    @property
    def file_size(self) -> int:
        return self.layout.file_size

    @property
    def stream_raw_sizes(self) -> npt.NDArray[np.uint64]:
        return self.layout.raw_sizes

    @property
    def stream_offsets(self) -> npt.NDArray[np.int64]:
        return self.layout.offsets

    @property
    def stream_sizes(self) -> npt.NDArray[np.int64]:
        return self.layout.sizes

    @property
    def first_offset(self) -> int:
        return self.layout.first_offset

    def reload(self, seen: Layout) -> None:
        """The file is no longer the version of ``seen`` (another program rewrote it): read
        its index again (once for every reader that found the change).  A file whose header
        changed (another shape, type or split) is another volume: ``FileChangedError``."""
        with self._lock:
            if self.layout is not seen:
                return
            h, lay = load(self.store, self.key, self.path)
            if h != self.header:
                raise FileChangedError("the file was rewritten with another header since "
                                       "it was opened; open it again", self.path)
            self.layout = lay
            self._unit._table = None

    # -- geometry ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Vec3:
        e = self.header.extent
        return (e[0], e[1], e[2])

    def chunk_position(self, index: int) -> tuple[int, int, int]:
        g = self.chunk_local(np.asarray([index], dtype=np.int64))[0]
        return (int(g[0]), int(g[1]), int(g[2]))

    def stream_position(self, stream: int) -> tuple[int, int, int, int]:
        """``(x, y, z, w)`` of the stream's slice (0 along the dimensions it spans)."""
        chunk, w = stream % self.num_chunks, stream // self.num_chunks
        x, y, z = self.chunk_position(chunk)
        return (x, y, z, w)

    def stream_label(self, stream: int) -> str:
        """The slice a stream covers, as ``z=3, w=1`` (``all`` for one stream)."""
        pos = self.stream_position(stream)
        parts = [f"{DIM_NAMES[d]}={pos[d]}" for d in range(4) if self.header.split[d]]
        return ", ".join(parts) if parts else "all"

    # -- units ------------------------------------------------------------------------------------
    def unit_path(self, unit: Vec3) -> str:
        return self.path

    def open_unit(self, unit: Vec3) -> ZfpcUnit | None:
        return self._unit if tuple(unit) == (0, 0, 0) else None

    def done_with(self, unit: StorageUnit) -> None:
        """The volume keeps its one unit."""

    def iter_units(self) -> Iterator[Vec3]:
        yield (0, 0, 0)

    # -- decoding ---------------------------------------------------------------------------------
    def _stream_view(self, dst: npt.NDArray[Any], w: int) -> npt.NDArray[Any]:
        """The part of ``dst`` (``(C, cx, cy, cz)``, one chunk) that stream ``w`` of the chunk
        fills, shaped as the stream's numpy array."""
        h = self.header
        part = dst[w:w + 1] if h.split[3] else dst
        xyzw = part.transpose(1, 2, 3, 0)
        index: list[Any] = []
        for d in range(4):
            if d < h.ndim and h.correlated[d]:
                index.append(slice(None))
            else:
                index.append(0)
        view: npt.NDArray[Any] = xyzw[tuple(index)]
        return view

    def check_stream_sizes(self, index: int, stored: bytes | memoryview) -> None:
        """Before memory is set aside for a chunk: its streams can hold what they claim (zfp
        spends at least one bit per block of 4^d values)."""
        h = self.header
        blocks = 1
        for n in h.stream_shape:
            blocks *= (n + 3) // 4
        for s in self._unit._streams(index):
            n = int(self.stream_sizes[s])
            if blocks > 8 * n:
                raise ChunkDecodeError(
                    f"stream {s} ({self.stream_label(s)}) of {n} bytes cannot hold the {blocks} "
                    f"zfp blocks of {list(h.stream_shape)}: truncated or damaged", self.path,
                    offset=int(self.stream_offsets[s]), chunk=self.chunk_position(index))

    def _stream_error(self, index: int, s: int, exc: Exception) -> ChunkDecodeError:
        return ChunkDecodeError(f"stream {s} ({self.stream_label(s)}): {exc}", self.path,
                                offset=int(self.stream_offsets[s]),
                                chunk=self.chunk_position(index))

    def decode_chunk_from_file(self, index: int, fd: int, dst: npt.NDArray[Any],
                               lay: Layout) -> None:
        """Chunk ``index`` read from the open local file ``fd`` (the version of ``lay``)
        straight into the padded buffers its streams are decoded from (no intermediate
        copy), into ``dst``."""
        for w, s in enumerate(self._unit._streams(index)):
            off, n = int(lay.offsets[s]), int(lay.sizes[s])
            try:
                if off + n > lay.file_size:
                    raise ZfpError(f"{int(lay.raw_sizes[s])} bytes at {off} run past "
                                   f"the end of the file ({lay.file_size} bytes)")
                head = parse_header(os.pread(fd, min(24, n), off))
                if head.dtype != self.dtype:
                    raise ZfpError(f"stream holds {head.dtype.name}, the container says "
                                   f"{self.dtype.name}")
                if head.blocks > 8 * n:
                    raise ZfpError(f"{n} bytes cannot hold the {head.blocks} zfp blocks of "
                                   f"{list(head.numpy_shape)}: truncated")
                buf = np.empty(head.padded_size(n), dtype=np.uint8)
                view = memoryview(buf)  # type: ignore[arg-type]
                got = 0
                while got < n:
                    k = os.preadv(fd, [view[got:n]], off + got)
                    if k <= 0:
                        raise ZfpError(f"only {got} of {n} bytes could be read")
                    got += k
                decode_padded(buf, n, head, self._stream_view(dst, w))
            except ZfpError as exc:
                raise self._stream_error(index, s, exc) from None

    def decode_chunk_into(self, index: int, stored: bytes | memoryview,
                          dst: npt.NDArray[Any]) -> None:
        """Decode chunk ``index`` from its stored bytes (its streams, one after the other) into
        ``dst``, a ``(C, cx, cy, cz)`` array or view."""
        mv = memoryview(stored)
        pos = 0
        for w, s in enumerate(self._unit._streams(index)):
            n = int(self.stream_sizes[s])
            part = mv[pos:pos + n]
            pos += n
            try:
                if len(part) != n:
                    raise ZfpError(f"{len(part)} bytes given, the index says {n}")
                head = parse_header(part)
                if head.dtype != self.dtype:
                    raise ZfpError(f"stream holds {head.dtype.name}, the container says "
                                   f"{self.dtype.name}")
                decode_into(part, head, self._stream_view(dst, w))
            except ZfpError as exc:
                raise self._stream_error(index, s, exc) from None

    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        """As ``Volume.read``, but only the voxels outside the file are filled first (the
        streams overwrite everything inside, so a whole-file read writes its memory once)."""
        off = [int(v) for v in offset]
        size = [int(v) for v in shape]
        if len(off) != 3 or len(size) != 3:
            return super().read(offset, shape)
        out = np.empty((self.num_channels, *size), dtype=self.dtype, order="F")
        ext = self.shape
        inner = [(min(max(-o, 0), n), min(max(e - o, 0), n))
                 for o, n, e in zip(off, size, ext, strict=True)]
        if any(hi <= lo for lo, hi in inner):
            out[...] = self.fill_value
            return out
        for d, (lo, hi) in enumerate(inner):
            before: list[Any] = [slice(None)] * 4
            after: list[Any] = [slice(None)] * 4
            before[1 + d] = slice(0, lo)
            after[1 + d] = slice(hi, None)
            out[tuple(before)] = self.fill_value
            out[tuple(after)] = self.fill_value
        if min(size) > 0:
            self.read_into(out, off)
        return out

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """Chunks inside the box decode straight into ``out``; the others through a chunk.
        All through the index of the file's version they are read from: a file rewritten
        since its index was read has its index read again (``reload``) and is read anew;
        one still changing after ``handles.SETTLE_NS`` is a ``FileChangingError``.

        It replaces the shared ``Volume.read_into`` for those two: libzfp decodes a chunk
        wholly inside the box into its part of ``out`` (from the file's descriptor, no stored
        copy), where the shared path decodes every chunk into one of its own and copies it;
        and the whole read is one version of the file, checked before and after (figures:
        docs/performance.md, containers)."""
        deadline = 0
        while True:
            lay = self.layout
            try:
                self._read_into(out, offset, lay)
                return
            except FileChangingError:
                raise
            except FileChangedError:
                deadline = deadline or settle_deadline()
                if time.monotonic_ns() > deadline:
                    raise changing_error(self.path) from None
            self.reload(lay)

    def _read_into(self, out: npt.NDArray[Any], offset: Sequence[int], lay: Layout) -> None:
        off = np.asarray([int(v) for v in offset], dtype=np.int64)
        size = np.asarray(out.shape[1:], dtype=np.int64)
        c = np.asarray(self.chunk_shape, dtype=np.int64)
        lo = np.maximum(off, 0)
        hi = np.minimum(off + size, np.asarray(self.shape, dtype=np.int64))
        if (hi <= lo).any():
            return
        grid = chunk_grid(lo, hi, c)
        _, indices = self.locate(grid)
        fd = -1
        st: os.stat_result | None = None
        path = self.store.location(self.key)
        if isinstance(self.store, LocalStore):
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                fd = -1
            else:
                try:  # the racy-timestamp rule, as every local read
                    st = settle(fd, path, os.fstat(fd), settle_deadline())
                    if lay.version is not None and file_version(st) != lay.version:
                        raise version_changed(path)
                except BaseException:
                    os.close(fd)
                    raise
        try:
            self._read_chunks_into(out, off, size, c, grid, indices, fd, lay)
            if st is not None and identity(os.fstat(fd)) != identity(st):
                raise FileChangedError("the file changed while it was read (rewritten or "
                                       "truncated by another program)", path)
        finally:
            if fd >= 0:
                os.close(fd)

    def _read_chunks_into(self, out: npt.NDArray[Any], off: npt.NDArray[np.int64],
                          size: npt.NDArray[np.int64], c: npt.NDArray[np.int64],
                          grid: npt.NDArray[np.int64], indices: npt.NDArray[np.int64],
                          fd: int, lay: Layout) -> None:
        """Decode the chunks at ``grid`` into ``out`` (the box at ``off``); with a local file
        descriptor ``fd`` the chunks wholly inside read their streams straight from it."""
        batch = 256
        for start in range(0, len(grid), batch):
            rows = range(start, min(start + batch, len(grid)))
            inside = []
            for row in rows:
                g = grid[row] * c
                inside.append(bool((g >= off).all() and (g + c <= off + size).all()))
            if fd >= 0:
                need = [int(indices[r]) for r, ins in zip(rows, inside, strict=True) if not ins]
                stored_part = iter(self._unit._read_stored(need, lay)) if need else iter(())
                stored: list[StoredResult] = [b"" if ins else next(stored_part)
                                              for ins in inside]
            else:
                stored = self._unit._read_stored(indices[start:start + batch].tolist(), lay)
            jobs = []
            for row, data, ins in zip(rows, stored, inside, strict=True):
                if isinstance(data, FormatError):
                    raise data
                if data is not None:
                    jobs.append((row, data, ins))

            def one(job: tuple[int, bytes | memoryview, bool]) -> None:
                row, data, ins = job
                g = grid[row] * c
                s_lo, s_hi = np.maximum(g, off), np.minimum(g + c, off + size)
                dst = tuple(slice(int(a), int(b))
                            for a, b in zip(s_lo - off, s_hi - off, strict=True))
                index = int(indices[row])
                if ins and fd >= 0:
                    self.decode_chunk_from_file(index, fd, out[(slice(None), *dst)], lay)
                elif ins:
                    self.check_stream_sizes(index, data)
                    self.decode_chunk_into(index, data, out[(slice(None), *dst)])
                else:
                    chunk = self._unit.decode(index, data)
                    src = tuple(slice(int(a), int(b))
                                for a, b in zip(s_lo - g, s_hi - g, strict=True))
                    out[(slice(None), *dst)] = chunk[(slice(None), *src)]

            pool = decode_pool() if len(jobs) > 1 else None
            if pool is not None:
                # libzfp runs without the GIL: the chunks (disjoint parts of out) in parallel
                for _ in pool.map(one, jobs):
                    pass
            else:
                for job in jobs:
                    one(job)

    # -- description ------------------------------------------------------------------------------
    def header_fields(self) -> dict[str, Any]:
        h = self.header
        return {"magic": "zfpc", "version": h.version, "zfp_type": h.dtype.name,
                "zfp_mode": h.mode_name, "c_order": h.c_order,
                "nx": h.sizes[0], "ny": h.sizes[1], "nz": h.sizes[2], "nw": h.sizes[3],
                "correlated": "".join(DIM_NAMES[d] for d in range(4) if h.correlated[d]),
                "streams": h.num_streams, "stream_shape": list(h.stream_shape),
                "header_bytes": HEADER_SIZE, "index_bytes": 8 * (h.num_streams + 1),
                "first_stream_offset": self.first_offset, "file_bytes": self.file_size}

    def info(self) -> VolumeInfo:
        return VolumeInfo("zfpc", f"zfp {self.header.mode_name}", self.header_fields())

    def problems(self) -> list[FormatError]:
        found: list[FormatError] = []
        end = self.first_offset + int(self.stream_sizes.sum())
        if end > self.file_size:
            found.append(ChunkDecodeError(
                f"the index's streams end at byte {end}, past the end of the file "
                f"({self.file_size} bytes)", self.path, offset=HEADER_SIZE))
        return found


__all__ = ["ZfpcVolume", "ZfpcUnit"]
