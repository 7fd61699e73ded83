"""``info``'s check of a local volume of many small units on forked worker processes that list
the units themselves.

With one process listing (and, for a volume whose extent is the box of its units, listing a
second time for that box) and the workers checking, the listing is work no worker count
shortens.  Here the parent lists only the folders (``Volume.listing_parts``); the workers,
forked once, first work out each folder's unit count and box (``Volume.note_listed_box``
then spares the parent its own pass), then list and check slices of folders of about one
batch each.  The reports come back in listing order, the same as from the parent's listing.
A volume whose listing is one part (a format that does not cut it), or that has a part of
very many units, is listed by the parent and checked in batches by the same workers, as
before.

``ListedCheck(volume, check, processes, per_batch, ahead)`` forks the workers and runs the
first pass; ``reports()`` yields the reports; ``close()`` ends the workers (at once if the
reports were not all taken).  Main thread only (see ``viewer.core.parallel.ForkedWorkers``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from viewer.core.parallel import ForkedWorkers
from viewer.format import Volume

R = TypeVar("R")
Vec3 = tuple[int, int, int]
#: Parts counted per task of the first pass (folders are small: a task per few of them would
#: cost more to hand out than to do).
PARTS_PER_COUNT = 64
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
        self._workers = ForkedWorkers(self._work, processes)
        try:
            #: Units of each part (None: the volume is listed here, see ``reports``).
            self.counts: list[int] | None = self._count() if len(self.parts) > 1 else None
        except BaseException:
            self._workers.terminate()
            raise

    def _work(self, task: tuple[str, Any]) -> Any:
        """In a worker: count (and box) parts, or list and check slices of parts."""
        kind, what = task
        if kind == "count":
            counts: list[int] = []
            lo: list[int] | None = None
            hi: list[int] | None = None
            for part in what:
                units = list(self.volume.iter_units_in(part))
                counts.append(len(units))
                if not units:
                    continue
                axes = list(zip(*units, strict=True))
                a, b = [min(v) for v in axes], [max(v) for v in axes]
                lo = a if lo is None else [min(u, v) for u, v in zip(lo, a, strict=True)]
                hi = b if hi is None else [max(u, v) for u, v in zip(hi, b, strict=True)]
            return counts, lo, hi
        if kind == "batch":
            return self._check(what)
        positions: list[Vec3] = []
        for part, start, stop in what:
            positions.extend(itertools.islice(self.volume.iter_units_in(part), start, stop))
        out: list[Any] = []
        for first in range(0, len(positions), self._per_batch):
            out.extend(self._check(positions[first:first + self._per_batch]))
        return out

    def _count(self) -> list[int]:
        """The first pass: each part's unit count; the box of all their units goes to the
        volume."""
        groups = [self.parts[i:i + PARTS_PER_COUNT]
                  for i in range(0, len(self.parts), PARTS_PER_COUNT)]
        counts: list[int] = []
        lo: list[int] | None = None
        hi: list[int] | None = None
        for part_counts, a, b in self._workers.map(("count", g) for g in groups):
            counts.extend(part_counts)
            if a is None or b is None:
                continue
            lo = a if lo is None else [min(u, v) for u, v in zip(lo, a, strict=True)]
            hi = b if hi is None else [max(u, v) for u, v in zip(hi, b, strict=True)]
        if lo is not None and hi is not None:
            self.volume.note_listed_box(lo, hi)
        return counts

    def reports(self) -> Generator[Any, None, None]:
        """Every unit's reports, in listing order (the ``check`` results concatenated)."""
        counts = self.counts
        tasks: Iterator[tuple[str, Any]]
        if counts is None or max(counts, default=0) > SLICED_BATCHES * self._per_batch:
            tasks = (("batch", b) for b in batches(self.volume.units_to_check(),
                                                    self._per_batch))
        else:
            tasks = (("check", t) for t in _tasks_of(self.parts, counts, self._per_batch))
        for reports in self._workers.map(tasks, self._ahead):
            yield from reports

    def close(self) -> None:
        self._workers.terminate()


__all__ = ["ListedCheck", "PARTS_PER_COUNT", "MAX_SLICES", "SLICED_BATCHES"]
