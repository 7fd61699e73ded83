"""Block keys of a volume: global block coordinates turned into the block cache's keys.

A block is found in the ``BlockCache`` by ``(layer, mag, storage unit, index in the unit)``,
where the layer of a volume with extra axes (time, ...) names its element too
(``cache_layer``: the same array at ``t=3`` and ``t=4`` has blocks of its own); the loader
knows blocks by their global block coordinates (``viewer.core.prefetch``).
``BlockKeys`` converts whole grids of them at once (one vectorised ``Volume.chunk_index``, one
``zip``: a screen of a few thousand blocks costs about a millisecond) and remembers the last
``MEMO`` grids by a caller's name for them, so that a plane seen again costs a dict look-up.

Thread safety: every method may be called from any thread (the GUI thread asks for the keys of
the screen, a worker for the prefetch's).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.core.cache import BlockKey
from viewer.format import Volume

IntArray = npt.NDArray[np.int64]
#: Grids remembered.
MEMO = 64


def cache_layer(layer: Hashable, volume: Volume) -> Hashable:
    """The layer part of ``volume``'s block keys: ``layer``, qualified by the element of each
    extra axis the volume reads (``(layer, (("t", 3),))``) when it has extra axes, so that
    the elements of a time series share one cache without taking each other's blocks."""
    return layer_at(layer, volume.extra_index)


def layer_at(layer: Hashable, index: Mapping[str, int]) -> Hashable:
    """``cache_layer`` of a volume of ``layer`` at element ``index`` of its extra axes."""
    return (layer, tuple(sorted(index.items()))) if index else layer


class BlockKeys:
    """Cache keys of one volume's blocks, memoised per block grid.  Any thread."""

    def __init__(self, volume: Volume, layer: Hashable, mag: Hashable) -> None:
        self.volume = volume
        self.layer = layer
        self.mag = mag
        self._unit = np.asarray(volume.unit_shape, dtype=np.int64)
        self._lock = threading.Lock()
        self._grids: OrderedDict[tuple[Any, ...], tuple[list[BlockKey], IntArray]] = \
            OrderedDict()

    def remembered(self, memo: tuple[Any, ...]) -> IntArray | None:
        """The block coordinates of grid ``memo`` when it is remembered (its keys are)."""
        with self._lock:
            hit = self._grids.get(memo)
        return hit[1] if hit is not None else None

    def keys(self, memo: tuple[Any, ...] | None, blocks: IntArray
             ) -> tuple[list[BlockKey], IntArray]:
        """``(keys, blocks)`` of global block coordinates ``blocks`` (``(N, 3)``), in their
        order; remembered under ``memo`` (None: not remembered), whose remembered blocks are
        returned when it is known (the caller names a grid by what makes it)."""
        if memo is not None:
            with self._lock:
                hit = self._grids.get(memo)
                if hit is not None:
                    self._grids.move_to_end(memo)
                    return hit
        units = blocks // self._unit
        index = self.volume.chunk_index(blocks - units * self._unit).tolist()
        keys: list[BlockKey] = list(zip(itertools.repeat(self.layer),
                                        itertools.repeat(self.mag),
                                        map(tuple, units.tolist()), index))
        if memo is not None:
            with self._lock:
                self._grids[memo] = (keys, blocks)
                while len(self._grids) > MEMO:
                    self._grids.popitem(last=False)
        return keys, blocks


__all__ = ["BlockKeys", "cache_layer", "layer_at"]
