"""The storage units of a precomputed scale: one chunk each.

A chunk of an unsharded scale is a file of its own (``ChunkFile``, named by its box, perhaps
with ``.gz``).  A chunk of a sharded scale lives at a byte range of a shard file that the
shard's two-level index gives (``ShardChunk``): its unit's ``path`` is the shard file, its
``ChunkTable`` the one range, and ``describe`` shows the shard index (a row per minishard) and
the chunk's minishard index (a row per chunk) as the inspector's tables.  Shards are not boxes
of chunks (a hash spreads them), so a unit is one chunk and the shard is shared through
``ShardFile`` (its indexes parsed once, kept by the volume).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from viewer.format.description import described
from viewer.format.errors import ChunkDecodeError, FileChangedError, FormatError
from viewer.format.precomputed import cseg
from viewer.format.precomputed.codecs import ChunkCodec, CodecFailure
from viewer.format.precomputed.info import ScaleInfo, ShardingSpec
from viewer.format.precomputed.sharding import (
    Minishard,
    morton_positions,
    parse_minishard,
    parse_shard_index,
)
from viewer.format.store import Store
from viewer.format.volume import ChunkTable, StorageUnit, StoredResult

Vec3 = tuple[int, int, int]
#: Minishards of a shard index shown as Header tab fields (the rest in ``shard_index``).
FIELDS_SHOWN = 256


class ChunkVolume(Protocol):
    """What a unit needs of its scale (``PrecomputedVolume``)."""

    store: Store
    scale: ScaleInfo
    codec: ChunkCodec
    #: Absolute grid position of the scale's chunk (0, 0, 0).
    grid0: Vec3

    def chunk_box(self, pos: Sequence[int]) -> Vec3: ...

    def chunk_error(self, pos: Sequence[int], message: str, path: str,
                    chunk_id: int | None = None, offset: int | None = None,
                    cls: type[FormatError] = ChunkDecodeError) -> FormatError: ...


class ShardFile:
    """One shard file: its size, the shard index parsed at open, each minishard index parsed
    on first use (``minishard``).  Thread-safe."""

    def __init__(self, store: Store, key: str, size: int, spec: ShardingSpec,
                 index_raw: bytes, number: int, version: str | None = None) -> None:
        self.store = store
        self.number = number
        self.key = key
        self.path = store.location(key)
        self.size = size
        #: The version of the file the index was read from (``Store.stat``): every later
        #: read (minishard indexes, chunks) asks for that version, so offsets from one
        #: version are never applied to the bytes of another.
        self.version = version
        self.spec = spec
        self.starts, self.ends, self.errors = parse_shard_index(index_raw, spec, size,
                                                                self.path)
        self._minishards: dict[int, Minishard] = {}
        self._lock = threading.Lock()

    def minishard(self, number: int) -> Minishard:
        """Minishard ``number``'s index decoded (``MinishardIndexError`` when damaged)."""
        with self._lock:
            found = self._minishards.get(number)
        if found is not None:
            return found
        failed = self.errors[number]
        if failed is not None:
            raise failed
        lo, hi = int(self.starts[number]), int(self.ends[number])
        raw = self.store.read_ranges_of(self.key, [(lo, hi - lo)], self.version)[0] \
            if hi > lo else b""
        parsed = parse_minishard(raw, self.spec, number, lo, self.size, self.path,
                                 self.number)
        with self._lock:
            self._minishards[number] = parsed
        return parsed

    def index_rows(self) -> list[dict[str, Any]]:
        """The shard index: one row per minishard, its index's byte range."""
        return [{"minishard": m, "start": int(a), "end": int(b), "bytes": int(b - a),
                 "problem": "" if e is None else e.reason}
                for m, (a, b, e) in enumerate(zip(self.starts.tolist(), self.ends.tolist(),
                                                  self.errors, strict=True))]


class ChunkUnit(StorageUnit):
    """A unit of one chunk at grid position ``pos`` (absolute, in the volume's grid)."""

    volume: ChunkVolume
    pos: Vec3
    key: str
    chunk_id: int | None = None
    offset: int = 0
    nbytes: int = 0

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        try:
            return self.volume.codec.decode(stored, self.volume.chunk_box(self.pos))
        except CodecFailure as exc:
            raise self.error(str(exc)) from None

    def error(self, message: str, cls: type[FormatError] = ChunkDecodeError) -> FormatError:
        return self.volume.chunk_error(self.pos, message, self.path, self.chunk_id,
                                       self.offset if self.chunk_id is not None else None, cls)

    def chunk_table(self) -> ChunkTable:
        return ChunkTable(np.asarray([self.offset], np.int64),
                          np.asarray([self.nbytes], np.int64), np.ones(1, np.bool_))

    def describe_chunk(self, index: int) -> dict[str, Any]:
        box = self.volume.chunk_box(self.pos)
        c = self.volume.codec
        decoded = box[0] * box[1] * box[2] * c.channels * c.dtype.itemsize
        out: dict[str, Any] = {"grid": list(self.pos), "chunk_encoding": c.describe(),
                               "stored_bytes": self.nbytes, "decoded_bytes": decoded,
                               "ratio": round(decoded / self.nbytes, 3) if self.nbytes else None}
        if self.chunk_id is not None:
            out["chunk_id"] = self.chunk_id
        if c.encoding == "compressed_segmentation" and c.block_size is not None:
            out.update(self._cseg_stats(box))
        return out

    def _cseg_stats(self, box: Vec3) -> dict[str, Any]:
        """The chunk's compressed_segmentation blocks (bit widths, lookup tables)."""
        c = self.volume.codec
        assert c.block_size is not None
        [stored] = self.read_stored([0])
        if stored is None or isinstance(stored, FormatError):
            return cseg.block_stats(b"", box, c.channels, c.block_size)
        try:
            data, _ = c.unwrap(stored, box)
        except CodecFailure:
            data = b""
        return cseg.block_stats(data, box, c.channels, c.block_size)


class ChunkFile(ChunkUnit):
    """A chunk file of an unsharded scale."""

    def __init__(self, volume: ChunkVolume, pos: Vec3, key: str, size: int) -> None:
        self.volume = volume
        self.pos = pos
        self.key = key
        self.path = volume.store.location(key)
        self.num_chunks = 1
        self.nbytes = size

    @property
    def size(self) -> int:
        return self.nbytes

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        out: list[StoredResult] = []
        for index in indices:
            if int(index) != 0:
                out.append(self.error(f"a chunk file holds chunk 0 only, not {index}"))
                continue
            try:
                out.append(self.volume.store.read_whole(self.key))
            except (FileNotFoundError, NotADirectoryError):
                out.append(None)
            except FileChangedError as exc:
                out.append(self.error(exc.reason, FileChangedError))
            except OSError as exc:
                out.append(self.error(f"cannot read: {exc.strerror or exc}"))
        return out

    @described
    def describe(self) -> dict[str, Any]:
        return {"object": self.key, "stored_bytes": self.nbytes,
                "chunk_encoding": self.volume.codec.describe(),
                "box": _box_text(self.volume, self.pos)}


class ShardChunk(ChunkUnit):
    """A chunk of a sharded scale: ``nbytes`` at ``offset`` of ``shard``, listed in
    ``minishard`` under ``chunk_id``."""

    def __init__(self, volume: ChunkVolume, pos: Vec3, shard: ShardFile, shard_number: int,
                 minishard: Minishard, chunk_id: int, offset: int, nbytes: int) -> None:
        self.volume = volume
        self.pos = pos
        self.shard = shard
        self.shard_number = shard_number
        self.minishard = minishard
        self.key = shard.key
        self.path = shard.path
        self.num_chunks = 1
        self.chunk_id = chunk_id
        self.offset = offset
        self.nbytes = nbytes

    @property
    def size(self) -> int:
        return self.shard.size

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        out: list[StoredResult] = []
        for index in indices:
            if int(index) != 0:
                out.append(self.error(f"a unit holds chunk 0 only, not {index}"))
                continue
            try:
                data = self.volume.store.read_ranges_of(
                    self.key, [(self.offset, self.nbytes)], self.shard.version)[0]
            except FileNotFoundError:
                out.append(self.error("shard file is gone"))
                continue
            except FileChangedError as exc:  # read again from the new index: forget_unit
                out.append(self.error(exc.reason, FileChangedError))
                continue
            except OSError as exc:
                out.append(self.error(f"cannot read: {exc.strerror or exc}"))
                continue
            if len(data) != self.nbytes:
                out.append(self.error(f"shard file cut short: chunk bytes [{self.offset}, "
                                      f"{self.offset + self.nbytes}) past its end"))
            else:
                out.append(data)
        return out

    def read_range(self, offset: int, nbytes: int) -> bytes | memoryview | None:
        if offset < 0 or offset + nbytes > self.shard.size:
            return None
        return self.volume.store.read_ranges_of(self.key, [(offset, nbytes)],
                                                self.shard.version)[0]

    @described
    def describe(self) -> dict[str, Any]:
        """The shard file's own structure for the Header tab: its shard index as fields (one
        per minishard: the byte range of its index; the first ``FIELDS_SHOWN``), the
        minishard index that lists this chunk as derived rows (chunk id, grid position, byte
        range), and both as lists (``shard_index``, ``minishard_index``)."""
        spec = self.shard.spec
        rows = self.minishard.describe_rows()
        grid = self.volume.scale.grid_shape
        pos = morton_positions(self.minishard.ids, grid)
        g0 = self.volume.grid0
        for row, p in zip(rows, pos.tolist(), strict=True):
            row["grid"] = [p[0] + g0[0], p[1] + g0[1], p[2] + g0[2]]
        index_rows = self.shard.index_rows()
        fields: list[dict[str, Any]] = [
            {"name": f"minishard {r['minishard']}", "first_byte": 16 * r["minishard"],
             "length": 16, "raw": f"{r['start'] - spec.shard_index_nbytes}, "
                                  f"{r['end'] - spec.shard_index_nbytes}",
             "meaning": r["problem"] or (f"index at bytes [{r['start']}, {r['end']}), "
                                         f"{r['bytes']} B" if r["bytes"] else "empty")}
            for r in index_rows[:FIELDS_SHOWN]]
        facts = {"object": self.key, "shard": self.shard_number, "shard_bytes": self.shard.size,
                 "minishards": 1 << spec.minishard_bits, "hash": spec.hash,
                 "preshift_bits": spec.preshift_bits,
                 "minishard_index_encoding": spec.minishard_index_encoding,
                 "data_encoding": spec.data_encoding,
                 "chunk_encoding": self.volume.codec.describe(), "chunk_id": self.chunk_id,
                 "chunk_minishard": self.minishard.number,
                 "minishard_index_bytes": self.minishard.encoded_nbytes,
                 "minishard_chunks": len(rows), "box": _box_text(self.volume, self.pos)}
        fields.extend({"name": k, "first_byte": None, "length": None, "raw": v, "meaning": ""}
                      for k, v in facts.items())
        try:
            head = self.volume.store.read(self.key, 0, min(spec.shard_index_nbytes, 256))
        except OSError:
            head = b""
        return {
            **facts,
            "raw_header": head.hex(" "),
            "header_fields": fields,
            "derived": [(f"chunk {r['chunk_id']} at {'/'.join(map(str, r['grid']))}",
                         f"bytes [{r['offset']}, {r['offset'] + r['size']}), {r['size']} B"
                         + (f" ({r['problem']})" if r["problem"] else ""))
                        for r in rows],
            "shard_index": index_rows,
            "minishard_index": rows,
        }

    def describe_chunk(self, index: int) -> dict[str, Any]:
        out = super().describe_chunk(index)
        out["minishard"] = self.minishard.number
        out["shard"] = self.shard_number
        return out



def _box_text(volume: ChunkVolume, pos: Vec3) -> str:
    s = volume.scale
    c = s.chunk_size
    g0 = volume.grid0
    lo = [s.voxel_offset[a] + (pos[a] - g0[a]) * c[a] for a in range(3)]
    hi = [min(lo[a] + c[a], s.voxel_offset[a] + s.size[a]) for a in range(3)]
    return "_".join(f"{a}-{b}" for a, b in zip(lo, hi, strict=True))





class StraddlingChunk(StorageUnit):
    """A chunk of the absolute grid of a scale whose ``voxel_offset`` is not a multiple of its
    chunk size: the box ``[pos * c, (pos + 1) * c)`` meets up to eight stored chunks
    (``parts``, each a ``ChunkUnit`` at its corner ``corners[k]`` in absolute voxels).  Its
    stored bytes are the parts' stored bytes one after another (two volumes of the same
    layout have equal bytes only for equal voxels); decoding splits them again, decodes each
    part and copies the piece inside the box."""

    def __init__(self, volume: ChunkVolume, pos: Vec3, parts: list[ChunkUnit],
                 corners: list[Vec3]) -> None:
        self.volume = volume
        self.pos = pos
        self.parts = parts
        self.corners = corners
        self.path = parts[0].path
        self.num_chunks = 1

    @property
    def size(self) -> int:
        return sum(p.nbytes for p in self.parts)

    def chunk_table(self) -> ChunkTable:
        return ChunkTable(np.zeros(1, np.int64), np.asarray([self.size], np.int64),
                          np.ones(1, np.bool_))

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        out: list[StoredResult] = []
        for index in indices:
            if int(index) != 0:
                out.append(self.parts[0].error(f"a unit holds chunk 0 only, not {index}"))
                continue
            pieces: list[bytes | memoryview] = []
            failed: StoredResult = None
            for part in self.parts:
                [got] = part.read_stored([0])
                if isinstance(got, FormatError):
                    failed = got
                    break
                if got is None or len(got) != part.nbytes:
                    failed = part.error("changed while it was read")
                    break
                pieces.append(got)
            out.append(failed if failed is not None else b"".join(pieces))
        return out

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        c = self.volume.codec
        shape = c.chunk_shape
        out = np.zeros((c.channels, *shape), dtype=c.dtype, order="F")
        lo = [self.pos[a] * shape[a] for a in range(3)]
        at = 0
        view = memoryview(stored)
        for part, corner in zip(self.parts, self.corners, strict=True):
            arr = part.decode(0, view[at:at + part.nbytes])
            at += part.nbytes
            a0 = [max(lo[a], corner[a]) for a in range(3)]
            a1 = [min(lo[a] + shape[a], corner[a] + shape[a]) for a in range(3)]
            if any(a1[a] <= a0[a] for a in range(3)):
                continue
            out[:, a0[0] - lo[0]:a1[0] - lo[0], a0[1] - lo[1]:a1[1] - lo[1],
                a0[2] - lo[2]:a1[2] - lo[2]] = \
                arr[:, a0[0] - corner[0]:a1[0] - corner[0], a0[1] - corner[1]:a1[1] - corner[1],
                    a0[2] - corner[2]:a1[2] - corner[2]]
        return out

    @described
    def describe(self) -> dict[str, Any]:
        return {"stored_chunks": len(self.parts),
                "derived": [(f"stored chunk {'/'.join(map(str, p.pos))}",
                             f"{p.path} [{p.offset}, {p.offset + p.nbytes})")
                            for p in self.parts],
                "chunk_encoding": self.volume.codec.describe(),
                "note": "voxel_offset is not a multiple of the chunk size: this box of the "
                        "absolute grid is made of the stored chunks it meets"}

    def describe_chunk(self, index: int) -> dict[str, Any]:
        return {"grid": list(self.pos), "stored_chunks": len(self.parts),
                "stored_bytes": self.size}
__all__ = ["ShardFile", "ChunkUnit", "ChunkFile", "ShardChunk", "StraddlingChunk"]
