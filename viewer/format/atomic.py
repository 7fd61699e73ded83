"""Atomic writes: a file (or folder) is built under a temporary name in its destination's
folder, flushed to disk, and renamed over the destination, so that whoever looks, even after
a kill or a power cut, finds the old version or the new one, never a torn one.

- Temporaries are named ``.{name}.tmp-{pid}-{token}``.  ``clean_stale(folder)`` removes those
  whose process is gone (a killed run's); every writer here calls it on its folder first, so
  the temporaries of a killed run are cleaned by the next.
- Files and folders are created with mode 0666 / 0777 and the process's umask applied, like
  ``open()`` and ``mkdir`` do (``tempfile.mkstemp``/``mkdtemp`` would make them 0600 / 0700,
  and the rename would keep that).
- ``replace_copy`` is for changing part of an existing file (raw WKW writes): the file is
  copied to a temporary (a reflink where the file system makes them, else the data regions
  copied in the kernel, holes kept: a raw file is sparse), the caller patches the copy, and
  the copy is renamed over the file.  So a partial write into a raw file costs a copy of the
  file's data on file systems without reflinks: write whole files (or boxes covering them) in
  bulk.

Qt-free; any thread (distinct destinations).
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

_TEMP = re.compile(r"^\..+\.tmp-(\d+)-[0-9a-f]{8}$")


def temp_name(path: str | os.PathLike[str]) -> str:
    """A fresh temporary path beside ``path`` (same folder, so the rename stays atomic)."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return True
    return True


def clean_stale(folder: str | os.PathLike[str]) -> list[str]:
    """Remove the temporaries in ``folder`` left by processes that no longer run; their
    paths.  Never fails (a folder that cannot be listed has nothing to clean).  Listing a
    folder costs far less than the fsync of the write that calls it."""
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = _TEMP.match(name)
        if m is None or _alive(int(m.group(1))):
            continue
        full = os.path.join(os.fspath(folder), name)
        try:
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            else:
                os.unlink(full)
            removed.append(full)
        except OSError:
            pass
    return removed


def _create(tmp: str) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    return os.open(tmp, flags, 0o666)  # the umask applies, as for open()


def fsync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (where folders can be opened)."""
    try:
        fd = os.open(folder or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path: str | os.PathLike[str],
                     payload: bytes | bytearray | memoryview
                     | Iterable[bytes | bytearray | memoryview]) -> None:
    """Write ``payload`` (bytes, or an iterable of byte strings) to a temporary file beside
    ``path``, fsync it, and rename it over ``path``."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    clean_stale(folder)
    tmp = temp_name(path)
    fd = _create(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(payload, (bytes, bytearray, memoryview)):
                fh.write(payload)
            else:
                fh.writelines(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise
    fsync_folder(folder)


@contextmanager
def replace_copy(path: str | os.PathLike[str], size: int | None = None) -> Iterator[int]:
    """``with replace_copy(path) as fd``: a read-write descriptor of a temporary copy of
    ``path`` (an empty file when ``path`` does not exist), extended to ``size`` bytes when
    given; when the block ends without an exception the copy is fsynced and renamed over
    ``path``.  The copy keeps the file's holes and its permission bits."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    clean_stale(folder)
    tmp = temp_name(path)
    fd = _create(tmp)
    try:
        os.close(fd)
        fd = os.open(tmp, os.O_RDWR | getattr(os, "O_BINARY", 0))
        try:
            src = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            src = -1
        if src >= 0:
            try:
                st = os.fstat(src)
                os.fchmod(fd, st.st_mode & 0o7777)
                _copy_sparse(src, fd, st.st_size)
            finally:
                os.close(src)
        if size is not None and os.fstat(fd).st_size < size:
            os.ftruncate(fd, size)
        yield fd
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        _unlink(tmp)
        raise
    fsync_folder(folder)


#: ``ioctl`` request that makes a file share another's blocks (a reflink: btrfs, xfs, ...).
FICLONE = 0x40049409


def _copy_sparse(src: int, dst: int, size: int) -> None:
    """Copy ``size`` bytes from ``src`` to ``dst``: a reflink where the file system can (no
    bytes copied), else the data regions only (holes stay holes), copied in the kernel."""
    try:
        import fcntl

        fcntl.ioctl(dst, FICLONE, src)
        return
    except (ImportError, OSError):
        pass
    os.ftruncate(dst, size)
    seek_data = getattr(os, "SEEK_DATA", None)
    seek_hole = getattr(os, "SEEK_HOLE", None)
    regions: list[tuple[int, int]] = []
    if seek_data is not None and seek_hole is not None:
        pos = 0
        try:
            while pos < size:
                try:
                    start = os.lseek(src, pos, seek_data)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:
                        break  # only a hole is left
                    raise
                end = min(os.lseek(src, start, seek_hole), size)
                regions.append((start, end))
                pos = end
        except OSError:
            regions = [(0, size)]
    else:
        regions = [(0, size)]
    step = 8 << 20
    in_kernel = hasattr(os, "copy_file_range")
    for start, end in regions:
        at = start
        while at < end:
            if in_kernel:
                try:
                    n = os.copy_file_range(src, dst, min(step, end - at), at, at)
                except OSError:
                    in_kernel = False
                    continue
                if n <= 0:
                    return
                at += n
                continue
            chunk = os.pread(src, min(step, end - at), at)
            if not chunk:
                return
            os.pwrite(dst, chunk, at)
            at += len(chunk)


def commit_file(tmp: str, path: str | os.PathLike[str]) -> None:
    """Finish a temporary file someone else wrote (``temp_name(path)``): fsync it and rename
    it over ``path``; on failure the temporary is removed."""
    path = os.fspath(path)
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise
    fsync_folder(os.path.dirname(path) or ".")


def make_temp_folder(path: str | os.PathLike[str]) -> str:
    """Create a temporary folder beside ``path`` (mode 0777 less the umask) to build a folder
    in and rename into place; its path.  Stale ones of killed runs are removed first."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    clean_stale(folder)
    tmp = temp_name(os.path.abspath(path))
    os.mkdir(tmp, 0o777)
    return tmp


def discard(tmp: str) -> None:
    """Remove a temporary that will not be committed (no error if it is not there)."""
    _unlink(tmp)


def _unlink(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)
