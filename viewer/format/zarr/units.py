"""The storage units of a zarr array (``zarr.volume``): one chunk object of an unsharded array
(``ChunkUnit``) or one shard of a sharded v3 array, its index parsed once (``ShardUnit``).

A unit knows its array through ``UnitVolume``: the store, the metadata, where a chunk lies
in the array and how its bytes decode (``ZarrVolume`` is one).  A shard's wanted byte ranges
closer than ``MERGE_GAP`` are read with one request.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from viewer.format.description import described
from viewer.format.errors import (
    ChecksumError,
    ChunkDecodeError,
    FileChangedError,
    FileChangingError,
    FormatError,
    read_failure,
)
from viewer.format.handles import changing_error, settle_deadline
from viewer.format.store import ObjectStat, PackedRanges, Store
from viewer.format.volume import ChunkResult, ChunkTable, StorageUnit, StoredResult
from viewer.format.zarr import nativeread
from viewer.format.zarr.codecs import CodecFailure
from viewer.format.zarr.errors import ShardIndexError
from viewer.format.zarr.meta import ArrayMeta
from viewer.format.zarr.sharding import ShardIndex

Vec3 = tuple[int, int, int]

#: Two ranges of a shard closer than this are read as one.
MERGE_GAP = 4096


@dataclass
class StoredSpans:
    """The stored bytes of several chunks as addresses (``read_stored_spans``): chunk ``k``'s
    ``length[k]`` bytes start at ``address[k]`` in one of the buffers ``keep`` holds alive;
    where ``address[k]`` is 0, ``results[k]`` is what ``read_stored`` gives (None: absent,
    the chunk's ``FormatError``, or stored bytes too few to point to: none)."""

    results: list[StoredResult]
    address: npt.NDArray[np.int64]
    length: npt.NDArray[np.int64]
    keep: list[Any]

    def stored(self, k: int) -> bytes:
        """Chunk ``k``'s stored bytes (one that was read), copied out."""
        return ctypes.string_at(int(self.address[k]), int(self.length[k]))


class UnitVolume(Protocol):
    """What a unit needs of its array (``ZarrVolume``)."""

    store: Store
    meta: ArrayMeta

    def chunk_position(self, unit: Sequence[int], index: int) -> tuple[int, int, int]: ...

    def decode_chunk(self, stored: bytes | memoryview, unit: UnitBase,
                     index: int) -> npt.NDArray[Any]: ...

    def native_layout(self) -> nativeread.Layout | None: ...

    @property
    def chunk_shape(self) -> Vec3: ...

    @property
    def num_channels(self) -> int: ...

    @property
    def dtype(self) -> np.dtype[Any]: ...

    def shard_index(self, key: str) -> tuple[ObjectStat, ShardIndex, int] | None: ...


class UnitBase(StorageUnit):
    volume: UnitVolume
    key: str
    unit: Vec3

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        return self.volume.decode_chunk(stored, self, int(index))

    def read_chunks(self, indices: Sequence[int]) -> list[ChunkResult]:
        """As ``StorageUnit.read_chunks``; where the native kernel decodes this array's
        chunks, all of them in one call (a chunk it leaves is decoded here, as before)."""
        stored = self.read_stored(indices)
        out: list[ChunkResult] = [s if s is None or isinstance(s, FormatError) else None
                                  for s in stored]
        todo = [k for k, s in enumerate(stored) if s is not None and not isinstance(s, FormatError)]
        lay = self.volume.native_layout() if len(todo) > 1 else None
        if lay is not None:
            v = self.volume
            arrays, left = nativeread.decode_whole(
                lay, (v.num_channels, *v.chunk_shape), v.dtype,
                [s for s in stored if s is not None and not isinstance(s, FormatError)])
            for k, arr in zip(todo, arrays, strict=True):
                out[k] = arr
            todo = [todo[j] for j in left]
        for k in todo:
            data = stored[k]
            assert data is not None and not isinstance(data, FormatError)
            try:
                out[k] = self.decode(int(indices[k]), data)
            except FormatError as exc:
                out[k] = exc
        return out

    def read_stored_spans(self, indices: Sequence[int]) -> StoredSpans:
        """``read_stored`` as addresses for the native kernel (``StoredSpans``).  Default:
        ``read_stored``, each chunk's bytes found in Python; a shard finds them with array
        arithmetic."""
        results = self.read_stored(indices)
        n = len(results)
        address = np.zeros(n, dtype=np.int64)
        length = np.zeros(n, dtype=np.int64)
        keep: list[Any] = []
        for k, got in enumerate(results):
            if got is None or isinstance(got, FormatError) or not len(got):
                continue
            buf = np.frombuffer(got, dtype=np.uint8)
            keep.append(buf)
            address[k], length[k] = buf.ctypes.data, len(buf)
        return StoredSpans(results, address, length, keep)

    def chunk_error(self, index: int, message: str, offset: int | None = None,
                    cls: type[FormatError] = ChunkDecodeError) -> FormatError:
        return cls(message, self.path, block=index if self.num_chunks > 1 else None,
                   offset=offset, chunk=self.volume.chunk_position(self.unit, index))

    def chunk_offset(self, index: int) -> int | None:
        return 0

    def will_need(self, indices: Sequence[int]) -> None:
        """Read-ahead over a network (a store that prefetches: ``RemoteStore``): the stored
        bytes of these chunks are asked for now; a local store does nothing."""
        store = self.volume.store
        if not store.supports_prefetch:
            return
        table = self.chunk_table()
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        idx = idx[(idx >= 0) & (idx < len(table.present))]
        idx = idx[table.present[idx] & (table.nbytes[idx] > 0)]
        if len(idx):
            store.prefetch(self.key, [(int(o), int(n)) for o, n in
                                      zip(table.offsets[idx], table.nbytes[idx], strict=True)])


class ChunkUnit(UnitBase):
    """One chunk object of an unsharded array (v2, or v3 without sharding)."""

    def __init__(self, volume: UnitVolume, unit: Vec3, key: str, size: int) -> None:
        self.volume = volume
        self.unit = unit
        self.key = key
        self.path = volume.store.location(key)
        self.num_chunks = 1
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def chunk_table(self) -> ChunkTable:
        return ChunkTable.single(self._size)

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        out: list[StoredResult] = []
        for index in indices:
            if int(index) != 0:
                out.append(self.chunk_error(int(index), "a chunk object holds chunk 0 only"))
                continue
            out.append(self.read_object())
        return out

    def read_object(self) -> StoredResult:
        """The chunk object's bytes, ``None`` when it is absent, or the error reading it.
        Read whole as one version (``Store.read_whole``): an object changed by another
        program while it was read is read once more, and a second change is the chunk's
        ``FileChangedError`` (never a chunk of two versions)."""
        try:
            return self.volume.store.read_whole(self.key)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except FileChangedError as exc:
            return self.chunk_error(0, exc.reason, cls=type(exc))
        except OSError as exc:
            return read_failure(exc, ChunkDecodeError, "cannot read", self.path,
                                chunk=self.volume.chunk_position(self.unit, 0))

    @described
    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "stored_bytes": self._size,
                "codecs": self.volume.meta.codec.describe()}

    def describe_chunk(self, index: int) -> dict[str, Any]:
        return {"key": self.key, "stored_bytes": self._size,
                "grid": list(self.volume.chunk_position(self.unit, index))}


@dataclass
class _Found:
    """What ``ShardUnit._ranges_from`` found: ``out`` with the errors of the chunks not read;
    for the chunks read, their positions in the request (``want``), byte ranges
    (``offs``, ``nbs``), merged range (``group``) and place in it (``rel``), and the merged
    ranges' bytes (``packed``: None when nothing was read)."""

    out: list[StoredResult]
    want: npt.NDArray[np.int64]
    offs: npt.NDArray[np.int64]
    nbs: npt.NDArray[np.int64]
    group: npt.NDArray[np.int64]
    rel: npt.NDArray[np.int64]
    packed: PackedRanges | None


@dataclass(frozen=True)
class _Version:
    """What a shard's index says, and the version of the shard it was read from (swapped
    whole when the shard is read again)."""

    index: ShardIndex
    index_offset: int
    size: int
    version: str | None
    table: ChunkTable


class ShardUnit(UnitBase):
    """One shard of a sharded v3 array: its index parsed once (a ``ChunkTable``).

    The index is read from one version of the shard (``Store.stat``, then
    ``Store.read_ranges_of``) and every chunk read asks for bytes of that same version: a
    shard another program rewrote since its index was read (a local file's identity, an
    ETag over HTTP or S3) has its index read again and the chunks read anew through it, so
    a chunk is never cut out of one version at offsets the index of another gave; a shard
    that keeps changing for longer than ``handles.SETTLE_NS`` gives its chunks'
    ``FileChangingError``."""

    def __init__(self, volume: UnitVolume, unit: Vec3, key: str, size: int,
                 index: ShardIndex, index_offset: int, version: str | None = None) -> None:
        self.volume = volume
        self.unit = unit
        self.key = key
        self.path = volume.store.location(key)
        self.num_chunks = len(index.offsets)
        self.table_bytes = int(index.offsets.nbytes * 2 + index.present.nbytes * 2)
        self._lock = threading.Lock()
        self._now = _Version(index, index_offset, size, version,
                             ChunkTable(index.offsets, index.nbytes, index.present))

    @property
    def index(self) -> ShardIndex:
        return self._now.index

    @property
    def index_offset(self) -> int:
        return self._now.index_offset

    @property
    def version(self) -> str | None:
        """The version of the shard its index was read from (``ObjectStat.version``)."""
        return self._now.version

    @property
    def size(self) -> int:
        return self._now.size

    def chunk_table(self) -> ChunkTable:
        return self._now.table

    def chunk_offset(self, index: int) -> int | None:
        ix = self.index
        return int(ix.offsets[index]) if ix.present[index] else None

    def _reread_index(self, seen: _Version) -> None:
        """The shard is no longer the version of ``seen``: read its index again (once for
        every reader that found the change); a shard gone has no chunk left."""
        with self._lock:
            if self._now is not seen:
                return  # another reader did
            found = self.volume.shard_index(self.key)
            if found is None:
                n = self.num_chunks
                gone = ShardIndex(np.full(n, -1, np.int64), np.zeros(n, np.int64),
                                  np.zeros(n, np.bool_), np.zeros(n, np.bool_), None)
                self._now = _Version(gone, seen.index_offset, 0, None,
                                     ChunkTable(gone.offsets, gone.nbytes, gone.present))
                return
            stat, index, at = found
            if len(index.offsets) != self.num_chunks:  # cannot be: the metadata fixes it
                raise ShardIndexError(f"the shard's index now has {len(index.offsets)} "
                                      f"entries, not {self.num_chunks}", self.path)
            self._now = _Version(index, at, stat.size, stat.version,
                                 ChunkTable(index.offsets, index.nbytes, index.present))

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        """The stored bytes of these chunks, all from the version of the shard their index
        entries were read from (see the class docstring)."""
        got = self._stored(indices, self._read_from)
        assert isinstance(got, list)
        return got

    def read_stored_spans(self, indices: Sequence[int]) -> StoredSpans:
        """``read_stored`` as addresses into the buffers read (``StoredSpans``), found with
        array arithmetic."""
        got = self._stored(indices, self._spans_from)
        if isinstance(got, StoredSpans):
            return got
        none = np.zeros(len(got), dtype=np.int64)
        return StoredSpans(got, none, none.copy(), [])

    def _stored(self, indices: Sequence[int],
                finish: Callable[[npt.NDArray[np.int64], _Version],
                                 list[StoredResult] | StoredSpans]
                ) -> list[StoredResult] | StoredSpans:
        """``finish(indices, version)`` through the shard's current index, read again while
        the shard changes (a list of every chunk's error where it never settles or its index
        no longer reads)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        deadline = 0
        while True:
            seen = self._now
            try:
                return finish(idx, seen)
            except FileChangingError as exc:
                return [self.chunk_error(int(i), exc.reason, cls=FileChangingError)
                        for i in idx]
            except FileChangedError:
                deadline = deadline or settle_deadline()
                if time.monotonic_ns() > deadline:
                    reason = changing_error(self.path).reason
                    return [self.chunk_error(int(i), reason, cls=FileChangingError)
                            for i in idx]
            try:
                self._reread_index(seen)
            except FormatError as exc:
                return [exc.at(block=int(i) if self.num_chunks > 1 else None,
                               chunk=self.volume.chunk_position(self.unit, int(i)))
                        for i in idx]

    def _read_from(self, idx: npt.NDArray[np.int64], seen: _Version) -> list[StoredResult]:
        """``read_stored`` through the index of ``seen``; ``FileChangedError`` when the shard
        is no longer that version."""
        found = self._ranges_from(idx, seen)
        out = found.out
        if found.packed is None:
            return out
        packed = found.packed
        views = [packed.view(g) for g in range(len(packed.start))]
        for k, off, nb, g, rel in zip(found.want.tolist(), found.offs.tolist(),
                                      found.nbs.tolist(), found.group.tolist(),
                                      found.rel.tolist(), strict=True):
            view = views[g]
            if rel + nb > len(view):
                out[k] = self._cut_short(int(idx[k]), off, nb)
            else:
                out[k] = view[rel:rel + nb]
        return out

    def _spans_from(self, idx: npt.NDArray[np.int64], seen: _Version) -> StoredSpans:
        """``read_stored_spans`` through the index of ``seen`` (as ``_read_from``)."""
        found = self._ranges_from(idx, seen)
        n = len(idx)
        address = np.zeros(n, dtype=np.int64)
        length = np.zeros(n, dtype=np.int64)
        packed = found.packed
        if packed is None:
            return StoredSpans(found.out, address, length, [])
        fits = found.rel + found.nbs <= packed.length[found.group]
        for j in np.flatnonzero(~fits).tolist():
            k = int(found.want[j])
            found.out[k] = self._cut_short(int(idx[k]), int(found.offs[j]),
                                           int(found.nbs[j]))
        for j in np.flatnonzero(fits & (found.nbs == 0)).tolist():
            found.out[int(found.want[j])] = b""  # no bytes: the decoder names the damage
        fits &= found.nbs > 0
        if fits.any():
            read = found.want[fits]
            address[read] = packed.address() + packed.start[found.group[fits]] \
                + found.rel[fits]
            length[read] = found.nbs[fits]
        return StoredSpans(found.out, address, length, [packed])

    def _cut_short(self, index: int, off: int, nb: int) -> FormatError:
        return self.chunk_error(index, f"shard cut short: chunk bytes [{off}, {off + nb}) "
                                f"past its end", offset=off)

    def _ranges_from(self, idx: npt.NDArray[np.int64], seen: _Version) -> _Found:
        """The chunks ``idx`` looked up in the index of ``seen``: the errors of those that
        cannot be read, and the byte ranges of the others read (neighbours merged);
        ``FileChangedError`` when the shard is no longer that version."""
        index = seen.index
        out: list[StoredResult] = [None] * len(idx)
        n = self.num_chunks
        valid = (idx >= 0) & (idx < n)
        for k in np.flatnonzero(~valid).tolist():
            out[k] = self.chunk_error(int(idx[k]), f"no chunk {int(idx[k])} in a shard of {n}")
        safe = np.where(valid, idx, 0)
        present = valid & index.present[safe]
        bad = present & index.bad[safe]
        for k in np.flatnonzero(bad).tolist():
            out[k] = self.chunk_error(int(idx[k]), "shard index entry points outside the "
                                      "shard's data",
                                      offset=seen.index_offset + 16 * int(idx[k]),
                                      cls=ShardIndexError)
        want = np.flatnonzero(present & ~bad)
        if not len(want):
            return _Found(out, want, want, want, want, want, None)
        offs = index.offsets[idx[want]]
        nbs = index.nbytes[idx[want]]
        order = np.argsort(offs, kind="stable")
        offs, nbs, want = offs[order], nbs[order], want[order]
        ends = offs + nbs
        # merge neighbours: a new range starts where the gap to the previous end is large
        run_end = np.maximum.accumulate(ends)
        starts_new = np.ones(len(offs), dtype=np.bool_)
        starts_new[1:] = offs[1:] > run_end[:-1] + MERGE_GAP
        group = np.cumsum(starts_new) - 1
        g_first = np.flatnonzero(starts_new)
        g_lo = offs[g_first]
        g_hi = np.maximum.reduceat(ends, g_first)
        ranges = [(int(a), int(b - a)) for a, b in zip(g_lo, g_hi, strict=True)]
        try:
            blobs = self.volume.store.read_ranges_packed(self.key, ranges, seen.version)
        except OSError as exc:
            for k in want.tolist():
                i = int(idx[k])
                out[k] = read_failure(exc, ChunkDecodeError, "cannot read", self.path,
                                      block=i if self.num_chunks > 1 else None,
                                      chunk=self.volume.chunk_position(self.unit, i))
            return _Found(out, want, offs, nbs, group, group, None)
        return _Found(out, want, offs, nbs, group, offs - g_lo[group], blobs)

    def _entry_offset(self, index: int) -> int:
        return self.index_offset + 16 * index

    @described
    def describe(self) -> dict[str, Any]:
        spec = self.volume.meta.sharding
        assert spec is not None
        present = int(self.index.present.sum())
        crc = self.index.crc
        out: dict[str, Any] = {
            "key": self.key, "shard_bytes": self.size,
            "chunks_per_shard": list(spec.chunks_per_shard),
            "inner_chunk_shape": list(self.volume.meta.chunk_shape),
            "index_location": "start" if spec.index_at_start else "end",
            "index_offset": self.index_offset, "index_bytes": spec.index_nbytes,
            "index_codecs": (["bytes(big)" if spec.index_big_endian else "bytes(little)"]
                             + (["crc32c"] if spec.index_crc32c else [])),
            "chunks_present": present, "chunks_absent": self.num_chunks - present,
            "bad_entries": int(self.index.bad.sum()),
            "stored_bytes": int(self.index.nbytes.sum()),
            "codecs": self.volume.meta.codec.describe(),
        }
        if crc is not None:
            out["index_crc32c"] = f"{crc[0]:#010x}"
            out["index_checksum"] = "ok" if crc[0] == crc[1] else "mismatch"
        else:
            out["index_checksum"] = "none"
        return out

    def describe_chunk(self, index: int) -> dict[str, Any]:
        i = int(index)
        inner = np.unravel_index(i, self.volume.meta.sharding.chunks_per_shard) \
            if self.volume.meta.sharding is not None else ()
        out: dict[str, Any] = {
            "index": i, "inner_grid": [int(v) for v in inner],
            "grid": list(self.volume.chunk_position(self.unit, i)),
            "index_entry_offset": self._entry_offset(i),
            "present": bool(self.index.present[i]),
        }
        if self.index.present[i]:
            out["offset"] = int(self.index.offsets[i])
            out["stored_bytes"] = int(self.index.nbytes[i])
            out["bad_entry"] = bool(self.index.bad[i])
        return out

    def problems(self, decode: bool = True) -> list[FormatError]:
        found: list[FormatError] = []
        for i in np.flatnonzero(self.index.bad).tolist():
            found.append(self.chunk_error(i, "shard index entry points outside the shard's "
                                          "data", offset=self._entry_offset(i),
                                          cls=ShardIndexError))
        if decode:
            good = np.flatnonzero(self.index.present & ~self.index.bad).tolist()
            for start in range(0, len(good), 256):
                for r in self.read_chunks(good[start:start + 256]):
                    if isinstance(r, FormatError):
                        found.append(r)
        return found


def codec_error(exc: CodecFailure, unit: UnitBase, index: int) -> FormatError:
    """The chunk's error for a failure of its codecs (``ChecksumError`` for a checksum)."""
    cls: type[FormatError] = ChecksumError if exc.checksum else ChunkDecodeError
    return unit.chunk_error(index, str(exc), offset=unit.chunk_offset(index), cls=cls)


__all__ = ["MERGE_GAP", "ChunkUnit", "ShardUnit", "UnitBase", "UnitVolume", "codec_error"]
