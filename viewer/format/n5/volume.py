"""An N5 dataset as a ``Volume``: a folder with ``attributes.json`` and one file per chunk.

(Over 600 lines: the chunk header, the whole-chunk decode and the batched small-unit reads share
the dataset's layout and its checks; the seam to split along is ``read_units`` with its native
batch, which could join ``nativeread``.)

The storage unit is the chunk file: ``unit_shape`` is (1, 1, 1), a unit holds one chunk
(index 0), its ``ChunkTable`` is the file's size, and the unit at grid position ``(i, j, k)``
is the file ``i/j/k`` under the dataset (with ``/0`` appended for each N5 axis past Z: axes
of size 1, or the channel axis held in one block).

A channel axis split over blocks (BigDataViewer's and z5py's ``blockSize`` of 1 along ``c``)
opens as a ``ChannelStack`` (``make_volume``) of one ``N5Volume`` per block of channels: the
volume of channels ``[c0, c1)`` reads the files ``i/j/k/(c0 // blockSize[c])``.  A volume whose
first channel is not a block's first (``channels`` given by hand) is read on the Python path:
the native kernel places a block's channels from the block's start.

A missing file is an absent chunk: N5 datasets are sparse, and it reads as zeros.

A local dataset has ``small_units``: the loader reads its chunks with ``read_units``, each
chunk file read once with no ``stat`` before and decoded, no unit kept (the shared
``chunkfiles.read_chunk_files``, which unsharded Zarr uses too).  Over a network
(``RemoteStore``) the units are opened and kept as any format's are, so that their
read-ahead (``will_need``) is asked for before they are read.

Edge chunks are stored truncated (Java's N5 writes the part inside the dataset) or padded
(tensorstore writes the full ``blockSize``); both are read, and a header whose block size is
neither is a ``HeaderError`` of that chunk.

``read`` reads and decodes the chunks it needs on a small thread pool (zlib, bz2, lzma, lz4
and blosc release the GIL), copying each straight into the result with the byte swap from
big-endian done by that copy.  Where the native chunk kernel takes the compression (gzip,
raw), a group of chunks is decoded and copied in one call instead (``nativeread``), and the
loader's ``read_units`` decodes its batch in one call too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from viewer.format.channels import ChannelStack
from viewer.format.chunkfiles import read_chunk_files
from viewer.format.description import described
from viewer.format.errors import (
    ChunkDecodeError,
    FileChangedError,
    FormatError,
    HeaderError,
    MetadataError,
    UnsupportedFormatError,
    read_failure,
)
from viewer.format.n5 import codecs, header, lz4java, nativeread
from viewer.format.n5.attributes import (
    ATTRIBUTES_FILE,
    DatasetAttributes,
    parse_dataset,
    read_json,
)
from viewer.format.n5.header import ChunkHeader
from viewer.format.pool import decode_pool
from viewer.format.store import LocalStore, Store, open_store
from viewer.format.volume import (
    ChunkTable,
    StorageUnit,
    StoredResult,
    UnitRead,
    Volume,
    VolumeInfo,
)

Vec3 = tuple[int, int, int]

#: Largest header a chunk may have (read first by the inspector).
MAX_HEADER_BYTES = 4 + 4 * header.MAX_NDIM + 4
def _executor() -> ThreadPoolExecutor | None:
    """The read helpers of the executor in effect (``viewer.format.pool``), or None."""
    return decode_pool()


class N5Chunk(StorageUnit):
    """One chunk file of an N5 dataset as a storage unit (one chunk, index 0)."""

    num_chunks = 1

    def __init__(self, volume: N5Volume, unit: Vec3, size: int) -> None:
        self.volume = volume
        self.unit = unit
        self.key = volume.chunk_key(unit)
        self.path = volume.store.location(self.key)
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
                out.append(FormatError(f"an N5 chunk file holds chunk 0 only, not {index}",
                                       self.path, chunk=self.unit))
                continue
            out.append(self.volume.read_chunk_bytes(self.unit))
        return out

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        return self.volume.decode_chunk(self.unit, stored)

    def will_need(self, indices: Sequence[int]) -> None:
        """Read-ahead over a network (a store that prefetches: ``RemoteStore``): the chunk
        file is asked for now; a local store does nothing."""
        store = self.volume.store
        if store.supports_prefetch and self._size > 0 and 0 in [int(i) for i in indices]:
            store.prefetch(self.key, [(0, self._size)])

    @described
    def describe(self) -> dict[str, Any]:
        try:
            head = self.volume.store.read(self.key, 0, MAX_HEADER_BYTES)
        except OSError as exc:
            return {"file_bytes": self._size, "problem": f"cannot read: {exc}"}
        out: dict[str, Any] = {"file_bytes": self._size}
        try:
            h = header.parse(head, self.path, self.unit)
        except FormatError as exc:
            out["problem"] = exc.reason
            return out
        out.update(self.volume.header_facts(self.unit, h))
        out["payload_bytes"] = self._size - h.size
        return out

    def describe_chunk(self, index: int) -> dict[str, Any]:
        return self.volume.describe_chunk(self.unit)


class N5Volume(Volume):
    """An N5 dataset (see the module docstring).  ``store``: where its files are; ``key``:
    the dataset's folder in the store (``""``: the store's root); ``channels``: the run
    ``[c0, c1)`` of channels this volume shows, inside one block (default: all, which must
    then be in one block)."""

    format = "n5"

    def __init__(self, store: Store, key: str, attrs: DatasetAttributes,
                 problems: Sequence[FormatError] = (),
                 channels: tuple[int, int] | None = None) -> None:
        self.store = store
        self.key = key.strip("/")
        self.path = store.location(self.key)
        self.attrs = attrs
        self.dtype = attrs.dtype
        ca = attrs.channel_axis
        c0, c1 = channels if channels is not None else (0, attrs.num_channels)
        step = attrs.block_size[ca] if ca is not None else 1
        if ca is not None and not (0 <= c0 < c1 <= attrs.num_channels
                                   and c0 // step == (c1 - 1) // step):
            raise UnsupportedFormatError(
                f"channels {c0}..{c1 - 1} of {attrs.num_channels} are not in one block of "
                f"{step} channels (make_volume stacks the blocks)",
                store.location(f"{self.key}/{ATTRIBUTES_FILE}" if self.key else ATTRIBUTES_FILE))
        self.num_channels = c1 - c0 if ca is not None else 1
        #: The block along the channel axis this volume reads, and its first channel there.
        self._channel_block = c0 // step if ca is not None else 0
        self.channel_offset = c0 % step if ca is not None else 0
        self.chunk_shape = attrs.chunk_shape
        self._stored_dtype = attrs.stored_dtype
        self._problems = list(problems)
        self._extent: tuple[Vec3, Vec3] | None = None
        self._grid = np.asarray(attrs.grid_shape, dtype=np.int64)
        # N5 axis for each of x, y, z (None: a 2-D dataset has no Z axis).
        self._spatial: list[int | None] = [0, 1, 2 if attrs.ndim >= 3 else None]
        self._ndim = attrs.ndim
        self._grid_list = [int(g) for g in attrs.grid_shape]
        self._block_list = [int(b) for b in attrs.block_size]
        self._dims_list = [int(d) for d in attrs.dimensions]
        #: The dataset's folder with a separator after it: a chunk file's path is this and
        #: its grid position joined with the separator (a local store).
        self._chunk_folder = os.path.join(self.path, "")
        #: One chunk per file: on a local disk not worth keeping open (``read_units``).
        self.small_units = isinstance(store, LocalStore)
        names = attrs.raw.get("axes")
        if isinstance(names, list) and len(names) == attrs.ndim and \
                all(isinstance(a, str) for a in names):
            self.axis_names = (str(names[0]), str(names[1]),
                               str(names[2]) if attrs.ndim >= 3 else "z")

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> N5Volume:
        """The N5 dataset in folder ``path``."""
        store = open_store(path)
        attrs = read_json(store, ATTRIBUTES_FILE)
        if attrs is None:
            raise MetadataError(f"no {ATTRIBUTES_FILE}: not an N5 dataset",
                                store.location(ATTRIBUTES_FILE))
        return cls(store, "", parse_dataset(attrs, store.location(ATTRIBUTES_FILE)))

    # -- extent ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Vec3:
        if self._extent is not None:
            lo, hi = self._extent
            return (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])
        return self.attrs.shape

    @property
    def origin(self) -> Vec3:
        return self._extent[0] if self._extent is not None else (0, 0, 0)

    def set_extent(self, bounds: tuple[Vec3, Vec3]) -> None:
        """A webKnossos layer's box at this mag replaces the dataset's dimensions (see
        ``Volume``)."""
        (lx, ly, lz), (hx, hy, hz) = bounds
        lo = (int(lx), int(ly), int(lz))
        self._extent = (lo, (max(lo[0], int(hx)), max(lo[1], int(hy)), max(lo[2], int(hz))))

    # -- chunk grid ------------------------------------------------------------------------------
    def grid_position(self, unit: Sequence[int]) -> tuple[int, ...]:
        """The N5 grid position (all axes) of the chunk at (x, y, z) grid position ``unit``."""
        ndim = self._ndim
        if ndim == 3:
            return (int(unit[0]), int(unit[1]), int(unit[2]))
        pos = [int(unit[0]), int(unit[1])]
        if ndim >= 3:
            pos.append(int(unit[2]))
        pos.extend([0] * (ndim - len(pos)))
        if self.attrs.channel_axis is not None:
            pos[self.attrs.channel_axis] = self._channel_block
        return tuple(pos)

    def chunk_key(self, unit: Sequence[int]) -> str:
        rel = "/".join(map(str, self.grid_position(unit)))
        return f"{self.key}/{rel}" if self.key else rel

    def in_grid(self, unit: Sequence[int]) -> bool:
        g = self._grid_list
        if self._ndim == 2:
            return int(unit[2]) == 0 and 0 <= int(unit[0]) < g[0] and 0 <= int(unit[1]) < g[1]
        return 0 <= int(unit[0]) < g[0] and 0 <= int(unit[1]) < g[1] and \
            0 <= int(unit[2]) < g[2]

    def chunk_folder(self) -> str:
        """The local folder of the chunk files with a separator after it: a chunk file's
        path is this and its grid position joined with the separator (a local store)."""
        return self._chunk_folder

    def unit_path(self, unit: Vec3) -> str:
        return self.store.location(self.chunk_key(unit))

    def open_unit(self, unit: Vec3) -> N5Chunk | None:
        if not self.in_grid(unit):
            return None
        key = self.chunk_key(unit)
        try:
            size = self.store.size(key)
        except OSError as exc:
            raise read_failure(exc, ChunkDecodeError, "cannot read", self.store.location(key),
                               chunk=self.grid_position(unit)) from None
        return None if size is None else N5Chunk(self, (int(unit[0]), int(unit[1]),
                                                        int(unit[2])), size)

    def read_units(self, jobs: Sequence[tuple[Vec3, Sequence[int]]]) -> list[UnitRead]:
        """Chunks of several chunk files, each file read once and closed, none kept open
        (``small_units``: ``chunkfiles.read_chunk_files``): per job the chunk (index 0)
        decoded, ``None`` for a file that is absent (or outside the grid), the chunk's error
        otherwise, as ``read_chunks`` gives them.  Where the native kernel reads files, it
        reads, checks and decodes the files of the usual jobs (chunk 0 alone) first, in one
        call; the files it leaves go the ordinary way.  Over a network: the default (units
        opened, read and let go)."""
        if not isinstance(self.store, LocalStore):
            return super().read_units(jobs)
        in_grid = self.in_grid
        whole = [k for k, (pos, indices) in enumerate(jobs)
                 if len(indices) == 1 and indices[0] == 0 and in_grid(pos)] \
            if nativeread.usable(self, None) and nativeread.reads_files() else []
        if not whole:
            return read_chunk_files(jobs, self)
        out: list[UnitRead] = [None] * len(jobs)
        taken: set[int] = set()
        for k, got in zip(whole, nativeread.read_whole_chunks(self, [jobs[k][0] for k in whole]),
                          strict=True):
            if got is None or isinstance(got, np.ndarray):
                out[k] = None if got is None else [got]
                taken.add(k)
        left = [k for k in range(len(jobs)) if k not in taken]
        for k, found in zip(left, read_chunk_files([jobs[k] for k in left], self),
                            strict=True):
            out[k] = found
        return out

    # -- the chunk files (``chunkfiles.ChunkFiles``) ---------------------------------------------
    def chunk_file(self, unit: Vec3) -> str | None:
        if not self.in_grid(unit):
            return None
        return self._chunk_folder + os.sep.join(map(str, self.grid_position(unit)))

    def chunk_file_error(self, unit: Vec3, path: str, exc: OSError | FileChangedError
                         ) -> FormatError:
        grid = self.grid_position(unit)
        if isinstance(exc, FileChangedError):
            return type(exc)(exc.reason, path, chunk=grid)
        return read_failure(exc, ChunkDecodeError, "cannot read", path, chunk=grid)

    def not_in_file(self, unit: Vec3, path: str, index: int) -> FormatError:
        return FormatError(f"an N5 chunk file holds chunk 0 only, not {index}", path,
                           chunk=unit)

    def decode_files(self, items: Sequence[tuple[Vec3, str, bytes]]
                     ) -> list[npt.NDArray[Any] | FormatError]:
        """The chunks decoded, where the native kernel takes the compression in one call
        (``nativeread.decode_chunks``), else one by one."""
        grid_position = self.grid_position
        if nativeread.usable(self, None):
            return nativeread.decode_chunks(
                self, [(pos, data, path, grid_position(pos)) for pos, path, data in items])
        out: list[npt.NDArray[Any] | FormatError] = []
        for pos, path, data in items:
            try:
                out.append(self.decode_chunk(pos, data, path, grid_position(pos)))
            except FormatError as exc:
                out.append(exc)
        return out

    def drop_read_ahead(self, keep: Iterable[Sequence[int]] = ()) -> None:
        """The cursor moved on (a store that prefetches): stop the read-ahead of this
        dataset's chunk files but ``keep``'s, queued or on the wire (other datasets of the
        store keep theirs)."""
        if not self.store.supports_prefetch:
            return
        kept = {self.chunk_key(u) for u in keep}
        prefix = f"{self.key}/" if self.key else ""
        self.store.cancel_prefetch(lambda key: key in kept or not key.startswith(prefix))

    @property
    def lists_units(self) -> bool:
        """A listing of the store finds every unit present, where the store can list."""
        return self.store.supports_listing

    def iter_units(self) -> Iterator[Vec3]:
        """The chunk files present, in grid order (a listing of the chunk folders; names that
        are not grid positions inside the dataset are skipped)."""
        grid = self.attrs.grid_shape
        ndim = self.attrs.ndim

        own = str(self._channel_block)

        def numbers(key: str, axis: int) -> list[int]:
            out = []
            for name in self.store.list_dir(key):
                if name.isdigit() and int(name) < grid[axis] and \
                        (axis < 3 or name == (own if axis == self.attrs.channel_axis else "0")):
                    out.append(int(name))
            return sorted(out)

        def walk(key: str, axis: int, pos: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
            for n in numbers(key, axis):
                sub = f"{key}/{n}" if key else str(n)
                if axis == ndim - 1:
                    yield (*pos, n)  # a listing, no stat per chunk file
                else:
                    yield from walk(sub, axis + 1, (*pos, n))

        for p in walk(self.key, 0, ()):
            yield (p[0], p[1], p[2] if ndim >= 3 else 0)

    # -- decoding --------------------------------------------------------------------------------
    def read_chunk_bytes(self, unit: Vec3) -> StoredResult:
        """The chunk file's bytes, ``None`` when it is absent, or the error reading it.  The
        file is read whole as one version (``Store.read_whole``): one changed by another
        program while it was read is read once more, and a second change is the chunk's
        ``FileChangedError`` (never a chunk of two versions)."""
        key = self.chunk_key(unit)
        try:
            return self.store.read_whole(key)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except FileChangedError as exc:
            return type(exc)(exc.reason, self.store.location(key),
                                    chunk=self.grid_position(unit))
        except OSError as exc:
            return read_failure(exc, ChunkDecodeError, "cannot read", self.store.location(key),
                                chunk=self.grid_position(unit))

    def _expected_dims(self, unit: Sequence[int], grid: tuple[int, ...] | None = None
                       ) -> tuple[list[int], list[int]]:
        """``(full, clipped)`` block sizes per N5 axis of the chunk at ``unit`` (its N5 grid
        position ``grid``, when known)."""
        if grid is None:
            grid = self.grid_position(unit)
        full = self._block_list
        return full, [min(b, d - p * b) for b, d, p in
                      zip(full, self._dims_list, grid, strict=True)]

    def check_header(self, unit: Sequence[int], h: ChunkHeader, path: str,
                     grid: tuple[int, ...] | None = None) -> str:
        """How the chunk's block is stored (``"full"``, ``"truncated"`` or ``"padded"``), or
        the ``HeaderError`` / ``ChunkDecodeError`` when the header disagrees with the
        dataset.  ``grid``: the chunk's N5 grid position, when known."""
        if grid is None:
            grid = self.grid_position(unit)
        if h.mode == header.MODE_OBJECT:
            raise HeaderError("object-mode chunk in a numeric dataset", path, offset=0,
                              chunk=grid)
        full, clipped = self._expected_dims(unit, grid)
        if len(h.dims) != len(full):
            raise HeaderError(f"chunk header has {len(h.dims)} dimensions, the dataset "
                              f"{len(full)}", path, offset=2, chunk=grid)
        dims = list(h.dims)
        if dims == clipped:
            kind = "full" if clipped == full else "truncated"
        elif dims == full:
            kind = "padded"
        else:
            want = f"{clipped}" if clipped == full else f"{clipped} (truncated) or {full}"
            raise HeaderError(f"chunk header block size {dims} disagrees with the dataset: "
                              f"expected {want}", path, offset=4, chunk=grid)
        count = math.prod(dims)
        if h.num_elements != count:
            raise ChunkDecodeError(f"varlength chunk holds {h.num_elements} elements, its "
                                   f"block {'x'.join(map(str, dims))} has {count}", path,
                                   offset=h.size - 4, chunk=grid)
        return kind

    def header_facts(self, unit: Sequence[int], h: ChunkHeader) -> dict[str, Any]:
        """The chunk header as the inspector shows it."""
        out: dict[str, Any] = {"mode": h.mode_name, "ndim": len(h.dims),
                               "stored_block_size": list(h.dims),
                               "num_elements": h.num_elements, "header_bytes": h.size}
        full, clipped = self._expected_dims(unit)
        out["block_size"] = full
        if list(h.dims) == clipped:
            out["edge"] = "full" if clipped == full else "truncated"
        elif list(h.dims) == full:
            out["edge"] = "padded"
        else:
            out["edge"] = "disagrees with the dataset"
        return out

    def _layout(self, unit: Sequence[int], stored: bytes | memoryview, path: str,
                grid: tuple[int, ...]) -> tuple[ChunkHeader, int, int, int, int]:
        """The chunk's header, checked against the dataset, and its stored block as
        ``(channels, sx, sy, sz)`` (elements x fastest, channels slowest)."""
        h = header.parse(stored, path, grid)
        self.check_header(unit, h, path, grid)
        dims = h.dims
        ca = self.attrs.channel_axis
        channels = dims[ca] if ca is not None else 1
        return h, channels, dims[0], dims[1], dims[2] if len(dims) >= 3 else 1

    def _decode_view(self, unit: Sequence[int], stored: bytes | memoryview, path: str,
                     grid: tuple[int, ...] | None = None) -> npt.NDArray[Any]:
        """The chunk's elements as stored, ``(C, sx, sy, sz)`` big-endian (a view where the
        codec allows).  The whole payload is decoded, so every checksum it carries (gzip's
        CRC32 and length, zlib's Adler-32, lz4-java's xxhash, bzip2's and xz's CRCs) is
        checked before any voxel leaves.  ``grid``: the chunk's N5 grid position, when
        known."""
        if grid is None:
            grid = self.grid_position(unit)
        h, channels, sx, sy, sz = self._layout(unit, stored, path, grid)
        expected = h.num_elements * self._stored_dtype.itemsize
        raw = codecs.decompress(self.attrs.compression, memoryview(stored)[h.size:], expected,
                                path, grid, base=h.size)
        flat = np.frombuffer(raw, dtype=self._stored_dtype, count=channels * sx * sy * sz)
        # N5 is x fastest: C order over the reversed axes; channels vary slowest.
        arr = flat.reshape(channels, sz, sy, sx)
        c0 = self.channel_offset
        return arr.transpose(0, 3, 2, 1)[c0:c0 + self.num_channels]

    def decode_chunk(self, unit: Sequence[int], stored: bytes | memoryview,
                     path: str | None = None, grid: tuple[int, ...] | None = None
                     ) -> npt.NDArray[Any]:
        """The full chunk ``(C, cx, cy, cz)`` Fortran order, native byte order, an edge chunk
        padded with the fill value.  ``path`` and ``grid`` (the chunk file's path and N5 grid
        position), when the caller knows them already."""
        if path is None:
            path = self.store.location(self.chunk_key(unit))
        view = self._decode_view(unit, stored, path, grid=grid)
        c = self.chunk_shape
        if view.shape[1:] == c and view.shape[0] == self.num_channels:
            return np.asarray(view, dtype=self.dtype, order="F")
        out = np.empty((self.num_channels, *c), dtype=self.dtype, order="F")
        out[...] = self.fill_value
        sx, sy, sz = (min(a, b) for a, b in zip(view.shape[1:], c, strict=True))
        out[:, :sx, :sy, :sz] = view[:, :sx, :sy, :sz]
        return out

    # -- reading --------------------------------------------------------------------------------
    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """Read the box at ``offset`` the size of ``out`` (``(C, X, Y, Z)``): the chunks it
        cuts, read and decoded on a thread pool, each copied into its part of ``out``.
        Absent chunks leave their part untouched; the first damaged chunk's error is raised
        once every chunk is done.  Every chunk is decoded whole, whatever part of it the box
        needs: a decode that stopped at the slices it needs would never reach the checksum at
        the end of the stream, and could return damaged voxels with no error.

        It replaces the shared ``Volume.read_into`` (``open_unit``, ``read_chunks``, a copy):
        where the native kernel takes the compression it reads a local dataset's chunk files
        itself, decodes them and copies each straight into ``out`` with the byte swap, one call
        per thread (``nativeread``); on the Python path a chunk file is read with no ``stat``
        first and its block, as stored (an edge truncated, big-endian), copied into ``out``
        once, where the shared path would first pad and swap it into a chunk of its own
        (figures: docs/performance.md, n5)."""
        off = np.asarray([int(v) for v in offset], dtype=np.int64)
        size = np.asarray(out.shape[1:], dtype=np.int64)
        shape = np.asarray(self.attrs.shape, dtype=np.int64)  # the array's, not the extent
        lo = np.maximum(off, 0)
        hi = np.minimum(off + size, shape)
        if (hi <= lo).any():
            return
        c = np.asarray(self.chunk_shape, dtype=np.int64)
        first, last = lo // c, (hi - 1) // c
        units = [(i, j, k) for k in range(int(first[2]), int(last[2]) + 1)
                 for j in range(int(first[1]), int(last[1]) + 1)
                 for i in range(int(first[0]), int(last[0]) + 1)]

        if nativeread.usable(self, out):
            errors = nativeread.read_into(self, out, off, lo, hi, units)
        else:
            def one(unit: Vec3) -> FormatError | None:
                stored = self.read_chunk_bytes(unit)
                if stored is None:
                    return None
                if isinstance(stored, FormatError):
                    return stored
                try:
                    view = self._decode_view(unit, stored, self.unit_path(unit))
                except FormatError as exc:
                    return exc
                self._place(out, off, lo, hi, unit, view)
                return None

            pool = _executor() if len(units) > 1 else None
            errors = [one(u) for u in units] if pool is None else list(pool.map(one, units))
        for err in errors:
            if err is not None:
                raise err

    def _place(self, out: npt.NDArray[Any], off: npt.NDArray[np.int64],
               lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], unit: Sequence[int],
               view: npt.NDArray[Any]) -> None:
        """Copy the part of chunk ``unit`` (decoded: ``view``) inside ``[lo, hi)`` into
        ``out``, whose first voxel is at ``off``."""
        c = np.asarray(self.chunk_shape, dtype=np.int64)
        g = np.asarray(unit, dtype=np.int64) * c
        s_lo = np.maximum(g, lo)
        s_hi = np.minimum(np.minimum(g + c, hi), g + np.asarray(view.shape[1:]))
        if (s_hi <= s_lo).any():
            return
        src = tuple(slice(int(a), int(b)) for a, b in zip(s_lo - g, s_hi - g, strict=True))
        dst = tuple(slice(int(a), int(b)) for a, b in zip(s_lo - off, s_hi - off, strict=True))
        out[(slice(None), *dst)] = view[(slice(None), *src)]

    # -- description ----------------------------------------------------------------------------
    def describe_chunk(self, unit: Vec3) -> dict[str, Any]:
        """Everything the inspector shows about one chunk file: grid position, file bytes,
        the header (mode, stored block size and whether it is truncated or padded), payload
        and uncompressed bytes, ratio, and for lz4 its frames; ``problem`` when it is
        damaged."""
        grid = self.grid_position(unit)
        path = self.unit_path(unit)
        facts: dict[str, Any] = {"grid": list(grid), "path": path,
                                 "compression": self.attrs.compression.describe()}
        stored = self.read_chunk_bytes(unit)
        if stored is None:
            facts["present"] = False
            return facts
        facts["present"] = True
        if isinstance(stored, FormatError):
            facts["problem"] = stored.reason
            return facts
        facts["file_bytes"] = len(stored)
        try:
            h = header.parse(stored, path, grid)
        except FormatError as exc:
            facts["problem"] = exc.reason
            return facts
        facts.update(self.header_facts(unit, h))
        payload = memoryview(stored)[h.size:]
        facts["payload_bytes"] = len(payload)
        itemsize = self._stored_dtype.itemsize
        facts["uncompressed_bytes"] = h.num_elements * itemsize
        ctype = self.attrs.compression.type
        try:
            if ctype == "lz4":
                facts["lz4_framing"] = codecs.lz4_framing(payload)
            if ctype == "lz4" and facts["lz4_framing"] == "lz4-java":
                frames, end = lz4java.parse_frames(payload, path, grid, base=h.size)
                facts["lz4_frames"] = [f.to_json() for f in frames]
                facts["lz4_trailing_bytes"] = len(payload) - end
            elif ctype == "gzip":
                facts["stream"] = codecs.stream_kind(self.attrs.compression, payload)
            self.check_header(unit, h, path)
            self._decode_view(unit, stored, path)
        except FormatError as exc:
            facts["problem"] = f"{type(exc).__name__}: {exc.reason}"
        if len(payload):
            facts["ratio"] = round(facts["uncompressed_bytes"] / len(payload), 3)
        return facts

    def info(self) -> VolumeInfo:
        header_fields: dict[str, Any] = {
            "attributes_file": self.store.location(
                f"{self.key}/{ATTRIBUTES_FILE}" if self.key else ATTRIBUTES_FILE)}
        header_fields.update(self.attrs.raw)
        return VolumeInfo("n5", self.attrs.compression.describe(), header_fields)

    def problems(self) -> list[FormatError]:
        return list(self._problems)


class N5ChannelStack(ChannelStack):
    format: ClassVar[str] = "n5"


def make_volume(store: Store, key: str, attrs: DatasetAttributes,
                problems: Sequence[FormatError] = ()) -> Volume:
    """The dataset's volume: one ``N5Volume``, or an ``N5ChannelStack`` of one per block
    along the channel axis when the channels are split over blocks."""
    ca = attrs.channel_axis
    if ca is None or attrs.block_size[ca] >= attrs.num_channels:
        return N5Volume(store, key, attrs, problems)
    step, total = attrs.block_size[ca], attrs.num_channels
    return N5ChannelStack([N5Volume(store, key, attrs, problems, (c0, min(c0 + step, total)))
                           for c0 in range(0, total, step)])


__all__ = ["N5Volume", "N5Chunk", "N5ChannelStack", "make_volume"]
