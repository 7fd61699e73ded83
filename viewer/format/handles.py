"""Descriptors of the files being read: bounded by what the process may open, reused, and
checked for changes made by other processes.

A ``FileHandle`` stands for one file opened for reading.  Its descriptor lives in one
process-wide pool whose size comes from ``RLIMIT_NOFILE`` (``budget()``): when the pool is
full, the least recently used descriptor that no read is using is closed, and the handle
opens its file again on its next read (a few microseconds; the parsed header and jump table
stay with their owner).  So a program may hold any number of handles (a compare of two
datasets of 3,000 files each, a window with many layers) and never run out of descriptors.

Reads go through ``os.pread``/``os.preadv``, never through a mapping: a file truncated by
another process while it is read gives a short read (an error naming the file and block), not
a SIGBUS that kills the process.  Every read ends with an ``fstat`` of the descriptor: if the
file's size, modification or change time differ from when the handle was opened, the bytes
just read may mix two versions of the file (and the jump table parsed at open no longer
describes it), so the read raises ``FileChangedError``.  (A write updates those times before
it copies its data; after the handle records the identity it waits, with ``lseek(SEEK_DATA)``,
for any write in progress to finish: see ``wait_for_writers``.)  A file replaced by a rename (how
this project writes) is not changed: the handle keeps reading the old version, whole, until
its owner opens the file again.  Reopening a descriptor after the pool closed it checks the
same identity (device, inode, size, times).

Closing never waits for anything that may itself be closing: ``FileHandle.release_from_gc``
(for ``__del__``) takes no lock at all; it queues the handle, and the next pool operation
closes its descriptor.  A finaliser may run on any thread between any two bytecodes, also
while that thread holds the pool's lock, so it must never try to take it.

**Racy timestamps** (git's rule for its index, here for every local read): a file whose
modification or change time lies less than ``RACY_WINDOW_NS`` before now (``COARSE_WINDOW_NS``
on a file system that keeps whole seconds) may be in the middle of an update another program
makes in several ``write`` calls, and every check above passes on such a half-written file.
Such a file is not trusted: ``settle`` waits until its times are older than the window and
takes its identity then (a change meanwhile starts the wait again), for at most ``SETTLE_NS``;
a file still changing after that is a ``FileChangingError``.  A writer that pauses longer than
the window between two writes of one update can still be seen half done; one that writes a
copy and renames it (as this program does) never is.

Any thread may use a handle; the pool's lock is held only for bookkeeping and ``os.close``
(and ``os.open`` when the pool is full), never during a read.  A file read once and closed
again (``wkw.File.read_whole``) needs no handle: ``OPEN_FLAGS``, ``wait_for_writers`` and
``identity`` give it the same checks.
"""

from __future__ import annotations

import collections
import errno
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from viewer.format.errors import FileChangedError, FileChangingError

try:
    import resource
except ImportError:  # pragma: no cover - not on POSIX
    resource = None  # type: ignore[assignment]

#: Descriptors kept for the rest of the process (Qt, sockets, logs, the other formats).
RESERVED = 48
#: At most this many descriptors are kept open, whatever the limit: as many as the loader keeps
#: storage units open (``viewer.core.chunkio.MAX_OPEN_UNITS``), so that a unit it keeps does not
#: open its file again on every read.
MAX_OPEN = 8192
#: At least this many, however low the limit (fewer make reads reopen files constantly).
MIN_OPEN = 4

#: A file modified less than this long ago is not trusted yet (the racy-timestamp window): longer
#: than the gap between two ``write`` calls of one update, and than a kernel's timestamp tick.
RACY_WINDOW_NS = 100_000_000
#: The window on file systems that keep whole seconds (times with no nanoseconds: FAT, some
#: network mounts): a time there may lie up to two seconds before the write.
COARSE_WINDOW_NS = 2_000_000_000
#: How long a read waits for a file to settle before it is a ``FileChangingError``.
SETTLE_NS = 1_000_000_000

Identity = tuple[int, int, int, int, int]
#: How files are opened for reading.
OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def identity(st: os.stat_result) -> Identity:
    """What tells a file's versions apart (``os.fstat``): device, inode, size, modification
    and change times."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


_identity = identity


def racy_wait_ns(st: os.stat_result, now_ns: int | None = None) -> int:
    """How long (ns) until the file whose ``fstat`` is ``st`` is older than the racy window;
    0 when it is already (see the module docstring)."""
    newest = max(st.st_mtime_ns, st.st_ctime_ns)
    coarse = st.st_mtime_ns % 1_000_000_000 == 0 and st.st_ctime_ns % 1_000_000_000 == 0
    window = COARSE_WINDOW_NS if coarse else RACY_WINDOW_NS
    if now_ns is None:
        now_ns = time.time_ns()
    if newest - now_ns > window:
        # A time in the future (a file server whose clock is ahead of ours): waiting cannot
        # tell anything; the identity checks around every read still hold.
        return 0
    return max(0, newest + window - now_ns)


def settle_deadline() -> int:
    """The ``time.monotonic_ns()`` past which a read stops waiting for a file to settle."""
    return time.monotonic_ns() + SETTLE_NS


def changing_error(path: str) -> FileChangingError:
    return FileChangingError(
        f"the file keeps changing (another program is writing it; waited "
        f"{SETTLE_NS / 1e9:g} s for it to settle); read it again later", path)


def settle(fd: int, path: str, st: os.stat_result, deadline: int) -> os.stat_result:
    """The ``fstat`` of a file no longer racy: ``st`` itself when its times are older than the
    racy window, else taken again once they are (each change restarting the wait), until
    ``deadline`` (``time.monotonic_ns()``) is passed: then ``FileChangingError``."""
    while True:
        wait = racy_wait_ns(st)
        if wait <= 0:
            return st
        if time.monotonic_ns() + wait > deadline:
            raise changing_error(path)
        time.sleep(wait / 1e9)
        st = os.fstat(fd)


def budget() -> int:
    """How many descriptors the pool may keep open: half of what the process may open beyond
    ``RESERVED``, between ``MIN_OPEN`` and ``MAX_OPEN``."""
    soft = 1024
    if resource is not None:
        with suppress(OSError, ValueError):
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            soft = 1 << 20
    return max(MIN_OPEN, min(MAX_OPEN, (soft - RESERVED) // 2))


class _Pool:
    """The process-wide set of open descriptors, least recently used first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: collections.OrderedDict[int, FileHandle] = collections.OrderedDict()
        #: Handles whose owner was collected: closed by the next pool operation.
        self.orphans: collections.deque[FileHandle] = collections.deque()
        self.limit = budget()

    def _drain_orphans(self) -> None:
        # lock held
        while self.orphans:
            try:
                h = self.orphans.popleft()
            except IndexError:
                return
            h._closed = True
            if h._users == 0:
                self._close_fd(h)

    def _close_fd(self, h: FileHandle) -> None:
        # lock held
        fd, h._fd = h._fd, None
        self.open.pop(id(h), None)
        if fd is not None:
            try:  # noqa: SIM105 - contextlib.suppress costs more, once per file read
                os.close(fd)
            except OSError:
                pass

    def _make_room(self, keep: int) -> None:
        # lock held: close idle descriptors until at most ``keep`` are open
        need = len(self.open) - keep
        if need <= 0:
            return
        # The least recently used idle handles, from the front (no copy of the whole pool:
        # at the limit every new file passes here).
        victims: list[FileHandle] = []
        for h in self.open.values():
            if h._users == 0:
                victims.append(h)
                if len(victims) >= need:
                    break
        for h in victims:
            self._close_fd(h)

    def acquire(self, h: FileHandle) -> int:
        """The descriptor of ``h``, opened again if the pool closed it; counted as in use."""
        with self.lock:
            self._drain_orphans()
            if h._closed:
                raise ValueError(f"{h.path} is closed")
            if h._fd is None:
                self._make_room(self.limit - 1)
                h._fd = self._open(h.path)
                try:
                    st = os.fstat(h._fd)
                except OSError:
                    self._close_fd(h)
                    raise
                if _identity(st) != h.identity:
                    self._close_fd(h)
                    raise FileChangedError(
                        "file changed since it was opened (replaced, rewritten or truncated by "
                        "another program); open it again", h.path)
            self.open[id(h)] = h
            self.open.move_to_end(id(h))
            h._users += 1
            return h._fd

    def release(self, h: FileHandle) -> None:
        with self.lock:
            h._users -= 1
            if h._users == 0 and h._closed:
                self._close_fd(h)
            elif len(self.open) > self.limit:
                self._make_room(self.limit)

    def register(self, h: FileHandle, fd: int, in_use: bool = False) -> None:
        with self.lock:
            if self.orphans:
                self._drain_orphans()
            h._fd = fd
            if in_use:
                h._users += 1
            self.open[id(h)] = h
            if len(self.open) > self.limit:
                self._make_room(self.limit)

    def close(self, h: FileHandle) -> None:
        with self.lock:
            h._closed = True
            if h._users == 0:
                self._close_fd(h)

    def _open(self, path: str) -> int:
        # lock held
        flags = OPEN_FLAGS
        try:
            return os.open(path, flags)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
        # Out of descriptors (other code holds many, or the limit was lowered): shrink the
        # pool to what is in use and try once more.
        self.limit = max(MIN_OPEN, min(budget(), len(self.open) // 2))
        self._make_room(0)
        return os.open(path, flags)

    def open_new(self, path: str) -> int:
        if len(self.open) < self.limit - 1 and not self.orphans:
            # Room in the pool (read without the lock: at worst a few more than the limit are
            # open for a moment, ``register`` makes room): the common case takes the lock
            # once per file opened, in ``register``.
            try:
                return os.open(path, OPEN_FLAGS)
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE):
                    raise
        with self.lock:
            self._drain_orphans()
            self._make_room(self.limit - 1)
            return self._open(path)

    def reset_after_fork(self) -> None:
        self.lock = threading.Lock()


_POOL = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.reset_after_fork)


def open_descriptors() -> int:
    """How many descriptors the pool holds now (for tests and benchmarks)."""
    with _POOL.lock:
        _POOL._drain_orphans()
        return len(_POOL.open)


def pool_limit() -> int:
    return _POOL.limit


class FileHandle:
    """One file opened for reading through the pool.  Raises ``FileNotFoundError`` (and other
    ``OSError``) like ``os.open``.  Thread-safe.

    ``in_use``: the new descriptor is counted as in use at once, as if by ``acquire`` (a
    caller that reads right after opening saves a round trip through the pool's lock; it ends
    with ``release``)."""

    def __init__(self, path: str | os.PathLike[str], *, in_use: bool = False) -> None:
        self.path = os.fspath(path)
        self._fd: int | None = None
        self._users = 0
        self._closed = False
        fd = _POOL.open_new(self.path)
        try:
            st = settle(fd, self.path, os.fstat(fd), settle_deadline())
            wait_for_writers(fd)  # after the fstat: see ``wait_for_writers``
        except BaseException:
            os.close(fd)
            raise
        self.identity: Identity = _identity(st)
        self.size = st.st_size
        _POOL.register(self, fd, in_use)

    @property
    def fd(self) -> int | None:
        """The descriptor while the pool keeps it open (use it only between ``acquire`` and
        ``release``, or right after opening the handle ``in_use``)."""
        return self._fd

    def acquire(self) -> int:
        """The descriptor, opened again if the pool closed it, counted as in use (the pool does
        not close it) until ``release``: what ``reading`` does, without a context manager
        (a read of one small block costs a few microseconds, and a generator's
        ``__enter__``/``__exit__`` were a third of them).  ``ValueError`` when closed."""
        return _POOL.acquire(self)

    def release(self) -> None:
        """End a use begun with ``acquire`` (or by opening the handle ``in_use``)."""
        _POOL.release(self)

    def verify(self, fd: int) -> None:
        """Raise ``FileChangedError`` if the file changed since the handle was opened (one
        ``fstat``; what ``reading`` checks when its block ends)."""
        if self._changed(fd):
            raise self._changed_error()

    @contextmanager
    def reading(self, check: bool = True) -> Iterator[int]:
        """``with handle.reading() as fd: os.pread(fd, ...)``: the descriptor, kept open for
        the block; afterwards (``check``) raises ``FileChangedError`` if the file changed
        since the handle was opened (what was read may then mix two versions)."""
        fd = _POOL.acquire(self)
        try:
            try:
                yield fd
            except Exception as exc:
                # A short read of a file that was truncated meanwhile, say: say what happened.
                if check and not isinstance(exc, FileChangedError) and self._changed(fd):
                    raise self._changed_error() from exc
                raise
            if check and self._changed(fd):
                raise self._changed_error()
        finally:
            _POOL.release(self)

    def _changed(self, fd: int) -> bool:
        try:
            return _identity(os.fstat(fd)) != self.identity
        except OSError:
            return True

    def _changed_error(self) -> FileChangedError:
        return FileChangedError(
            "file changed while it was read (rewritten or truncated by another program); "
            "open it again", self.path)

    def check_unchanged(self) -> None:
        """Raise ``FileChangedError`` if the file changed since the handle was opened."""
        with self.reading():
            pass

    def pread(self, n: int, offset: int) -> bytes:
        with self.reading() as fd:
            return os.pread(fd, n, offset)

    def readinto(self, buf: Any, offset: int) -> int:
        """Fill ``buf`` (a writable buffer) from ``offset``; returns the bytes read (fewer at
        the end of the file)."""
        with self.reading() as fd:
            return readinto_fd(fd, buf, offset)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the descriptor (at once, or when the last read using it ends)."""
        if not self._closed:
            _POOL.close(self)

    def release_from_gc(self) -> None:
        """``close`` for finalisers: takes no lock (the collector may run while this thread
        holds the pool's lock); the descriptor is closed by the next pool operation."""
        if not self._closed:
            _POOL.orphans.append(self)


def wait_for_writers(fd: int) -> None:
    """Return once no ``write`` into the file is half done.  A write updates the file's change
    time *before* it copies its data, so a read that overlaps a write which began before the
    handle recorded the file's identity would go unnoticed by the ``fstat`` after it.  Linux
    file systems (ext4, xfs, btrfs, tmpfs) hold the inode's lock across a buffered write and
    take it for ``lseek(SEEK_DATA)``: that seek waits for such a write to finish.

    Call it *after* the ``fstat`` that records the identity, never before: a write that
    begins between this wait and that ``fstat`` would have its new times recorded as the
    file's and its data copied while the read runs (a torn block that every check passed;
    seen about once in four runs of ``tests/faults/test_concurrent_truncate.py``).  A write
    that begins after the ``fstat`` changes the times again: Linux 6.13 and later give the
    next change after an ``fstat`` a fine-grained time (multigrain timestamps on ext4, xfs,
    btrfs and tmpfs); older kernels only tell writes a timer tick apart."""
    if _SEEK_DATA is None:
        return
    try:
        os.lseek(fd, 0, _SEEK_DATA)
    except OSError:  # ENXIO (no data), or a file system without it: nothing to wait for
        return


_SEEK_DATA: int | None = getattr(os, "SEEK_DATA", None)


def readinto_fd(fd: int, buf: Any, offset: int) -> int:
    """``os.preadv`` into ``buf`` until it is full or the file ends."""
    view = memoryview(buf).cast("B")
    n = len(view)
    if _PREADV is not None:
        total = _PREADV(fd, [view], offset)  # nearly always all of it at once
        if total >= n or total <= 0:
            return max(total, 0)
    else:  # pragma: no cover - platforms without preadv
        total = 0
    while total < n:
        if _PREADV is not None:
            got = _PREADV(fd, [view[total:]], offset + total)
        else:  # pragma: no cover - platforms without preadv
            raw = os.pread(fd, n - total, offset + total)
            got = len(raw)
            view[total:total + got] = raw
        if got <= 0:
            break
        total += got
    return total


_PREADV: Callable[[int, list[memoryview], int], int] | None = getattr(os, "preadv", None)
