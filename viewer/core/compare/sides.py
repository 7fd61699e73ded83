"""What a comparison compares: two volumes, named by path (and layer and mag) or given open.

A side is a ``Volume`` of any format, opened through the registry (``viewer.format.
open_volume``): a plain WKW dataset or file, one mag of a webKnossos dataset, an N5 or zarr
array, ...  ``VolumeSpec`` names one by path, layer and mag, and is what crosses a process
boundary (the window's child process; later Dask tasks): plain, picklable data.

Also the geometry both the block path and the voxel path share: how a volume's storage units
are named in a report (relative to the volume's root), which units a volume has, their box,
and the chunks of one unit that a box keeps.  Qt-free; any thread.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from viewer.core.compare.model import Box, Vec3
from viewer.format import Volume, open_volume, parse_mag

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class VolumeSpec:
    """One volume by name: ``path`` (a file, folder or URL), and for a dataset of several
    layers or mags the ``layer`` (default: the registry's choice) and ``mag``."""

    path: str
    layer: str | None = None
    mag: Vec3 | None = None
    #: The element of each extra axis (``Volume.at_index``), as ``(name, index)`` pairs.
    index: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, path: str | os.PathLike[str], layer: str | None = None,
           mag: Any = None) -> VolumeSpec:
        return cls(os.fspath(path), layer, None if mag is None else parse_mag(mag))

    def open(self) -> Volume:
        """The volume, through the registry (raises its ``FormatError``; ``KeyError`` for a
        layer or mag the dataset does not have)."""
        return open_volume(self.path, self.layer, self.mag, dict(self.index))

    def __str__(self) -> str:
        extra = [v for v in (self.layer, None if self.mag is None else
                             "-".join(map(str, self.mag))) if v]
        return self.path if not extra else f"{self.path} ({'/'.join(extra)})"


#: What a comparison accepts as a side: a path, a ``VolumeSpec``, or an open volume (which
#: the comparison does not close).
SideInput = Union[str, "os.PathLike[str]", VolumeSpec, Volume]


def side_name(side: SideInput) -> str:
    """The path a report names for a side."""
    if isinstance(side, Volume):
        return side.path
    if isinstance(side, VolumeSpec):
        return side.path
    return os.fspath(side)


def open_side(side: SideInput, label: str) -> tuple[Volume, bool]:
    """``(volume, whether the caller owns it)``.  A local path that does not exist raises
    ``FileNotFoundError`` naming the side; what the registry cannot open raises its
    ``FormatError``."""
    if isinstance(side, Volume):
        return side, False
    spec = side if isinstance(side, VolumeSpec) else VolumeSpec(os.fspath(side))
    if "://" not in spec.path and not os.path.exists(spec.path):
        raise FileNotFoundError(f"{label}: {spec.path}: no such file or directory")
    return spec.open(), True


def unit_name(volume: Volume, unit: Vec3) -> str:
    """The storage unit at ``unit`` as a report names it: its path relative to the volume's
    root (``z0/y0/x1.wkw``), or its file name when the volume is one file."""
    path = volume.unit_path(unit)
    root = volume.path
    if "://" in path:
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1:]
        return path.rstrip("/").rsplit("/", 1)[-1]
    if os.path.isdir(root):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return os.path.basename(path)


def units_present(volume: Volume) -> list[Vec3]:
    """Unit-grid positions of the units present (one listing)."""
    return [(int(u[0]), int(u[1]), int(u[2])) for u in volume.iter_units()]


def extent_box(volume: Volume, units: list[Vec3]) -> Box | None:
    """The volume's extent as (offset, size): its declared one (an array's shape, a layer's
    box), else the box of its ``units`` present (one listing, already made)."""
    if not volume.extent_declared:
        return units_box(units, volume.unit_len_vx)
    lo, hi = volume.bounds
    return (lo, (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]))


def units_box(units: list[Vec3], unit_len: Vec3) -> Box | None:
    """The box (offset, size) in voxels that the units cover, None without any."""
    if not units:
        return None
    arr = np.asarray(units, dtype=np.int64)
    side = np.asarray(unit_len, dtype=np.int64)
    lo = arr.min(axis=0) * side
    hi = (arr.max(axis=0) + 1) * side
    return ((int(lo[0]), int(lo[1]), int(lo[2])),
            (int(hi[0] - lo[0]), int(hi[1] - lo[1]), int(hi[2] - lo[2])))


#: ``Volume.info().header`` keys that say where a volume is or how large, not how its chunks
#: are encoded (left out of the codec signature, so that a copy elsewhere, or of another
#: extent, still compares by stored bytes).
_PLACE_KEYS = frozenset({"shape", "dimensions", "document", "file_bytes", "bounds", "origin"})


def codec_signature(volume: Volume) -> tuple[Any, ...]:
    """What decides how stored bytes decode: two volumes with equal signatures decode equal
    stored bytes of a chunk to equal voxels.  From ``Volume.info()``: format, compression,
    voxel type, channels, chunk shape, and every header field but those naming a place or an
    extent (paths, ``*_file``, shape): a transposition, byte order, scale or zfp mode kept in
    the metadata rather than in the stored bytes changes the signature, so chunks are then
    decoded and compared by voxels (never taken as equal for equal bytes)."""
    info = volume.info()
    header = {k: v for k, v in info.header.items()
              if k not in _PLACE_KEYS and not k.endswith(("file", "path", "paths"))}
    return (info.format, info.compression, volume.dtype.str, volume.num_channels,
            tuple(volume.chunk_shape), json.dumps(header, sort_keys=True, default=str))


class UnitChunks:
    """The chunks of one volume's storage units that a comparison covers: all of a unit, or
    those a ``box`` (voxels) meets, each with its block-local clip when the box cuts it."""

    def __init__(self, volume: Volume, box: Box | None) -> None:
        self.volume = volume
        self.box = box
        self.chunk_shape = np.asarray(volume.chunk_shape, dtype=np.int64)
        self.unit_shape = np.asarray(volume.unit_shape, dtype=np.int64)
        self.unit_len = self.chunk_shape * self.unit_shape
        self._all: tuple[IntArray, IntArray] | None = None

    def _grid(self, lo: IntArray, hi: IntArray) -> IntArray:
        axes = [np.arange(int(a), int(b), dtype=np.int64) for a, b in zip(lo, hi, strict=True)]
        zz, yy, xx = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
        return np.stack([xx.ravel(), yy.ravel(), zz.ravel()], axis=1)

    def of(self, unit: Vec3) -> tuple[IntArray, IntArray, dict[int, tuple[Vec3, Vec3]]]:
        """``(indices, local, clips)``: chunk indices inside the unit (sorted), their
        unit-local chunk coordinates ``(N, 3)``, and per index cut by the box its
        chunk-local voxel box ``(lo, hi)``."""
        if self.box is None:
            if self._all is None:
                local = self._grid(np.zeros(3, np.int64), self.unit_shape)
                indices = np.asarray(self.volume.chunk_index(local), dtype=np.int64)
                order = np.argsort(indices, kind="stable")
                self._all = (indices[order], local[order])
            return self._all[0], self._all[1], {}
        origin = np.asarray(unit, dtype=np.int64) * self.unit_len
        off = np.asarray(self.box[0], dtype=np.int64)
        lo = np.maximum(off - origin, 0)
        hi = np.minimum(off + np.asarray(self.box[1], dtype=np.int64) - origin, self.unit_len)
        if np.any(hi <= lo):
            return np.zeros(0, np.int64), np.zeros((0, 3), np.int64), {}
        c = self.chunk_shape
        local = self._grid(lo // c, (hi - 1) // c + 1)
        indices = np.asarray(self.volume.chunk_index(local), dtype=np.int64)
        order = np.argsort(indices, kind="stable")
        indices, local = indices[order], local[order]
        base = local * c
        c_lo = np.maximum(lo - base, 0)
        c_hi = np.minimum(hi - base, c)
        cut = np.flatnonzero((c_lo > 0).any(axis=1) | (c_hi < c).any(axis=1))
        clips: dict[int, tuple[Vec3, Vec3]] = {}
        for k in cut.tolist():
            lo_k, hi_k = c_lo[k], c_hi[k]
            clips[int(indices[k])] = ((int(lo_k[0]), int(lo_k[1]), int(lo_k[2])),
                                      (int(hi_k[0]), int(hi_k[1]), int(hi_k[2])))
        return indices, local, clips

    def count(self, unit: Vec3) -> int:
        return len(self.of(unit)[0])


__all__ = ["VolumeSpec", "SideInput", "side_name", "open_side", "unit_name", "units_present",
           "units_box", "extent_box", "codec_signature", "UnitChunks"]
