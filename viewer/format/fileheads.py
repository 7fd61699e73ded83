"""The first bytes of many local files at once, for a metadata check of a dataset of many
small files (one WKW file, N5 chunk or Zarr v2 chunk per chunk).

``read_heads(paths, nbytes)`` opens each file, takes its identity (``fstat``), waits for a
write in progress (``handles.wait_for_writers``), reads its first ``nbytes`` bytes, checks
the identity again and closes it: what ``handles.FileHandle`` and ``wkw.File.read_whole`` do
for one file, for a whole batch in one call of the native helper (``native/heads.c``: no
interpreter lock, so threads overlap, and no Python object per file), or in Python where the
helper was not built (the same answers: the tests compare them).  Nothing is judged here; the
caller decides which files are sound (``settled`` says which are past the racy window) and
checks the others the ordinary way.  Any thread.
"""

from __future__ import annotations

import ctypes
import errno as errno_codes
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from viewer.format.handles import COARSE_WINDOW_NS, OPEN_FLAGS, RACY_WINDOW_NS, wait_for_writers
from viewer.format.native.heads import LIBRARY

#: Columns of ``Heads.info``.
ERRNO, GOT, DEV, INO, SIZE, MTIME, CTIME, CHANGED = range(8)
_SLOTS = 8


@dataclass(frozen=True)
class Heads:
    """What ``read_heads`` found, one row per path: ``data`` ``(N, nbytes)`` the first bytes
    (zeros past ``got``), ``info`` ``(N, 8)``: errno (0: read), bytes read, device, inode,
    size, modification and change times (ns) of the first ``fstat``, and 1 when the second
    ``fstat`` differed (the file changed while it was read)."""

    data: npt.NDArray[np.uint8]
    info: npt.NDArray[np.int64]

    @property
    def read(self) -> npt.NDArray[np.bool_]:
        """Files opened and read with no error, unchanged meanwhile."""
        return np.asarray((self.info[:, ERRNO] == 0) & (self.info[:, CHANGED] == 0))

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        return self.info[:, SIZE]

    def settled(self, now_ns: int | None = None) -> npt.NDArray[np.bool_]:
        """Files whose times lie outside the racy window (``handles.racy_wait_ns`` is 0), so
        that what was read is trusted: the others are read the ordinary way, which waits."""
        now = time.time_ns() if now_ns is None else now_ns
        mtime, ctime = self.info[:, MTIME], self.info[:, CTIME]
        newest = np.maximum(mtime, ctime)
        coarse = (mtime % 1_000_000_000 == 0) & (ctime % 1_000_000_000 == 0)
        window = np.where(coarse, COARSE_WINDOW_NS, RACY_WINDOW_NS)
        return np.asarray((newest - now > window) | (newest + window <= now))


def native() -> bool:
    """True when the native helper was built and loads."""
    return LIBRARY is not None


def read_heads(paths: Sequence[str], nbytes: int, use_native: bool = True) -> Heads:
    """The first ``nbytes`` bytes of each file and what went on reading them (``Heads``)."""
    n = len(paths)
    nbytes = max(int(nbytes), 0)
    data = np.zeros((n, nbytes), np.uint8)
    info = np.zeros((n, _SLOTS), np.int64)
    if not n:
        return Heads(data, info)
    if use_native and LIBRARY is not None and nbytes > 0:
        encoded = [os.fsencode(p) for p in paths]
        starts = np.zeros(n, np.int64)
        if n > 1:
            np.cumsum([len(e) + 1 for e in encoded[:-1]], out=starts[1:])
        joined = b"\0".join(encoded) + b"\0"
        LIBRARY.heads_read(joined, starts.ctypes.data, n, nbytes, data.ctypes.data,
                           info.ctypes.data)
        return Heads(data, info)
    for i, path in enumerate(paths):
        _read_one(path, nbytes, data, info, i)
    return Heads(data, info)


def _read_one(path: str, nbytes: int, data: npt.NDArray[np.uint8],
              info: npt.NDArray[np.int64], i: int) -> None:
    row = info[i]
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as exc:
        row[ERRNO] = exc.errno or errno_codes.EIO
        return
    try:
        try:
            before = os.fstat(fd)
        except OSError as exc:
            row[ERRNO] = exc.errno or errno_codes.EIO
            return
        row[DEV], row[INO], row[SIZE] = before.st_dev, before.st_ino, before.st_size
        row[MTIME], row[CTIME] = before.st_mtime_ns, before.st_ctime_ns
        wait_for_writers(fd)
        got = 0
        if nbytes > 0:
            buf = (ctypes.c_uint8 * nbytes).from_address(data[i].ctypes.data)
            view = memoryview(buf).cast("B")
            try:
                while got < nbytes:
                    r = os.preadv(fd, [view[got:]], got)
                    if r <= 0:
                        break
                    got += r
            except OSError as exc:
                row[ERRNO] = exc.errno or errno_codes.EIO
        row[GOT] = got
        try:
            after = os.fstat(fd)
            row[CHANGED] = int((after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns,
                                after.st_ctime_ns) != (before.st_dev, before.st_ino,
                                                       before.st_size, before.st_mtime_ns,
                                                       before.st_ctime_ns))
        except OSError:
            row[CHANGED] = 1
    finally:
        os.close(fd)


__all__ = ["Heads", "read_heads", "native", "ERRNO", "GOT", "DEV", "INO", "SIZE", "MTIME",
           "CTIME", "CHANGED"]
