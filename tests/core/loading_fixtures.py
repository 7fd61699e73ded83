"""Real datasets on disk and a counting dataset for the loader tests.

``CountingDataset`` is a real ``wkw.Dataset`` whose files are ``CountingFile``s: real files read
by the real format code, which additionally count every block read, note reads of a block that
overlap in time, record the thread that read, and can hold a read at a gate (an Event).
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import wkw as refwkw

from viewer.format import wkw

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


class CountingFile(wkw.File):
    log: ReadLog

    def read_blocks(self, indices: Any) -> list[Any]:
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
            return super().read_blocks(indices)
        finally:
            with log.lock:
                log.active.difference_update(keys)


class CountingDataset(wkw.Dataset):
    """A real dataset whose data files count their reads (see module docstring)."""

    log: ReadLog

    @classmethod
    def open_counting(cls, path: Path) -> CountingDataset:
        plain = wkw.Dataset.open(str(path))
        ds = cls(plain.root, plain.header)
        ds.log = ReadLog()
        ds._counting: dict[tuple[int, int, int], CountingFile | None] = {}
        return ds

    def get_file(self, fx: int, fy: int, fz: int) -> wkw.File | None:
        key = (fx, fy, fz)
        with self._lock:
            if key in self._counting:
                return self._counting[key]
        try:
            f: CountingFile | None = CountingFile.open(self.file_path(fx, fy, fz))
        except FileNotFoundError:
            f = None
        if f is not None:
            f.log = self.log
        with self._lock:
            self._counting.setdefault(key, f)
            return self._counting[key]

    def close(self) -> None:
        with self._lock:
            files = list(self._counting.values())
            self._counting.clear()
        for f in files:
            if f is not None:
                f.close()
        super().close()
