"""One scale of a Neuroglancer precomputed volume as a ``Volume``.

(Over 600 lines: the grid arithmetic of scales off the chunk grid is shared by the box reads,
the unit listing and the inspector's descriptions; the seam to split along is the listing of
units, which could move to a module of its own.)

Coordinates are the scale's own voxels, absolute: the extent is ``[voxel_offset,
voxel_offset + size)`` (``origin`` and ``shape``), and chunk ``(i, j, k)`` of the volume's grid
is the scale's chunk ``(i, j, k) - grid0`` with ``grid0 = voxel_offset / chunk_size``.  A
scale whose ``voxel_offset`` is not a multiple of its chunk size (a downsampled scale of an
offset volume, often) has its stored chunks off the absolute grid: a chunk of the volume's
grid is then a ``StraddlingChunk`` made of the stored chunks it meets, while ``read_into``
reads the stored chunks directly.  Voxels outside the extent read as zero, like absent
chunks.  Methods named ``_real`` and ``stored_many`` take positions in the stored chunks' grid
(``grid0`` added).

A storage unit is one chunk (``precomputed.units``); many chunks are read at once by
``stored_many``: chunk files one by one, a shard's chunks grouped by minishard with their byte
ranges merged into few reads; where each chunk of a shard lies is kept once its minishard
index told.  ``read_into`` and ``read_units`` decode on the formats' shared pool
(``viewer.format.pool.share``): compressed_segmentation chunks by the native kernel straight
into the output where it was built (``precomputed.nativecseg``), raw chunks in a shard read
as the z layers the box wants, a small raw read on the calling thread alone.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from viewer.format.errors import (
    ChunkDecodeError,
    DatasetLayoutError,
    FileChangedError,
    FormatError,
)
from viewer.format.pool import cores, share
from viewer.format.precomputed import cseg, nativecseg
from viewer.format.precomputed.codecs import ChunkCodec, CodecFailure
from viewer.format.precomputed.errors import MinishardIndexError, MissingChunkError
from viewer.format.precomputed.info import InfoFile, ScaleInfo
from viewer.format.precomputed.sharding import (
    Minishard,
    locate_ids,
    morton_ids,
    morton_positions,
)
from viewer.format.precomputed.units import (
    ChunkFile,
    ChunkUnit,
    ShardChunk,
    ShardFile,
    StraddlingChunk,
)
from viewer.format.store import LocalStore, Store, read_file_whole
from viewer.format.volume import (
    ChunkResult,
    IntArray,
    StorageUnit,
    StoredResult,
    UnitRead,
    Volume,
    VolumeInfo,
    chunk_grid,
)

Vec3 = tuple[int, int, int]

#: Chunks fetched and decoded per task of a parallel read.
BATCH = 16
#: Two byte ranges of a shard closer than this are read as one.
MERGE_GAP = 4096
#: Shard files kept open (their indexes parsed) per volume.
SHARDS_KEPT = 1024
#: Chunk locations kept per volume (``PrecomputedVolume._located``).
LOCATED_KEPT = 1 << 15
#: Not looked up yet (``_located``).
_UNKNOWN = object()
#: A read of raw chunks of at most this many bytes runs on the calling thread alone.
SMALL_RAW = 4 << 20


class PrecomputedVolume(Volume):
    """One scale (see the module docstring).  Thread-safe."""

    format: ClassVar[str] = "precomputed"

    def __init__(self, store: Store, info: InfoFile, scale: ScaleInfo) -> None:
        self.store = store
        self.meta = info
        self.scale = scale
        key = scale.key.strip("/")
        self.prefix = posixpath.normpath(key) if ".." in key.split("/") else key
        self.path = store.location(self.prefix)
        self.dtype = info.dtype
        self.num_channels = info.num_channels
        self.chunk_shape = scale.chunk_size
        self.unit_shape = (1, 1, 1)
        self.fill_value = 0
        self.small_units = True
        self.codec = ChunkCodec(scale.encoding, info.dtype, info.num_channels, scale.chunk_size,
                                scale.block_size, scale.sharding is not None
                                and scale.sharding.data_encoding == "gzip")
        o, c = scale.voxel_offset, scale.chunk_size
        self.aligned = scale.aligned
        self.grid0: Vec3 = (o[0] // c[0], o[1] // c[1], o[2] // c[2]) if self.aligned \
            else (0, 0, 0)
        self._origin: Vec3 = o
        self._shards: dict[int, ShardFile | None] = {}
        #: Where each chunk looked up is stored (None: absent), by grid position: the shard
        #: indexes' answers kept (as the indexes are) so that a read does no hashing again.
        self._located: dict[Vec3, ShardChunk | None] = {}
        self._shard_lock = threading.Lock()
        self._listing_problems: list[FormatError] = []

    # -- extent ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Vec3:
        return self.scale.size

    @property
    def origin(self) -> Vec3:
        return self._origin

    # -- geometry -------------------------------------------------------------------------------
    def _local(self, pos: Sequence[int]) -> Vec3:
        g = self.grid0
        return (int(pos[0]) - g[0], int(pos[1]) - g[1], int(pos[2]) - g[2])

    def in_grid(self, pos: Sequence[int]) -> bool:
        g, n = self._local(pos), self.scale.grid_shape
        return all(0 <= g[a] < n[a] for a in range(3))

    def chunk_box(self, pos: Sequence[int]) -> Vec3:
        """Voxels of the chunk at absolute grid ``pos`` inside the extent (an edge chunk's
        box is clipped)."""
        g, c, s = self._local(pos), self.chunk_shape, self.scale.size
        return (min(c[0], s[0] - g[0] * c[0]), min(c[1], s[1] - g[1] * c[1]),
                min(c[2], s[2] - g[2] * c[2]))

    def chunk_name(self, pos: Sequence[int]) -> str:
        """The chunk file's name: its box ``x0-x1_y0-y1_z0-z1`` in absolute voxels."""
        g, c, o, s = self._local(pos), self.chunk_shape, self.scale.voxel_offset, self.scale.size
        parts = []
        for a in range(3):
            lo = o[a] + g[a] * c[a]
            parts.append(f"{lo}-{o[a] + min((g[a] + 1) * c[a], s[a])}")
        return "_".join(parts)

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def chunk_id(self, pos: Sequence[int]) -> int:
        """The chunk's id in a sharded scale: the compressed Morton code of its grid
        position."""
        return int(morton_ids(np.asarray([self._local(pos)], np.int64),
                              self.scale.grid_shape)[0])

    def chunk_error(self, pos: Sequence[int], message: str, path: str,
                    chunk_id: int | None = None, offset: int | None = None,
                    cls: type[FormatError] = ChunkDecodeError) -> FormatError:
        """The error of the chunk at ``pos``: names the file, the chunk id (sharded) and the
        chunk's grid position (absolute, as the views count chunks)."""
        text = message if chunk_id is None else f"chunk id {chunk_id}: {message}"
        exc = cls(text, path, offset=offset, chunk=tuple(int(p) for p in pos))
        exc.chunk_id = chunk_id  # type: ignore[attr-defined]
        return exc

    # -- units ----------------------------------------------------------------------------------
    def unit_path(self, unit: Vec3) -> str:
        if not self.aligned:
            parts = self._parts_of(unit)
            unit = parts[0] if parts else unit
        spec = self.scale.sharding
        if spec is None:
            return self.store.location(self._key(self.chunk_name(unit)))
        if not self.in_grid(unit):
            return self.path
        shard, _ = locate_ids(np.asarray([self.chunk_id(unit)], np.uint64), spec)
        return self.store.location(self._key(spec.shard_name(int(shard[0]))))

    def open_unit(self, unit: Vec3) -> StorageUnit | None:
        pos = (int(unit[0]), int(unit[1]), int(unit[2]))
        if self.aligned:
            return self._real_unit(pos)
        parts: list[ChunkUnit] = []
        corners: list[Vec3] = []
        c, o = self.chunk_shape, self.scale.voxel_offset
        for g in self._parts_of(pos):
            u = self._real_unit(g)
            if u is not None:
                assert isinstance(u, ChunkUnit)
                parts.append(u)
                corners.append((o[0] + g[0] * c[0], o[1] + g[1] * c[1], o[2] + g[2] * c[2]))
        return StraddlingChunk(self, pos, parts, corners) if parts else None

    def _parts_of(self, pos: Sequence[int]) -> list[Vec3]:
        """Stored chunks (their grid positions) that the absolute grid's chunk ``pos`` meets,
        in the scale's grid (x fastest)."""
        c, o, n = self.chunk_shape, self.scale.voxel_offset, self.scale.grid_shape
        ranges = []
        for a in range(3):
            first = max((int(pos[a]) * c[a] - o[a]) // c[a], 0)
            last = min(((int(pos[a]) + 1) * c[a] - 1 - o[a]) // c[a], n[a] - 1)
            ranges.append(range(first, last + 1))
        return [(x, y, z) for z in ranges[2] for y in ranges[1] for x in ranges[0]]

    def _real_unit(self, pos: Vec3) -> StorageUnit | None:
        """The stored chunk at ``pos`` of the stored chunks' grid (``grid0`` added)."""
        if not self.in_grid(pos):
            return None
        if self.scale.sharding is None:
            key = self._key(self.chunk_name(pos))
            try:
                size = self.store.size(key)
                for suffix in (".gz", ".zstd"):
                    if size is None:
                        key = self._key(self.chunk_name(pos)) + suffix
                        size = self.store.size(key)
            except OSError as exc:
                raise DatasetLayoutError(f"cannot open: {exc.strerror or exc}",
                                         self.store.location(key)) from None
            return None if size is None else ChunkFile(self, pos, key, size)
        found = self._locate_sharded(np.asarray([pos], np.int64))[0]
        if isinstance(found, FormatError):
            raise found
        return found

    def _shard(self, number: int) -> ShardFile | None:
        """Shard ``number`` opened (its index parsed), ``None`` when absent; the shard's
        ``FormatError`` when its index is damaged (not kept: read again next time)."""
        with self._shard_lock:
            if number in self._shards:
                return self._shards[number]
        spec = self.scale.sharding
        assert spec is not None
        key = self._key(spec.shard_name(number))
        try:
            stat = self.store.stat(key)
            sf = None if stat is None else ShardFile(
                self.store, key, stat.size, spec,
                self.store.read_ranges_of(key, [(0, spec.shard_index_nbytes)],
                                          stat.version)[0],
                number, stat.version)
        except FileNotFoundError:
            sf = None
        except FileChangedError:
            raise
        except OSError as exc:
            raise DatasetLayoutError(f"cannot open: {exc.strerror or exc}",
                                     self.store.location(key)) from None
        with self._shard_lock:
            if len(self._shards) >= SHARDS_KEPT:
                self._shards.pop(next(iter(self._shards)))
            self._shards[number] = sf
        return sf

    def _locate_sharded(self, pos: IntArray) -> list[ShardChunk | FormatError | None]:
        """Where each chunk at absolute grid positions ``pos`` (all in the grid) is stored:
        its unit, ``None`` when absent, or the error of a damaged index on the way (naming
        the chunk)."""
        spec = self.scale.sharding
        assert spec is not None
        pos_all = pos.tolist()
        out: list[ShardChunk | FormatError | None] = [None] * len(pos)
        with self._shard_lock:
            known = self._located
            hits: list[object] = [known.get((p[0], p[1], p[2]), _UNKNOWN) for p in pos_all]
        miss = [k for k, h in enumerate(hits) if h is _UNKNOWN]
        for k, h in enumerate(hits):
            if isinstance(h, ShardChunk):
                out[k] = h
        if not miss:
            return out
        if len(miss) < len(pos_all):
            for k, f in zip(miss, self._locate_sharded(pos[miss]), strict=True):
                out[k] = f
            return out
        local = pos - np.asarray(self.grid0, np.int64)
        ids = morton_ids(local, self.scale.grid_shape)
        shards, minis = locate_ids(ids, spec)
        pos_l = pos_all
        ids_l, shards_l, minis_l = ids.tolist(), shards.tolist(), minis.tolist()
        groups: dict[tuple[int, int], list[int]] = {}
        for k, key in enumerate(zip(shards_l, minis_l, strict=True)):
            groups.setdefault(key, []).append(k)
        for (sh, mi), rows in groups.items():
            try:
                try:
                    sf = self._shard(sh)
                    if sf is None:
                        continue
                    ms = sf.minishard(mi)
                except FileChangedError:  # rewritten since its index was read: once more
                    self._forget_shard(sh)
                    sf = self._shard(sh)
                    if sf is None:
                        continue
                    ms = sf.minishard(mi)
            except FormatError as exc:
                if isinstance(exc, FileChangedError):
                    self._forget_shard(sh)
                for k in rows:
                    out[k] = self.chunk_error(pos_l[k], f"{exc.reason}", exc.path or self.path,
                                              ids_l[k], exc.offset, type(exc))
                continue
            found = ms.find(ids[rows])
            for k, r in zip(rows, found.tolist(), strict=True):
                if ms.bad is not None and r in ms.bad:
                    out[k] = self.chunk_error(pos_l[k], ms.bad[r], sf.path, ids_l[k],
                                              int(ms.offsets[r]), MinishardIndexError)
                elif r < 0 and ms.damage:
                    out[k] = self.chunk_error(pos_l[k], f"not listed, and {ms.damage}",
                                              sf.path, ids_l[k], cls=MinishardIndexError)
                elif r >= 0:
                    p = pos_l[k]
                    out[k] = ShardChunk(self, (p[0], p[1], p[2]), sf, sh, ms, ids_l[k],
                                        int(ms.offsets[r]), int(ms.sizes[r]))
        with self._shard_lock:  # where chunks are (or that they are absent), not errors
            if len(self._located) + len(pos_l) > LOCATED_KEPT:
                self._located.clear()
            for p, f in zip(pos_l, out, strict=True):
                if not isinstance(f, FormatError):
                    self._located[(p[0], p[1], p[2])] = f
        return out

    # -- reading many chunks --------------------------------------------------------------------
    def stored_many(self, pos: IntArray, parts: Sequence[tuple[int, int] | None] | None = None,
                    retry: bool = True) -> list[tuple[StoredResult, ChunkUnit | None]]:
        """The stored bytes of the chunks at absolute grid positions ``pos`` (``(N, 3)``, in
        the grid): per chunk ``(bytes, its unit)``, ``(None, None)`` when absent, or
        ``(error, unit or None)``.  A shard's chunks are read with few requests.  ``parts``
        (sharded scales only): per chunk ``None`` (all of it) or ``(start, length)`` inside
        its stored bytes, read alone (a slab of a raw chunk).  A shard rewritten since its
        index was read is read again from its new index once (``retry``), then its chunks
        are ``FileChangedError`` s."""
        if self.scale.sharding is None:
            return [self._read_file(p) for p in pos.tolist()]
        units = self._locate_sharded(pos)
        out: list[tuple[StoredResult, ChunkUnit | None]] = [(None, None)] * len(units)
        by_shard: dict[tuple[str, int], list[int]] = {}  # by shard file read (its version)
        for k, u in enumerate(units):
            if isinstance(u, ShardChunk):
                by_shard.setdefault((u.key, id(u.shard)), []).append(k)
            else:
                out[k] = (u, None)
        for (key, _), rows in by_shard.items():
            us = [units[k] for k in rows]
            spans = []
            for k, u in zip(rows, us, strict=True):
                assert isinstance(u, ShardChunk)
                part = parts[k] if parts is not None else None
                spans.append((u.offset, u.nbytes) if part is None
                             else (u.offset + part[0], part[1]))
            # merged into runs in file order: (first byte, end, the chunks' indexes in rows)
            runs: list[list[Any]] = []
            for j in sorted(range(len(spans)), key=spans.__getitem__):
                at, nb = spans[j]
                if runs and at <= runs[-1][1] + MERGE_GAP:
                    run = runs[-1]
                    run[1] = max(run[1], at + nb)
                    run[2].append(j)
                else:
                    runs.append([at, at + nb, [j]])
            shard = us[0]
            assert isinstance(shard, ShardChunk)
            try:
                blobs = self.store.read_ranges_of(key, [(a, b - a) for a, b, _ in runs],
                                                  shard.shard.version)
            except FileChangedError as exc:
                # Rewritten since its index was read: the index again, then the chunks, once.
                self._forget_shard(shard.shard_number)
                again = self.stored_many(pos[rows], None if parts is None
                                         else [parts[k] for k in rows], False) \
                    if retry else None
                for n, k in enumerate(rows):
                    u = units[k]
                    assert isinstance(u, ShardChunk)
                    out[k] = again[n] if again is not None else \
                        (u.error(exc.reason, FileChangedError), u)
                continue
            except OSError as exc:
                for k in rows:
                    u = units[k]
                    assert isinstance(u, ShardChunk)
                    out[k] = (u.error(f"cannot read: {exc.strerror or exc}"), u)
                continue
            for (first, _, members), blob in zip(runs, blobs, strict=True):
                view = memoryview(blob)
                for j in members:
                    u = us[j]
                    assert isinstance(u, ShardChunk)
                    at, nb = spans[j]
                    rel = at - first
                    if rel + nb > len(view):
                        out[rows[j]] = (u.error(f"shard file cut short: chunk bytes "
                                                f"[{u.offset}, {u.offset + u.nbytes}) past "
                                                "its end"), u)
                    else:
                        out[rows[j]] = (view[rel:rel + nb], u)
        return out

    def _read_file(self, p: Sequence[int]) -> tuple[StoredResult, ChunkUnit | None]:
        pos = (int(p[0]), int(p[1]), int(p[2]))
        key = self._key(self.chunk_name(pos))
        local = isinstance(self.store, LocalStore)
        for k in (key, key + ".gz", key + ".zstd"):
            try:
                data = read_file_whole(self.store.location(k)) if local \
                    else self.store.read_whole(k)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except FileChangedError as exc:
                return self.chunk_error(pos, exc.reason, self.store.location(k),
                                        cls=FileChangedError), None
            except OSError as exc:
                return self.chunk_error(pos, f"cannot read: {exc.strerror or exc}",
                                        self.store.location(k)), None
            return data, ChunkFile(self, pos, k, len(data))
        return None, None

    def decode_stored(self, stored: bytes | memoryview, unit: ChunkUnit) -> npt.NDArray[Any]:
        """A chunk decoded (its unit's error when it does not decode)."""
        try:
            return self.codec.decode(stored, self.chunk_box(unit.pos))
        except CodecFailure as exc:
            raise unit.error(str(exc)) from None

    def _results(self, pos: IntArray, lo: Sequence[Sequence[int]] | None = None,
                 hi: Sequence[Sequence[int]] | None = None) -> list[ChunkResult]:
        """The chunks at ``pos`` decoded (or absent, or their errors); with ``lo`` and
        ``hi``, only the voxels ``[lo, hi)`` of each (``ChunkCodec.decode_part``)."""
        out: list[ChunkResult] = []
        for k, (stored, unit) in enumerate(self.stored_many(pos)):
            if stored is None or isinstance(stored, FormatError):
                out.append(stored)
                continue
            assert unit is not None
            try:
                if lo is None or hi is None:
                    out.append(self.decode_stored(stored, unit))
                    continue
                a, b = lo[k], hi[k]
                out.append(self.codec.decode_part(stored, self.chunk_box(unit.pos),
                                                  (a[0], a[1], a[2]), (b[0], b[1], b[2])))
            except CodecFailure as exc:
                out.append(unit.error(str(exc)))
            except FormatError as exc:
                out.append(exc)
        return out

    def read_units(self, jobs: Sequence[tuple[Vec3, Sequence[int]]]) -> list[UnitRead]:
        """Chunks of many one-chunk units at once (``small_units``): a shard's chunks with few
        requests.  Per job its chunk (index 0), ``None`` when absent."""
        out: list[UnitRead] = [None] * len(jobs)
        if not self.aligned:
            return super().read_units(jobs)
        want = [k for k, (pos, _) in enumerate(jobs) if self.in_grid(pos)]
        if not want:
            return out
        pos = np.asarray([jobs[k][0] for k in want], np.int64).reshape(-1, 3)
        for k, result in zip(want, self._results(pos), strict=True):
            if result is None:
                continue
            indices = jobs[k][1]
            out[k] = [result if int(i) == 0 else self.chunk_error(
                jobs[k][0], f"a unit holds chunk 0 only, not {i}", self.unit_path(jobs[k][0]))
                for i in indices]
        return out

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """The box at ``offset`` the size of ``out``: the chunks it meets inside the extent,
        ``BATCH`` per task on the shared pool, each fetched (a shard's ranges merged) and
        decoded straight into ``out``.  The first damaged chunk (in grid order) raises.

        It replaces the shared ``Volume.read_into`` (whole chunks read, decoded and copied
        unit by unit): the chunks go in the order of their shard and minishard (fewer, larger
        reads), a plane of raw chunks reads only the layers it needs, compressed_segmentation
        decodes only the blocks the box meets (the native kernel straight into ``out``), and a
        small raw read stays on the calling thread (figures: docs/performance.md,
        precomputed)."""
        off = np.asarray([int(v) for v in offset], np.int64)
        size = np.asarray(out.shape[1:], np.int64)
        lo_e, hi_e = self.bounds
        lo = np.maximum(off, np.asarray(lo_e, np.int64))
        hi = np.minimum(off + size, np.asarray(hi_e, np.int64))
        if (hi <= lo).any():
            return
        c = np.asarray(self.chunk_shape, np.int64)
        # chunk boxes are on the scale's grid; in absolute voxels when aligned
        base = np.asarray(self._origin, np.int64) - np.asarray(self.grid0, np.int64) * c
        grid = chunk_grid(lo - base, hi - base, c)
        if self.scale.sharding is not None and len(grid) > BATCH:
            # chunks of one shard, then one minishard, together: fewer and larger reads
            ids = morton_ids(grid - np.asarray(self.grid0, np.int64), self.scale.grid_shape)
            shard, mini = locate_ids(ids, self.scale.sharding)
            grid = grid[np.lexsort((ids, mini, shard))]
        corner = grid * c + base
        s_lo = np.maximum(corner, lo)
        s_hi = np.minimum(corner + c, hi)
        src_lo, src_hi = (s_lo - corner).tolist(), (s_hi - corner).tolist()
        dst_lo, dst_hi = (s_lo - off).tolist(), (s_hi - off).tolist()
        errors: dict[int, FormatError] = {}
        slabs = self._slabs_possible()
        threads = cores()
        if slabs and int(((s_hi - s_lo)[:, 2]).sum()) * int(c[0] * c[1]) * self.dtype.itemsize \
                <= SMALL_RAW:
            threads = 1  # copies only: waking other threads costs more than they save
        # a few chunks per task, so that even a small read is shared by every thread
        batch = len(grid) if threads == 1 else max(1, min(BATCH, len(grid) // (2 * threads)))
        ntasks = -(-len(grid) // batch)
        full = slice(None)

        block = self.scale.block_size
        thin = block is not None and self.aligned  # compressed_segmentation: decode a slab
        # compressed_segmentation decoded by the native kernel straight into out
        direct = block is not None and out.dtype == self.dtype and nativecseg.usable(self.dtype)

        def run(t: int) -> None:
            rows = range(t * batch, min((t + 1) * batch, len(grid)))
            part = grid[rows.start:rows.stop]
            shift = [[0, 0, 0] for _ in rows]  # where each result starts in its chunk
            if direct:
                self._cseg_into(part, rows, out, src_lo, src_hi, dst_lo, errors)
                return
            if slabs:
                z_lo = [src_lo[r][2] for r in rows]
                results = self._raw_slabs(part, z_lo, [src_hi[r][2] for r in rows])
                for k, z in enumerate(z_lo):
                    shift[k][2] = z
            elif thin and block is not None and all(src_hi[r][2] - src_lo[r][2] < block[2]
                                                    for r in rows):
                results = self._results(part, [src_lo[r] for r in rows],
                                        [src_hi[r] for r in rows])
                shift = [list(src_lo[r]) for r in rows]
            else:
                results = self._results(part)
            for row, o, result in zip(rows, shift, results, strict=True):
                if result is None:
                    continue
                if isinstance(result, FormatError):
                    errors[row] = result
                    continue
                a, b, p, q = src_lo[row], src_hi[row], dst_lo[row], dst_hi[row]
                out[full, p[0]:q[0], p[1]:q[1], p[2]:q[2]] = \
                    result[full, a[0] - o[0]:b[0] - o[0], a[1] - o[1]:b[1] - o[1],
                           a[2] - o[2]:b[2] - o[2]]

        share(ntasks, run, threads)
        if errors:
            raise errors[min(errors)]

    def _cseg_into(self, pos: IntArray, rows: range, out: npt.NDArray[Any],
                   src_lo: list[list[int]], src_hi: list[list[int]], dst_lo: list[list[int]],
                   errors: dict[int, FormatError]) -> None:
        """The compressed_segmentation chunks at ``pos`` (rows ``rows`` of a read),
        voxels ``[src_lo, src_hi)`` of each decoded by the native kernel into ``out`` at
        ``dst_lo``, in one call for the batch; a chunk's error into ``errors``."""
        assert self.scale.block_size is not None
        kernel = nativecseg.Batch(self.num_channels, self.scale.block_size, self.dtype)
        added: list[tuple[int, bytes | memoryview, ChunkUnit]] = []
        for row, (stored, unit) in zip(rows, self.stored_many(pos), strict=True):
            if stored is None:
                continue
            if isinstance(stored, FormatError):
                errors[row] = stored
                continue
            assert unit is not None
            box = self.chunk_box(unit.pos)
            a, b, p = src_lo[row], src_hi[row], dst_lo[row]
            target = out[:, p[0]:p[0] + b[0] - a[0], p[1]:p[1] + b[1] - a[1],
                         p[2]:p[2] + b[2] - a[2]]
            try:
                data, _ = self.codec.unwrap(stored, box)
            except CodecFailure as exc:
                errors[row] = unit.error(str(exc))
                continue
            if len(data) % 4:
                added.append((row, data, unit))  # decoded below for its error
                continue
            kernel.add(cseg.words_of(data), box, a, b, target)
            added.append((row, data, unit))
        decoded = kernel.run()
        done = iter(decoded)
        for row, data, unit in added:
            if len(data) % 4 == 0 and next(done):
                continue
            # the Python decoder's verdict (and words) on a chunk the kernel refused
            a, b, p = src_lo[row], src_hi[row], dst_lo[row]
            try:
                voxels = self.codec.decode_part(data, self.chunk_box(unit.pos),
                                                (a[0], a[1], a[2]), (b[0], b[1], b[2]))
            except CodecFailure as exc:
                errors[row] = unit.error(str(exc))
                continue
            out[:, p[0]:p[0] + b[0] - a[0], p[1]:p[1] + b[1] - a[1],
                p[2]:p[2] + b[2] - a[2]] = voxels

    def _slabs_possible(self) -> bool:
        """Whether a slab of z layers of a stored chunk can be read alone: uncompressed raw
        chunks of one channel in a shard (whose index gives each chunk's length, checked
        before the slab is trusted)."""
        spec = self.scale.sharding
        return (self.aligned and spec is not None and spec.data_encoding == "raw"
                and self.scale.encoding == "raw" and self.num_channels == 1)

    def _raw_slabs(self, pos: IntArray, z_lo: list[int], z_hi: list[int]
                   ) -> list[ChunkResult]:
        """The z layers ``[z_lo, z_hi)`` of raw chunks at ``pos``, each as ``(1, bx, by,
        z_hi - z_lo)``: only those layers' bytes are read (a chunk is x fastest, then y, z).
        A chunk whose stored length is not its box's raw size is its error, as a whole read
        would say."""
        isz = self.dtype.itemsize
        boxes = [self.chunk_box(p) for p in pos.tolist()]
        parts: list[tuple[int, int] | None] = [
            (z_lo[k] * b[0] * b[1] * isz, (z_hi[k] - z_lo[k]) * b[0] * b[1] * isz)
            for k, b in enumerate(boxes)]
        out: list[ChunkResult] = []
        for k, (stored, unit) in enumerate(self.stored_many(pos, parts)):
            if stored is None or isinstance(stored, FormatError):
                out.append(stored)
                continue
            assert unit is not None
            b = boxes[k]
            want = b[0] * b[1] * b[2] * isz
            if unit.nbytes != want:
                out.append(unit.error(f"raw chunk of {unit.nbytes} bytes, {want} expected for "
                                      f"{'x'.join(map(str, b))} voxels x 1 channel(s)"))
                continue
            nz = z_hi[k] - z_lo[k]
            arr = np.frombuffer(stored, dtype=self.dtype).reshape(nz, b[1], b[0])
            out.append(arr.transpose(2, 1, 0)[None])
        return out

    # -- listing --------------------------------------------------------------------------------
    def iter_units(self) -> Iterator[Vec3]:
        """Grid positions of the chunks stored (``_iter_real``); for a scale off the
        absolute grid, the chunks of the absolute grid they meet."""
        if self.aligned:
            yield from self._iter_real()
            return
        c, o = self.chunk_shape, self.scale.voxel_offset
        seen: set[Vec3] = set()
        for g in self._iter_real():
            lo = [(o[a] + g[a] * c[a]) // c[a] for a in range(3)]
            hi = [(o[a] + g[a] * c[a] + self.chunk_box(g)[a] - 1) // c[a] for a in range(3)]
            for z in range(lo[2], hi[2] + 1):
                for y in range(lo[1], hi[1] + 1):
                    for x in range(lo[0], hi[0] + 1):
                        if (x, y, z) not in seen:
                            seen.add((x, y, z))
                            yield (x, y, z)

    def _iter_real(self) -> Iterator[Vec3]:
        """Grid positions of the chunks stored: chunk files named for a box of the scale's
        grid, or every chunk id the shards' minishard indexes list.  A name or id that is no
        chunk of the grid, or one listed in a minishard its hash does not lead to, is left out
        and kept as a problem (``problems``)."""
        spec = self.scale.sharding
        try:
            names = self.store.list_names(self.prefix)
        except OSError:
            names = []
        found: list[FormatError] = []
        if spec is None:
            for name in sorted(names):
                stem = name.removesuffix(".gz").removesuffix(".zstd")
                pos = self._parse_name(stem)
                if pos is None:
                    if _looks_like_chunk(stem):
                        found.append(MissingChunkError(
                            "chunk file named for a box that is not a chunk of this scale",
                            self.store.location(self._key(name))))
                    continue
                yield pos
            self._listing_problems = found
            return
        g0 = np.asarray(self.grid0, np.int64)
        for name in sorted(names):
            if not name.endswith(".shard"):
                continue
            try:
                number = int(name[:-6], 16)
            except ValueError:
                continue
            if spec.shard_name(number) != name:
                continue
            try:
                sf = self._shard(number)
            except FormatError as exc:
                found.append(exc)
                continue
            if sf is None:
                continue
            for m in range(1 << spec.minishard_bits):
                try:
                    ms: Minishard = sf.minishard(m)
                except FormatError as exc:
                    found.append(exc)
                    continue
                if not len(ms.ids):
                    continue
                sh, mi = locate_ids(ms.ids, spec)
                wrong = (sh != number) | (mi != m)
                grid = morton_positions(ms.ids, self.scale.grid_shape)
                outside = np.asarray((grid >= np.asarray(self.scale.grid_shape)).any(axis=1),
                                     dtype=np.bool_)
                for k in np.flatnonzero(wrong | outside).tolist():
                    why = ("is no chunk of this scale's grid" if outside[k] else
                           f"belongs to shard {int(sh[k])} minishard {int(mi[k])}")
                    found.append(MissingChunkError(
                        f"minishard {m} lists chunk id {int(ms.ids[k])}, which {why}: it "
                        "cannot be found there", sf.path, offset=int(ms.offsets[k])))
                for p in (grid[~(wrong | outside)] + g0).tolist():
                    yield (p[0], p[1], p[2])
        self._listing_problems = found

    def _parse_name(self, name: str) -> Vec3 | None:
        parts = name.split("_")
        if len(parts) != 3:
            return None
        pos = []
        c, o = self.chunk_shape, self.scale.voxel_offset
        for a, part in enumerate(parts):
            lo_s, sep, hi_s = part.partition("-")
            if not sep or not lo_s.lstrip("-").isdigit() or not hi_s.lstrip("-").isdigit():
                return None
            lo = int(lo_s)
            if (lo - o[a]) % c[a]:
                return None
            pos.append((lo - o[a]) // c[a] + self.grid0[a])
        p = (pos[0], pos[1], pos[2])
        if not self.in_grid(p) or self.chunk_name(p) != name:
            return None
        return p

    # -- description ----------------------------------------------------------------------------
    def info(self) -> VolumeInfo:
        s, m = self.scale, self.meta
        header: dict[str, Any] = {
            "info_file": m.where, "type": m.type, "data_type": m.data_type,
            "num_channels": m.num_channels, "scale": s.index, "key": s.key,
            "size": list(s.size), "voxel_offset": list(s.voxel_offset),
            "resolution": list(s.resolution), "chunk_size": list(s.chunk_size),
            "grid_shape": list(s.grid_shape), "encoding": s.encoding,
        }
        if s.block_size is not None:
            header["compressed_segmentation_block_size"] = list(s.block_size)
        if s.jpeg_quality is not None:
            header["jpeg_quality"] = s.jpeg_quality
        if s.sharding is not None:
            header["sharding"] = s.sharding.to_json()
        header["document"] = m.document
        compression = s.encoding + (" sharded" if s.sharding is not None else "")
        if s.sharding is not None and s.sharding.data_encoding == "gzip":
            compression += " gzip"
        return VolumeInfo(self.format, compression, header)

    def problems(self) -> list[FormatError]:
        return list(self._listing_problems)

    def _forget_shard(self, number: int) -> None:
        """Shard ``number`` changed: its index and the chunk locations found in it are read
        again when next needed."""
        with self._shard_lock:
            self._shards.pop(number, None)
            self._located.clear()  # absent chunks too: the new index may list them

    def forget_unit(self, unit: Vec3) -> None:
        """Another program rewrote the chunk at ``unit``: every shard index and chunk
        location kept is read again when next needed (a writer that rewrote one shard has
        often rewritten others; the indexes are small)."""
        with self._shard_lock:
            self._located.clear()
            self._shards.clear()

    def close(self) -> None:
        with self._shard_lock:
            self._shards.clear()
            self._located.clear()


def _looks_like_chunk(name: str) -> bool:
    parts = name.split("_")
    return len(parts) == 3 and all("-" in p for p in parts)


def open_scale(store: Store, info: InfoFile, index: int) -> PrecomputedVolume:
    return PrecomputedVolume(store, info, info.scales[index])


__all__ = ["PrecomputedVolume", "open_scale"]
