"""Digests of decoded voxels per region of a fixed grid: integrity that survives conversion.

WKW keeps no checksums, and a checksum of a dataset's files proves nothing once the data is
re-encoded (LZ4HC to raw) or converted (WKW to zarr3 or N5): the bytes change, the voxels must
not.  So the digest is of the voxels: the volume is cut along a fixed grid of ``GRID``^3-voxel
regions (from voxel 0, whatever the format's chunks, shards or files), and each region gets a
BLAKE2b digest of

    ``wkw-viewer digest v1|<dtype, little-endian, e.g. <u2>|<channels>|<GRID>|`` and the
    region's voxels in one canonical order: channel, then z, then y, then x fastest, each value
    little-endian; voxels outside the volume's extent count as zero.

Two volumes holding the same voxels give the same list, whatever their format, chunking or
extent (a plain WKW dataset's extent is the box of its files; a converted copy's may be exact:
the zeros around do not count).  A region absent from one list (outside that volume) is
compared as all zeros.

Works on any object with ``dtype``, ``num_channels``, ``shape`` (X, Y, Z), optionally
``origin``, and ``read(offset, shape) -> (C, X, Y, Z)`` (a ``viewer.format.Volume``).
Qt-free; ``compute`` uses its own worker threads (reads and hashing release the GIL) and may
be called from any thread.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

import numpy as np
import numpy.typing as npt

#: Voxels per region side.
GRID = 64
VERSION = "wkw-viewer digest v1"
#: Regions read ahead per worker.
AHEAD = 4

Vec3 = tuple[int, int, int]


class Readable(Protocol):
    """What ``compute`` needs of a volume."""

    @property
    def dtype(self) -> np.dtype[Any]: ...

    @property
    def num_channels(self) -> int: ...

    @property
    def shape(self) -> Vec3: ...

    @property
    def origin(self) -> Vec3:
        """The first voxel of the extent (``Volume.origin``; (0, 0, 0) for most)."""
        ...

    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]: ...


@dataclass
class DigestList:
    """The digests of one volume: ``regions`` maps a region's first voxel to its hex digest."""

    dtype: str  #: numpy ``str`` of one channel's value, little-endian (``<u2``)
    num_channels: int
    shape: Vec3
    origin: Vec3 = (0, 0, 0)
    grid: int = GRID
    regions: dict[Vec3, str] = field(default_factory=dict)

    def zero_digest(self) -> str:
        """The digest of a region holding only zeros (what a region outside the data is)."""
        zeros = np.zeros((self.num_channels, self.grid, self.grid, self.grid),
                         dtype=np.dtype(self.dtype))
        return _hash(zeros, self.dtype, self.num_channels, self.grid)

    def to_json(self) -> dict[str, Any]:
        return {"format": VERSION, "grid": self.grid, "dtype": self.dtype,
                "num_channels": self.num_channels, "shape": list(self.shape),
                "origin": list(self.origin),
                "regions": [{"offset": list(k), "digest": v}
                            for k, v in sorted(self.regions.items(),
                                               key=lambda kv: (kv[0][2], kv[0][1], kv[0][0]))]}

    def write_text(self, out: TextIO) -> None:
        """The list as text: a header line, then ``x,y,z digest`` per region (z, y, x order)."""
        out.write(f"# {VERSION} grid {self.grid} dtype {self.dtype} channels "
                  f"{self.num_channels} shape {','.join(map(str, self.shape))} origin "
                  f"{','.join(map(str, self.origin))}\n")
        for (x, y, z), d in sorted(self.regions.items(),
                                   key=lambda kv: (kv[0][2], kv[0][1], kv[0][0])):
            out.write(f"{x},{y},{z} {d}\n")

    @classmethod
    def parse(cls, text: str) -> DigestList:
        """Read a list written by ``write_text`` or ``to_json``; ``ValueError`` if it is
        neither."""
        stripped = text.lstrip()
        if stripped.startswith("{"):
            doc = json.loads(stripped)
            if doc.get("format") != VERSION:
                raise ValueError(f"not a {VERSION} list")
            out = cls(str(doc["dtype"]), int(doc["num_channels"]), _vec(doc["shape"]),
                      _vec(doc.get("origin", [0, 0, 0])), int(doc["grid"]))
            for r in doc["regions"]:
                out.regions[_vec(r["offset"])] = str(r["digest"])
            return out
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines or not lines[0].startswith(f"# {VERSION} "):
            raise ValueError(f"not a {VERSION} list")
        words = lines[0][2 + len(VERSION):].split()
        meta = dict(zip(words[::2], words[1::2], strict=True))
        out = cls(meta["dtype"], int(meta["channels"]), _vec(meta["shape"].split(",")),
                  _vec(meta.get("origin", "0,0,0").split(",")), int(meta["grid"]))
        for line in lines[1:]:
            where, digest = line.split()
            out.regions[_vec(where.split(","))] = digest
        return out


def _vec(values: Sequence[Any]) -> Vec3:
    x, y, z = (int(v) for v in values)
    return (x, y, z)


def _le(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The same type, little-endian (one-byte types have no byte order)."""
    return dtype.newbyteorder("<")


def _hash(region: npt.NDArray[Any], dtype: str, channels: int, grid: int) -> str:
    """The digest of a ``(C, X, Y, Z)`` region of ``grid``^3 voxels."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{VERSION}|{dtype}|{channels}|{grid}|".encode())
    canonical = np.ascontiguousarray(region.transpose(0, 3, 2, 1)).astype(
        np.dtype(dtype), copy=False)
    h.update(memoryview(canonical.reshape(-1).view(np.uint8)))  # type: ignore[arg-type]
    return h.hexdigest()


def regions_of(origin: Vec3, shape: Vec3, grid: int = GRID) -> list[Vec3]:
    """First voxels of the grid regions that meet the box ``[origin, origin + shape)``, in
    z, y, x order."""
    if min(shape) <= 0:
        return []
    lo = [origin[a] // grid * grid for a in range(3)]
    hi = [origin[a] + shape[a] for a in range(3)]
    return [(x, y, z) for z in range(lo[2], hi[2], grid) for y in range(lo[1], hi[1], grid)
            for x in range(lo[0], hi[0], grid)]


def region_digest(volume: Readable, at: Vec3, grid: int = GRID) -> str:
    """The digest of the region whose first voxel is ``at`` (voxels outside the volume's
    extent are zeros).  Raises what the volume's ``read`` raises (a ``FormatError``)."""
    dtype = _le(np.dtype(volume.dtype))
    channels = int(volume.num_channels)
    origin = _vec(volume.origin)
    shape = volume.shape
    region = np.zeros((channels, grid, grid, grid), dtype=dtype, order="F")
    lo = [max(at[a], origin[a]) for a in range(3)]
    hi = [min(at[a] + grid, origin[a] + shape[a]) for a in range(3)]
    if all(hi[a] > lo[a] for a in range(3)):
        part = volume.read(lo, [hi[a] - lo[a] for a in range(3)])
        region[:, lo[0] - at[0]:hi[0] - at[0], lo[1] - at[1]:hi[1] - at[1],
               lo[2] - at[2]:hi[2] - at[2]] = part
    return _hash(region, dtype.str, channels, grid)


def compute(volume: Readable, grid: int = GRID, workers: int = 2,
            progress: Callable[[int, int], None] | None = None,
            on_error: Callable[[Vec3, Exception], None] | None = None) -> DigestList:
    """The digest list of ``volume``.  ``progress(done, total)`` after each region;
    ``on_error(region, error)`` for a region whose read raised a ``ValueError`` (a
    ``FormatError``: a damaged chunk): that region is left out of the list (without
    ``on_error``, the error is raised)."""
    dtype = _le(np.dtype(volume.dtype))
    origin = _vec(volume.origin)
    shape = _vec(volume.shape)
    out = DigestList(dtype.str, int(volume.num_channels), shape, origin, grid)
    todo = regions_of(origin, shape, grid)
    for k, (at, digest) in enumerate(_map(volume, todo, grid, workers, on_error), 1):
        if digest is not None:
            out.regions[at] = digest
        if progress is not None:
            progress(k, len(todo))
    return out


def _map(volume: Readable, todo: list[Vec3], grid: int, workers: int,
         on_error: Callable[[Vec3, Exception], None] | None
         ) -> Iterator[tuple[Vec3, str | None]]:
    """``(region, digest or None)`` in order, computed on ``workers`` threads with a bounded
    number in flight."""
    def one(at: Vec3) -> str:
        return region_digest(volume, at, grid)

    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="wkw-digest") as pool:
        pending: list[tuple[Vec3, Future[str]]] = []
        try:
            it = iter(todo)
            for at in it:
                pending.append((at, pool.submit(one, at)))
                if len(pending) >= AHEAD * max(1, workers):
                    break
            while pending:
                at, fut = pending.pop(0)
                nxt = next(it, None)
                if nxt is not None:
                    pending.append((nxt, pool.submit(one, nxt)))
                try:
                    yield at, fut.result()
                except ValueError as exc:
                    if on_error is None:
                        raise
                    on_error(at, exc)
                    yield at, None
        finally:
            # Stopped early (an error, an interrupt, the caller): what has not started is
            # dropped, so the pool's shutdown waits only for the regions in work.
            for _, f in pending:
                f.cancel()


@dataclass
class CheckResult:
    """What ``check`` found: regions whose digests differ (or could not be computed), and
    whether the voxel types agree at all."""

    regions: int
    differing: list[Vec3]
    unreadable: list[Vec3]
    dtype_mismatch: str | None = None

    @property
    def equal(self) -> bool:
        return not self.differing and not self.unreadable and self.dtype_mismatch is None


def check(expected: DigestList, actual: DigestList,
          unreadable: Sequence[Vec3] = ()) -> CheckResult:
    """Compare two lists region by region (a region missing from one side is all zeros;
    ``unreadable`` regions of ``actual`` are reported as such, not compared)."""
    if (expected.dtype, expected.num_channels, expected.grid) != (
            actual.dtype, actual.num_channels, actual.grid):
        why = (f"the list is of {expected.num_channels} x {expected.dtype} voxels on a "
               f"{expected.grid}^3 grid, the dataset {actual.num_channels} x {actual.dtype} on "
               f"a {actual.grid}^3 grid")
        return CheckResult(0, [], [], why)
    zero = expected.zero_digest()
    keys = sorted(set(expected.regions) | set(actual.regions), key=lambda k: (k[2], k[1], k[0]))
    bad = set(unreadable)
    differing = [k for k in keys if k not in bad
                 and expected.regions.get(k, zero) != actual.regions.get(k, zero)]
    return CheckResult(len(set(keys) | bad), differing,
                       sorted(bad, key=lambda k: (k[2], k[1], k[0])))
