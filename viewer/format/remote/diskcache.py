"""A bounded on-disk cache of fetched byte ranges, so that a second visit costs no request.

Layout: one folder per object (named by a hash of its URL) holding one file per fetched range,
named ``{start}-{end}.c32``: the server's bytes followed by their CRC-32C (4 bytes, little
endian), and ``meta.json`` (the URL, the object's size and ETag when the server gave them).  A
read is served when the ranges cached cover it (one or several pieces).

**A cache that cannot lie.**  A range read from disk is read whole and its checksum checked;
one that fails (a flipped bit, a file cut short or changed by anyone) is deleted and is a miss:
the store fetches the bytes again from the server and the read goes on with them, and the new
answer replaces the bad range.  Only answers are kept, never failures.  Files are written to a
temporary name of their own (process and thread) and renamed, so neither this process nor
another one sharing the folder ever sees half a range; a range deleted under us is a miss.
Files of the unchecked layout of earlier versions (``{start}-{end}``) are deleted when found.

When a fetch of an object reports a size or ETag other than the one recorded, the object
changed on the server: its cached ranges are dropped.  Least recently used ranges go first once
the cache holds more than its budget.  Thread-safe.

**Written behind** (``write_behind=True``, the remote store's cache): ``put`` keeps the bytes
in memory and returns; a writer thread of the cache puts them on disk.  The request pool calls
``put`` on its one event loop for every answer, and writing there (a file per range) held every
later answer back: on the remote benchmark's far jumps the loop spent most of its time in
those writes, and the answers of one jump reached the loader one after another (figures in
docs/performance.md).
The ranges fetched last (up to ``memory_bytes``, and every range not on disk yet) are also
served from memory: read-ahead fetched a moment ago is read without opening a file.
``flush`` waits until everything put is on disk (the process's end waits for it too).  The
writer runs at a lower priority (``WRITER_NICE``, where the system allows a thread its own):
it is the one thread nobody waits for, and on two cores it took a core from the decoding and
drawing of a jump.  Should it fall ``MAX_UNWRITTEN_BYTES`` behind, ranges fetched meanwhile are
not cached (read again if asked for again).
"""

from __future__ import annotations

import atexit
import bisect
import contextlib
import hashlib
import json
import os
import sys
import threading
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

META = "meta.json"
#: The suffix of a range's file (a range with its checksum).
SUFFIX = ".c32"
#: Bytes of the CRC-32C after a range's bytes.
TRAILER = 4
#: Bytes of the ranges fetched last that a write-behind cache keeps in memory as well.
MEMORY_BYTES = 64 << 20
#: A writer thread with nothing to write for this long ends (the next ``put`` starts one).
WRITER_IDLE_S = 5.0
#: The writer thread's nice value (Linux: a thread's own; elsewhere the process's is left).
WRITER_NICE = 10
#: Bytes put but not on disk yet beyond which a write-behind cache keeps no more.
MAX_UNWRITTEN_BYTES = 512 << 20


@dataclass
class _Object:
    folder: str
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    longest: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    #: Its ``meta.json`` is on disk (found by the scan, or written).
    meta_on_disk: bool = False


Key = tuple[str, int, int]


class RangeCache:
    """The cache below ``root``, at most ``budget_bytes`` (see the module docstring).
    ``write_behind``: ``put`` returns before the bytes are on disk (a writer thread of its own
    writes them), the last ``memory_bytes`` of them also served from memory."""

    def __init__(self, root: str, budget_bytes: int, *, write_behind: bool = False,
                 memory_bytes: int = MEMORY_BYTES) -> None:
        self.root = root
        self.budget = int(budget_bytes)
        self._lock = threading.Lock()
        self._objects: dict[str, _Object] = {}
        #: (url, start, end) -> bytes, least recently used first (every range kept).
        self._lru: OrderedDict[Key, int] = OrderedDict()
        self._total = 0
        self._scanned = False
        self.write_behind = write_behind
        self.memory_bytes = int(memory_bytes) if write_behind else 0
        #: Ranges held in memory, least recently put first; ``_unwritten``: those of them not
        #: on disk yet (never dropped from memory before they are).
        self._mem: OrderedDict[Key, bytes] = OrderedDict()
        self._mem_total = 0
        self._unwritten: dict[Key, bytes] = {}
        self._unwritten_total = 0
        self._writes: deque[Key] = deque()
        self._wrote = threading.Condition(self._lock)
        self._writer: threading.Thread | None = None
        #: ``close`` asked the writer to end once it has written everything.
        self._ending = False

    # -- index ----------------------------------------------------------------------------------
    def _folder(self, url: str) -> str:
        h = hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]
        return os.path.join(self.root, h[:2], h)

    def _scan_locked(self) -> None:
        """Index what earlier runs left (once): every object's ranges, oldest first."""
        if self._scanned:
            return
        self._scanned = True
        found: list[tuple[float, str, int, int, int]] = []
        try:
            tops = os.listdir(self.root)
        except OSError:
            return
        for top in tops:
            try:
                folders = os.listdir(os.path.join(self.root, top))
            except OSError:
                continue
            for name in folders:
                folder = os.path.join(self.root, top, name)
                try:
                    with open(os.path.join(folder, META), encoding="utf-8") as fh:
                        meta = json.load(fh)
                    url = str(meta["url"])
                except (OSError, ValueError, KeyError, TypeError):
                    continue
                obj = self._objects.setdefault(url, _Object(folder, meta=meta))
                obj.meta_on_disk = True
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    continue
                for entry in entries:
                    rng = _parse_name(entry.name)
                    if rng is None:
                        if _parse_name(entry.name + SUFFIX) is not None:
                            # a range of the unchecked layout: never served
                            with contextlib.suppress(OSError):
                                os.unlink(entry.path)
                        continue
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    if st.st_size != rng[1] - rng[0] + TRAILER:
                        continue
                    self._insert(obj, *rng)
                    found.append((st.st_mtime, url, rng[0], rng[1], st.st_size))
        found.sort()
        for _, url, s, e, n in found:
            self._lru[(url, s, e)] = n
            self._total += n
        self._evict_locked()

    @staticmethod
    def _insert(obj: _Object, start: int, end: int) -> None:
        i = bisect.bisect_left(obj.starts, start)
        while i < len(obj.starts) and obj.starts[i] == start:
            if obj.ends[i] == end:
                return
            i += 1
        obj.starts.insert(i, start)
        obj.ends.insert(i, end)
        obj.longest = max(obj.longest, end - start)

    @staticmethod
    def _remove(obj: _Object, start: int, end: int) -> None:
        i = bisect.bisect_left(obj.starts, start)
        while i < len(obj.starts) and obj.starts[i] == start:
            if obj.ends[i] == end:
                del obj.starts[i]
                del obj.ends[i]
                return
            i += 1

    def _pieces(self, obj: _Object, start: int, end: int) -> list[tuple[int, int, int, int]] | None:
        """``(range start, range end, from, to)`` pieces covering ``[start, end)``, or None."""
        lo = bisect.bisect_left(obj.starts, start - obj.longest)
        hi = bisect.bisect_left(obj.starts, end)
        pos = start
        out: list[tuple[int, int, int, int]] = []
        for i in range(lo, hi):
            a, b = obj.starts[i], obj.ends[i]
            if a > pos:
                break
            if b > pos:
                stop = min(b, end)
                out.append((a, b, pos, stop))
                pos = stop
                if pos >= end:
                    return out
        return out if pos >= end else None

    def _object_locked(self, url: str) -> _Object:
        self._scan_locked()
        obj = self._objects.get(url)
        if obj is None:
            obj = self._objects[url] = _Object(self._folder(url))
        return obj

    # -- public -----------------------------------------------------------------------------------
    def meta(self, url: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._object_locked(url).meta)

    def covers(self, url: str, start: int, end: int) -> bool:
        with self._lock:
            return end <= start or self._pieces(self._object_locked(url), start, end) is not None

    def get(self, url: str, start: int, end: int) -> bytes | None:
        """The bytes ``[start, end)`` when cached, else None."""
        if end <= start:
            return b""
        with self._lock:
            obj = self._object_locked(url)
            pieces = self._pieces(obj, start, end)
            if pieces is None:
                return None
            held: list[bytes | None] = []
            for a, b, _, _ in pieces:
                key = (url, a, b)
                if key in self._lru:
                    self._lru.move_to_end(key)
                held.append(self._mem.get(key))
            folder = obj.folder
        parts = []
        for (a, b, frm, to), mem in zip(pieces, held, strict=True):
            if mem is not None:
                parts.append(mem if (frm, to) == (a, b) else mem[frm - a:to - a])
                continue
            data = _read_checked(os.path.join(folder, _range_name(a, b)), b - a)
            if data is None:  # gone, cut short or failing its checksum: fetched again
                self._forget(url, a, b, unlink=True)
                return None
            parts.append(data if (frm, to) == (a, b) else data[frm - a:to - a])
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def put(self, url: str, start: int, data: bytes | memoryview, size: int | None = None,
            etag: str | None = None) -> None:
        """Keep ``data`` fetched at ``start``; ``size``/``etag``: the object's as the answer
        gave them (a change drops what was cached of it)."""
        if self.budget <= 0:
            return
        end = start + len(data)
        if self.write_behind:
            self._put_behind(url, start, end, bytes(data), size, etag)
            return
        with self._lock:
            obj = self._object_locked(url)
            self._check_meta_locked(url, obj, size, etag)
            if end <= start or self._pieces(obj, start, end) is not None:
                return
            folder = obj.folder
            write_meta = not os.path.isfile(os.path.join(folder, META))
            meta = dict(obj.meta)
        try:
            os.makedirs(folder, exist_ok=True)
            if write_meta or meta.get("_dirty"):
                meta.pop("_dirty", None)
                _write_atomically(os.path.join(folder, META),
                                  json.dumps({**meta, "url": url}).encode("utf-8"))
            _write_range(os.path.join(folder, _range_name(start, end)), bytes(data))
        except OSError:
            return  # a full or read-only disk: the cache is only an optimisation
        with self._lock:
            obj.meta.pop("_dirty", None)
            self._insert(obj, start, end)
            self._lru[(url, start, end)] = end - start
            self._total += end - start
            self._evict_locked()

    # -- written behind ---------------------------------------------------------------------------
    def _put_behind(self, url: str, start: int, end: int, data: bytes, size: int | None,
                    etag: str | None) -> None:
        """``put`` of a write-behind cache: kept in memory and indexed now, on disk soon."""
        key = (url, start, end)
        with self._lock:
            obj = self._object_locked(url)
            self._check_meta_locked(url, obj, size, etag)
            if end <= start or self._pieces(obj, start, end) is not None:
                return
            if self._unwritten_total + end - start > MAX_UNWRITTEN_BYTES:
                return  # the writer is far behind: not cached
            self._insert(obj, start, end)
            self._lru[key] = end - start
            self._total += end - start
            self._mem[key] = data
            self._mem_total += end - start
            self._unwritten[key] = data
            self._unwritten_total += end - start
            self._writes.append(key)
            self._evict_locked()
            self._trim_memory_locked()
            self._ending = False  # a writer told to end goes on: there is more to write
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                                name="wkw-remote-cache-writer")
                self._writer.start()
                _writers.add(self)
            self._wrote.notify_all()

    def _trim_memory_locked(self) -> None:
        """Drop from memory the oldest ranges already on disk, down to ``memory_bytes``."""
        if self._mem_total <= self.memory_bytes:
            return
        for key in list(self._mem):
            if self._mem_total <= self.memory_bytes:
                return
            if key in self._unwritten:
                continue
            self._mem_total -= len(self._mem.pop(key))

    def _write_loop(self) -> None:
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WRITER_NICE)
        while True:
            with self._lock:
                while not self._writes:
                    if self._ending or (not self._wrote.wait(WRITER_IDLE_S)
                                        and not self._writes):
                        self._writer = None  # idle or told to end: the next put starts one
                        self._wrote.notify_all()
                        return
                key = self._writes.popleft()
                data = self._unwritten.get(key)
                obj = self._objects.get(key[0])
                if data is None or obj is None:
                    self._wrote.notify_all()  # dropped before it was written
                    continue
                meta = None
                if not obj.meta_on_disk or obj.meta.get("_dirty"):
                    meta = {k: v for k, v in obj.meta.items() if k != "_dirty"}
                    obj.meta.pop("_dirty", None)
                folder = obj.folder
            url, start, end = key
            ok = True
            try:
                os.makedirs(folder, exist_ok=True)
                if meta is not None:
                    _write_atomically(os.path.join(folder, META),
                                      json.dumps({**meta, "url": url}).encode("utf-8"))
                _write_range(os.path.join(folder, _range_name(start, end)), data)
            except OSError:
                ok = False  # a full or read-only disk: the cache is only an optimisation
            with self._lock:
                if meta is not None and ok:
                    obj.meta_on_disk = True
                if self._unwritten.get(key) is data:
                    self._unwritten_total -= len(data)
                    del self._unwritten[key]
                    if not ok:
                        self._drop_locked(url, obj, start, end)
                    self._trim_memory_locked()
                elif key not in self._lru:
                    # Dropped (evicted, cleared, the object changed) while being written.
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(folder, _range_name(start, end)))
                self._wrote.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every range put is on disk (a write-behind cache); whether it is."""
        with self._lock:
            return self._wrote.wait_for(lambda: not self._unwritten, timeout)

    def close(self, timeout: float = 10.0) -> bool:
        """Write what is held to disk (up to ``timeout`` seconds) and end the writer thread;
        a later ``put`` starts a new one.  Whether everything was written."""
        written = self.flush(timeout)
        with self._lock:
            writer = self._writer
            self._ending = True
            self._wrote.notify_all()
        if writer is not None:
            writer.join(timeout)
        with self._lock:
            self._ending = False
        return written

    def note_meta(self, url: str, size: int | None, etag: str | None) -> None:
        with self._lock:
            self._check_meta_locked(url, self._object_locked(url), size, etag)

    def _check_meta_locked(self, url: str, obj: _Object, size: int | None,
                           etag: str | None) -> None:
        old_size, old_tag = obj.meta.get("size"), obj.meta.get("etag")
        changed = ((size is not None and old_size is not None and size != old_size)
                   or (etag is not None and old_tag is not None and etag != old_tag))
        if changed:
            for s, e in list(zip(obj.starts, obj.ends, strict=True)):
                self._drop_locked(url, obj, s, e)
            obj.meta = {}
        if size is not None and obj.meta.get("size") != size:
            obj.meta["size"] = size
            obj.meta["_dirty"] = True
        if etag is not None and obj.meta.get("etag") != etag:
            obj.meta["etag"] = etag
            obj.meta["_dirty"] = True

    def _drop_locked(self, url: str, obj: _Object, start: int, end: int) -> None:
        self._remove(obj, start, end)
        self._uncount_locked((url, start, end))
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(obj.folder, _range_name(start, end)))

    def _forget(self, url: str, start: int, end: int, unlink: bool = False) -> None:
        """Take a range out of the index (``unlink``: and delete its file, a bad one)."""
        with self._lock:
            obj = self._objects.get(url)
            if obj is not None:
                if unlink:
                    self._drop_locked(url, obj, start, end)
                    return
                self._remove(obj, start, end)
            self._uncount_locked((url, start, end))

    def _uncount_locked(self, key: Key) -> None:
        """Take a range out of the LRU, the memory copies and the writes still pending, and
        out of their totals.  Under ``_lock``."""
        n = self._lru.pop(key, None)
        if n is not None:
            self._total -= n
        held = self._mem.pop(key, None)
        if held is not None:
            self._mem_total -= len(held)
        pending = self._unwritten.pop(key, None)
        if pending is not None:
            self._unwritten_total -= len(pending)

    def _evict_locked(self) -> None:
        while self._total > self.budget and self._lru:
            (url, s, e), _ = next(iter(self._lru.items()))
            obj = self._objects.get(url)
            if obj is None:
                n = self._lru.pop((url, s, e))
                self._total -= n
                continue
            self._drop_locked(url, obj, s, e)

    def set_budget(self, budget_bytes: int) -> None:
        """A new size: least recently used ranges go at once when it is smaller."""
        with self._lock:
            self.budget = max(0, int(budget_bytes))
            if self._scanned:
                self._evict_locked()

    @property
    def used_bytes(self) -> int:
        with self._lock:
            self._scan_locked()
            return self._total

    def clear(self) -> None:
        with self._lock:
            self._scan_locked()
            for (url, s, e) in list(self._lru):
                obj = self._objects.get(url)
                if obj is not None:
                    self._drop_locked(url, obj, s, e)
            self._objects.clear()


#: Write-behind caches with a writer: the process's end waits (a while) for what they hold.
_writers: weakref.WeakSet[RangeCache] = weakref.WeakSet()


def close_all(timeout: float = 10.0) -> None:
    """``RangeCache.close`` of every cache that started a writer, the shared one and any other
    (a test's, a command's with its own folder): what ``lifecycle.shutdown`` ends."""
    for cache in list(_writers):
        cache.close(timeout)


@atexit.register
def _flush_all() -> None:
    for cache in list(_writers):
        cache.flush(timeout=10.0)


def _range_name(start: int, end: int) -> str:
    return f"{start}-{end}{SUFFIX}"


def _parse_name(name: str) -> tuple[int, int] | None:
    if not name.endswith(SUFFIX):
        return None
    a, sep, b = name[:-len(SUFFIX)].partition("-")
    if not sep or not a.isdigit() or not b.isdigit():
        return None
    s, e = int(a), int(b)
    return (s, e) if e > s else None


def _crc(data: bytes) -> bytes:
    import google_crc32c

    return int(google_crc32c.value(data)).to_bytes(TRAILER, "little")


def _write_range(path: str, data: bytes) -> None:
    """A range's file: its bytes and their CRC-32C, under a temporary name then renamed."""
    _write_atomically(path, data + _crc(data))


def _read_checked(path: str, nbytes: int) -> bytes | None:
    """The ``nbytes`` of a range's file when it is whole and its checksum holds, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        raw = os.pread(fd, nbytes + TRAILER + 1, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) != nbytes + TRAILER:
        return None
    data = raw[:nbytes]
    return data if _crc(data) == raw[nbytes:] else None


def _write_atomically(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


__all__ = ["RangeCache"]
