"""``SoundUnits``: what a batched structure check of many storage units found sound
(``Volume.sound_units``), as arrays, so that a check of a dataset of a hundred thousand small
units costs no object per unit.

A unit is *sound* when it is present and the one-by-one way (``Volume.open_unit``, then
``StorageUnit.chunk_table``, ``problems(decode=False)`` and ``describe``) would find nothing
wrong with it: every structure check passed, its own header agrees with the volume's, every
chunk present and stored (none constant), its index read from one unchanged version of the
file.  A format answers only for what it can prove; every other unit (absent, damaged,
different, changed while read, not worth batching) is left to the one-by-one way, which says
what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SoundUnits:
    """The sound units among positions asked for.  ``index[k]``: which of the positions
    asked is the k-th sound unit; ``paths[k]`` its path, ``sizes[k]`` its size in bytes,
    ``offsets[k]`` / ``nbytes[k]`` its chunk table (``(K, num_chunks)``, in the unit's chunk
    order, as ``StorageUnit.chunk_table`` gives it); ``description``: the scalar fields of
    ``StorageUnit.describe`` that every unit of the batch shares (its block type,
    compression...)."""

    index: IntArray
    paths: list[str]
    sizes: IntArray
    offsets: IntArray
    nbytes: IntArray
    description: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @classmethod
    def none(cls, num_chunks: int = 1) -> SoundUnits:
        """No unit found sound (each is checked one by one)."""
        empty = np.zeros(0, np.int64)
        return cls(empty, [], empty, np.zeros((0, num_chunks), np.int64),
                   np.zeros((0, num_chunks), np.int64))


__all__ = ["SoundUnits"]
