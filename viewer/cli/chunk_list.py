"""``info --json --chunks``: every chunk present, in grid order, in bounded memory.

Units arrive in listing order and a unit's chunks in its own order, while the list is sorted
by grid position (i, j, k), which interleaves the chunks of every unit of a slab.  So the
records are sorted in runs of ``RUN`` chunks; a run that does not fit in memory beside the
others goes to a temporary file, and the runs are merged when the list is written (an
external merge sort: memory is a run plus a read block per run, whatever the count).
Used on one thread.
"""

from __future__ import annotations

import heapq
import os
import tempfile
from collections.abc import Iterator
from typing import IO

import numpy as np
import numpy.typing as npt

#: One record per chunk present.
RECORD = np.dtype([("i", "<i8"), ("j", "<i8"), ("k", "<i8"), ("stored", "<i8"),
                   ("ui", "<i8"), ("uj", "<i8"), ("uk", "<i8"), ("index", "<i8"),
                   ("offset", "<i8"), ("constant", "u1")])
#: A record as Python values: (i, j, k, stored, ui, uj, uk, index, offset, constant).
Entry = tuple[int, int, int, int, int, int, int, int, int, int]
#: Chunks sorted in memory at a time (one run).
RUN = 1 << 16
#: Records held in memory by all the runs' read blocks together while merging.
MERGE_BUDGET = 1 << 16


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
    return run[np.lexsort((run["k"], run["j"], run["i"]))]


def entry_text(e: Entry) -> str:
    """One record as the JSON text of its ``chunk_list`` entry."""
    text = (f'{{"grid": [{e[0]}, {e[1]}, {e[2]}], "stored_bytes": {e[3]}, '
            f'"unit": [{e[4]}, {e[5]}, {e[6]}], "index": {e[7]}, "offset": {e[8]}')
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

    def _read_run(self, first: int, count: int, block: int) -> Iterator[Entry]:
        assert self._file is not None
        self._file.flush()
        fd = self._file.fileno()
        for start in range(0, count, block):
            n = min(block, count - start)
            data = os.pread(fd, n * RECORD.itemsize, (first + start) * RECORD.itemsize)
            yield from _entries(np.frombuffer(data, RECORD))

    def sorted(self) -> Iterator[Entry]:
        """Every record added, in grid order (once)."""
        if not self._runs:
            run = self._take()
            for start in range(0, len(run), MERGE_BUDGET):
                yield from _entries(run[start:start + MERGE_BUDGET])
            return
        if self._buffer:
            self._spill()
        block = max(64, MERGE_BUDGET // len(self._runs))
        streams = [self._read_run(first, count, block) for first, count in self._runs]
        yield from heapq.merge(*streams, key=lambda e: e[:3])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["ChunkSorter", "RECORD", "Entry", "entry_text", "records"]
