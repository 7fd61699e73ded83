"""A byte-bounded LRU cache of decoded blocks (a volume's chunks), shared by the loader's worker
threads.

A block is identified by ``BlockKey`` = (layer, mag, storage-unit position, index in the unit).
Values are read-only ``(C, X, Y, Z)`` arrays as ``StorageUnit.read_chunks`` returns them,
``ABSENT`` for a chunk the unit does not store (it reads as the fill value), or the
``FormatError`` a block raised (a failed block is remembered so that it is not read again and
again; it costs a nominal few hundred bytes).

The budget is honest: it counts every cached block's ``nbytes`` plus the jump tables of the data
files the loader keeps open (``account_file``), so that the memory the cache stands for is what
the budget says.  Eviction is least-recently-used, happens *before* an insertion, and never
leaves more than the budget in use.  Blocks on screen are *pinned* (``set_pinned``) and evicted
only when nothing else is left; ``pinned_over_budget`` then says the budget cannot hold the
screen (the loader's warning flag).

Thread safety: every method may be called from any thread (one internal lock).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import FormatError

#: Bytes a remembered failed block is charged (the error object and its message).
FAILED_BLOCK_BYTES = 512
GIB = 1 << 30


#: Identity of one block: (layer (any hashable id), mag, storage-unit grid position, index of
#: the chunk in its unit).  A plain tuple, so that the loader builds thousands of them at C
#: speed.
BlockKey = tuple[Hashable, Hashable, tuple[int, int, int], int]


def block_key(layer: Hashable, mag: Hashable, unit: tuple[int, int, int],
              index: int) -> BlockKey:
    return (layer, mag, unit, index)


class Absent:
    """The value of a chunk its storage unit does not hold (sparse data: the fill value)."""

    def __repr__(self) -> str:
        return "ABSENT"


#: The one ``Absent`` value.
ABSENT = Absent()

BlockValue = npt.NDArray[Any] | FormatError | Absent


def default_budget_bytes() -> int:
    """min(1 GiB, a quarter of physical RAM); 1 GiB where RAM cannot be asked."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return GIB
    return int(min(GIB, ram // 4))


def value_bytes(value: BlockValue) -> int:
    """Bytes a cached value is charged."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if value is ABSENT:
        return 64
    return FAILED_BLOCK_BYTES


@dataclass(frozen=True)
class CacheStats:
    """A snapshot of the cache's counters."""

    used_bytes: int  #: blocks + jump tables
    block_bytes: int
    table_bytes: int
    budget_bytes: int
    blocks: int
    pinned_blocks: int
    pinned_bytes: int
    evictions: int
    pinned_over_budget: bool  #: the blocks on screen alone do not fit the budget
    peak_used_bytes: int


class BlockCache:
    """LRU of decoded blocks under a byte budget.  Any thread."""

    def __init__(self, budget_bytes: int | None = None) -> None:
        self._lock = threading.Lock()
        self._blocks: OrderedDict[BlockKey, BlockValue] = OrderedDict()
        self._block_bytes = 0
        self._tables: dict[Hashable, int] = {}
        self._table_bytes = 0
        self._budget = int(budget_bytes) if budget_bytes is not None else default_budget_bytes()
        self._pinned: frozenset[BlockKey] = frozenset()
        self._pinned_wanted_bytes = 0
        self._pins: dict[Hashable, tuple[frozenset[BlockKey], int]] = {}
        self._evictions = 0
        self._peak = 0

    # -- budget -------------------------------------------------------------------------------
    @property
    def budget_bytes(self) -> int:
        return self._budget

    def set_budget(self, budget_bytes: int) -> None:
        """Change the budget at run time; evicts at once down to the new budget."""
        if budget_bytes < 0:
            raise ValueError(f"budget must be >= 0 bytes, not {budget_bytes}")
        with self._lock:
            self._budget = int(budget_bytes)
            self._evict_locked(0)

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self._block_bytes + self._table_bytes

    # -- blocks -------------------------------------------------------------------------------
    def get(self, key: BlockKey) -> BlockValue | None:
        """The cached value (marked most recently used), or None."""
        with self._lock:
            value = self._blocks.get(key)
            if value is not None:
                self._blocks.move_to_end(key)
            return value

    def get_many(self, keys: Iterable[BlockKey]) -> list[BlockValue | None]:
        """``get`` for several keys under one lock (assembling a plane)."""
        keys = keys if isinstance(keys, list) else list(keys)
        with self._lock:
            blocks = self._blocks
            out: list[BlockValue | None] = list(map(blocks.get, keys))
            # Most keys of a plane still loading are not cached: only the hits move.
            deque(map(blocks.move_to_end, [k for k, v in zip(keys, out, strict=True)
                                           if v is not None]), 0)
        return out

    def peek(self, key: BlockKey) -> BlockValue | None:
        """The cached value without touching the LRU order."""
        with self._lock:
            return self._blocks.get(key)

    def present(self, keys: Iterable[BlockKey]) -> list[bool]:
        """For each key, whether it is cached (one lock for all; the LRU order untouched)."""
        with self._lock:
            return list(map(self._blocks.__contains__, keys))

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._blocks

    def __len__(self) -> int:
        with self._lock:
            return len(self._blocks)

    def put(self, key: BlockKey, value: BlockValue) -> bool:
        """Cache a block (arrays are made read-only).  Evicts least-recently-used blocks first,
        so that the budget is never exceeded; returns False when the value alone is larger than
        the budget (it is then not cached)."""
        if isinstance(value, np.ndarray) and value.flags.writeable:
            value.flags.writeable = False
        size = value_bytes(value)
        with self._lock:
            old = self._blocks.pop(key, None)
            if old is not None:
                self._block_bytes -= value_bytes(old)
            if not self._evict_locked(size):
                return False
            self._blocks[key] = value
            self._block_bytes += size
            self._peak = max(self._peak, self._block_bytes + self._table_bytes)
            return True

    def put_many(self, items: Sequence[tuple[BlockKey, BlockValue]]) -> None:
        """``put`` for several blocks under one lock and, when they fit, one eviction pass (a
        worker's batch): the budget holds as with ``put``, least recently used blocks go
        first."""
        if len({key for key, _ in items}) != len(items):
            last: dict[BlockKey, BlockValue] = {}
            for key, value in items:  # a key given twice: its last value, at its last place
                last.pop(key, None)
                last[key] = value
            items = list(last.items())
        sized: list[tuple[BlockKey, BlockValue, int]] = []
        for key, value in items:
            if isinstance(value, np.ndarray):
                if value.flags.writeable:
                    value.flags.writeable = False
                sized.append((key, value, value.nbytes))
            else:
                sized.append((key, value, value_bytes(value)))
        with self._lock:
            blocks = self._blocks
            if not blocks.keys().isdisjoint([key for key, _, _ in sized]):  # (seldom)
                for key, _, _ in sized:
                    old = blocks.pop(key, None)
                    if old is not None:
                        self._block_bytes -= value_bytes(old)
            total = sum(size for _, _, size in sized)
            if self._evict_locked(total):  # room for all at once: one eviction pass
                for key, value, _ in sized:
                    blocks[key] = value
                self._block_bytes += total
                self._peak = max(self._peak, self._block_bytes + self._table_bytes)
                return
            for key, value, size in sized:  # more than the budget: as far as it goes
                if not self._evict_locked(size):
                    continue
                blocks[key] = value
                self._block_bytes += size
                self._peak = max(self._peak, self._block_bytes + self._table_bytes)

    def discard(self, key: BlockKey) -> None:
        with self._lock:
            old = self._blocks.pop(key, None)
            if old is not None:
                self._block_bytes -= value_bytes(old)

    def clear(self, layer: Hashable | None = None, mag: Hashable | None = None) -> None:
        """Drop every block and every file accounting; with ``layer`` only that layer's blocks
        (of ``mag`` only, when given too)."""
        with self._lock:
            if layer is None:
                self._blocks.clear()
                self._block_bytes = 0
                self._tables.clear()
                self._table_bytes = 0
                return
            for key in [k for k in self._blocks
                        if k[0] == layer and (mag is None or k[1] == mag)]:
                self._block_bytes -= value_bytes(self._blocks.pop(key))

    def _evict_locked(self, incoming: int) -> bool:
        """Make room for ``incoming`` bytes: unpinned blocks first (oldest first), pinned ones
        only when nothing else is left."""
        limit = self._budget - incoming
        if incoming > self._budget:
            return False
        if self._block_bytes + self._table_bytes <= limit:
            return True
        need = self._block_bytes + self._table_bytes - limit
        pinned = self._pinned
        victims: list[BlockKey] = []
        freed = 0
        for key, value in self._blocks.items():
            if freed >= need:
                break
            if key not in pinned:
                victims.append(key)
                freed += value.nbytes if type(value) is np.ndarray else value_bytes(value)
        blocks = self._blocks
        deque(map(blocks.__delitem__, victims), 0)  # (what they free is counted above)
        self._block_bytes -= freed
        self._evictions += len(victims)
        while self._blocks and self._block_bytes + self._table_bytes > limit:
            _, value = self._blocks.popitem(last=False)
            self._block_bytes -= value_bytes(value)
            self._evictions += 1
        return self._block_bytes + self._table_bytes <= limit

    # -- pinning ------------------------------------------------------------------------------
    def set_pinned(self, keys: Iterable[BlockKey], wanted_bytes: int = 0,
                   owner: Hashable = None) -> None:
        """Pin the blocks on screen, replacing what ``owner`` pinned before (several loaders
        sharing the cache, one per layer and mag, each pin their own part of the screen; the
        pinned set is the union).  ``wanted_bytes`` is what that part of the screen needs
        decoded (cached or not); the sum over owners is judged against the budget for the
        warning."""
        with self._lock:
            pins = frozenset(keys)
            if pins or wanted_bytes:
                self._pins[owner] = (pins, int(wanted_bytes))
            else:
                self._pins.pop(owner, None)
            if len(self._pins) == 1:
                self._pinned, self._pinned_wanted_bytes = next(iter(self._pins.values()))
            else:
                self._pinned = frozenset().union(*(p for p, _ in self._pins.values()))
                self._pinned_wanted_bytes = sum(b for _, b in self._pins.values())

    # -- jump tables --------------------------------------------------------------------------
    def account_file(self, file_key: Hashable, table_bytes: int) -> None:
        """Charge the jump table of an open data file to the budget (evicting blocks for it)."""
        with self._lock:
            self._table_bytes -= self._tables.pop(file_key, 0)
            self._tables[file_key] = int(table_bytes)
            self._table_bytes += int(table_bytes)
            self._evict_locked(0)
            self._peak = max(self._peak, self._block_bytes + self._table_bytes)

    def release_file(self, file_key: Hashable) -> None:
        with self._lock:
            self._table_bytes -= self._tables.pop(file_key, 0)

    # -- stats --------------------------------------------------------------------------------
    def stats(self) -> CacheStats:
        with self._lock:
            blocks = self._blocks
            pinned_present = [blocks[k] for k in self._pinned if k in blocks]
            used, block_bytes, table_bytes = (self._block_bytes + self._table_bytes,
                                              self._block_bytes, self._table_bytes)
            count, evictions, peak = len(blocks), self._evictions, self._peak
            over = self._pinned_wanted_bytes + self._table_bytes > self._budget
        # The pinned bytes are summed outside the lock: workers putting blocks need not wait.
        return CacheStats(
            used_bytes=used,
            block_bytes=block_bytes,
            table_bytes=table_bytes,
            budget_bytes=self._budget,
            blocks=count,
            pinned_blocks=len(pinned_present),
            pinned_bytes=sum([v.nbytes if type(v) is np.ndarray else value_bytes(v)
                              for v in pinned_present]),
            evictions=evictions,
            pinned_over_budget=over,
            peak_used_bytes=peak,
        )

    def keys(self) -> list[BlockKey]:
        """Cached keys, least recently used first."""
        with self._lock:
            return list(self._blocks)
