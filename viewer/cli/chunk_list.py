"""``info --json --chunks``: every chunk present, in grid order, in bounded memory.

Units arrive in listing order and a unit's chunks in its own order, while the list is sorted
by grid position (i, j, k), which interleaves the chunks of every unit of a slab.  So the
records are sorted in runs of ``RUN`` chunks written to a temporary file, and the runs are
merged when the list is written (an external merge sort: memory is a run, or a read block per
run, whatever the count; the merge works on numpy blocks, not on a Python object per chunk).
Used on one thread.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import IO

import numpy as np
import numpy.typing as npt

#: One record per chunk present; ``c0``, ``c1``: the channels ``[c0, c1)`` of its group when
#: the channels are stored apart (``Volume.channel_groups``; both 0 otherwise).
RECORD = np.dtype([("i", "<i8"), ("j", "<i8"), ("k", "<i8"), ("stored", "<i8"),
                   ("ui", "<i8"), ("uj", "<i8"), ("uk", "<i8"), ("index", "<i8"),
                   ("offset", "<i8"), ("constant", "u1"), ("c0", "<i8"), ("c1", "<i8")])
#: A record as Python values: (i, j, k, stored, ui, uj, uk, index, offset, constant, c0, c1).
Entry = tuple[int, int, int, int, int, int, int, int, int, int, int, int]
#: Chunks sorted in memory at a time (one run).
RUN = 1 << 16
#: Records held in memory by all the runs' read blocks together while merging.
MERGE_BUDGET = 1 << 16
#: Records read from a run at a time, at least.
MIN_BLOCK = 64


def records(grid: npt.NDArray[np.int64], stored: npt.NDArray[np.int64], unit: tuple[int, ...],
            index: npt.NDArray[np.int64], offset: npt.NDArray[np.int64],
            constant: npt.NDArray[np.bool_]) -> npt.NDArray[np.void]:
    """The records of one unit's chunks present (arrays of equal length)."""
    out = np.zeros(len(index), RECORD)
    for axis, name in enumerate("ijk"):
        out[name] = grid[:, axis]
        out["u" + name] = unit[axis]
    out["stored"] = stored
    out["index"] = index
    out["offset"] = offset
    out["constant"] = constant
    return out


def _sorted(run: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
    return run[np.lexsort((run["c0"], run["k"], run["j"], run["i"]))]


def entry_text(e: Entry) -> str:
    """One record as the JSON text of its ``chunk_list`` entry."""
    text = (f'{{"grid": [{e[0]}, {e[1]}, {e[2]}], "stored_bytes": {e[3]}, '
            f'"unit": [{e[4]}, {e[5]}, {e[6]}], "index": {e[7]}, "offset": {e[8]}')
    if e[11]:
        text += f', "channels": [{e[10]}, {e[11]}]'
    return text + (', "constant": true}' if e[9] else "}")


def _entries(recs: npt.NDArray[np.void]) -> list[Entry]:
    return recs.tolist()  # type: ignore[no-any-return]


class ChunkSorter:
    """Collects chunk records (``add``), then yields them in grid order (``sorted``)."""

    def __init__(self) -> None:
        self._buffer: list[npt.NDArray[np.void]] = []
        self._buffered = 0
        self._file: IO[bytes] | None = None
        self._runs: list[tuple[int, int]] = []  # (first record, count) in the file

    def add(self, recs: npt.NDArray[np.void]) -> None:
        if len(recs):
            self._buffer.append(recs)
            self._buffered += len(recs)
            if self._buffered >= RUN:
                self._spill()

    def _take(self) -> npt.NDArray[np.void]:
        run = np.concatenate(self._buffer) if self._buffer else np.zeros(0, RECORD)
        self._buffer, self._buffered = [], 0
        return _sorted(run)

    def _spill(self) -> None:
        run = self._take()
        if self._file is None:
            # Owned by the sorter, closed (and so deleted) by close().
            self._file = tempfile.TemporaryFile(prefix="wkw-viewer-chunks-")  # noqa: SIM115
        first = sum(n for _, n in self._runs)
        self._file.seek(first * RECORD.itemsize)
        self._file.write(run.tobytes())
        self._runs.append((first, len(run)))

    def _read(self, first: int, count: int) -> npt.NDArray[np.void]:
        assert self._file is not None
        data = os.pread(self._file.fileno(), count * RECORD.itemsize, first * RECORD.itemsize)
        return np.frombuffer(data, RECORD)

    def sorted(self) -> Iterator[Entry]:
        """Every record added, in grid order (once)."""
        if not self._runs:
            run = self._take()
            for start in range(0, len(run), MERGE_BUDGET):
                yield from _entries(run[start:start + MERGE_BUDGET])
            return
        if self._buffer:
            self._spill()
        assert self._file is not None
        self._file.flush()
        block = max(MIN_BLOCK, MERGE_BUDGET // len(self._runs))
        # Per run: the records read and not yet written, and where its unread rest starts.
        held = [np.zeros(0, RECORD) for _ in self._runs]
        next_at = [first for first, _ in self._runs]
        ends = [first + count for first, count in self._runs]
        while True:
            for r in range(len(held)):
                if not len(held[r]) and next_at[r] < ends[r]:
                    n = min(block, ends[r] - next_at[r])
                    held[r] = self._read(next_at[r], n)
                    next_at[r] += n
            if not any(len(h) for h in held):
                return
            # Everything up to the smallest last record of a run with more on disk can go:
            # no record still on disk sorts before it.
            limits = [tuple(h[-1][["i", "j", "k"]].tolist()) for r, h in enumerate(held)
                      if len(h) and next_at[r] < ends[r]]
            parts = []
            for r, h in enumerate(held):
                if not len(h):
                    continue
                if limits:
                    bi, bj, bk = min(limits)
                    i, j, k = h["i"], h["j"], h["k"]
                    upto = int(np.count_nonzero(
                        (i < bi) | ((i == bi) & ((j < bj) | ((j == bj) & (k <= bk))))))
                else:
                    upto = len(h)
                parts.append(h[:upto])
                held[r] = h[upto:]
            out = _sorted(np.concatenate(parts))
            for start in range(0, len(out), 4096):
                yield from _entries(out[start:start + 4096])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["ChunkSorter", "RECORD", "Entry", "entry_text", "records"]
