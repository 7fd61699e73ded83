"""WKW as a ``Volume``: a dataset folder (or one ``.wkw`` file) under the chunked-volume
interface.

The chunks are the WKW blocks; the storage units are the data files (``unit_shape`` = blocks
per file side); a block's index in its unit is its Morton index; a unit's ``ChunkTable`` is the
jump table (raw files: the implied fixed ranges).  Every block of a present file is present;
an absent file is an absent unit (zeros).  The extent is the box of the files present, found by
listing on first use, unless the opener declares it (a webKnossos layer's bounding box).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import DatasetLayoutError, FormatError
from viewer.format.wkw import morton
from viewer.format.wkw.dataset import HEADER_FILE, Dataset
from viewer.format.wkw.file import File
from viewer.format.wkw.header import BLOCK_TYPE_NAMES, HEADER_SIZE
from viewer.format.volume import (
    ChunkResult,
    ChunkTable,
    IntArray,
    StorageUnit,
    StoredResult,
    Volume,
    VolumeInfo,
)

Vec3 = tuple[int, int, int]


class WkwUnit(StorageUnit):
    """One open WKW data file as a storage unit (a thin view of ``wkw.File``)."""

    def __init__(self, file: File) -> None:
        self.file = file
        self.path = file.path
        self.num_chunks = file.header.num_blocks
        self.table_bytes = 8 * (file.header.num_blocks + 1) if file.header.is_compressed else 0
        self._table: ChunkTable | None = None

    @property
    def size(self) -> int:
        return self.file.file_size

    def chunk_table(self) -> ChunkTable:
        if self._table is None:
            starts, ends = self.file.block_ranges()
            n = len(starts)
            self._table = ChunkTable(np.asarray(starts, np.int64),
                                     np.asarray(ends - starts, np.int64), np.ones(n, np.bool_))
        return self._table

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        out: list[StoredResult] = [None] * len(idx)
        for k, _, raw in self.file._fetch(idx):
            out[k] = raw if isinstance(raw, FormatError) else bytes(raw)
        return out

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        from viewer.format.wkw import lz4block

        h = self.file.header
        raw: Any = stored
        if h.is_compressed:
            try:
                raw = lz4block.decode(stored, h.block_bytes)
            except lz4block.LZ4Error:
                raise self.file._decode_error(index, 0, -1, h.block_bytes, False) from None
        elif len(stored) != h.block_bytes:
            raise self.file._decode_error(index, 0, len(stored), h.block_bytes, False)
        shape = (h.block_len, h.block_len, h.block_len, h.num_channels)
        arr = np.frombuffer(raw, dtype=h.dtype).reshape(shape).transpose(3, 2, 1, 0)
        return arr

    def read_chunks(self, indices: Sequence[int]) -> list[ChunkResult]:
        return list(self.file.read_blocks(indices))

    def will_need(self, indices: Sequence[int]) -> None:
        self.file.will_need(indices)

    def release_pages(self) -> None:
        self.file.release_pages()

    def describe(self) -> dict[str, Any]:
        h = self.file.header
        return {"magic": "WKW", "version": h.version, "block_len": h.block_len,
                "file_len": h.file_len, "block_type": BLOCK_TYPE_NAMES.get(h.block_type,
                                                                           h.block_type),
                "voxel_type": h.dtype.name, "num_channels": h.num_channels,
                "voxel_size": h.voxel_size, "data_offset": h.data_offset,
                "header_bytes": HEADER_SIZE,
                "jump_table_bytes": 8 * h.num_blocks if h.is_compressed else 0,
                "file_bytes": self.file.file_size}

    def problems(self, decode: bool = True) -> list[FormatError]:
        return self.file.validate(decode)

    def close(self) -> None:
        """Nothing: the dataset owns its open files (closed with it)."""


class WkwVolume(Volume):
    """A WKW dataset (see the module docstring).  ``bounds``: the extent when the caller knows
    it (a webKnossos layer's box at this mag), else the box of the files present."""

    format = "wkw"

    def __init__(self, dataset: Dataset, bounds: tuple[Vec3, Vec3] | None = None,
                 own_dataset: bool = True) -> None:
        self.dataset = dataset
        h = dataset.header
        self.header = h
        self.path = dataset.single_file or dataset.root
        self.dtype = h.dtype
        self.num_channels = h.num_channels
        self.chunk_shape = (h.block_len,) * 3
        self.unit_shape = (h.file_len,) * 3
        self._bounds = bounds
        self._lock = threading.Lock()
        self._own = own_dataset

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> WkwVolume:
        return cls(Dataset.open(path))

    # -- extent ---------------------------------------------------------------------------------
    @property
    def bounds(self) -> tuple[Vec3, Vec3]:
        with self._lock:
            if self._bounds is None:
                self._bounds = self._files_box()
            return self._bounds

    def _files_box(self) -> tuple[Vec3, Vec3]:
        side = self.header.file_len_vx
        cells = list(self.iter_units())
        if not cells:
            return (0, 0, 0), (0, 0, 0)
        grid = np.asarray(cells, dtype=np.int64)
        lo = grid.min(axis=0) * side
        hi = (grid.max(axis=0) + 1) * side
        return ((int(lo[0]), int(lo[1]), int(lo[2])), (int(hi[0]), int(hi[1]), int(hi[2])))

    @property
    def origin(self) -> Vec3:
        return self.bounds[0]

    @property
    def shape(self) -> Vec3:
        lo, hi = self.bounds
        return (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])

    # -- units ------------------------------------------------------------------------------------
    def unit_path(self, unit: Vec3) -> str:
        return self.dataset.file_path(*unit)

    def open_unit(self, unit: Vec3) -> WkwUnit | None:
        try:
            f = self.dataset.get_file(int(unit[0]), int(unit[1]), int(unit[2]))
        except OSError as exc:
            raise DatasetLayoutError(f"cannot open: {exc.strerror or exc}",
                                     self.dataset.file_path(*unit)) from None
        return None if f is None else WkwUnit(f)

    def done_with(self, unit: StorageUnit) -> None:
        """The dataset keeps its files open: nothing to do."""

    def iter_units(self) -> Iterator[Vec3]:
        """The file-grid positions of the data files, z, y, x folders in numeric order: one
        ``listdir`` per folder, positions read from the names (no path joined back apart)."""
        if self.dataset.single_file is not None:
            yield (0, 0, 0)
            return
        root = self.dataset.root
        for z, zname in _numbered(root, "z", ""):
            zdir = os.path.join(root, zname)
            for y, yname in _numbered(zdir, "y", ""):
                for x, _ in _numbered(os.path.join(zdir, yname), "x", ".wkw"):
                    yield (x, y, z)

    def forget_unit(self, unit: Vec3) -> None:
        """Drop a cached open file (after it failed, or was rewritten)."""
        self.dataset.forget_file(*unit)

    def chunk_index(self, local: IntArray) -> IntArray:
        return morton.encode(local[:, 0], local[:, 1], local[:, 2])

    def chunk_local(self, index: IntArray) -> IntArray:
        x, y, z = morton.decode(np.asarray(index, dtype=np.int64))
        return np.stack([x, y, z], axis=1)

    # -- reading ----------------------------------------------------------------------------------
    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        return self.dataset.read(offset, shape)

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        self.dataset.read_into(out, offset)

    # -- description ------------------------------------------------------------------------------
    def info(self) -> VolumeInfo:
        h = self.header
        return VolumeInfo("wkw", BLOCK_TYPE_NAMES.get(h.block_type, str(h.block_type)), {
            "header_file": os.path.join(self.dataset.root, HEADER_FILE)
            if self.dataset.single_file is None else self.dataset.single_file,
            "version": h.version, "block_len": h.block_len, "file_len": h.file_len,
            "block_type": BLOCK_TYPE_NAMES.get(h.block_type, h.block_type),
            "voxel_type": h.dtype.name, "num_channels": h.num_channels,
            "voxel_size": h.voxel_size})

    def close(self) -> None:
        if self._own:
            self.dataset.close()


def _numbered(path: str, prefix: str, suffix: str) -> list[tuple[int, str]]:
    """``(N, name)`` of the entries ``{prefix}{N}{suffix}`` of a folder, sorted by N."""
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    start, end = len(prefix), -len(suffix) if suffix else None
    found = []
    for name in names:
        if name.startswith(prefix) and name.endswith(suffix):
            digits = name[start:end]
            if digits.isdigit():
                found.append((int(digits), name))
    found.sort()
    return found


__all__ = ["WkwVolume", "WkwUnit"]
