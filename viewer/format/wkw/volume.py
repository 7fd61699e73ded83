"""WKW as a ``Volume``: a dataset folder (or one ``.wkw`` file) under the chunked-volume
interface.

The chunks are the WKW blocks; the storage units are the data files (``unit_shape`` = blocks
per file side); a block's index in its unit is its Morton index; a unit's ``ChunkTable`` is the
jump table (raw files: the implied fixed ranges).  Every block of a present file is present;
an absent file is an absent unit (zeros).  The extent is the box of the files present, found by
listing on first use, unless the opener declares it (a webKnossos layer's bounding box).
"""

from __future__ import annotations

import errno
import functools
import os
import struct
import threading
import time
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.description import described
from viewer.format.errors import (
    DatasetLayoutError,
    FileChangedError,
    FileChangingError,
    FormatError,
)
from viewer.format.handles import changing_error, settle_deadline
from viewer.format.volume import (
    ChunkResult,
    ChunkTable,
    IntArray,
    SoundUnits,
    StorageUnit,
    StoredResult,
    UnitRead,
    Volume,
    VolumeInfo,
    units_box,
)
from viewer.format.wkw import lz4block, morton, nativebox, quickcheck
from viewer.format.wkw.blockmemory import new_block
from viewer.format.wkw.dataset import HEADER_FILE, Dataset
from viewer.format.wkw.file import File
from viewer.format.wkw.header import (
    BLOCK_TYPE_NAMES,
    HEADER_SIZE,
    MAGIC,
    VOXEL_TYPES,
    Header,
    numbers_of,
)

Vec3 = tuple[int, int, int]


class WkwUnit(StorageUnit):
    """One open WKW data file as a storage unit (a thin view of ``wkw.File``)."""

    def __init__(self, file: File, owned: bool = False) -> None:
        self.file = file
        #: The unit opened the file itself (``WkwVolume.open_and_read``), not the dataset's
        #: cache of open files: ``close`` closes it.
        self.owned = owned
        self.path = file.path
        n = file._num_blocks
        self.num_chunks = n
        self.table_bytes = 8 * (n + 1) if file._compressed else 0
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

    def read_range(self, offset: int, nbytes: int) -> bytes | memoryview | None:
        """One ``pread`` of the range (None past the end of the file, or when it came back
        short: the file changed meanwhile; the caller then reads chunk by chunk, which reports
        why)."""
        if offset < 0 or nbytes < 0 or offset + nbytes > self.file.file_size:
            return None
        try:
            with self.file._reading() as fd:
                raw = os.pread(fd, nbytes, offset)
        except (OSError, ValueError, FormatError):
            return None
        return raw if len(raw) == nbytes else None

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

    @described
    def describe(self) -> dict[str, Any]:
        """The header's fields (``block_type`` the number stored, as in ``info().header``); for
        the inspector also ``compression`` (the block type's name),
        ``raw_header`` (the 16 bytes as stored, hex), ``header_fields`` (each field's byte
        range, raw value and meaning) and ``derived`` (geometry computed from the header)."""
        h = self.file.header
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read(HEADER_SIZE)
        except OSError:
            raw = h.to_bytes(h.data_offset)
        return {"magic": "WKW", "version": h.version, "block_len": h.block_len,
                "file_len": h.file_len, "block_type": h.block_type,
                "block_type_name": BLOCK_TYPE_NAMES.get(h.block_type, str(h.block_type)),
                "voxel_type": _dtype_name(h.dtype), "voxel_type_code": h.voxel_type_code,
                "num_channels": h.num_channels,
                "voxel_size": h.voxel_size, "data_offset": h.data_offset,
                "header_bytes": HEADER_SIZE,
                "jump_table_bytes": 8 * h.num_blocks if h.is_compressed else 0,
                "file_bytes": self.file.file_size,
                "compression": BLOCK_TYPE_NAMES.get(h.block_type, str(h.block_type)),
                "raw_header": raw.hex(" "),
                "header_fields": header_fields(raw),
                "derived": list(_derived(raw, h, self.file.file_size))}

    def problems(self, decode: bool = True) -> list[FormatError]:
        return self.file.validate(decode)

    def close(self) -> None:
        """Close the file when the unit opened it itself; else nothing: the dataset owns its
        open files (closed with it)."""
        if self.owned:
            self.file.close()


_FIELDS = struct.Struct("<3sBBBBBQ")


@functools.lru_cache(maxsize=64)
def _dtype_name(dtype: np.dtype[Any]) -> str:
    return dtype.name  # numpy works this out anew each time (once per file is enough)


def header_fields(raw: bytes) -> list[dict[str, Any]]:
    """The 16 header bytes field by field, as found (also when invalid): ``name``,
    ``first_byte``, ``length``, ``raw`` value, ``meaning`` and ``concerns`` (the ``describe``
    keys the field encodes that must agree with header.wkw: not dataOffset)."""
    # The files of a dataset share their header: worked out once per distinct 16 bytes.
    return [dict(f, concerns=list(f["concerns"])) for f in _header_fields(bytes(raw))]


@functools.lru_cache(maxsize=256)
def _header_fields(raw: bytes) -> tuple[dict[str, Any], ...]:
    if len(raw) < HEADER_SIZE:
        return ()
    magic, version, per_dim, block_type, vtype, vsize, data_offset = _FIELDS.unpack(
        raw[:HEADER_SIZE])
    vt = VOXEL_TYPES.get(vtype)
    rows = [
        ("magic", 0, 3, magic, "WKW" if magic == MAGIC else f"{magic!r}: not a WKW file", ()),
        ("version", 3, 1, version, "1" if version == 1 else "unknown version", ("version",)),
        ("perDimLog2", 4, 1, per_dim,
         f"block_len 2^{per_dim & 15} = {1 << (per_dim & 15)} voxels, "
         f"file_len 2^{per_dim >> 4} = {1 << (per_dim >> 4)} blocks", ("block_len", "file_len")),
        ("blockType", 5, 1, block_type, BLOCK_TYPE_NAMES.get(block_type, "unknown block type"),
         ("block_type", "block_type_name")),
        ("voxelType", 6, 1, vtype, str(vt) if vt is not None else "unknown voxel type",
         ("voxel_type", "voxel_type_code")),
        ("voxelSize", 7, 1, vsize,
         f"{vsize // vt.itemsize} channel(s) of {vt}" if vt is not None and vt.itemsize
         and vsize % vt.itemsize == 0 else f"{vsize} bytes per voxel",
         ("num_channels", "voxel_size")),
        ("dataOffset", 8, 8, data_offset,
         "header.wkw (no data)" if data_offset == 0 else f"block 0 at byte {data_offset}", ()),
    ]
    return tuple({"name": n, "first_byte": b, "length": ln,
                  "raw": r.decode("latin-1") if isinstance(r, bytes) else r, "meaning": m,
                  "concerns": list(c)} for n, b, ln, r, m, c in rows)


@functools.lru_cache(maxsize=1024)
def _derived(raw: bytes, h: Header, file_size: int) -> tuple[tuple[str, str], ...]:
    """Geometry computed from a file's header (``h``, parsed from ``raw``: the key of the
    cache, as ``Header`` equality leaves out the data offset), as the inspector lists it."""
    expected = h.expected_data_offset
    rows = [
        ("voxel type", f"{h.dtype} x {h.num_channels} channel(s), {h.voxel_size} B/voxel"),
        ("voxels per block", f"{h.block_len}^3 = {h.block_voxels:,}"),
        ("voxels per file", f"{h.file_len_vx}^3 = {h.file_len_vx ** 3:,}"),
        ("blocks per file", f"{h.file_len}^3 = {h.num_blocks:,}"),
        ("block bytes", f"{h.block_bytes:,}"),
        ("LZ4 bound per block", f"{lz4block.compress_bound(h.block_bytes):,}"
         if h.is_compressed else "-"),
        ("jump table", f"{h.num_blocks:,} x u64 = {8 * h.num_blocks:,} B"
         if h.is_compressed else "none (raw)"),
        ("expected data offset", f"{expected:,}"),
        ("found data offset", f"{h.data_offset:,}" + (
            "" if h.data_offset in (expected, 0) else "  (MISMATCH)")),
        ("file size", f"{file_size:,} B"),
    ]
    if not h.is_compressed:
        rows.append(("raw file size expected",
                     f"{HEADER_SIZE + h.num_blocks * h.block_bytes:,} B"))
    return tuple(rows)


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
        self._declared = bounds is not None
        self._lock = threading.Lock()
        self._own = own_dataset
        #: The last data file header found to agree with the dataset's (``open_and_read``).
        self._file_header: Header | None = None
        self._root = os.path.join(dataset.root, "")
        #: One block per file (how N5 and Zarr v2 store chunks): the loader reads the files
        #: with ``read_units``, each opened only for the read.
        self.small_units = dataset.single_file is None and h.file_len == 1

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
        """The box of the data files, from the listing folder by folder: the lowest and
        highest x of each y folder's names (no position made per file)."""
        if self.dataset.single_file is not None:
            return units_box([(0, 0, 0)], self.unit_len_vx)
        root = self.dataset.root
        lo: list[int] | None = None
        hi: list[int] | None = None
        for z, zname in _numbered(root, "z", ""):
            zdir = os.path.join(root, zname)
            for y, yname in _numbered(zdir, "y", ""):
                xs = _numbers(os.path.join(zdir, yname), "x", ".wkw")
                if not xs:
                    continue
                a, b = [min(xs), y, z], [max(xs), y, z]
                lo = a if lo is None else [min(u, v) for u, v in zip(lo, a, strict=True)]
                hi = b if hi is None else [max(u, v) for u, v in zip(hi, b, strict=True)]
        if lo is None or hi is None:
            return units_box([], self.unit_len_vx)
        return units_box([lo, hi], self.unit_len_vx)

    @property
    def origin(self) -> Vec3:
        return self.bounds[0]

    @property
    def extent_declared(self) -> bool:
        """True when given a box (a webKnossos layer's); else the files present say."""
        return self._declared

    def set_extent(self, bounds: tuple[Vec3, Vec3]) -> None:
        """A webKnossos layer's box at this mag as the extent (see ``Volume``)."""
        with self._lock:
            self._bounds = bounds
            self._declared = True

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

    def open_and_read(self, unit: Vec3, indices: Sequence[int]
                      ) -> tuple[StorageUnit | None, list[ChunkResult]]:
        """The data file at ``unit`` opened and its blocks ``indices`` read at once
        (``File.open_read``: a small file, such as one of a single block, with one ``pread``);
        the unit owns the file (not the dataset's cache of open files: the loader keeps it;
        closed when the unit goes).  A lone ``.wkw`` file opened as a dataset: the default."""
        ds = self.dataset
        if ds.single_file is not None:
            return super().open_and_read(unit, indices)
        x, y, z = unit
        sep = os.sep
        path = f"{self._root}z{z}{sep}y{y}{sep}x{x}.wkw"  # = ds.file_path(x, y, z)
        try:
            f, results = File.open_read(path, indices)
        except FileNotFoundError:
            return None, []
        except OSError as exc:
            raise DatasetLayoutError(f"cannot open: {exc.strerror or exc}", path) from None
        if f.header is not self._file_header:
            problem = self._agreeing(f.header, path)
            if problem is not None:
                f.close()
                raise problem
        return WkwUnit(f, owned=True), list(results)

    def read_units(self, jobs: Sequence[tuple[Vec3, Sequence[int]]]) -> list[UnitRead]:
        """Blocks of several data files, each file opened only for the read
        (``File.read_whole``: a small file with one ``pread``), none kept open: what a
        dataset of one block per file needs (``small_units``).  A file changed while it was
        read is read again once it settles (``handles.settle``); one still changing after
        ``handles.SETTLE_NS`` gives its blocks' ``FileChangingError``."""
        if self.dataset.single_file is not None:
            return super().read_units(jobs)
        root, sep, read_whole = self._root, os.sep, File.read_whole
        paths = [f"{root}z{z}{sep}y{y}{sep}x{x}.wkw"  # = dataset.file_path(x, y, z)
                 for (x, y, z), _ in jobs]
        out: list[UnitRead] = [None] * len(jobs)
        left = self._read_units_native(jobs, paths, out)
        for k in left:
            indices = jobs[k][1]
            path = paths[k]
            got: UnitRead
            deadline = 0
            while True:
                try:
                    header, results = read_whole(path, indices, deadline)
                except FileNotFoundError:
                    got = None
                except FileChangedError as exc:
                    if not isinstance(exc, FileChangingError):
                        if not deadline:
                            deadline = settle_deadline()
                        if time.monotonic_ns() < deadline:
                            continue
                        exc = changing_error(path)
                    got = [exc] * len(indices)
                except FormatError as exc:
                    got = exc
                except OSError as exc:
                    got = DatasetLayoutError(f"cannot open: {exc.strerror or exc}", path)
                else:
                    got = list(results) if header is self._file_header \
                        else self._agreeing(header, path) or list(results)
                break
            out[k] = got
        return out

    def _read_units_native(self, jobs: Sequence[tuple[Vec3, Sequence[int]]], paths: list[str],
                           out: list[UnitRead]) -> Sequence[int]:
        """``read_units`` of the jobs asking for the one block of a one-block file, by the
        native kernel in one call (``nativebox.read_files``: open, ``fstat``, the wait for
        writers, one read, ``fstat``, close, header and block checked and decoded), into
        ``out``, once a file's header was found to agree (every file whose 16 header bytes
        are that file's).  The positions in ``jobs`` left for the ordinary way: every job
        where the kernel was not built, and each file the kernel did not read (damaged,
        changing, different, not openable), which the ordinary way reads again and judges."""
        header = self._file_header
        if header is None or not nativebox.files_usable(header):
            return range(len(jobs))
        ones = [k for k, (_, indices) in enumerate(jobs)
                if len(indices) == 1 and indices[0] == 0]
        if len(ones) < 2:
            return range(len(jobs))
        bb = header.block_bytes
        memory = [new_block(bb) for _ in ones]
        status = nativebox.read_files([paths[k] for k in ones], header,
                                      [address for _, address in memory])
        _, _, _, _, _, dtype, shape, strides = numbers_of(header)
        left = [k for k, (_, indices) in enumerate(jobs)
                if not (len(indices) == 1 and indices[0] == 0)]
        for j, k in enumerate(ones):
            if status is not None and status[j, 0]:
                if status[j, 1] == errno.ENOENT:
                    continue  # absent: None, as ``read_whole``'s FileNotFoundError
                left.append(k)
                continue
            block: npt.NDArray[Any] = np.ndarray(shape, dtype, memory[j][0], 0, strides)
            block.flags.writeable = False
            out[k] = [block]
        return sorted(left)

    def _agreeing(self, header: Header, path: str) -> DatasetLayoutError | None:
        """None when a data file's ``header`` agrees with the dataset's (remembered: the
        next file's is the same object), else the error."""
        if not header.same_geometry(self.header):
            diffs = "; ".join(self.header.differences(header))
            return DatasetLayoutError(
                f"file header differs from {HEADER_FILE} ({HEADER_FILE} vs file: {diffs})",
                path, offset=0)
        self._file_header = header  # parsed headers are shared: the next file's is this one
        return None

    def sound_units(self, positions: Sequence[Vec3]) -> SoundUnits:
        """The data files at ``positions`` whose header and jump table pass every structure
        check, read and judged as a batch (``quickcheck``); a lone ``.wkw`` file: none (it
        is checked the ordinary way)."""
        if self.dataset.single_file is not None:
            return super().sound_units(positions)
        return quickcheck.sound_units(self.dataset.root, self.header, positions)

    def done_with(self, unit: StorageUnit) -> None:
        """Nothing: the dataset keeps the files it opened, and a unit that opened its own
        (``open_and_read``) keeps it until it goes (a worker may still be reading it: the
        file is closed when the last reference to it goes)."""

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

    def listing_parts(self) -> Sequence[Hashable]:
        """The ``z{Z}/y{Y}`` folders, as ``(Z, Y, folder name z, folder name y)`` in listing
        order (a single-file dataset: one part)."""
        if self.dataset.single_file is not None:
            return (None,)
        root = self.dataset.root
        return [(z, y, zname, yname) for z, zname in _numbered(root, "z", "")
                for y, yname in _numbered(os.path.join(root, zname), "y", "")]

    def iter_units_in(self, part: Hashable) -> Iterator[Vec3]:
        """The data files of one folder ``z{Z}/y{Y}`` (a part of ``listing_parts``), x in
        order."""
        if part is None:
            yield from self.iter_units()
            return
        where: tuple[int, int, str, str] = part  # type: ignore[assignment]
        folder = os.path.join(self.dataset.root, where[2], where[3])
        zi, yi = where[0], where[1]
        for x, _ in _numbered(folder, "x", ".wkw"):
            yield (x, yi, zi)

    def note_listed_box(self, lo: Sequence[int], hi: Sequence[int]) -> None:
        """Take the files' box found by a listing elsewhere (when the extent is theirs)."""
        with self._lock:
            if not self._declared and self._bounds is None:
                self._bounds = units_box([lo, hi], self.unit_len_vx)

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
        """The box through the dataset's own reader (``Dataset.read_into``), which replaces
        the shared chunk-by-chunk ``Volume.read_into``: a file's part of the box is one read
        (the wanted blocks' byte ranges from the jump table, sorted and merged), decoded by
        the native kernel (``wkwbox``) straight into ``out`` and shared among threads by
        stored bytes (``boxread``), with the files kept open by the dataset between reads
        (figures: docs/performance.md, format)."""
        self.dataset.read_into(out, offset)

    # -- description ------------------------------------------------------------------------------
    def info(self) -> VolumeInfo:
        h = self.header
        return VolumeInfo("wkw", BLOCK_TYPE_NAMES.get(h.block_type, str(h.block_type)), {
            "header_file": os.path.join(self.dataset.root, HEADER_FILE)
            if self.dataset.single_file is None else self.dataset.single_file,
            "version": h.version, "block_len": h.block_len, "file_len": h.file_len,
            "block_type": h.block_type,
            "voxel_type": h.dtype.name, "num_channels": h.num_channels,
            "voxel_size": h.voxel_size,
            "block_type_name": BLOCK_TYPE_NAMES.get(h.block_type, str(h.block_type)),
            "voxel_type_code": h.voxel_type_code, "data_offset": h.data_offset,
            "checksums": False})

    def close(self) -> None:
        if self._own:
            self.dataset.close()


def _numbers(path: str, prefix: str, suffix: str) -> list[int]:
    """The numbers N of the entries ``{prefix}{N}{suffix}`` of a folder (unsorted)."""
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    start, end = len(prefix), -len(suffix) if suffix else None
    return [int(name[start:end]) for name in names
            if name.startswith(prefix) and name.endswith(suffix) and name[start:end].isdigit()]


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
