"""A bounded on-disk cache of fetched byte ranges, so that a second visit costs no request.

Layout: one folder per object (named by a hash of its URL) holding one file per fetched range,
named ``{start}-{end}``, and ``meta.json`` (the URL, the object's size and ETag when the server
gave them).  A read is served when the ranges cached cover it (one or several pieces).  When a
fetch of an object reports a size or ETag other than the one recorded, the object changed on the
server: its cached ranges are dropped.  Least recently used ranges go first once the cache holds
more than its budget.  Files are written to a temporary name and renamed, so a reader (another
process too) never sees half a range; a range deleted under us is a miss.  Thread-safe.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

META = "meta.json"


@dataclass
class _Object:
    folder: str
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    longest: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


class RangeCache:
    def __init__(self, root: str, budget_bytes: int) -> None:
        self.root = root
        self.budget = int(budget_bytes)
        self._lock = threading.Lock()
        self._objects: dict[str, _Object] = {}
        #: (url, start, end) -> bytes, least recently used first (every range on disk).
        self._lru: OrderedDict[tuple[str, int, int], int] = OrderedDict()
        self._total = 0
        self._scanned = False

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
                try:
                    entries = list(os.scandir(folder))
                except OSError:
                    continue
                for entry in entries:
                    rng = _parse_name(entry.name)
                    if rng is None:
                        continue
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    if st.st_size != rng[1] - rng[0]:
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
            for a, b, _, _ in pieces:
                key = (url, a, b)
                if key in self._lru:
                    self._lru.move_to_end(key)
            folder = obj.folder
        parts = []
        for a, b, frm, to in pieces:
            try:
                fd = os.open(os.path.join(folder, f"{a}-{b}"), os.O_RDONLY)
            except OSError:
                self._forget(url, a, b)
                return None
            try:
                data = os.pread(fd, to - frm, frm - a)
            finally:
                os.close(fd)
            if len(data) != to - frm:
                self._forget(url, a, b)
                return None
            parts.append(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def put(self, url: str, start: int, data: bytes | memoryview, size: int | None = None,
            etag: str | None = None) -> None:
        """Keep ``data`` fetched at ``start``; ``size``/``etag``: the object's as the answer
        gave them (a change drops what was cached of it)."""
        if self.budget <= 0:
            return
        end = start + len(data)
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
            _write_atomically(os.path.join(folder, f"{start}-{end}"), bytes(data))
        except OSError:
            return  # a full or read-only disk: the cache is only an optimisation
        with self._lock:
            obj.meta.pop("_dirty", None)
            self._insert(obj, start, end)
            self._lru[(url, start, end)] = end - start
            self._total += end - start
            self._evict_locked()

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
        n = self._lru.pop((url, start, end), None)
        if n is not None:
            self._total -= n
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(obj.folder, f"{start}-{end}"))

    def _forget(self, url: str, start: int, end: int) -> None:
        with self._lock:
            obj = self._objects.get(url)
            if obj is not None:
                self._remove(obj, start, end)
            n = self._lru.pop((url, start, end), None)
            if n is not None:
                self._total -= n

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


def _parse_name(name: str) -> tuple[int, int] | None:
    a, sep, b = name.partition("-")
    if not sep or not a.isdigit() or not b.isdigit():
        return None
    s, e = int(a), int(b)
    return (s, e) if e > s else None


def _write_atomically(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


__all__ = ["RangeCache"]
