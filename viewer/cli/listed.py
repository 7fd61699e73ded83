"""``info``'s check of a local volume of many small units on forked worker processes that list
the units themselves, once.

With one process listing (and, for a volume whose extent is the box of its units, listing a
second time for that box) and the workers checking, the listing is work no worker count
shortens.  Here the parent lists only the folders (``Volume.listing_parts``); the workers,
forked once, list the folders in groups and send back each folder's unit count, the box of
their units (``Volume.note_listed_box`` then spares the parent its own pass) and the units
themselves as one small integer array a group.  The parent keeps those arrays (a few bytes a
unit, up to ``KEPT_UNITS`` units) and hands them out again in runs of one batch: every unit
is listed once and checked once, by whichever worker is free, and the parent does no Python
work per unit.  The reports come back in listing order, the same as from the parent's
listing.  Folders past ``KEPT_UNITS`` are listed a second time by the workers, in slices of
about one batch (a folder of very many units: by the parent, in batches); a volume whose
listing is one part (a format that does not cut it) is listed by the parent and checked in
batches by the same workers.

``ListedCheck(volume, check, processes, per_batch, ahead)`` forks the workers and runs the
first pass; ``reports()`` yields the reports; ``close()`` ends the workers (at once if the
reports were not all taken).  Main thread only (see ``viewer.core.parallel.ForkedWorkers``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from viewer.core.cluster import ClusterRunner, SchedulerError
from viewer.core.parallel import ForkedWorkers
from viewer.format import Volume, open_volume

R = TypeVar("R")
Vec3 = tuple[int, int, int]
Units = npt.NDArray[np.signedinteger[Any]]
#: Parts listed per task of the first pass (folders are small: a task per few of them would
#: cost more to hand out than to do).
PARTS_PER_COUNT = 64
#: Units whose listing the parent keeps from the first pass, at most (6 bytes a unit where
#: their positions fit 16 bits, else 12 or 24): the units past it are listed again by the
#: workers that check them.
KEPT_UNITS = 1 << 20
#: A part of more units than a batch is checked in slices of at least a batch and at most
#: this many slices (each slice lists the part again).
MAX_SLICES = 8
#: A part of more units than this many batches is too big to hand out in slices of about a
#: batch (each would list it again) or in at most ``MAX_SLICES`` (each would hold too many
#: reports): the parent then lists the volume and hands out batches, as for a volume of one
#: part (a format whose listing is not cut into parts).
SLICED_BATCHES = 8

#: A slice of a part's listing: (part, first unit, end unit; None: to the end of the listing,
#: so that the last slice of a part also takes a unit added since it was counted).
Slice = tuple[Hashable, int, int | None]


def _tasks_of(parts: Sequence[Hashable], counts: Sequence[int], per_batch: int
              ) -> Iterator[list[Slice]]:
    """Runs of consecutive slices of about ``per_batch`` units, in listing order."""
    task: list[Slice] = []
    held = 0
    for part, count in zip(parts, counts, strict=True):
        if count <= 0:
            continue
        step = count if count <= per_batch else max(per_batch, -(-count // MAX_SLICES))
        for start in range(0, count, step):
            stop = start + step
            task.append((part, start, stop if stop < count else None))
            held += min(stop, count) - start
            if held >= per_batch:
                yield task
                task, held = [], 0
    if task:
        yield task


def runs_of(listings: Iterable[Units], per_batch: int) -> Iterator[Units]:
    """The rows of ``listings`` (``(K, 3)`` arrays, one after the other) in runs of
    ``per_batch`` (the last may be shorter), in order."""
    held: list[Units] = []
    count = 0
    for units in listings:
        start = 0
        while start < len(units):
            take = min(per_batch - count, len(units) - start)
            held.append(units[start:start + take])
            count += take
            start += take
            if count >= per_batch:
                yield held[0] if len(held) == 1 else np.concatenate(held)
                held, count = [], 0
    if count:
        yield held[0] if len(held) == 1 else np.concatenate(held)


def _compact(units: list[Vec3]) -> Units:
    """``units`` as a ``(K, 3)`` array of the narrowest integers they fit (16 bits for the
    positions of most unit grids)."""
    array = np.fromiter(itertools.chain.from_iterable(units), np.int64,
                        3 * len(units)).reshape(-1, 3)
    if not len(array):
        return array
    low, high = int(array.min()), int(array.max())
    for dtype in (np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return array.astype(dtype)
    return array


#: What ``list_parts`` finds: each part's unit count, the lowest and highest unit position
#: (None: no unit) and the units (``(K, 3)``) in listing order.
Listing = tuple[list[int], list[int] | None, list[int] | None, Units]


def list_parts(volume: Volume, parts: Sequence[Hashable]) -> Listing:
    """List ``parts`` of ``volume``'s listing (``Volume.iter_units_in``), one after the
    other: a worker's share of the first pass (here, or on a cluster's worker)."""
    counts: list[int] = []
    units: list[Vec3] = []
    for part in parts:
        before = len(units)
        units.extend(volume.iter_units_in(part))
        counts.append(len(units) - before)
    listing = _compact(units)
    if not len(listing):
        return counts, None, None, listing
    return counts, listing.min(axis=0).tolist(), listing.max(axis=0).tolist(), listing


def fold_box(lo: list[int] | None, hi: list[int] | None, listing: Listing
             ) -> tuple[list[int] | None, list[int] | None]:
    """The box ``lo``..``hi`` grown by that of ``listing``."""
    _, a, b, _ = listing
    if a is None or b is None:
        return lo, hi
    return (a if lo is None else [min(u, v) for u, v in zip(lo, a, strict=True)],
            b if hi is None else [max(u, v) for u, v in zip(hi, b, strict=True)])


def batches(items: Iterable[Vec3], size: int) -> Iterator[list[Vec3]]:
    """``items`` in lists of ``size`` (the last may be shorter), taken as they come."""
    batch: list[Vec3] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class ListedCheck:
    """The workers and the two passes (see the module docstring)."""

    def __init__(self, volume: Volume, check: Callable[[list[Vec3]], list[R]],
                 processes: int, per_batch: int, ahead: int) -> None:
        self.volume = volume
        self._check = check
        self._per_batch = max(1, per_batch)
        self._ahead = ahead
        self.parts = list(volume.listing_parts())
        #: The first pass's listings kept, group by group (the first ``len(kept)`` groups of
        #: ``PARTS_PER_COUNT`` parts).
        self.kept: list[Units] = []
        self._workers = ForkedWorkers(self._work, processes)
        try:
            #: Units of each part (None: the volume is listed here, see ``reports``).
            self.counts: list[int] | None = self._count() if len(self.parts) > 1 else None
        except BaseException:
            self._workers.terminate()
            raise

    def _work(self, task: tuple[str, Any]) -> Any:
        """In a worker: list parts (their counts, box and units), or check units given, or
        list and check slices of parts."""
        kind, what = task
        if kind == "list":
            return list_parts(self.volume, what)
        positions: list[Vec3]
        if kind == "units":
            positions = list(map(tuple, what.tolist()))
        elif kind == "batch":
            return self._check(what)
        else:
            positions = []
            for part, start, stop in what:
                positions.extend(itertools.islice(self.volume.iter_units_in(part), start,
                                                  stop))
        out: list[Any] = []
        for first in range(0, len(positions), self._per_batch):
            out.extend(self._check(positions[first:first + self._per_batch]))
        return out

    def _count(self) -> list[int]:
        """The first pass: each part's unit count and the units themselves (kept up to
        ``KEPT_UNITS``); the box of all their units goes to the volume."""
        groups = [self.parts[i:i + PARTS_PER_COUNT]
                  for i in range(0, len(self.parts), PARTS_PER_COUNT)]
        counts: list[int] = []
        lo: list[int] | None = None
        hi: list[int] | None = None
        kept, keeping = 0, True
        for found in self._workers.map(("list", g) for g in groups):
            part_counts, _, _, listing = found
            counts.extend(part_counts)
            keeping = keeping and kept + len(listing) <= KEPT_UNITS
            if keeping:
                self.kept.append(listing)
                kept += len(listing)
            lo, hi = fold_box(lo, hi, found)
        if lo is not None and hi is not None:
            self.volume.note_listed_box(lo, hi)
        return counts

    def _tasks(self, counts: list[int], kept: list[Units]) -> Iterator[tuple[str, Any]]:
        """The check's tasks in listing order: runs of the ``kept`` units, then slices of the
        parts past them (or, where a part is too big for slices, batches of the parent's
        listing of those parts)."""
        yield from (("units", run) for run in runs_of(kept, self._per_batch))
        rest = len(kept) * PARTS_PER_COUNT
        if rest >= len(self.parts):
            return
        parts, left = self.parts[rest:], counts[rest:]
        if max(left, default=0) <= SLICED_BATCHES * self._per_batch:
            yield from (("check", t) for t in _tasks_of(parts, left, self._per_batch))
            return
        listing = (u for part in parts for u in self.volume.iter_units_in(part))
        yield from (("batch", b) for b in batches(listing, self._per_batch))

    def reports(self) -> Generator[Any, None, None]:
        """Every unit's reports, in listing order (the ``check`` results concatenated)."""
        counts = self.counts
        tasks: Iterator[tuple[str, Any]]
        if counts is None:
            tasks = (("batch", b) for b in batches(self.volume.units_to_check(),
                                                    self._per_batch))
        else:
            tasks = self._tasks(counts, self.kept)
        self.kept = []
        for reports in self._workers.map(tasks, self._ahead):
            yield from reports

    def close(self) -> None:
        self._workers.terminate()


@dataclass(frozen=True)
class PartsShare:
    """A task of the listing on a cluster: the array (by path, layer and mag) and parts of
    its listing (``Volume.listing_parts``) to list."""

    path: str
    layer: str
    mag: Vec3
    parts: tuple[Hashable, ...]
    index: tuple[tuple[str, int], ...] = ()


def list_share(share: PartsShare) -> Listing:
    """The listing of the parts of ``share`` (the task a cluster worker runs)."""
    volume = open_volume(share.path, share.layer, share.mag, dict(share.index))
    try:
        return list_parts(volume, share.parts)
    finally:
        volume.close()


def cluster_listing(runner: ClusterRunner, volume: Volume, path: str, layer: str,
                    mag: Vec3) -> list[Vec3]:
    """The units to check, listed by the cluster's workers where the listing is cut into
    parts (a WKW dataset's folders: here only the folders are listed), with the box of
    their units given to the volume (its extent, where that is the units' box, is then not
    listed here either); else listed here."""
    parts = list(volume.listing_parts())
    if len(parts) <= 1 or not volume.lists_units:
        return list(volume.units_to_check())
    index = tuple(volume.extra_index.items())
    shares = [PartsShare(path, layer, mag, tuple(parts[i:i + PARTS_PER_COUNT]), index)
              for i in range(0, len(parts), PARTS_PER_COUNT)]
    found: dict[int, Listing] = dict(runner.map(list_share, shares, key="info-list"))
    if len(found) < len(shares):
        raise SchedulerError(f"the cluster listed {len(found)} of {len(shares)} groups of "
                             f"folders of {path}")
    lo: list[int] | None = None
    hi: list[int] | None = None
    positions: list[Vec3] = []
    for k in range(len(shares)):
        lo, hi = fold_box(lo, hi, found[k])
        positions.extend((a, b, c) for a, b, c in found.pop(k)[3].tolist())
    if lo is not None and hi is not None:
        volume.note_listed_box(lo, hi)
    return positions


__all__ = ["ListedCheck", "Listing", "PARTS_PER_COUNT", "KEPT_UNITS", "MAX_SLICES",
           "SLICED_BATCHES", "PartsShare", "cluster_listing", "fold_box", "list_parts",
           "list_share", "runs_of"]
