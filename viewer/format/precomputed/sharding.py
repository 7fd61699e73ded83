"""The sharded layout (``neuroglancer_uint64_sharded_v1``), parsed with numpy.

A chunk's id is the *compressed Morton code* of its grid position (``morton_ids``): bit ``i``
of each axis is interleaved (x, y, z) only while that axis still needs bit ``i`` for the
scale's grid.  The id shifted right by ``preshift_bits`` is hashed (identity, or the low 64
bits of MurmurHash3_x86_128 of its 8 little-endian bytes, seed 0); the low ``minishard_bits``
of the hash are the minishard, the next ``shard_bits`` the shard (``locate_ids``).

A shard file starts with its *shard index*: per minishard a little-endian uint64 pair
``[start, end)``, relative to the end of the shard index, of the minishard's index.  A
*minishard index* (raw or gzip) is ``[3, n]`` uint64: chunk ids (delta-encoded), data offsets
(each relative to the end of the previous chunk; the first to the end of the shard index) and
sizes (``parse_minishard``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import UnsupportedFormatError
from viewer.format.precomputed.errors import MinishardIndexError, ShardIndexError
from viewer.format.precomputed.info import ShardingSpec

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
#: The optional extra that holds the murmurhash3 implementation (``mmh3``).
EXTRA = "precomputed"


def morton_bits(grid_shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """Bits each axis contributes to a compressed Morton code: enough for ``grid - 1``."""
    return (max(grid_shape[0] - 1, 0).bit_length(), max(grid_shape[1] - 1, 0).bit_length(),
            max(grid_shape[2] - 1, 0).bit_length())


def morton_ids(grid: I64, grid_shape: tuple[int, int, int]) -> U64:
    """Compressed Morton codes of grid positions ``(N, 3)``."""
    bits = morton_bits(grid_shape)
    g = np.asarray(grid, dtype=np.uint64).reshape(-1, 3)
    out = np.zeros(len(g), dtype=np.uint64)
    j = 0
    for i in range(max(bits)):
        for dim in range(3):
            if i < bits[dim]:
                out |= ((g[:, dim] >> np.uint64(i)) & np.uint64(1)) << np.uint64(j)
                j += 1
    return out


def morton_positions(ids: U64, grid_shape: tuple[int, int, int]) -> I64:
    """Grid positions ``(N, 3)`` of compressed Morton codes (the inverse of ``morton_ids``);
    an id with bits beyond the grid's gives a position outside it."""
    bits = morton_bits(grid_shape)
    v = np.asarray(ids, dtype=np.uint64).reshape(-1)
    out = np.zeros((len(v), 3), dtype=np.uint64)
    j = 0
    for i in range(max(bits)):
        for dim in range(3):
            if i < bits[dim]:
                out[:, dim] |= ((v >> np.uint64(j)) & np.uint64(1)) << np.uint64(i)
                j += 1
    pos = out.astype(np.int64)
    if j < 64:
        beyond = (v >> np.uint64(j)) != 0
        pos[beyond] = np.asarray(grid_shape, dtype=np.int64)  # outside: named by the caller
    return pos


def hashed_ids(ids: U64, spec: ShardingSpec) -> U64:
    """The hashed chunk ids the shard and minishard are taken from."""
    shifted = np.asarray(ids, dtype=np.uint64) >> np.uint64(spec.preshift_bits) \
        if spec.preshift_bits < 64 else np.zeros(len(ids), dtype=np.uint64)
    if spec.hash == "identity":
        return shifted
    try:
        import mmh3
    except ImportError:
        raise UnsupportedFormatError(
            "this scale's sharding hashes chunk ids with murmurhash3_x86_128, which needs the "
            f"mmh3 package (pip install 'wkw-viewer[{EXTRA}]' or pip install mmh3)") from None
    mask = (1 << 64) - 1
    raw = shifted.astype("<u8").tobytes()
    return np.fromiter((mmh3.hash128(raw[k:k + 8], 0, False, False) & mask
                        for k in range(0, len(raw), 8)), dtype=np.uint64, count=len(shifted))


def locate_ids(ids: U64, spec: ShardingSpec) -> tuple[U64, U64]:
    """``(shard, minishard)`` numbers of chunk ids."""
    h = hashed_ids(ids, spec)
    mini = h & np.uint64((1 << spec.minishard_bits) - 1)
    if spec.minishard_bits >= 64:
        return np.zeros(len(h), dtype=np.uint64), mini
    shard = (h >> np.uint64(spec.minishard_bits)) & np.uint64((1 << spec.shard_bits) - 1)
    return shard, mini


def parse_shard_index(raw: bytes, spec: ShardingSpec, file_size: int, where: str
                      ) -> tuple[I64, I64, list[ShardIndexError | None]]:
    """``(starts, ends, errors)``: absolute byte ranges of each minishard's index in the shard
    file, and per minishard ``None`` or the ``ShardIndexError`` of an entry that ends before
    it starts or runs past the end of the file (the other minishards stay readable).  An
    index cut short is the whole shard's ``ShardIndexError``."""
    n = spec.shard_index_nbytes
    if len(raw) < n:
        raise ShardIndexError(f"shard file of {file_size} bytes is shorter than its index of "
                              f"{n} bytes", where, offset=len(raw))
    pairs = np.frombuffer(raw, dtype="<u8", count=2 * (n // 16)).reshape(-1, 2)
    huge = np.asarray((pairs >= np.uint64(1 << 62)).any(axis=1), dtype=np.bool_)
    p = np.where(huge[:, None], np.uint64(0), pairs).astype(np.int64) + n
    starts, ends = p[:, 0].copy(), p[:, 1].copy()
    wrong = huge | (ends < starts) | (ends > file_size)
    errors: list[ShardIndexError | None] = [None] * len(starts)
    for m in np.flatnonzero(wrong).tolist():
        a, b = pairs[m].tolist()
        why = ("ends before it starts" if b < a else
               f"runs past the end of the file ({file_size} bytes)")
        errors[m] = ShardIndexError(f"shard index entry of minishard {m}: bytes [{n + a}, "
                                    f"{n + b}) {why}", where, offset=16 * m)
    starts[wrong] = ends[wrong] = n
    return starts, ends, errors


@dataclass(frozen=True)
class Minishard:
    """One minishard index decoded: chunk ``ids``, absolute data ``offsets`` and ``sizes``,
    in the order stored; ``order`` sorts ``ids`` (for ``find``)."""

    number: int
    ids: U64
    offsets: I64
    sizes: I64
    order: I64
    encoded_nbytes: int
    #: Per row, why the entry cannot be read (data past the end of the file, an id listed
    #: twice), or absent when all are sound.
    bad: dict[int, str] | None = None
    #: Why the ids cannot all be trusted (an id repeated, or one that hashes elsewhere), or
    #: "": then an id not found here may be stored here under a damaged id.
    damage: str = ""

    def find(self, ids: U64) -> I64:
        """Row of each id in this minishard, -1 where it is not listed."""
        want = np.asarray(ids, dtype=np.uint64).reshape(-1)
        if not len(self.ids):
            return np.full(len(want), -1, dtype=np.int64)
        sorted_ids = self.ids[self.order]
        at = np.searchsorted(sorted_ids, want).clip(0, len(sorted_ids) - 1)
        hit = sorted_ids[at] == want
        return np.where(hit, self.order[at], -1).astype(np.int64)

    def describe_rows(self) -> list[dict[str, Any]]:
        bad = self.bad or {}
        return [{"chunk_id": int(i), "offset": int(o), "size": int(s),
                 "problem": bad.get(k, "")}
                for k, (i, o, s) in enumerate(zip(self.ids.tolist(), self.offsets.tolist(),
                                                  self.sizes.tolist(), strict=True))]


def parse_minishard(raw: bytes, spec: ShardingSpec, number: int, start: int, file_size: int,
                    where: str, shard: int | None = None) -> Minishard:
    """A minishard index's bytes (read at ``start`` of the shard file) decoded and checked:
    ``MinishardIndexError`` for a gzip stream that does not decode or a length that is not
    ``24 n`` (the whole minishard); an entry whose data lies outside the file, or a chunk id
    listed twice, is marked in ``Minishard.bad`` (that chunk's error, the rest readable)."""
    data = raw
    if spec.minishard_index_encoding == "gzip" and raw:
        try:
            data = zlib.decompress(raw, 31)
        except zlib.error as exc:
            raise MinishardIndexError(f"minishard {number}: gzip index does not decode: {exc}",
                                      where, block=number, offset=start) from None
    if len(data) % 24:
        raise MinishardIndexError(f"minishard {number}: index of {len(data)} bytes is not "
                                  "three arrays of uint64", where, block=number, offset=start)
    n = len(data) // 24
    arr = np.frombuffer(data, dtype="<u8").reshape(3, n)
    ids = np.cumsum(arr[0], dtype=np.uint64)
    sizes_u = arr[2]
    if n and ((sizes_u >= np.uint64(1 << 62)).any() or (arr[1] >= np.uint64(1 << 62)).any()):
        raise MinishardIndexError(f"minishard {number}: offsets or sizes out of any file's "
                                  "reach", where, block=number, offset=start)
    sizes = sizes_u.astype(np.int64)
    deltas = arr[1].astype(np.int64)
    # start[i] = index_end + sum(delta[0..i]) + sum(size[0..i-1])
    ends_before = np.concatenate(([0], np.cumsum(sizes)[:-1])) if n else sizes
    offsets = spec.shard_index_nbytes + np.cumsum(deltas) + ends_before
    order = np.argsort(ids, kind="stable").astype(np.int64)
    bad: dict[int, str] = {}
    damaged_from: int | None = None
    why = ""
    if n > 1:  # a repeated id: a delta of the ids was damaged there
        _, first = np.unique(ids, return_index=True)
        repeated = np.ones(n, np.bool_)
        repeated[first] = False
        if repeated.any():
            damaged_from = int(np.flatnonzero(repeated)[0])
            why = f"chunk id {int(ids[damaged_from])} is listed twice"
    if n and shard is not None:  # an id this minishard cannot hold
        sh, mi = locate_ids(ids, spec)
        wrong = np.flatnonzero((sh != np.uint64(shard)) | (mi != np.uint64(number)))
        if len(wrong) and (damaged_from is None or int(wrong[0]) < damaged_from):
            k = int(wrong[0])
            damaged_from = k
            why = (f"chunk id {int(ids[k])} belongs to shard {int(sh[k])} minishard "
                   f"{int(mi[k])}")
    if damaged_from is not None:
        # ids are delta-encoded: from the first wrong one on, none can be trusted
        text = (f"minishard {number}'s index is damaged from row {damaged_from} ({why}): its "
                "chunk ids from there on cannot be trusted")
        for k in range(damaged_from, n):
            bad[k] = text
    if n:
        for k in np.flatnonzero((offsets < 0) | (offsets + sizes > file_size)).tolist():
            bad.setdefault(k, f"minishard {number}'s index puts it at bytes [{int(offsets[k])}, "
                              f"{int(offsets[k] + sizes[k])}), outside the file ({file_size} "
                              "bytes)")
    for a in (ids, offsets, sizes, order):
        a.flags.writeable = False
    return Minishard(number, ids, offsets.astype(np.int64), sizes, order, len(raw),
                     bad or None, bad.get(damaged_from, "") if damaged_from is not None else "")


__all__ = ["morton_bits", "morton_ids", "morton_positions", "hashed_ids", "locate_ids",
           "parse_shard_index", "parse_minishard", "Minishard", "EXTRA"]
