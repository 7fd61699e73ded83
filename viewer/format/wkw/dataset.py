"""A WKW dataset: a directory with ``header.wkw`` and data files ``z{Z}/y{Y}/x{X}.wkw``.

Opening is lazy: only header.wkw is read; a data file is opened the first time a read touches
it (and kept open in a small cache), never listed up front.  A missing file reads as zeros.
Every file is read by its own header; one whose geometry or voxel type differs from header.wkw
is a ``DatasetLayoutError``.  A single ``.wkw`` file can be opened as a one-file dataset whose
coordinates are the file's own.

The public methods mirror the reference binding (PyPI ``wkw``): ``Dataset.open``,
``Dataset.create``, ``.header``, ``.read(offset, shape) -> (C, X, Y, Z)`` Fortran order,
``.write(offset, data)``, ``.compress(dst)``, ``.list_files()``, ``.close()``.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import bigmemory
from viewer.format import executor as _executor
from viewer.format.errors import DatasetLayoutError, FileChangedError, FormatError, HeaderError
from viewer.format.handles import OPEN_FLAGS
from viewer.format.wkw import boxread, nativebox, writer
from viewer.format.wkw.file import File, remembered
from viewer.format.wkw.header import HEADER_SIZE, Header, parse_header
from viewer.format.wkw.nativebox import Remembered

HEADER_FILE = "header.wkw"
#: Open data files kept per dataset (each holds one descriptor).
OPEN_FILES = 128

Vec3 = tuple[int, int, int]


class Dataset:
    """A WKW dataset directory (or a single file opened as one).  Reads are thread-safe."""

    def __init__(self, root: str, header: Header, single_file: str | None = None) -> None:
        self.root = root
        self.header = header
        #: Set when a lone .wkw file was opened; its coordinates are then the file's own.
        self.single_file = single_file
        self._files: OrderedDict[Vec3, File | None] = OrderedDict()
        self._lock = threading.Lock()
        self._prefix = os.path.join(root, "")  # the root and a separator: file paths
        #: The last file header found to agree with header.wkw (files of one dataset share
        #: one parsed ``Header``: the check is then an identity test).
        self._agreed: Header | None = None
        #: Whose threads share its large reads (``viewer.format.executor``).
        self._threads = _executor.Owned()

    # -- opening and creating -----------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str], header: Header | None = None) -> Dataset:
        """Open a dataset directory or a single ``.wkw`` data file.  With ``header`` (as in the
        reference), a directory without header.wkw is created with that header."""
        path = os.fspath(path)
        if path:
            # A directory with header.wkw, the common case: three system calls (open, pread,
            # close); anything else is told apart only when this open fails.
            header_path = os.path.join(path, HEADER_FILE)
            try:
                fd = os.open(header_path, OPEN_FLAGS)
            except (FileNotFoundError, NotADirectoryError):
                pass
            else:
                return cls(path, _read_dataset_header(fd, header_path))
        return cls._open_other(path, header)

    @classmethod
    def _open_other(cls, path: str, header: Header | None) -> Dataset:
        """``open`` of anything but a directory holding header.wkw: a data file, header.wkw
        itself, a directory without header.wkw (created with ``header``), nothing."""
        try:
            mode = os.stat(path).st_mode if path else 0
        except OSError:
            mode = 0
        if stat.S_ISREG(mode):
            if os.path.basename(path) == HEADER_FILE:
                return cls.open(os.path.dirname(path) or ".")
            with File.open(path) as f:
                return cls(os.path.dirname(path) or ".", f.header.replace(data_offset=0),
                           single_file=path)
        if not stat.S_ISDIR(mode):
            if header is not None:
                return cls.create(path, header)
            raise DatasetLayoutError("no such file or directory", path)
        header_path = os.path.join(path, HEADER_FILE)
        try:
            fd = os.open(header_path, OPEN_FLAGS)
        except FileNotFoundError:
            if header is not None:
                return cls.create(path, header)
            raise DatasetLayoutError(f"not a WKW dataset: no {HEADER_FILE}", path) from None
        return cls(path, _read_dataset_header(fd, header_path))

    @classmethod
    def create(cls, path: str | os.PathLike[str], header: Header) -> Dataset:
        """Create a dataset directory with ``header`` (written as header.wkw)."""
        path = os.fspath(path)
        os.makedirs(path, exist_ok=True)
        header = header.replace(data_offset=0)
        writer.write_atomically(os.path.join(path, HEADER_FILE), header.to_bytes(0))
        return cls(path, header)

    def close(self) -> None:
        with self._lock:
            files = list(self._files.values())
            self._files.clear()
        for f in files:
            if f is not None:
                f.close()
        self._threads.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<wkw.Dataset {self.single_file or self.root!r} {self.header!r}>"

    # -- files --------------------------------------------------------------------------------
    @property
    def file_len_vx(self) -> int:
        return self.header.file_len_vx

    def file_path(self, fx: int, fy: int, fz: int) -> str:
        """Path of the data file at file-grid position (fx, fy, fz)."""
        if self.single_file is not None:
            return self.single_file
        sep = os.sep
        return f"{self._prefix}z{fz}{sep}y{fy}{sep}x{fx}.wkw"

    def get_file(self, fx: int, fy: int, fz: int) -> File | None:
        """The open data file at file-grid position, or None when it is absent."""
        key = (fx, fy, fz)
        with self._lock:
            if key in self._files:
                self._files.move_to_end(key)
                return self._files[key]
        if self.single_file is not None and key != (0, 0, 0):
            f: File | None = None
        else:
            try:
                f = File.open(self.file_path(fx, fy, fz))
            except FileNotFoundError:
                f = None
            if f is not None and f.header is not self._agreed:
                if not f.header.same_geometry(self.header):
                    diffs = "; ".join(self.header.differences(f.header))
                    f.close()
                    raise DatasetLayoutError(
                        f"file header differs from {HEADER_FILE} ({HEADER_FILE} vs file: "
                        f"{diffs})", self.file_path(fx, fy, fz), offset=0)
                self._agreed = f.header
        with self._lock:
            self._files[key] = f
            self._files.move_to_end(key)
            while len(self._files) > OPEN_FILES:
                self._files.popitem(last=False)  # closed when the last reader lets go
        return f

    def forget_file(self, fx: int, fy: int, fz: int) -> None:
        """Drop the cached handle (after the file was rewritten or deleted)."""
        with self._lock:
            self._files.pop((fx, fy, fz), None)

    def list_files(self) -> Iterator[str]:
        """Paths of the data files present, lazily, in directory order."""
        if self.single_file is not None:
            yield self.single_file
            return
        for zname in _sorted_dir(self.root, "z"):
            zdir = os.path.join(self.root, zname)
            for yname in _sorted_dir(zdir, "y"):
                ydir = os.path.join(zdir, yname)
                for xname in _sorted_dir(ydir, "x", ".wkw"):
                    yield os.path.join(ydir, xname)

    def file_position(self, path: str) -> Vec3:
        """File-grid position (fx, fy, fz) of a data file path of this dataset."""
        if self.single_file is not None:
            return (0, 0, 0)
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        parts = rel.split("/")
        try:
            z, y, x = parts
            return (int(x[1:-4]), int(y[1:]), int(z[1:]))
        except ValueError:
            raise DatasetLayoutError("not a data file path of this dataset", path) from None

    def files_in_box(self, offset: Sequence[int], shape: Sequence[int]) -> Iterator[Vec3]:
        """File-grid positions the box touches, x fastest."""
        side = self.file_len_vx
        lo = [max(int(o), 0) // side for o in offset]
        hi = [(int(o) + int(s) - 1) // side for o, s in zip(offset, shape, strict=True)]
        for fz in range(lo[2], hi[2] + 1):
            for fy in range(lo[1], hi[1] + 1):
                for fx in range(lo[0], hi[0] + 1):
                    yield (fx, fy, fz)

    # -- reading ------------------------------------------------------------------------------
    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        """The box ``[offset, offset + shape)`` as a ``(C, X, Y, Z)`` Fortran-order array."""
        offset = _vec3(offset, "offset")
        shape = _vec3(shape, "shape")
        if min(offset) < 0 or min(shape) < 0:
            raise ValueError(f"offset and shape must be non-negative, not {offset}, {shape}")
        h = self.header
        if min(shape) == 0:
            return np.zeros((h.num_channels, *shape), dtype=h.dtype, order="F")
        # Not zeroed: the files' cubes tile the box, a present file writes every voxel of its
        # part and the parts of absent files are zeroed below (saves clearing memory twice).
        out = bigmemory.empty((h.num_channels, *shape), h.dtype)  # a big one: memory reused
        with self._threads.in_effect():
            self._read_into(out, offset, zero_absent=True)
        return out

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """Read the box at ``offset`` the size of ``out`` (``(C, X, Y, Z)``, F order) into it.
        Absent files leave their part of ``out`` untouched."""
        with self._threads.in_effect():
            self._read_into(out, offset, zero_absent=False)

    def _read_into(self, out: npt.NDArray[Any], offset: Sequence[int], zero_absent: bool
                   ) -> None:
        # Plain ints throughout: a small read (one file, a 64^3 box) is a few hundred
        # microseconds, and generators, zips and list comprehensions per file add up.
        ox, oy, oz = (int(v) for v in offset)
        sx, sy, sz = (int(v) for v in out.shape[1:])
        side = self.file_len_vx
        fx0, fy0, fz0 = max(ox, 0) // side, max(oy, 0) // side, max(oz, 0) // side
        fx1, fy1, fz1 = (ox + sx - 1) // side, (oy + sy - 1) // side, (oz + sz - 1) // side
        for fz in range(fz0, fz1 + 1):
            lz = oz - fz * side  # where the box starts in the file's own coordinates
            for fy in range(fy0, fy1 + 1):
                ly = oy - fy * side
                for fx in range(fx0, fx1 + 1):
                    lx = ox - fx * side
                    self._read_file_into(out, fx, fy, fz, lx, ly, lz, zero_absent)

    def _read_file_into(self, out: npt.NDArray[Any], fx: int, fy: int, fz: int, lx: int,
                        ly: int, lz: int, zero_absent: bool) -> None:
        """The part of ``out`` (whose voxel 0 lies at ``(lx, ly, lz)`` of file
        ``(fx, fy, fz)``) that this file holds; an absent file zeroes it or leaves it."""
        sx, sy, sz = out.shape[1:]
        out_off = (-lx if lx < 0 else 0, -ly if ly < 0 else 0, -lz if lz < 0 else 0)
        if (fx, fy, fz) not in self._files and self._read_by_path(
                out, fx, fy, fz, (lx + out_off[0], ly + out_off[1], lz + out_off[2]), out_off,
                (sx - out_off[0], sy - out_off[1], sz - out_off[2])):
            return
        for attempt in (0, 1):
            f = self.get_file(fx, fy, fz)
            if f is None:
                if zero_absent:
                    side = self.file_len_vx
                    out[:, out_off[0]:min(side - lx, sx), out_off[1]:min(side - ly, sy),
                        out_off[2]:min(side - lz, sz)] = 0
                return
            try:
                f.read_into(out, (lx + out_off[0], ly + out_off[1], lz + out_off[2]),
                            out_off, (sx - out_off[0], sy - out_off[1], sz - out_off[2]))
                return
            except FileChangedError:
                # Another program rewrote the file since it was opened: open it again
                # (its new header and jump table) and read once more.
                self.forget_file(fx, fy, fz)
                if attempt:
                    raise

    def _read_by_path(self, out: npt.NDArray[Any], fx: int, fy: int, fz: int,
                      offset: Vec3, out_offset: Vec3, shape: Vec3) -> bool:
        """A small box of a file this dataset has not opened, read by the native kernel in one
        call (``nativebox.read_path``: open, checks, read, close) when the file was parsed
        before and is unchanged since (``file.remembered``); no ``File`` is made or kept.
        False when the ordinary way must read it (``get_file``, which raises what is wrong
        with the file and remembers it for the next time)."""
        if not nativebox.usable(self.header.is_compressed) or (
                self.single_file is not None and (fx, fy, fz) != (0, 0, 0)):
            return False
        path = self.file_path(fx, fy, fz)
        known = remembered(path)
        if known is None:
            return False
        header = known[1]
        if header is not self._agreed:
            if not header.same_geometry(self.header):
                return False  # ``get_file`` says so
            self._agreed = header
        how = boxread.small_native(header, out, offset, out_offset, shape)
        if how is None or not nativebox.usable(header.is_compressed):
            return False
        return nativebox.read_path(path, known, _closed_file, *how)

    # -- writing ------------------------------------------------------------------------------
    def write(self, offset: Sequence[int], data: npt.NDArray[Any]) -> None:
        """Write ``data`` (``(X, Y, Z)`` or ``(C, X, Y, Z)``) at voxel ``offset``.

        Every file is written atomically: a raw file's blocks are patched into a copy of it,
        an LZ4/LZ4HC file is rebuilt whole (merging what it held outside the box), each in a
        temporary file renamed over the old one (``viewer.format.atomic``)."""
        if self.single_file is not None:
            raise DatasetLayoutError("writing to a single opened file is not supported; open "
                                     "its dataset directory", self.single_file)
        offset = _vec3(offset, "offset")
        if min(offset) < 0:
            raise ValueError(f"offset must be non-negative, not {offset}")
        data = self._check_data(data)
        shape = data.shape[1:]
        side = self.file_len_vx
        for fx, fy, fz in self.files_in_box(offset, shape):
            origin = (fx * side, fy * side, fz * side)
            lo = [max(o, g) for o, g in zip(offset, origin, strict=True)]
            hi = [min(o + s, g + side) for o, s, g in zip(offset, shape, origin, strict=True)]
            if any(b <= a for a, b in zip(lo, hi, strict=True)):
                continue
            part = data[:, lo[0] - offset[0]:hi[0] - offset[0], lo[1] - offset[1]:hi[1] - offset[1],
                        lo[2] - offset[2]:hi[2] - offset[2]]
            local = tuple(a - g for a, g in zip(lo, origin, strict=True))
            path = self.file_path(fx, fy, fz)
            self.forget_file(fx, fy, fz)
            writer.write_into_file(path, self.header, local, part)
            self.forget_file(fx, fy, fz)

    def _check_data(self, data: npt.NDArray[Any]) -> npt.NDArray[Any]:
        h = self.header
        if not isinstance(data, np.ndarray):
            raise TypeError("data must be a numpy array")
        if data.ndim == 3:
            data = data[np.newaxis]
        if data.ndim != 4:
            raise ValueError(f"data must be (X, Y, Z) or (C, X, Y, Z), not {data.shape}")
        if data.shape[0] != h.num_channels:
            raise ValueError(f"data has {data.shape[0]} channels, the dataset {h.num_channels}")
        if data.dtype.newbyteorder("<") != h.dtype and data.dtype != h.dtype:
            raise ValueError(f"data is {data.dtype}, the dataset {h.dtype}")
        return data

    def compress(self, dst_path: str | os.PathLike[str], compress_files: bool = True,
                 progress: Any = None) -> Dataset:
        """Write an LZ4HC copy of this dataset to ``dst_path`` and return it opened.

        Unlike the reference (which by default only creates the header), every data file is
        converted unless ``compress_files`` is False.  ``progress(done, total)`` is called
        after each file."""
        dst = Dataset.create(dst_path, self.header.replace(block_type=Header.BLOCK_TYPE_LZ4HC))
        if not compress_files:
            return dst
        files = list(self.list_files())
        for n, path in enumerate(files, 1):
            rel = os.path.relpath(path, self.root)
            writer.compress_file(path, os.path.join(os.fspath(dst_path), rel), self.header)
            if progress is not None:
                progress(n, len(files))
        return dst


def _read_dataset_header(fd: int, header_path: str) -> Header:
    """The header in header.wkw (open as ``fd``, closed here), its data offset 0.  Parsed
    and checked once per distinct 16 bytes (``parse_header``)."""
    try:
        raw = os.pread(fd, HEADER_SIZE, 0)
    finally:
        os.close(fd)
    parsed = parse_header(raw, header_path)[0]
    if parsed.data_offset:
        parsed = parsed.replace(data_offset=0)
    return parsed


def _vec3(value: Sequence[int], what: str) -> Vec3:
    vals = tuple(int(v) for v in value)
    if len(vals) != 3:
        raise ValueError(f"{what} must have three entries (x, y, z), not {value!r}")
    return (vals[0], vals[1], vals[2])


def _sorted_dir(path: str, prefix: str, suffix: str = "") -> list[str]:
    """Entries ``{prefix}{N}{suffix}`` of a directory, sorted by N; others are skipped."""
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        if name.startswith(prefix) and name.endswith(suffix):
            digits = name[len(prefix):len(name) - len(suffix)]
            if digits.isdigit():
                found.append((int(digits), name))
    return [name for _, name in sorted(found)]


def _closed_file(path: str, known: Remembered) -> File:
    """A closed ``File`` of the version ``known`` (``nativebox.read_path`` words a damaged
    block's error as the file's own methods do)."""
    return File(path, None, known[1], known[0][2], known[3], known[2])


__all__ = ["Dataset", "HEADER_FILE", "FormatError", "HeaderError"]
