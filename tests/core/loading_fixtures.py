"""Real datasets on disk and a counting dataset for the loader tests.

``CountingDataset`` is a real ``Volume`` (any format; WKW here) whose storage units are
``CountingUnit``s: real units read by the real format code, which additionally count every block
read, note reads of a block that overlap in time, record the thread that read, and can hold a
read at a gate (an Event).
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import wkw as refwkw

from viewer.format import StorageUnit, Volume, open_volume, wkw

BLOCK_LEN = 8
FILE_LEN = 4  # 32 voxels per file side
SHAPE = (96, 64, 64)  # 3 x 2 x 2 files


def volume(shape: tuple[int, ...] = SHAPE, seed: int = 0) -> np.ndarray:
    """Distinct, patterned uint8 voxels (x, y, z), with a run of real zeros."""
    rng = np.random.default_rng(seed)
    vol = rng.integers(1, 255, shape, dtype=np.uint8)
    vol[10:20, 10:20, 10:20] = 0
    return vol


def write_project(path: Path, vol: np.ndarray, block_type: int = wkw.BLOCK_TYPE_LZ4HC
                  ) -> Path:
    header = wkw.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN, block_type=block_type)
    ds = wkw.Dataset.create(str(path), header)
    ds.write((0, 0, 0), vol)
    ds.close()
    return path


def write_reference(path: Path, vol: np.ndarray) -> Path:
    header = refwkw.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN,
                           block_type=refwkw.Header.BLOCK_TYPE_LZ4HC)
    with refwkw.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), np.asfortranarray(vol))
    return path


class ReadLog:
    """Thread-safe record of block reads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[tuple[str, int]] = Counter()
        self.batches: list[list[tuple[str, int]]] = []
        self.active: set[tuple[str, int]] = set()
        self.overlaps: list[tuple[str, int]] = []
        self.main_thread_reads = 0
        self.threads: set[str] = set()
        self.gate: threading.Event | None = None
        self.entered = threading.Event()


class CountingUnit(StorageUnit):
    """A real storage unit that logs its chunk reads (see the module docstring)."""

    def __init__(self, inner: StorageUnit, log: ReadLog) -> None:
        self.inner = inner
        self.log = log
        self.path = inner.path
        self.num_chunks = inner.num_chunks
        self.table_bytes = inner.table_bytes

    @property
    def size(self) -> int:
        return self.inner.size

    def chunk_table(self) -> Any:
        return self.inner.chunk_table()

    def read_stored(self, indices: Any) -> list[Any]:
        return self.inner.read_stored(indices)

    def decode(self, index: int, stored: Any) -> Any:
        return self.inner.decode(index, stored)

    def will_need(self, indices: Any) -> None:
        self.inner.will_need(indices)

    def read_chunks(self, indices: Any) -> list[Any]:
        keys = [(self.path, int(i)) for i in indices]
        log = self.log
        with log.lock:
            if threading.current_thread() is threading.main_thread():
                log.main_thread_reads += 1
            log.threads.add(threading.current_thread().name)
            log.batches.append(keys)
            for key in keys:
                log.counts[key] += 1
                if key in log.active:
                    log.overlaps.append(key)
                log.active.add(key)
        log.entered.set()
        try:
            if log.gate is not None:
                assert log.gate.wait(60), "gate never opened"
            return self.inner.read_chunks(indices)
        finally:
            with log.lock:
                log.active.difference_update(keys)


class CountingDataset(Volume):
    """A real volume whose storage units count their reads (see the module docstring)."""

    log: ReadLog

    def __init__(self, inner: Volume) -> None:
        self.inner = inner
        self.format = inner.format  # type: ignore[misc]
        self.path = inner.path
        self.dtype = inner.dtype
        self.num_channels = inner.num_channels
        self.chunk_shape = inner.chunk_shape
        self.unit_shape = inner.unit_shape
        self.fill_value = inner.fill_value
        self.log = ReadLog()
        self._units: dict[tuple[int, int, int], CountingUnit | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def open_counting(cls, path: Path) -> CountingDataset:
        return cls(open_volume(path))

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.inner.shape

    @property
    def origin(self) -> tuple[int, int, int]:
        return self.inner.origin

    def unit_path(self, unit: tuple[int, int, int]) -> str:
        return self.inner.unit_path(unit)

    def open_unit(self, unit: tuple[int, int, int]) -> CountingUnit | None:
        with self._lock:
            if unit in self._units:
                return self._units[unit]
        inner = self.inner.open_unit(unit)
        counting = None if inner is None else CountingUnit(inner, self.log)
        with self._lock:
            return self._units.setdefault(unit, counting)

    def done_with(self, unit: StorageUnit) -> None:
        pass

    def iter_units(self) -> Any:
        return self.inner.iter_units()

    def chunk_index(self, local: Any) -> Any:
        return self.inner.chunk_index(local)

    def chunk_local(self, index: Any) -> Any:
        return self.inner.chunk_local(index)

    def info(self) -> Any:
        return self.inner.info()

    def close(self) -> None:
        self.inner.close()
