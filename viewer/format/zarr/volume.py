"""A zarr array (v2 or v3, sharded or not) as a ``Volume``.

(Over 600 lines: the axes, extra-axis index and channel run of a volume shape every key, decode
and read here; the seam to split along is the shard index reading, which could move to
``units``.)

Storage units: for a sharded v3 array a unit is a shard (``unit_shape``: inner chunks per shard
along x, y, z) and its ``ChunkTable`` is the shard index; a chunk's index in its unit is the C
order of the shard's inner grid in the array's own axis order.  Without sharding a unit is one
chunk object (``ChunkTable.single``).  An absent shard or chunk object is an absent unit; an
absent inner chunk (index entry all ones) is an absent chunk: both read as ``fill_value``.

Unsharded arrays on a local disk have ``small_units``: the loader reads their chunks with
``read_units``, each chunk file read once with no ``stat`` before and decoded, no unit kept
(the shared ``chunkfiles.read_chunk_files``, which N5 uses too).  Sharded arrays (a shard
holds many chunks, its index parsed once) and arrays over a network (read-ahead through kept
units) keep their units open.

The units themselves (a chunk object, a shard and its index) are in ``zarr.units``.  Reading
stored bytes goes through a ``Store`` (a shard's wanted ranges are merged into few reads);
decoding is numpy views over the decoded bytes.  ``read`` decodes on a small thread pool
straight into the output (zstd and zlib release the GIL).
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from viewer.format.channels import ChannelStack
from viewer.format.chunkfiles import read_chunk_files
from viewer.format.errors import (
    ChunkDecodeError,
    DatasetLayoutError,
    FileChangedError,
    FileChangingError,
    FormatError,
    UnsupportedFormatError,
    read_failure,
)
from viewer.format.handles import changing_error, settle_deadline
from viewer.format.native import chunks
from viewer.format.pool import decode_pool
from viewer.format.store import LocalStore, ObjectStat, Store
from viewer.format.volume import (
    IntArray,
    StorageUnit,
    StoredResult,
    UnitCache,
    UnitRead,
    Volume,
    VolumeInfo,
    check_index,
    chunk_grid,
)
from viewer.format.zarr import nativeread
from viewer.format.zarr.axes import AxisMap
from viewer.format.zarr.codecs import CodecFailure
from viewer.format.zarr.errors import ShardIndexError
from viewer.format.zarr.keys import parse_keys
from viewer.format.zarr.meta import ArrayMeta
from viewer.format.zarr.sharding import ShardIndex, parse_index
from viewer.format.zarr.units import ChunkUnit, ShardUnit, UnitBase, codec_error

Vec3 = tuple[int, int, int]

#: Chunks decoded per task of the read pool.
BATCH = 32
#: Keys parsed at once by ``iter_units``: the first batch, and the most (each batch 4x the last).
FIRST_BATCH, MAX_BATCH = 256, 16384
#: The most names of a flat array's folder parsed and sorted in one batch (more: sorted as
#: strings first, then parsed in batches).
FLAT_SORT_MAX = 1 << 18

def _executor() -> ThreadPoolExecutor | None:
    """The read helpers of the executor in effect (``viewer.format.pool``), or None."""
    return decode_pool()


class ZarrVolume(Volume):
    """One zarr array (see the module docstring).  ``store`` holds the array at ``prefix``
    (``""`` or ``"path/to/array/"``); ``axes`` says which axes are x, y, z and c."""

    format: ClassVar[str] = "zarr"

    def __init__(self, store: Store, prefix: str, meta: ArrayMeta, axes: AxisMap,
                 axis_units: tuple[str, str, str] | None = None,
                 index: Mapping[str, int] | None = None,
                 channels: tuple[int, int] | None = None) -> None:
        self.store = store
        self.prefix = prefix
        self.meta = meta
        self.axes = axes
        self.path = store.location(prefix.rstrip("/")) if prefix else store.location("")
        self.dtype = meta.dtype
        c = axes.c
        total = meta.shape[c] if c is not None else 1
        if total < 1:
            raise UnsupportedFormatError("the channel axis has size 0", meta.where)
        c0, c1 = channels if channels is not None else (0, total)
        if c is not None and not (0 <= c0 < c1 <= total
                                  and c0 // meta.chunk_shape[c] == (c1 - 1) // meta.chunk_shape[c]):
            raise UnsupportedFormatError(
                f"channels {c0}..{c1 - 1} of {total} are not in one chunk of "
                f"{meta.chunk_shape[c]} channels (a ChannelStack reads them)", meta.where)
        self.num_channels = c1 - c0 if c is not None else 1
        self._channels = (c0, c1)
        self._index = check_index(axes.extra, index, self.path)
        #: The element of every array axis this volume shows (0 on x, y, z; the first channel
        #: on c), its chunk's grid position, and its offset inside that chunk.
        at = [0] * meta.ndim
        for a in axes.dropped:
            at[a] = self._index.get(axes.names[a], 0)
        if c is not None:
            at[c] = c0
        chunk_at = [v // k for v, k in zip(at, meta.chunk_shape, strict=True)]
        self._in_chunk = [v % k for v, k in zip(at, meta.chunk_shape, strict=True)]
        self.chunk_shape = axes.xyz(meta.chunk_shape)
        per = meta.sharding.chunks_per_shard if meta.sharding is not None else \
            (1,) * meta.ndim
        self.unit_shape = axes.xyz(per)
        self._per = per
        #: The non-spatial axes' unit position and chunk position inside the unit.
        self._unit_at = [v // p for v, p in zip(chunk_at, per, strict=True)]
        self._local_at = [v % p for v, p in zip(chunk_at, per, strict=True)]
        self.fill_value = meta.fill_value
        self.axis_names = ("x", "y", "z")
        self.axis_units = axis_units
        self._shape = axes.xyz(meta.shape)
        self._origin: Vec3 = (0, 0, 0)
        #: The array's own shape (reads stop there), whatever extent ``set_extent`` gave.
        self._array_shape = np.asarray(self._shape, dtype=np.int64)
        self._units = UnitCache(64)
        #: Whether a decoded chunk is already (C, cx, cy, cz) in Fortran order (webKnossos:
        #: axes c, x, y, z with the transpose [3, 2, 1, 0]; no conversion at all).
        self._identity = (axes.ndim == 4 and (axes.c, axes.x, axes.y, axes.z) == (0, 1, 2, 3)
                          and meta.chunk_shape[0] == self.num_channels
                          and not any(self._in_chunk)
                          and meta.codec.inverse == (3, 2, 1, 0)
                          and meta.dtype == meta.codec.dtype)
        self._fill_chunk: npt.NDArray[Any] | None = None
        #: ``_native_layout``'s answer once asked (``_native_asked``).
        self._native: nativeread.Layout | None = None
        self._native_asked = False
        #: The volumes of this array at each index asked for (``at_index``), shared by them.
        self._siblings: dict[tuple[tuple[str, int], ...], ZarrVolume] = \
            {tuple(sorted(self._index.items())): self}
        self._siblings_lock = threading.Lock()
        #: One chunk per object, on a local disk: not worth keeping open (``read_units``).
        self.small_units = meta.sharding is None and isinstance(store, LocalStore)
        #: The array's folder with a separator after it, where the chunk objects' keys are
        #: their paths below it (a local disk with "/" as separator; else None).
        self._chunk_folder = os.path.join(store.location(""), "") \
            if self.small_units and os.sep == "/" else None

    # -- extent ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Vec3:
        return self._shape

    @property
    def origin(self) -> Vec3:
        return self._origin

    def set_extent(self, bounds: tuple[Vec3, Vec3]) -> None:
        """A webKnossos layer's box at this mag replaces the array's shape (see ``Volume``)."""
        (lx, ly, lz), (hx, hy, hz) = bounds
        self._origin = (int(lx), int(ly), int(lz))
        self._shape = (max(0, int(hx) - int(lx)), max(0, int(hy) - int(ly)),
                       max(0, int(hz) - int(lz)))

    # -- extra axes and channels -------------------------------------------------------------------
    @property
    def extra_axes(self) -> dict[str, int]:
        return self.axes.extra

    @property
    def extra_index(self) -> dict[str, int]:
        return dict(self._index)

    @property
    def channel_range(self) -> tuple[int, int]:
        """The channels of the array this volume reads, ``[first, end)``."""
        return self._channels

    def at_index(self, index: Mapping[str, int]) -> ZarrVolume:
        """The array at another element of its extra axes: one volume per index, kept by
        all of them (a time point seen again finds its shards' indexes parsed)."""
        wanted = check_index(self.extra_axes, index, self.path)
        if wanted == self._index:
            return self
        key = tuple(sorted(wanted.items()))
        with self._siblings_lock:
            other = self._siblings.get(key)
            if other is None:
                other = type(self)(self.store, self.prefix, self.meta, self.axes,
                                   self.axis_units, wanted, self._channels)
                other._origin, other._shape = self._origin, self._shape
                other._siblings, other._siblings_lock = self._siblings, self._siblings_lock
                self._siblings[key] = other
        return other

    # -- units ------------------------------------------------------------------------------------
    def unit_key(self, unit: Sequence[int]) -> str:
        return self.prefix + self.meta.key(self.axes.nd(unit, self._unit_at))

    def unit_path(self, unit: Vec3) -> str:
        return self.store.location(self.unit_key(unit))

    def chunk_position(self, unit: Sequence[int], index: int) -> tuple[int, int, int]:
        """The global (x, y, z) chunk position of chunk ``index`` of ``unit``."""
        local = self.chunk_local(np.asarray([index], dtype=np.int64))[0]
        u = self.unit_shape
        return (int(unit[0]) * u[0] + int(local[0]), int(unit[1]) * u[1] + int(local[1]),
                int(unit[2]) * u[2] + int(local[2]))

    def open_unit(self, unit: Vec3) -> StorageUnit | None:
        key3 = (int(unit[0]), int(unit[1]), int(unit[2]))
        if self.meta.sharding is None:
            key = self.unit_key(key3)
            try:
                size = self.store.size(key)
            except OSError as exc:
                raise read_failure(exc, DatasetLayoutError, "cannot open",
                                   self.store.location(key),
                                   chunk=self.chunk_position(key3, 0)) from None
            return None if size is None else ChunkUnit(self, key3, key, size)
        hit, cached = self._units.get(key3)
        if hit:
            return cached
        shard = self._open_shard(key3)
        self._units.put(key3, shard)
        return shard

    def read_units(self, jobs: Sequence[tuple[Vec3, Sequence[int]]]) -> list[UnitRead]:
        """Chunks of several chunk objects of an unsharded array on a local disk, each read
        once and not kept (``small_units``: ``chunkfiles.read_chunk_files``): per job the
        chunk (index 0) decoded, ``None`` for an absent object, the chunk's error otherwise,
        as ``read_chunks`` gives them.  A sharded array, or one over a network: the default
        (units opened and kept)."""
        if self.meta.sharding is not None or not isinstance(self.store, LocalStore):
            return super().read_units(jobs)
        return read_chunk_files(jobs, self)

    # -- the chunk files of an unsharded array (``chunkfiles.ChunkFiles``) ------------------------
    def chunk_file(self, unit: Vec3) -> str | None:
        key = self.unit_key(unit)
        folder = self._chunk_folder
        return folder + key if folder is not None else self.store.location(key)

    def chunk_file_error(self, unit: Vec3, path: str, exc: OSError | FileChangedError
                         ) -> FormatError:
        if isinstance(exc, FileChangedError):
            return self._chunk_unit(unit, self.unit_key(unit)).chunk_error(0, exc.reason,
                                                                           cls=type(exc))
        return read_failure(exc, ChunkDecodeError, "cannot read", path,
                            chunk=self.chunk_position(unit, 0))

    def not_in_file(self, unit: Vec3, path: str, index: int) -> FormatError:
        return self._chunk_unit(unit, self.unit_key(unit)).chunk_error(
            index, "a chunk object holds chunk 0 only")

    def decode_files(self, items: Sequence[tuple[Vec3, str, bytes]]
                     ) -> list[npt.NDArray[Any] | FormatError]:
        """The chunks decoded, more than one by the native kernel in one call where it takes
        the codecs (``nativeread.decode_whole``), the others one by one."""
        lay = self.native_layout() if len(items) > 1 else None
        if lay is None:
            return [self._decode_file(pos, data) for pos, _, data in items]
        arrays, left = nativeread.decode_whole(lay, (self.num_channels, *self.chunk_shape),
                                               self.dtype, [data for _, _, data in items])
        out: list[npt.NDArray[Any] | FormatError] = list(arrays)
        for j in left:  # the kernel did not decode these: the Python path, with their error
            pos, _, data = items[j]
            out[j] = self._decode_file(pos, data)
        return out

    def _decode_file(self, pos: Vec3, data: bytes) -> npt.NDArray[Any] | FormatError:
        """A chunk object's bytes decoded, or its error."""
        try:
            return self._cxyz(self.meta.codec.decode(data))
        except CodecFailure as exc:
            return codec_error(exc, self._chunk_unit(pos, self.unit_key(pos)), 0)

    def _chunk_unit(self, pos: Sequence[int], key: str) -> ChunkUnit:
        return ChunkUnit(self, (int(pos[0]), int(pos[1]), int(pos[2])), key, 0)

    def _open_shard(self, unit: Vec3) -> ShardUnit | None:
        key = self.unit_key(unit)
        found = self.shard_index(key)
        if found is None:
            return None
        stat, index, at = found
        return ShardUnit(self, unit, key, stat.size, index, at, stat.version)

    def shard_index(self, key: str) -> tuple[ObjectStat, ShardIndex, int] | None:
        """The shard at ``key``: its size and version (``Store.stat``), its parsed index
        and the index's offset; None when there is no shard.  The index is read from the
        version ``stat`` saw (``Store.read_ranges_of``): a shard rewritten in between is
        looked at again, and one still changing after ``handles.SETTLE_NS`` is a
        ``FileChangingError``."""
        spec = self.meta.sharding
        assert spec is not None
        where = self.store.location(key)
        deadline = settle_deadline()
        while True:
            at: int | None = None
            try:
                stat = self.store.stat(key)
                if stat is None:
                    return None
                size = stat.size
                n = spec.index_nbytes
                if size < n:
                    raise ShardIndexError(f"shard of {size} bytes is shorter than its index of "
                                          f"{n} bytes", where, offset=0)
                at = 0 if spec.index_at_start else size - n
                raw = self.store.read_ranges_of(key, [(at, n)], stat.version)[0]
            except FileNotFoundError:
                return None
            except FileChangingError:
                raise
            except FileChangedError:
                if time.monotonic_ns() > deadline:
                    raise changing_error(where) from None
                continue
            except OSError as exc:  # its size, or its index at ``at``
                raise read_failure(exc, DatasetLayoutError, "cannot open", where,
                                   offset=at) from None
            return stat, parse_index(spec, raw, size, where, at), at

    def drop_read_ahead(self, keep: Iterable[Sequence[int]] = ()) -> None:
        """The cursor moved on (a store that prefetches): stop the read-ahead of this array's
        units but ``keep``, queued or on the wire (other arrays of the store keep theirs)."""
        if not self.store.supports_prefetch:
            return
        kept = {self.unit_key(u) for u in keep}
        prefix = self.prefix
        self.store.cancel_prefetch(lambda key: key in kept or not key.startswith(prefix))

    def done_with(self, unit: StorageUnit) -> None:
        """Shards stay in the volume's cache; chunk objects hold nothing."""

    def forget_unit(self, unit: Vec3) -> None:
        """Drop a cached shard (after it was rewritten)."""
        self._units.clear()

    @property
    def lists_units(self) -> bool:
        """A listing of the store finds every unit present, where the store can list."""
        return self.store.supports_listing

    def iter_units(self) -> Iterator[Vec3]:
        """The chunk objects (or shards) present, in the order of their keys sorted by name
        (as ``Store.walk`` gives them, as ``list_dir`` sorts them); keys that name no grid
        position are skipped, and so are chunks past the first along a non-spatial axis.  The
        keys are parsed in batches (``zarr.keys``): a batch costs a few numpy operations, not
        a match and an ``int`` per key, and the names of a flat array's folder are listed
        unsorted and sorted in numpy, only the ones that name chunks (figures in
        docs/performance.md)."""
        meta = self.meta
        root = self.prefix.rstrip("/")
        key_head = meta.key_prefix + meta.separator \
            if meta.zarr_format == 3 and meta.key_prefix else ""
        keys: Iterator[str]
        if meta.separator == "/":
            start = "/".join(p for p in (root, meta.key_prefix if meta.zarr_format == 3 else "")
                             if p)
            keys = self.store.walk(start)
            head = (root + "/" if root else "") + key_head
            size = FIRST_BATCH  # a first unit soon (``provisional_bounds``), then big batches
            sort = False  # the walk's order is the sorted keys' already
        else:  # every object in the array's folder: names, matched from their start
            names = self.store.list_names(root)
            head = key_head
            if len(names) <= FLAT_SORT_MAX:  # sorted by ``parse_keys``, in one batch
                keys, size, sort = iter(names), max(len(names), 1), True
            else:  # sorted here, parsed in batches: the numpy arrays stay small
                keys, size, sort = iter(sorted(names)), MAX_BATCH, False
        spatial = self.axes.spatial
        ix, iy, iz = (a if a is not None else -1 for a in spatial)
        others = [i for i in range(meta.ndim) if i not in spatial]
        want = [self._unit_at[i] for i in others]
        while True:
            batch = list(itertools.islice(keys, size))
            if not batch:
                return
            size = min(size * 4, MAX_BATCH)
            found = parse_keys(batch, head, meta.separator, meta.ndim, sort=sort)
            if isinstance(found, list):  # parsed one by one (a number past int64, a NUL)
                for g in found:
                    if [g[i] for i in others] == want:
                        yield (g[ix] if ix >= 0 else 0, g[iy] if iy >= 0 else 0,
                               g[iz] if iz >= 0 else 0)
                continue
            if others:
                found = found[(found[:, others] == np.asarray(want)).all(axis=1)]
            zero = [0] * len(found)
            x, y, z = (found[:, a].tolist() if a is not None else zero for a in spatial)
            yield from zip(x, y, z, strict=True)

    def chunk_index(self, local: IntArray) -> IntArray:
        if self.meta.sharding is None:
            return np.zeros(len(local), dtype=np.int64)
        nd = self.axes.nd_many(np.asarray(local, dtype=np.int64), self._local_at)
        flat: IntArray = np.ravel_multi_index(tuple(nd.T), self._per).astype(np.int64)
        return flat

    def chunk_local(self, index: IntArray) -> IntArray:
        idx = np.asarray(index, dtype=np.int64).reshape(-1)
        if self.meta.sharding is None:
            return np.zeros((len(idx), 3), dtype=np.int64)
        nd = np.unravel_index(idx, self._per)
        cols = [nd[a] if a is not None else np.zeros_like(idx) for a in self.axes.spatial]
        return np.stack(cols, axis=1).astype(np.int64)

    # -- decoding ---------------------------------------------------------------------------------
    def decode_chunk(self, stored: bytes | memoryview, unit: UnitBase,
                     index: int) -> npt.NDArray[Any]:
        """A chunk's stored bytes as ``(C, cx, cy, cz)`` (Fortran order when the layout
        allows it without a copy, as webKnossos' transpose makes it)."""
        return self._cxyz(self._decode_raw(stored, unit, index))

    def _cxyz(self, arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """A decoded chunk in the array's axis order as ``(C, cx, cy, cz)``."""
        if self._identity:
            return arr
        out = self.axes.to_cxyz(arr, self.num_channels, self._in_chunk)
        if out.dtype != self.dtype:
            out = out.astype(self.dtype)
        return np.asfortranarray(out)

    def _decode_raw(self, stored: bytes | memoryview, unit: UnitBase,
                    index: int) -> npt.NDArray[Any]:
        try:
            return self.meta.codec.decode(stored)
        except CodecFailure as exc:
            raise codec_error(exc, unit, index) from None

    # -- reading ----------------------------------------------------------------------------------
    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """Read the box at ``offset`` the size of ``out`` into it: the chunks it touches,
        grouped by storage unit, decoded on the read pool straight into ``out``.  The first
        damaged chunk (in grid order) raises its error.

        It replaces the shared ``Volume.read_into`` (``read_chunks``, then a copy): a task's
        stored bytes are read at once (a local shard's ranges by the native kernel in one
        call), and where the kernel takes the codecs its chunks are decoded and placed
        straight into ``out`` in one call, not decoded into chunks of their own and copied
        (figures: docs/performance.md, zarr)."""
        off = np.asarray([int(v) for v in offset], dtype=np.int64)
        size = np.asarray(out.shape[1:], dtype=np.int64)
        c = np.asarray(self.chunk_shape, dtype=np.int64)
        lo = np.maximum(off, 0)
        hi = np.minimum(off + size, self._array_shape)
        if (hi <= lo).any():
            return
        grid = chunk_grid(lo, hi, c)
        units, indices = self.locate(grid)
        flat_u = np.ravel_multi_index(tuple((units - units.min(axis=0)).T),
                                      tuple(units.max(axis=0) - units.min(axis=0) + 1))
        order = np.argsort(flat_u, kind="stable")
        tasks: list[tuple[UnitBase, list[int], list[int]]] = []
        bounds = np.flatnonzero(np.diff(flat_u[order])) + 1
        for rows in np.split(order, bounds):
            u = tuple(int(v) for v in units[rows[0]])
            unit = self.open_unit((u[0], u[1], u[2]))
            if unit is None:
                continue
            assert isinstance(unit, UnitBase)  # this array's units, as open_unit makes them
            rows_l = rows.tolist()
            idx_l = indices[rows].tolist()
            for s in range(0, len(rows_l), BATCH):
                tasks.append((unit, rows_l[s:s + BATCH], idx_l[s:s + BATCH]))
        if not tasks:
            return
        # every chunk's source and destination boxes, computed at once
        g = grid * c
        s_lo = np.maximum(g, lo)
        s_hi = np.minimum(g + c, hi)
        src_lo_a, src_hi_a, dst_lo_a = s_lo - g, s_hi - g, s_lo - off
        src_lo, src_hi = src_lo_a.tolist(), src_hi_a.tolist()
        dst_lo, dst_hi = dst_lo_a.tolist(), (s_hi - off).tolist()
        full = slice(None)
        errors: dict[int, FormatError] = {}
        decode = self.decode_chunk

        lay = self.native_layout() if out.dtype == self.dtype else None
        channels = self.num_channels

        def run(task: tuple[UnitBase, list[int], list[int]]) -> None:
            unit, rows, idx = task
            stored: Sequence[StoredResult]
            if lay is not None:
                # every chunk read decoded and placed in one native call; the Python path
                # below decodes what it left (damage: the Python path words the error)
                spans = unit.read_stored_spans(idx)
                read = np.flatnonzero(spans.address)
                at = np.asarray(rows, dtype=np.int64)[read]
                status = nativeread.decode_into(lay, out, channels, spans.address[read],
                                                spans.length[read], src_lo_a[at],
                                                src_hi_a[at], dst_lo_a[at])
                left = set(read[status != chunks.OK].tolist())
                stored = [spans.stored(k) if k in left else
                          None if spans.address[k] else spans.results[k]
                          for k in range(len(rows))]
            else:
                stored = unit.read_stored(idx)
            for row, index, s in zip(rows, idx, stored, strict=True):
                if s is None:
                    continue
                if isinstance(s, FormatError):
                    errors[row] = s
                    continue
                try:
                    chunk = decode(s, unit, index)
                except FormatError as exc:
                    errors[row] = exc
                    continue
                a, b, p, q = src_lo[row], src_hi[row], dst_lo[row], dst_hi[row]
                out[full, p[0]:q[0], p[1]:q[1], p[2]:q[2]] = \
                    chunk[full, a[0]:b[0], a[1]:b[1], a[2]:b[2]]

        pool = _executor() if len(tasks) > 1 else None
        if pool is None:
            for t in tasks:
                run(t)
        else:
            futures: list[Future[None]] = [pool.submit(run, t) for t in tasks]
            for f in futures:
                f.result()
        if errors:
            raise errors[min(errors)]

    def native_layout(self) -> nativeread.Layout | None:
        """How the native kernel decodes this array's chunks (None: it does not, or reads
        are told not to use it: ``nativeread.ENABLED``)."""
        if not nativeread.ENABLED or any(self._in_chunk):
            return None  # the kernel places a chunk from its start: no offset inside it
        if not self._native_asked:
            self._native = nativeread.layout(self.meta.codec, self.axes, self.dtype)
            self._native_asked = True
        return self._native

    # -- description ------------------------------------------------------------------------------
    def info(self) -> VolumeInfo:
        m = self.meta
        header: dict[str, Any] = {
            "metadata_file": m.where, "zarr_format": m.zarr_format,
            "shape": list(m.shape), "dtype": m.dtype.name,
            "chunk_shape": list(m.chunk_shape), "fill_value": m.fill_value,
            "axes": list(self.axes.names),
            "axis_map": {k: v for k, v in zip("xyzc", (*self.axes.spatial, self.axes.c),
                                              strict=True) if v is not None},
            "codecs": m.codec.describe(),
        }
        if self.extra_axes:
            header["extra_axes"] = self.extra_axes
            header["index"] = self.extra_index
        if self.axes.c is not None and self.num_channels != m.shape[self.axes.c]:
            header["channels_read"] = list(self._channels)
        if m.sharding is not None:
            header["shard_shape"] = list(m.grid_shape)
            header["chunks_per_shard"] = list(m.sharding.chunks_per_shard)
            header["index_location"] = "start" if m.sharding.index_at_start else "end"
        if m.dimension_names is not None:
            header["dimension_names"] = list(m.dimension_names)
        header["document"] = m.document
        return VolumeInfo(self.format, m.compression, header)

    def close(self) -> None:
        with self._siblings_lock:
            others = [v for v in self._siblings.values() if v is not self]
        for v in others:
            v._units.clear()
        self._units.clear()

    @property
    def stored_chunks_per_unit(self) -> int:
        return math.prod(self._per)


class Zarr2Volume(ZarrVolume):
    format: ClassVar[str] = "zarr"


class Zarr3Volume(ZarrVolume):
    format: ClassVar[str] = "zarr3"


class Zarr2ChannelStack(ChannelStack):
    format: ClassVar[str] = "zarr"


class Zarr3ChannelStack(ChannelStack):
    format: ClassVar[str] = "zarr3"


def make_volume(store: Store, prefix: str, meta: ArrayMeta, axes: AxisMap,
                axis_units: tuple[str, str, str] | None = None,
                index: Mapping[str, int] | None = None) -> Volume:
    """The array's volume: one ``ZarrVolume``, or a ``ChannelStack`` of one per chunk along
    the channel axis when the channels are split across chunks."""
    cls = Zarr3Volume if meta.zarr_format == 3 else Zarr2Volume
    c = axes.c
    if c is None or meta.chunk_shape[c] >= meta.shape[c]:
        return cls(store, prefix, meta, axes, axis_units, index)
    step, total = meta.chunk_shape[c], meta.shape[c]
    groups = [cls(store, prefix, meta, axes, axis_units, index, (c0, min(c0 + step, total)))
              for c0 in range(0, total, step)]
    stack = Zarr3ChannelStack if meta.zarr_format == 3 else Zarr2ChannelStack
    return stack(groups)


__all__ = ["ZarrVolume", "Zarr2Volume", "Zarr3Volume", "ShardUnit", "ChunkUnit", "make_volume",
           "Zarr2ChannelStack", "Zarr3ChannelStack"]
