"""The chunked-volume interface: how every format meets the rest of the program.

(Over 600 lines: it is the one declared interface, the ABCs of the volume and its storage
unit with their documented defaults, and the shared read machinery every format uses; kept
in one file so that what a format must supply is read in one place.)

A ``Volume`` is one chunked 3-D array at one mag: a plain WKW dataset, one mag of a webKnossos
layer, an N5 dataset, a zarr array, a zfpc file, one LOD of a VDS channel.  Above
``viewer.format`` nothing knows which format it reads: the loader, the block cache, the
inspector, compare and ``info`` see only this.

Geometry, in (X, Y, Z) with X the axis that varies fastest on disk in the format's own
convention (see ``viewer.format.axes``):

* the **chunk grid**: chunk ``(i, j, k)`` holds voxels ``[i*cx, (i+1)*cx) x ...`` where
  ``chunk_shape = (cx, cy, cz)``;
* **storage units**: the chunks live in storage units (a WKW file, a zarr shard, an N5 chunk
  file, a zfpc file), each holding a box of ``unit_shape`` chunks; unit ``u`` holds the chunks
  ``u * unit_shape + (0..unit_shape)``.  Inside a unit a chunk has an *index* in the unit's own
  order (WKW: Morton; zarr shard: C order of its inner grid; N5: always 0), given by
  ``chunk_index``.  A unit's ``ChunkTable`` says where each chunk's stored bytes are.

Reading stored bytes (``StorageUnit.read_stored``) stays apart from decoding them
(``StorageUnit.decode``), so a remote store can fetch many byte ranges at once and decode as
they come; ``read_chunks`` does both.  An absent chunk is ``None`` (it reads as
``fill_value``); a damaged one is its own ``FormatError``, never zeros.

Threads: every method of a ``Volume`` and of an open ``StorageUnit`` may be called from any
thread, concurrently (the loader's workers share them).  A volume's background work runs on
its ``executor`` (``viewer.format.executor``): the one in effect when it was made (its
opener's), else one of its own, made on first need and closed by ``close``.  Its reads
(``read``, ``read_into``, ``read_units``, as every format defines them) run with it in effect,
so the format's helpers find it (``Volume.__init_subclass__``).
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from viewer.format import batchread, bigmemory
from viewer.format import executor as _service
from viewer.format.batchread import ChunkResult, UnitRead
from viewer.format.description import UnitDescription
from viewer.format.errors import (
    BlockDecodeError,
    FormatError,
    UnsupportedFormatError,
    read_failure,
)
from viewer.format.store import is_url
from viewer.format.unitcheck import SoundUnits

#: The methods of a volume that run with its executor in effect (and open units that keep it).
_VOLUME_WORK = ("read", "read_into", "read_batch", "read_units", "open_unit", "open_and_read")
#: The methods of a unit that run with the executor it was opened with in effect.
_UNIT_WORK = ("read_chunks", "read_stored", "problems")

Vec3 = tuple[int, int, int]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
#: The stored bytes of a chunk, ``None`` (absent), or the error met reading them.
StoredResult = bytes | memoryview | FormatError | None


@dataclass(frozen=True)
class ChunkTable:
    """Where the chunks of one storage unit are stored, in the unit's chunk order.

    ``offsets[n]`` and ``nbytes[n]`` are chunk ``n``'s byte range in the unit; ``present[n]``
    is false for an absent chunk (its offset is -1 and nbytes 0).  ``constant[n]`` marks a
    chunk stored as one value and no bytes (VDS).  A WKW jump table, a zarr shard index, a
    zfpc stream index and a VDS index page are all one of these."""

    offsets: IntArray
    nbytes: IntArray
    present: BoolArray
    constant: BoolArray | None = None

    def __len__(self) -> int:
        return int(self.offsets.shape[0])

    @classmethod
    def single(cls, nbytes: int) -> ChunkTable:
        """The table of a unit that is one chunk of ``nbytes`` stored bytes (an N5 chunk
        file, a zarr v2 chunk)."""
        return cls(np.zeros(1, np.int64), np.asarray([nbytes], np.int64),
                   np.ones(1, np.bool_))


class StorageUnit(ABC):
    """One storage unit opened for reading: a file or an object (or a byte range of one)
    holding the stored bytes of ``num_chunks`` chunks and, usually, an index of them."""

    #: The executor in effect when the unit was opened (its volume's): its reads and checks
    #: share their work with that executor's helpers (``viewer.format.executor``).
    _executor: _service.Executor | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> StorageUnit:
        obj = super().__new__(cls)
        obj._executor = _service.current()
        return obj

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _UNIT_WORK:
            if name in cls.__dict__:
                type.__setattr__(cls, name, _unit_in_effect(cls.__dict__[name]))

    #: File path or URL of the unit.
    path: str
    #: Chunks the unit holds (``prod(volume.unit_shape)``).
    num_chunks: int
    #: Bytes of memory the unit keeps for its index (counted against the cache budget).
    table_bytes: int = 0

    @property
    @abstractmethod
    def size(self) -> int:
        """The unit's size in bytes (a file's length)."""

    @abstractmethod
    def chunk_table(self) -> ChunkTable:
        """Every chunk's byte range, in index order (parsed once, cheap to call again)."""

    @abstractmethod
    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        """The stored (encoded) bytes of each chunk asked for, in the order asked."""

    def read_range(self, offset: int, nbytes: int) -> bytes | memoryview | None:
        """The unit's bytes ``[offset, offset + nbytes)`` as stored: the stored bytes of a run
        of chunks that the chunk table places one after another, in one read (compare checks
        such runs of two units for equality at once).  ``None`` when the unit does not give
        raw ranges, or the range runs past its end: the caller then asks ``read_stored``
        chunk by chunk.  Default: None."""
        return None

    @abstractmethod
    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        """Chunk ``index`` decoded from its stored bytes: a ``(C, cx, cy, cz)`` Fortran-order
        array of the full chunk shape (an edge chunk padded with the fill value).  Raises the
        chunk's ``FormatError`` when the bytes do not decode."""

    def read_chunks(self, indices: Sequence[int]) -> list[ChunkResult]:
        """Decoded chunks in the order asked: an array, ``None`` for an absent chunk, or the
        chunk's ``FormatError`` (one damaged chunk does not hide the others)."""
        out: list[ChunkResult] = []
        for index, stored in zip(indices, self.read_stored(indices), strict=True):
            if stored is None or isinstance(stored, FormatError):
                out.append(stored)
                continue
            try:
                out.append(self.decode(int(index), stored))
            except FormatError as exc:
                out.append(exc)
        return out

    def will_need(self, indices: Sequence[int]) -> None:  # noqa: B027 - optional, not abstract
        """Hint that these chunks will be read soon (read-ahead).  Default: nothing."""

    @property
    def holds_pages(self) -> bool:
        """Whether the unit keeps pages of what it read (a mapped file) that
        ``release_pages`` gives back: the loader then calls it once a unit's blocks are in
        its cache.  Default: False (files read with ``pread`` hold none)."""
        return False

    def release_pages(self) -> None:  # noqa: B027 - optional, not abstract
        """Drop memory held for pages read so far (see ``holds_pages``).  Default: nothing."""

    def describe(self) -> UnitDescription:
        """The unit's own header, for the inspector's Header tab and ``info``
        (``viewer.format.description``).  Default: nothing said."""
        return UnitDescription()

    def describe_chunk(self, index: int) -> dict[str, Any]:
        """Format-specific facts about one stored chunk (an N5 chunk header, lz4-java frames,
        a zfp stream's mode), for the inspector.  Default: none."""
        return {}

    def problems(self, decode: bool = True) -> list[FormatError]:
        """Everything wrong with the unit; with ``decode`` every present chunk is decoded."""
        table = self.chunk_table()
        if not decode:
            return []
        found: list[FormatError] = []
        indices = np.flatnonzero(table.present).tolist()
        for start in range(0, len(indices), 64):
            for result in self.read_chunks(indices[start:start + 64]):
                if isinstance(result, FormatError):
                    found.append(result)
        return found

    def close(self) -> None:  # noqa: B027 - most units hold nothing to release
        """Release the unit's file descriptor or connection."""

    def __enter__(self) -> StorageUnit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path!r}>"


@dataclass(frozen=True)
class VolumeInfo:
    """What a volume is, for people: the format's name and header, shown by ``info`` and the
    inspector's Header tab.  ``header`` is field -> value in the format's own words."""

    format: str
    compression: str
    header: dict[str, Any] = field(default_factory=dict)


class Volume(ABC):
    """One chunked 3-D array (see the module docstring).  Thread-safe."""

    #: The format's name as ``info`` prints it: "wkw", "n5", "zarr", "zarr3", "zfpc", "vds".
    format: ClassVar[str] = ""

    #: File path or URL the volume was opened from.
    path: str
    #: numpy dtype of one channel.
    dtype: np.dtype[Any]
    num_channels: int = 1
    chunk_shape: Vec3
    #: Chunks per storage unit along x, y, z.
    unit_shape: Vec3 = (1, 1, 1)
    fill_value: int | float = 0
    #: Axis names and units along x, y, z as the format declares them (labels for the views).
    axis_names: tuple[str, str, str] = ("x", "y", "z")
    axis_units: tuple[str, str, str] | None = None
    #: Declared value range ``(lo, hi)`` (sets the initial contrast), when the format has one.
    value_range: tuple[float, float] | None = None
    #: The storage units are small (a chunk or so each), so that keeping them open does not
    #: pay: ``read_batch`` reads their chunks with ``read_units``, each unit opened only for
    #: the read, many units per call (and ``info --quick`` checks them in batches).
    small_units: bool = False

    _executor: _service.Executor | None = None
    _owns_executor: bool = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Volume:
        obj = super().__new__(cls)
        obj._executor = _service.current()
        return obj

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A format's reads run with the volume's executor in effect, and its ``close``
        closes the executor the volume owns, whether or not the format calls the base."""
        super().__init_subclass__(**kwargs)
        wrapped = {name: _in_effect(cls.__dict__[name])
                   for name in _VOLUME_WORK if name in cls.__dict__}
        if "close" in cls.__dict__:
            wrapped["close"] = _closing(cls.__dict__["close"])
        for name, method in wrapped.items():
            type.__setattr__(cls, name, method)

    @property
    def executor(self) -> _service.Executor:
        """The executor its background work runs on (see the module docstring)."""
        found = self._executor
        if found is None or found.closed:
            made = _service.Executor()
            self._executor, self._owns_executor = made, True
            return made
        return found

    def own_executor(self, executor: _service.Executor) -> None:
        """Run on ``executor`` from now on and close it with the volume (``open_volume``
        hands the volume the executor it made for it)."""
        self._executor, self._owns_executor = executor, True

    def _close_executor(self) -> None:
        found, owned = self._executor, self._owns_executor
        if owned and found is not None:
            self._owns_executor = False
            found.close()

    @property
    def over_network(self) -> bool:
        """Whether every read waits on a network (a volume at a URL): the thread's disk
        counters do not see it, so read-ahead always pays.  Default: its path is a URL."""
        return is_url(str(self.path))

    # -- extent ---------------------------------------------------------------------------------
    @property
    @abstractmethod
    def shape(self) -> Vec3:
        """The extent in voxels from ``origin`` (for a sparse WKW dataset: the box of the
        files present, which may cost a listing the first time)."""

    @property
    def origin(self) -> Vec3:
        """The first voxel of the extent (voxels before it are outside the data)."""
        return (0, 0, 0)

    @property
    def bounds(self) -> tuple[Vec3, Vec3]:
        """``(lo, hi)`` of the extent, ``hi`` exclusive."""
        lo, size = self.origin, self.shape
        return lo, (lo[0] + size[0], lo[1] + size[1], lo[2] + size[2])

    @property
    def extent_declared(self) -> bool:
        """Whether the extent comes from metadata (an array's shape, a layer's bounding box),
        so that ``shape`` costs nothing; False when it is the box of the storage units
        present, found by a listing (a plain WKW dataset): a window then grows it from a
        scan.  Default: True."""
        return True

    def set_extent(self, bounds: tuple[Vec3, Vec3]) -> None:
        """Take ``bounds`` (``(lo, hi)``, ``hi`` exclusive) as the extent instead of the
        array's own: a webKnossos layer's bounding box at this mag is the layer's data,
        whatever size its array was allocated at (1024^3 and more).  Called once by the
        opener, before the volume is shared.  Default: ``UnsupportedFormatError`` (a
        format whose arrays are never a webKnossos layer's mag)."""
        raise UnsupportedFormatError(
            f"a {self.format or type(self).__name__} array cannot take another extent", self.path)

    @property
    def unit_len_vx(self) -> Vec3:
        """Voxels per storage unit along x, y, z."""
        c, u = self.chunk_shape, self.unit_shape
        return (c[0] * u[0], c[1] * u[1], c[2] * u[2])

    @property
    def chunk_nbytes(self) -> int:
        """Bytes of one decoded chunk (all channels)."""
        c = self.chunk_shape
        return c[0] * c[1] * c[2] * self.num_channels * self.dtype.itemsize

    # -- storage units ----------------------------------------------------------------------------
    @abstractmethod
    def unit_path(self, unit: Vec3) -> str:
        """Path or URL of the storage unit at unit-grid position ``unit`` (present or not)."""

    @abstractmethod
    def open_unit(self, unit: Vec3) -> StorageUnit | None:
        """The unit at ``unit`` opened, or ``None`` when it is absent (sparse data).  Raises a
        ``FormatError`` when it is there but unreadable (its header or index damaged)."""

    def open_and_read(self, unit: Vec3, indices: Sequence[int]
                      ) -> tuple[StorageUnit | None, list[ChunkResult]]:
        """Open the unit at ``unit`` and read its chunks ``indices``: ``(the open unit, its
        chunks as read_chunks returns them)``, or ``(None, [])`` when the unit is absent.
        Raises what ``open_unit`` raises, and what ``read_chunks`` raises for the unit as a
        whole.  The loader opens every unit it reads from here (it keeps the unit for later
        reads).  Default: ``open_unit`` then ``read_chunks``; a format whose units are small
        (a chunk per file: N5, Zarr v2, WKW of one block per file) overrides it to read the
        unit's index and its chunks with one request."""
        opened = self.open_unit(unit)
        if opened is None:
            return None, []
        return opened, opened.read_chunks(indices)

    def read_batch(self, jobs: Sequence[tuple[Vec3, Sequence[int]]],
                   units: batchread.UnitTable[StorageUnit], hint: bool = False
                   ) -> list[UnitRead] | None:
        """The chunks of a batch of storage units for a reader that keeps a table of the units
        it opened (``units``: the loader's), the one way the loader reads
        (``viewer.format.batchread``): per job ``(unit, chunk indices)``, in order, what
        ``read_units`` gives of it; None when the reader stopped under the batch (a unit
        closed as ``units`` closes).  What opening a unit found is remembered in ``units``.
        ``hint``: ask a unit for its chunks (``will_need``) before reading them.  Default: a
        volume of ``small_units`` reads the units ``units`` does not know with one
        ``read_units`` call and keeps none (``batchread.read_unkept``); any other opens each
        unit once and keeps it in ``units`` (``batchread.read_kept``)."""
        if self.small_units:
            return batchread.read_unkept(self, jobs, units, hint)
        return batchread.read_kept(self, jobs, units, hint)

    def read_units(self, jobs: Sequence[tuple[Vec3, Sequence[int]]]) -> list[UnitRead]:
        """Chunks of several storage units, each unit opened only for the read (see
        ``small_units``): per job ``(unit, chunk indices)``, in order, the chunks as
        ``read_chunks`` returns them, ``None`` when the unit is absent, or the unit's
        ``FormatError`` when it is unreadable (its header or index damaged).  A failure to
        read a chunk is that chunk's error.  Default: ``open_unit``, ``read_chunks`` and
        ``done_with`` per unit; a format whose units are one small file each overrides it
        with a plain path per file (WKW: ``File.read_whole``; N5 and unsharded Zarr on a
        local disk: ``chunkfiles.read_chunk_files``)."""
        out: list[UnitRead] = []
        for pos, indices in jobs:
            unit = batchread.open_state(self, pos)
            if unit is None or isinstance(unit, FormatError):
                out.append(unit)
                continue
            try:
                out.append(list(unit.read_chunks(indices)))
            except FormatError as exc:
                out.append([exc] * len(indices))
            except OSError as exc:
                out.append([read_failure(exc, BlockDecodeError, "read failed", unit.path,
                                         block=int(i)) for i in indices])
            finally:
                self.done_with(unit)
        return out

    def sound_units(self, positions: Sequence[Vec3]) -> SoundUnits:
        """Which of the units at ``positions`` a batched structure check proves sound, with
        their chunk tables as arrays (``SoundUnits``: what the one-by-one way, ``open_unit``,
        ``chunk_table``, ``problems(decode=False)``, ``describe``, would find, at a fraction of
        its cost for small units).  A unit left out is checked one by one.  Default: none
        (every unit one by one)."""
        return SoundUnits.none(int(np.prod(self.unit_shape)))

    @abstractmethod
    def iter_units(self) -> Iterator[Vec3]:
        """Unit-grid positions of the units present (a listing: may take a while)."""

    def listing_parts(self) -> Sequence[Hashable]:
        """The listing of ``iter_units`` cut into parts that can be listed apart (folders of
        the store), in listing order: ``iter_units_in(part)`` lists one, and the parts'
        listings one after the other are ``iter_units``.  Lets worker processes list a volume
        of many small units instead of the process that hands them work.  Each part is a small
        picklable value.  Default: one part (None), the whole listing."""
        return (None,)

    def iter_units_in(self, part: Hashable) -> Iterator[Vec3]:
        """Unit-grid positions of the units present in ``part`` (one of ``listing_parts``),
        in listing order.  Default: ``iter_units`` (the one part None)."""
        return self.iter_units()

    def note_listed_box(self, lo: Sequence[int], hi: Sequence[int]) -> None:
        """A complete listing, made elsewhere (worker processes, through ``iter_units_in``),
        found units from unit-grid position ``lo`` to ``hi`` (inclusive): a volume whose
        extent is the box of its units present takes it instead of listing again.  Default:
        nothing (the extent is not the units')."""
        return None

    @property
    def lists_units(self) -> bool:
        """Whether ``iter_units`` finds every unit present (a folder listing, a file's own
        index).  False where its store cannot list (plain HTTP): a unit missing from
        ``iter_units`` is then not proven absent, and whatever must account for every chunk
        (a verdict, a comparison) walks ``grid_units`` and opens each position instead (an
        absent unit is proven so by its own answer: a 404).  Default: True."""
        return True

    def grid_units(self) -> Iterator[Vec3]:
        """Every position of the unit grid over the extent, x fastest (present or not)."""
        side = self.unit_len_vx
        lo, hi = self.bounds
        first = [lo[i] // side[i] for i in range(3)]
        last = [-(-hi[i] // side[i]) for i in range(3)]
        for z in range(first[2], last[2]):
            for y in range(first[1], last[1]):
                for x in range(first[0], last[0]):
                    yield (x, y, z)

    def units_to_check(self) -> Iterator[Vec3]:
        """The units a check that must account for every chunk visits: ``iter_units`` where
        it lists every unit present, else ``grid_units`` (see ``lists_units``)."""
        return self.iter_units() if self.lists_units else self.grid_units()

    def chunk_index(self, local: IntArray) -> IntArray:
        """Index inside its unit of each chunk at unit-local chunk coordinates ``local``
        (``(N, 3)``).  Default: x fastest."""
        u = self.unit_shape
        return local[:, 0] + u[0] * (local[:, 1] + u[1] * local[:, 2])

    def chunk_local(self, index: IntArray) -> IntArray:
        """The inverse of ``chunk_index``: unit-local chunk coordinates ``(N, 3)``."""
        u = self.unit_shape
        idx = np.asarray(index, dtype=np.int64)
        x = idx % u[0]
        y = (idx // u[0]) % u[1]
        z = idx // (u[0] * u[1])
        return np.stack([x, y, z], axis=1)

    def locate(self, chunks: IntArray) -> tuple[IntArray, IntArray]:
        """``(units, indices)`` of global chunk coordinates ``chunks`` (``(N, 3)``)."""
        u = np.asarray(self.unit_shape, dtype=np.int64)
        units = chunks // u
        return units, self.chunk_index(chunks - units * u)

    # -- reading ----------------------------------------------------------------------------------
    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        """The box ``[offset, offset + shape)`` as a ``(C, X, Y, Z)`` Fortran-order array, like
        ``wkw.Dataset.read``: absent chunks and voxels outside the data read as
        ``fill_value``; a damaged chunk raises its ``FormatError``."""
        off = _vec3(offset, "offset")
        size = _vec3(shape, "shape")
        out = bigmemory.empty((self.num_channels, *size), self.dtype)
        out[...] = self.fill_value
        if min(size) > 0:
            self.read_into(out, off)
        return out

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """Read the box at ``offset`` the size of ``out`` (``(C, X, Y, Z)``) into it, chunk by
        chunk.  Absent chunks leave their part untouched.

        A read of at least ``PARALLEL_CHUNKS`` chunks is shared by the calling thread and
        ``read_threads() - 1`` helpers: each takes the next storage unit (or the next
        ``JOB_CHUNKS`` chunks of a large one), decodes its chunks and copies them straight
        into ``out`` (decoding and numpy's copy release the GIL, so every core decodes).  The
        caller never waits for a helper to start, only for the job a helper is in the middle
        of.  A damaged chunk raises the same ``FormatError`` as a serial read would: the first
        in unit order."""
        off = _vec3(offset, "offset")
        size = out.shape[1:]
        c = np.asarray(self.chunk_shape, dtype=np.int64)
        lo = np.maximum(np.asarray(off, dtype=np.int64), 0)
        hi = np.asarray(off, dtype=np.int64) + np.asarray(size, dtype=np.int64)
        if (hi <= lo).any():
            return
        grid = chunk_grid(lo, hi, c)
        units, indices = self.locate(grid)
        by_unit: dict[Vec3, list[int]] = {}
        for row, u in enumerate(map(tuple, units.tolist())):
            by_unit.setdefault(u, []).append(row)
        jobs: list[tuple[Vec3, list[int]]] = []
        for u, rows in by_unit.items():
            for start in range(0, len(rows), JOB_CHUNKS):
                jobs.append((u, rows[start:start + JOB_CHUNKS]))
        corner = grid * c  # each chunk's first voxel
        s_lo = np.maximum(corner, np.asarray(off, dtype=np.int64))
        s_hi = np.minimum(corner + c, hi)
        src_lo, src_hi = (s_lo - corner).tolist(), (s_hi - corner).tolist()
        dst_lo, dst_hi = (s_lo - off).tolist(), (s_hi - off).tolist()
        index_list = indices.tolist()

        def job(u: Vec3, rows: list[int]) -> None:
            unit = self.open_unit(u)
            if unit is None:
                return
            try:
                results = unit.read_chunks([index_list[r] for r in rows])
            finally:
                self.done_with(unit)
            for row, result in zip(rows, results, strict=True):
                if result is None:
                    continue
                if isinstance(result, FormatError):
                    raise result
                a, b, d, e = src_lo[row], src_hi[row], dst_lo[row], dst_hi[row]
                out[:, d[0]:e[0], d[1]:e[1], d[2]:e[2]] = \
                    result[:, a[0]:b[0], a[1]:b[1], a[2]:b[2]]

        _run_jobs(job, jobs, parallel=len(grid) >= PARALLEL_CHUNKS)

    def done_with(self, unit: StorageUnit) -> None:
        """Called by ``read_into`` after it read from ``unit``: a volume that does not keep
        units open closes it here.  Default: close."""
        unit.close()

    # -- description ------------------------------------------------------------------------------
    @abstractmethod
    def info(self) -> VolumeInfo:
        """The format's name, compression and header fields."""

    def problems(self) -> list[FormatError]:
        """What is wrong with the volume's metadata (not its chunks).  Default: nothing."""
        return []

    def channel_groups(self) -> list[tuple[tuple[int, int], Volume]]:
        """The volume's channels as runs that are read together (``[first, end)`` and the
        volume that reads just those): one run of all channels, unless the format stores them
        in chunks of their own (``viewer.format.channels``), so that a reader showing a few
        channels reads only theirs.  Default: ``[((0, num_channels), self)]``."""
        return [((0, self.num_channels), self)]

    # -- extra axes (time, ...) -----------------------------------------------------------------
    @property
    def extra_axes(self) -> dict[str, int]:
        """The array's non-spatial axes other than channels that are longer than 1 (OME
        ``time`` and ``custom`` axes, a zarr ``t``): name -> length.  The volume shows one
        element of each (``extra_index``).  Default: none."""
        return {}

    @property
    def extra_index(self) -> dict[str, int]:
        """The element shown of each extra axis (name -> index; 0 unless ``at_index`` chose
        another)."""
        return {name: 0 for name in self.extra_axes}

    def at_index(self, index: Mapping[str, int]) -> Volume:
        """The same array at another element of its extra axes (``{"t": 3}``; an axis not
        named keeps element 0): a volume of its own, sharing the store.  ``KeyError`` for an
        axis the array does not have, ``IndexError`` for an element past its length.
        Default: ``self`` (no extra axes; an empty or all-zero index is accepted)."""
        check_index(self.extra_axes, index, self.path)
        return self

    # -- hooks the loader calls (optional: the defaults do nothing) --------------------------------
    def forget_unit(self, unit: Vec3) -> None:  # noqa: B027 - most volumes keep nothing
        """Forget what is kept of the unit at grid position ``unit`` (another program
        rewrote it): the next read opens it afresh."""

    def drop_read_ahead(self, keep: Iterable[Sequence[int]] = ()) -> None:  # noqa: B027
        """The cursor moved on: stop the read-ahead of this volume's units except ``keep``
        (a volume whose store fetches ahead; the others have nothing to stop)."""

    def close(self) -> None:
        """Release open files (and the executor the volume owns)."""
        self._close_executor()

    def __enter__(self) -> Volume:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.path!r} {self.dtype.name} x{self.num_channels} "
                f"chunks {self.chunk_shape}>")


#: A read of at least this many chunks is decoded by several threads (``read_into``).
PARALLEL_CHUNKS = 16
#: Chunks of one storage unit a thread takes at a time in a parallel read.
JOB_CHUNKS = 64

_in_pool = threading.local()


def read_threads() -> int:
    """Threads a large read decodes on: the caller and the helpers of the executor in effect
    (one per core up to ``viewer.format.executor.MAX_HELPERS``)."""
    return max(1, min(_service.MAX_HELPERS, _service.cores()))


def _in_effect(method: Any) -> Any:
    @functools.wraps(method)
    def run(self: Volume, *args: Any, **kwargs: Any) -> Any:
        with _service.using(self.executor):
            return method(self, *args, **kwargs)
    return run


def _unit_in_effect(method: Any) -> Any:
    @functools.wraps(method)
    def run(self: StorageUnit, *args: Any, **kwargs: Any) -> Any:
        found = self._executor
        if found is None or found.closed or _service.current() is not None:
            return method(self, *args, **kwargs)
        with _service.using(found):
            return method(self, *args, **kwargs)
    return run


def _closing(method: Any) -> Any:
    @functools.wraps(method)
    def close(self: Volume) -> None:
        try:
            method(self)
        finally:
            self._close_executor()
    return close


def _run_jobs(job: Any, jobs: list[Any], parallel: bool = True) -> None:
    """Run ``job(*args)`` for every ``args`` in ``jobs``: on the calling thread alone, or
    (``parallel``, more than one job, more than one core, not already on a helper) on the
    calling thread and the helpers, each taking the next job.  The first job's exception (in
    ``jobs`` order) is raised once no job runs any more."""
    service = _service.current()
    if not parallel or len(jobs) < 2 or service is None or service.closed \
            or getattr(_in_pool, "helper", False):
        for args in jobs:
            job(*args)
        return
    try:
        pool, helpers = service.helpers()
    except RuntimeError:  # closed meanwhile
        pool, helpers = None, 0
    helpers = min(helpers, read_threads() - 1)
    if pool is None or helpers < 1:
        for args in jobs:
            job(*args)
        return
    taken = itertools.count()
    errors: dict[int, BaseException] = {}
    stop = threading.Event()

    def take() -> None:
        while not stop.is_set():
            k = next(taken)
            if k >= len(jobs):
                return
            try:
                job(*jobs[k])
            except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread
                errors[k] = exc
                stop.set()

    def help_out() -> None:
        _in_pool.helper = True
        try:
            take()
        finally:
            _in_pool.helper = False

    futures = [pool.submit(help_out) for _ in range(min(helpers, len(jobs) - 1))]
    try:
        take()
    finally:
        stop.set()  # on an error (or an interrupt) the helpers stop at their next job
        for fut in futures:
            if not fut.cancel():
                fut.exception()  # never return while a helper still writes into out
    if errors:
        raise errors[min(errors)]


for _name in _VOLUME_WORK:
    setattr(Volume, _name, _in_effect(Volume.__dict__[_name]))
for _name in _UNIT_WORK:
    setattr(StorageUnit, _name, _unit_in_effect(StorageUnit.__dict__[_name]))


class UnitCache:
    """Open storage units of one volume kept for reuse, at most ``limit`` (least recently used
    closed first).  Formats whose units are cheap to keep open use it in ``open_unit``."""

    def __init__(self, limit: int = 128) -> None:
        self.limit = limit
        self._units: dict[Vec3, StorageUnit | None] = {}
        self._lock = threading.Lock()

    def get(self, key: Vec3) -> tuple[bool, StorageUnit | None]:
        with self._lock:
            if key in self._units:
                unit = self._units.pop(key)
                self._units[key] = unit
                return True, unit
        return False, None

    def put(self, key: Vec3, unit: StorageUnit | None) -> None:
        old: list[StorageUnit] = []
        with self._lock:
            self._units[key] = unit
            while len(self._units) > self.limit:
                first = next(iter(self._units))
                gone = self._units.pop(first)
                if gone is not None:
                    old.append(gone)
        for u in old:
            u.close()

    def clear(self) -> None:
        with self._lock:
            units, self._units = list(self._units.values()), {}
        for u in units:
            if u is not None:
                u.close()


def chunk_grid(lo: IntArray, hi: IntArray, chunk_shape: IntArray) -> IntArray:
    """Grid positions ``(N, 3)`` of the chunks that meet the voxel box ``[lo, hi)`` (non-empty),
    x fastest."""
    first, last = lo // chunk_shape, (hi - 1) // chunk_shape
    return np.stack(np.meshgrid(*(np.arange(a, b + 1) for a, b in zip(first, last, strict=True)),
                                indexing="ij"), axis=-1).reshape(-1, 3)


def units_box(units: Sequence[Sequence[int]], unit_len_vx: Sequence[int]
              ) -> tuple[Vec3, Vec3]:
    """``(lo, hi)`` voxels of the box the storage units at ``units`` span (an empty box at
    the origin when there is none): the extent of a volume that does not declare one."""
    if not len(units):
        return (0, 0, 0), (0, 0, 0)
    grid = np.asarray(units, dtype=np.int64)
    side = np.asarray(unit_len_vx, dtype=np.int64)
    lo = grid.min(axis=0) * side
    hi = (grid.max(axis=0) + 1) * side
    return ((int(lo[0]), int(lo[1]), int(lo[2])), (int(hi[0]), int(hi[1]), int(hi[2])))


def check_index(axes: Mapping[str, int], index: Mapping[str, int] | None,
                where: str) -> dict[str, int]:
    """``index`` checked against extra ``axes`` (name -> length), completed with 0 for every
    axis not named.  An index of 0 on an axis the array lacks is accepted (one time point is
    time point 0); any other unknown axis is a ``KeyError``, an element past the axis's end an
    ``IndexError``."""
    out = {name: 0 for name in axes}
    for name, value in (index or {}).items():
        v = int(value)
        if name not in axes:
            if v == 0:
                continue
            known = ", ".join(f"{k} ({n})" for k, n in axes.items()) or "none"
            raise KeyError(f"{where}: no extra axis {name!r} (extra axes: {known})")
        if not 0 <= v < axes[name]:
            raise IndexError(f"{where}: index {v} of axis {name!r} is outside 0..{axes[name] - 1}")
        out[name] = v
    return out


def _vec3(value: Sequence[int], what: str) -> Vec3:
    v = tuple(int(x) for x in value)
    if len(v) != 3:
        raise ValueError(f"{what} must have 3 components (x, y, z), not {value!r}")
    return (v[0], v[1], v[2])


def fspath(path: str | os.PathLike[str]) -> str:
    """A path or URL as a string (URLs pass through unchanged)."""
    return os.fspath(path)


__all__ = ["Volume", "StorageUnit", "ChunkTable", "VolumeInfo", "UnitCache", "ChunkResult",
           "StoredResult", "UnitRead", "Vec3", "SoundUnits", "check_index"]
