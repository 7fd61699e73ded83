"""Where stored bytes come from, apart from what they mean: a ``Store`` reads whole objects and
byte ranges by key (a path relative to the store's root).

Formats read their metadata and chunks through a store, never with ``open`` directly, so the
same reader works on a local folder and over HTTP or S3.  ``open_store(path)`` gives
the store of a local folder (``LocalStore``).  Keys use ``/`` whatever the platform.

A missing object raises ``FileNotFoundError`` (the caller decides whether that means "absent",
as for a sparse chunk, or an error); other I/O failures raise ``OSError``.  Thread-safe.
"""

from __future__ import annotations

import errno
import operator
import os
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from viewer.format import handles
from viewer.format.config import ReadConfig
from viewer.format.errors import FileChangedError, FormatError, UnsupportedFormatError
from viewer.format.handles import (
    OPEN_FLAGS,
    Identity,
    changing_error,
    identity,
    settle,
    settle_deadline,
    wait_for_writers,
)
from viewer.format.native import chunks


@dataclass(frozen=True)
class PackedRanges:
    """Byte ranges of one object read into one buffer (``Store.read_ranges_packed``): range
    ``i`` is ``length[i]`` bytes at ``start[i]`` of ``buffer`` (shorter than asked only at
    the object's end), so that a caller finds many ranges with array arithmetic."""

    buffer: bytes | bytearray
    start: npt.NDArray[np.int64]
    length: npt.NDArray[np.int64]

    @classmethod
    def of(cls, parts: Sequence[bytes]) -> PackedRanges:
        """The ranges ``parts`` (read one by one) packed into one buffer."""
        length = np.asarray([len(p) for p in parts], dtype=np.int64)
        start = np.zeros(len(parts), dtype=np.int64)
        if len(parts) > 1:
            np.cumsum(length[:-1], out=start[1:])
        return cls(parts[0] if len(parts) == 1 else b"".join(parts), start, length)

    def view(self, i: int) -> memoryview:
        """Range ``i``'s bytes (a view of the buffer)."""
        at = int(self.start[i])
        return memoryview(self.buffer)[at:at + int(self.length[i])]

    def address(self) -> int:
        """Where the buffer's first byte is in memory (valid while this object lives; 0 for
        an empty buffer)."""
        if not len(self.buffer):
            return 0
        return int(np.frombuffer(self.buffer, dtype=np.uint8).ctypes.data)


@dataclass(frozen=True)
class ObjectStat:
    """An object's size and the version it has now (``Store.stat``): ``version`` is an
    opaque tag that differs between two versions of the object (a local file's identity, an
    HTTP ETag or Last-Modified), None when the store cannot tell versions apart."""

    size: int
    version: str | None


def version_changed(location: str) -> FileChangedError:
    """The error of a read that found another version of the object than the one whose
    index (a shard index, a container's table) says where the bytes are."""
    return FileChangedError("the file changed since its index was read (rewritten or "
                            "replaced by another program)", location)


class Store(ABC):
    """Bytes by key under one root (see the module docstring)."""

    #: The root as given (a folder path or a URL).
    root: str

    @abstractmethod
    def read(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        """The object's bytes ``[offset, offset + length)`` (``length`` None: to the end).  A
        range past the end comes back short, as ``pread`` does."""

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Several ``(offset, length)`` ranges of one object (a remote store merges them)."""
        return [self.read(key, off, n) for off, n in ranges]

    def read_whole(self, key: str) -> bytes:
        """The whole object, as one version of it: an object another program changed while
        it was read is read again, or raises ``FileChangedError``, rather than giving bytes
        of two versions.  What a one-chunk-per-file format reads a chunk with (N5, Zarr v2:
        ``Volume.read_units``).  Default: ``read`` (an object store's GET is one version)."""
        return self.read(key)

    def read_ranges_of(self, key: str, ranges: Sequence[tuple[int, int]],
                       version: str | None) -> list[bytes]:
        """``read_ranges`` from the object's version ``version`` (``stat``): raises
        ``FileChangedError`` when the object is another version now, so that bytes found
        through an index (a shard index, a container's table) are never read from another
        version than the index (the caller reads the index again).  ``version`` None, or a
        store that cannot tell versions apart (the default): ``read_ranges``."""
        return self.read_ranges(key, ranges)

    def read_ranges_packed(self, key: str, ranges: Sequence[tuple[int, int]],
                           version: str | None) -> PackedRanges:
        """``read_ranges_of``, the ranges in one buffer (``PackedRanges``): what a read of
        many small ranges of one object takes (a shard's chunks).  Default:
        ``read_ranges_of``, its parts packed."""
        return PackedRanges.of(self.read_ranges_of(key, ranges, version))

    def stat(self, key: str) -> ObjectStat | None:
        """The object's size and version (see ``ObjectStat``), None when there is no such
        object.  Default: ``size``, no version."""
        size = self.size(key)
        return None if size is None else ObjectStat(size, None)

    @abstractmethod
    def size(self, key: str) -> int | None:
        """The object's size in bytes, or None when there is no such object."""

    def exists(self, key: str) -> bool:
        return self.size(key) is not None

    @abstractmethod
    def is_dir(self, key: str) -> bool:
        """Whether ``key`` names a folder (a prefix that holds objects)."""

    @abstractmethod
    def list_dir(self, key: str) -> list[str]:
        """Names directly inside folder ``key`` (sorted); ``[]`` when it is not a folder (or
        when the store cannot list: see ``supports_listing``)."""

    @property
    def supports_listing(self) -> bool:
        """Whether ``list_dir`` and ``walk`` see every object (a local folder, S3, GCS).
        False for plain HTTP, which has no listing: an object missing from a listing is then
        not proven absent.  Default: True."""
        return True

    @property
    def supports_prefetch(self) -> bool:
        """Whether ``prefetch`` starts fetching anything (a remote store); a local store reads
        when asked, so its read-ahead is the file system's.  Default: False."""
        return False

    def prefetch(self, key: str, ranges: Sequence[tuple[int, int]],  # noqa: B027 - optional
                 keep: bool = False) -> None:
        """Start fetching these ``(offset, length)`` ranges of ``key`` and return at once
        (read-ahead); ``keep``: never dropped as stale nor by ``cancel_prefetch``.  Default:
        nothing (see ``supports_prefetch``)."""

    def cancel_prefetch(self, keep: Callable[[str], bool] | None = None) -> int:
        """Stop read-ahead that nobody waits for, but that of the keys ``keep`` accepts; the
        number of requests stopped.  Default: nothing to stop, 0."""
        return 0

    @property
    def tables_ahead_bytes(self) -> int:
        """Bytes of storage-unit tables (jump tables, shard indexes) a volume may fetch ahead
        when it opens, all at once; 0: each table when first needed.  Default: 0."""
        return 0

    def known_size(self, key: str) -> int | None:
        """The object's size when the store already knows it (no request made), else None.
        Default: ``size`` (a local ``stat`` costs nothing worth saving)."""
        return self.size(key)

    def read_ranges_results(self, key: str, ranges: Sequence[tuple[int, int]],
                            version: str | None = None
                            ) -> list[bytes | OSError | FormatError]:
        """Each ``(offset, length)`` range's bytes, or the error met reading it; ``version``:
        as ``read_ranges_of`` (a range of another version is its ``FileChangedError``).
        Default: ``read_ranges_of``, all or nothing (a remote store answers each range on its
        own, so one failed request does not fail the others)."""
        if not ranges:
            return []
        try:
            return list(self.read_ranges_of(key, ranges, version))
        except (OSError, FormatError) as exc:
            return [exc] * len(ranges)

    def read_ranges_versioned(self, key: str, ranges: Sequence[tuple[int, int]]
                              ) -> tuple[list[bytes | OSError | FormatError], str | None]:
        """``read_ranges_results`` and the version of the object the bytes came from, learnt
        from the answers themselves (no request of its own): what a later
        ``read_ranges_results(..., version)`` of offsets these bytes give is read with.
        None: the store cannot tell versions apart (the default)."""
        return self.read_ranges_results(key, ranges), None

    def list_names(self, key: str) -> list[str]:
        """``list_dir`` in no particular order (a caller that sorts what it keeps, or needs no
        order, saves the sort of every name).  Default: ``list_dir``."""
        return self.list_dir(key)

    @abstractmethod
    def location(self, key: str) -> str:
        """The full path or URL of ``key``, for messages and the inspector."""

    def walk(self, key: str = "") -> Iterator[str]:
        """Keys of every object below folder ``key``, depth first, sorted."""
        for name in self.list_dir(key):
            sub = f"{key}/{name}" if key else name
            if self.is_dir(sub):
                yield from self.walk(sub)
            else:
                yield sub


class LocalStore(Store):
    """A folder on a local file system, read with ``pread`` (no mapping: a file truncated by
    another process while it is read gives short reads, never a signal)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)

    def location(self, key: str) -> str:
        if not key:
            return self.root
        return os.path.join(self.root, *key.split("/"))

    def read(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        """As ``Store.read``, from one settled version of the file (``read_file_ranges``)."""
        return read_file_ranges(self.location(key), [(offset, length)])[0]

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """As ``Store.read_ranges``, all from one settled version (``read_file_ranges``)."""
        return read_file_ranges(self.location(key), ranges)

    def read_ranges_of(self, key: str, ranges: Sequence[tuple[int, int]],
                       version: str | None) -> list[bytes]:
        """As ``Store.read_ranges_of``: ``read_file_ranges`` of that version (the file's
        identity, ``stat``)."""
        return read_file_ranges(self.location(key), ranges, version)

    def stat(self, key: str) -> ObjectStat | None:
        """As ``Store.stat``; the version is the file's identity (``handles.identity``:
        device, inode, size, modification and change times)."""
        try:
            st = os.stat(self.location(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return ObjectStat(st.st_size, _version(identity(st)))

    def read_ranges_packed(self, key: str, ranges: Sequence[tuple[int, int]],
                           version: str | None) -> PackedRanges:
        """As ``read_ranges_of`` (the checks of ``read_file_ranges``), several ranges read by
        the native kernel in one call into one buffer where it is built: no Python per
        range.  A file the kernel leaves (missing, racy, changed during the read) is read
        by ``read_file_ranges``, which waits, reads again or raises."""
        path = self.location(key)
        if len(ranges) > 1:
            got = chunks.read_ranges(path, ranges, handles.RACY_WINDOW_NS,
                                     handles.COARSE_WINDOW_NS)
            if got is not None:
                buffer, start, length, ident = got
                if version is not None and _version(ident) != version:
                    raise version_changed(path)
                return PackedRanges(buffer, start, length)
        return PackedRanges.of(read_file_ranges(path, ranges, version))

    def read_whole(self, key: str) -> bytes:
        """The whole file as one version of it, with no ``stat`` before: see
        ``read_file_whole``."""
        return read_file_whole(self.location(key))

    def size(self, key: str) -> int | None:
        try:
            st = os.stat(self.location(key))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not os.path.isfile(self.location(key)):
            return None
        return st.st_size

    def is_dir(self, key: str) -> bool:
        return os.path.isdir(self.location(key))

    def list_dir(self, key: str) -> list[str]:
        return sorted(self.list_names(key))

    def list_names(self, key: str) -> list[str]:
        try:
            return os.listdir(self.location(key))
        except (NotADirectoryError, FileNotFoundError):
            return []

    def walk(self, key: str = "") -> Iterator[str]:
        """As ``Store.walk``, through ``os.scandir``: a folder's entries say whether they are
        folders, so the walk costs no ``stat`` per object (a ``stat`` per object made it many
        bare ``os.scandir`` walks: docs/performance.md).  One generator
        for the whole walk, a stack of the folders under way: a folder's files between two
        of its subfolders are handed on as one list, not through a generator per level."""
        stack = [(iter(_sorted_entries(self.location(key))), f"{key}/" if key else "")]
        while stack:
            entries, prefix = stack[-1]
            files: list[str] = []
            for entry in entries:
                if entry.is_dir():  # a link to a folder counts, as for ``is_dir``
                    stack.append((iter(_sorted_entries(entry.path)), f"{prefix}{entry.name}/"))
                    break
                files.append(prefix + entry.name)
            else:
                stack.pop()
            yield from files

    def __repr__(self) -> str:
        return f"<LocalStore {self.root!r}>"


def read_file_whole(path: str) -> bytes:
    """The whole file at ``path`` as one version of it, with no ``stat`` before: ``open`` (a
    missing file, or a path through a file, raises ``FileNotFoundError`` /
    ``NotADirectoryError``), ``fstat``, a wait for writes in progress
    (``handles.wait_for_writers``, after that ``fstat``), one ``pread`` of its size, ``fstat``
    again, ``close``.  A file modified within the racy window (``handles.settle``) is waited
    for until it settles; one whose identity (``handles.identity``: size, modification and
    change times) differs between the two ``fstat`` calls was rewritten, truncated or
    replaced during the read: it is read again (after it settles), and a file still changing
    after ``handles.SETTLE_NS`` raises ``FileChangingError`` (never bytes of two versions).
    Something that is not a regular file (a folder; a pipe, opened without blocking) raises
    ``FileNotFoundError``, as ``LocalStore.size`` calls it absent.  What
    ``LocalStore.read_whole`` and the one-chunk-per-file formats' ``read_units`` read a chunk
    file with."""
    deadline = 0
    while True:
        fd = os.open(path, OPEN_FLAGS | _NONBLOCK)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FileNotFoundError(errno.ENOENT, "not a regular file", path)
            if not deadline:
                deadline = settle_deadline()
            st = settle(fd, path, st, deadline)
            wait_for_writers(fd)  # after the fstat that records the identity, never before
            data = _pread_all(fd, st.st_size, 0)
            if len(data) == st.st_size and identity(os.fstat(fd)) == identity(st):
                return data
        finally:
            os.close(fd)
        if time.monotonic_ns() > deadline:
            raise changing_error(path)


def read_file_ranges(path: str, ranges: Sequence[tuple[int, int | None]],
                     version: str | None = None) -> list[bytes]:
    """``(offset, length)`` ranges of the file at ``path`` (``length`` None: to the end), all
    from one version of it: as ``read_file_whole``, the file is waited for while it is racy
    (``handles.settle``), read, and read again when its identity changed meanwhile; still
    changing after ``handles.SETTLE_NS``: ``FileChangingError``.  ``version`` (a
    ``LocalStore.stat``): the file, once settled, must still be that version, else
    ``FileChangedError`` (what its index says no longer holds).  What every local read of a
    shard, a zfpc or VDS container and metadata goes through."""
    deadline = 0
    while True:
        fd = os.open(path, OPEN_FLAGS | _NONBLOCK)
        try:
            st = os.fstat(fd)
            if not deadline:
                deadline = settle_deadline()
            st = settle(fd, path, st, deadline)
            if version is not None and _version(identity(st)) != version:
                raise version_changed(path)
            wait_for_writers(fd)
            out = [_pread_all(fd, max(st.st_size - off, 0) if n is None else n, off)
                   for off, n in ranges]
            if identity(os.fstat(fd)) == identity(st):
                return out
        finally:
            os.close(fd)
        if time.monotonic_ns() > deadline:
            raise changing_error(path)


def file_version(st: os.stat_result) -> str:
    """A local file's version tag (``ObjectStat.version``): its identity
    (``handles.identity``) as text."""
    return _version(identity(st))


def _version(ident: Identity) -> str:
    return ":".join(map(str, ident))


def _sorted_entries(path: str) -> list[os.DirEntry[str]]:
    """The entries of folder ``path`` sorted by name; none when it is no folder (any more)."""
    try:
        with os.scandir(path) as it:
            return sorted(it, key=_NAME)
    except (NotADirectoryError, FileNotFoundError):
        return []


_NAME = operator.attrgetter("name")


#: Opening a pipe by mistake must not block (no effect on a regular file).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    """``length`` bytes at ``offset`` (fewer only at the end of the file)."""
    data = os.pread(fd, length, offset)
    if len(data) == length or not data:
        return data
    parts = [data]
    got = len(data)
    while got < length:
        more = os.pread(fd, length - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def is_url(path: str) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a local path."""
    head, sep, _ = path.partition("://")
    return (bool(sep) and len(head) > 1 and head[0].isalpha()
            and all(c.isalnum() or c in "+-." for c in head))


#: Opens the store at a URL; set by ``viewer.format.remote`` when it is imported (the package
#: ``viewer.format`` imports it), so that this module, below it, never imports it back.
_url_store_opener: Callable[[str, ReadConfig | None], Store] | None = None


def set_url_store_opener(opener: Callable[[str, ReadConfig | None], Store]) -> None:
    """Make ``open_store`` hand URLs to ``opener``."""
    global _url_store_opener
    _url_store_opener = opener


def open_store(path: str | os.PathLike[str], config: ReadConfig | None = None) -> Store:
    """The store rooted at ``path``: a local folder, or a URL (``http(s)://``, ``s3://``,
    ``gs://``: ``viewer.format.remote``) read with ``config`` (default: the settings in
    effect, ``viewer.format.config.effective``)."""
    p = os.fspath(path)
    if is_url(p):
        if _url_store_opener is None:
            raise UnsupportedFormatError(f"{p}: no store for URLs is loaded")
        return _url_store_opener(p, config)
    return LocalStore(p)


def split(path: str | os.PathLike[str], config: ReadConfig | None = None
          ) -> tuple[Store, str]:
    """``(store of the parent folder, name)`` of a file or folder: a local path or a URL."""
    if is_url(os.fspath(path)):
        parent, _, name = os.fspath(path).rstrip("/").rpartition("/")
        return open_store(parent, config), name
    p = os.path.normpath(os.fspath(path))
    parent, name = os.path.split(p)
    return open_store(parent or "."), name


__all__ = ["Store", "LocalStore", "ObjectStat", "open_store", "is_url", "split",
           "read_file_whole", "read_file_ranges", "version_changed", "file_version"]
