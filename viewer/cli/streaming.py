"""Reports written as they go, in memory that does not grow with the dataset.

``JsonStream`` writes one JSON document piece by piece (a key and its value, or one element of
an open list, per write), so a report of a million units is never held whole; if the run is
interrupted, ``interrupt()`` closes what is open and ends the document with
``"interrupted": true``: a reader can always tell a partial report from a complete one.

``SizeStats`` keeps min / median / max / total of stored sizes as counts per distinct size,
not every size: exact while there are at most ``MAX_DISTINCT`` distinct sizes, then counts per
bin of relative width 1/1024 (the median within 0.1 %).  Used on one thread.
"""

from __future__ import annotations

import json
import math
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

#: Distinct sizes counted exactly before the counts go to bins of relative width ``BIN``.
MAX_DISTINCT = 1 << 16
#: Sizes buffered before they are merged into the counts.
PENDING = 1 << 16
#: Arrays buffered before they are merged (a unit of one chunk adds an array of one size,
#: whose object outweighs its value a hundredfold).
PENDING_ARRAYS = 4096
#: Relative width of a bin once the distinct sizes are too many.
BIN = 1.0 / 1024


class JsonStream:
    """One JSON document written on ``out`` as it goes (one line, ``json.dumps`` spacing)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._first: list[bool] = []  # per open container: nothing written in it yet
        self._lists = 0

    @property
    def started(self) -> bool:
        return bool(self._first)

    def begin(self) -> None:
        self.out.write("{")
        self._first.append(True)

    def _sep(self) -> str:
        if self._first[-1]:
            self._first[-1] = False
            return ""
        return ", "

    def field(self, key: str, value: Any) -> None:
        self.out.write(f"{self._sep()}{json.dumps(key)}: {json.dumps(value)}")

    def begin_list(self, key: str) -> None:
        self.out.write(f"{self._sep()}{json.dumps(key)}: [")
        self._first.append(True)
        self._lists += 1

    def item(self, value: Any) -> None:
        self.out.write(self._sep() + json.dumps(value))

    def items_text(self, texts: list[str]) -> None:
        """Elements already encoded as JSON text, written at once."""
        if texts:
            self.out.write(self._sep() + ", ".join(texts))

    def end_list(self) -> None:
        self.out.write("]")
        self._first.pop()
        self._lists -= 1

    def end(self) -> None:
        self.out.write("}\n")
        self._first.pop()
        self.out.flush()

    def interrupt(self) -> None:
        """Close the open lists and end the document with ``"interrupted": true`` (nothing if
        the document was not begun or is complete)."""
        if not self._first:
            return
        self.out.write("]" * self._lists)
        self._first = self._first[:1]
        self._lists = 0
        self.field("interrupted", True)
        self.end()


class SizeStats:
    """min / median / max / total of sizes added in batches, in bounded memory."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0
        self.min: int | None = None
        self.max: int | None = None
        self._values = np.zeros(0, np.int64)  # distinct sizes (or bins), sorted
        self._counts = np.zeros(0, np.int64)
        self._pending: list[npt.NDArray[np.int64]] = []
        self._npending = 0
        self.binned = False

    def add(self, sizes: npt.NDArray[np.int64]) -> None:
        if not len(sizes):
            return
        sizes = np.asarray(sizes, dtype=np.int64)
        self.count += len(sizes)
        self.total += int(sizes.sum())
        lo, hi = int(sizes.min()), int(sizes.max())
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)
        self._pending.append(sizes)
        self._npending += len(sizes)
        if self._npending >= PENDING or len(self._pending) >= PENDING_ARRAYS:
            self._merge()

    def _bin(self, sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return np.round(np.log1p(sizes.astype(np.float64)) / math.log1p(BIN)).astype(np.int64)

    def _merge(self) -> None:
        if not self._pending:
            return
        new = np.concatenate(self._pending)
        self._pending, self._npending = [], 0
        if self.binned:
            new = self._bin(new)
        values, counts = np.unique(new, return_counts=True)
        values = np.concatenate([self._values, values])
        counts = np.concatenate([self._counts, counts])
        self._values, inverse = np.unique(values, return_inverse=True)
        self._counts = np.bincount(inverse, weights=counts).astype(np.int64)
        if not self.binned and len(self._values) > MAX_DISTINCT:
            self.binned = True
            bins = self._bin(self._values)
            self._values, inverse = np.unique(bins, return_inverse=True)
            self._counts = np.bincount(inverse, weights=self._counts).astype(np.int64)

    def _nth(self, k: int, cumulative: npt.NDArray[np.int64]) -> float:
        """The ``k``-th smallest size (0-based)."""
        value = float(self._values[int(np.searchsorted(cumulative, k + 1))])
        return math.expm1(value * math.log1p(BIN)) if self.binned else value

    def median(self) -> float | None:
        self._merge()
        if not self.count:
            return None
        cumulative = np.cumsum(self._counts)
        n = self.count
        if n % 2:
            return self._nth(n // 2, cumulative)
        return (self._nth(n // 2 - 1, cumulative) + self._nth(n // 2, cumulative)) / 2

    def summary(self) -> dict[str, Any]:
        """``{min, median, max, total}`` (None values when no size was added)."""
        if not self.count:
            return {"min": None, "median": None, "max": None, "total": None}
        return {"min": self.min, "median": self.median(), "max": self.max, "total": self.total}


__all__ = ["JsonStream", "SizeStats"]
