"""One channel of a volume whose channels share their chunks, as a volume of its own.

The window shows each channel of a composite as a layer (``viewer.core.layered``); where the
channels are stored together (all in one chunk), ``ChannelView`` reads the shared chunks and
keeps one channel of each.  Threads: like any ``Volume``: every method from any thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.description import UnitDescription
from viewer.format.volume import (
    ChunkResult,
    ChunkTable,
    IntArray,
    StorageUnit,
    StoredResult,
    UnitRead,
    Volume,
    VolumeInfo,
)

Vec3 = tuple[int, int, int]


class ChannelView(Volume):
    """Channel ``channel`` of ``base`` alone (a volume of one channel), for a reader that
    shows channels apart when they share their chunks: each chunk is read and decoded whole
    and the channel taken from it."""

    def __init__(self, base: Volume, channel: int) -> None:
        if not 0 <= channel < base.num_channels:
            raise ValueError(f"no channel {channel} in {base.num_channels}")
        self.base = base
        self.channel = channel
        self.format = base.format  # type: ignore[misc]  # the base's format, per instance
        self.path = base.path
        self.dtype = base.dtype
        self.num_channels = 1
        self.chunk_shape = base.chunk_shape
        self.unit_shape = base.unit_shape
        self.fill_value = base.fill_value
        self.axis_names = base.axis_names
        self.axis_units = base.axis_units
        self.value_range = base.value_range
        self.small_units = base.small_units

    def _take(self, chunk: ChunkResult) -> ChunkResult:
        if isinstance(chunk, np.ndarray):
            return chunk[self.channel:self.channel + 1]
        return chunk

    @property
    def shape(self) -> Vec3:
        return self.base.shape

    @property
    def origin(self) -> Vec3:
        return self.base.origin

    @property
    def extent_declared(self) -> bool:
        return self.base.extent_declared

    @property
    def extra_axes(self) -> dict[str, int]:
        return self.base.extra_axes

    @property
    def extra_index(self) -> dict[str, int]:
        return self.base.extra_index

    def at_index(self, index: Mapping[str, int]) -> Volume:
        moved = self.base.at_index(index)
        return self if moved is self.base else ChannelView(moved, self.channel)

    def unit_path(self, unit: Vec3) -> str:
        return self.base.unit_path(unit)

    def open_unit(self, unit: Vec3) -> StorageUnit | None:
        opened = self.base.open_unit(unit)
        return None if opened is None else ChannelUnit(opened, self.channel)

    def read_units(self, jobs: Sequence[tuple[Vec3, Sequence[int]]]) -> list[UnitRead]:
        return [r if not isinstance(r, list) else [self._take(c) for c in r]
                for r in self.base.read_units(jobs)]

    def iter_units(self) -> Iterator[Vec3]:
        return self.base.iter_units()

    @property
    def lists_units(self) -> bool:
        return self.base.lists_units

    def chunk_index(self, local: IntArray) -> IntArray:
        return self.base.chunk_index(local)

    def chunk_local(self, index: IntArray) -> IntArray:
        return self.base.chunk_local(index)

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """The base reads the box, every channel (its own ``read_into``: the shared parallel
        one or its format's, such as a native kernel's), and the channel is copied out; the
        channels share their chunks, so each chunk is decoded whole either way, and the shared
        path here would bypass the base's own reader."""
        whole = np.empty((self.base.num_channels, *out.shape[1:]), dtype=out.dtype, order="F")
        whole[self.channel] = out[0]
        self.base.read_into(whole, offset)
        out[0] = whole[self.channel]

    def info(self) -> VolumeInfo:
        return self.base.info()

    def forget_unit(self, unit: Vec3) -> None:
        self.base.forget_unit(unit)

    def drop_read_ahead(self, keep: Iterable[Sequence[int]] = ()) -> None:
        self.base.drop_read_ahead(keep)

    def done_with(self, unit: StorageUnit) -> None:
        self.base.done_with(unit.base if isinstance(unit, ChannelUnit) else unit)

    def close(self) -> None:
        """The base is shared with the other channels' views: its owner closes it."""


class ChannelUnit(StorageUnit):
    """A storage unit of ``ChannelView``: the base unit, its chunks cut to one channel."""

    def __init__(self, base: StorageUnit, channel: int) -> None:
        self.base = base
        self.channel = channel
        self.path = base.path
        self.num_chunks = base.num_chunks
        self.table_bytes = base.table_bytes

    @property
    def size(self) -> int:
        return self.base.size

    def chunk_table(self) -> ChunkTable:
        return self.base.chunk_table()

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        return self.base.read_stored(indices)

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        return self.base.decode(index, stored)[self.channel:self.channel + 1]

    def read_chunks(self, indices: Sequence[int]) -> list[ChunkResult]:
        c = self.channel
        return [r[c:c + 1] if isinstance(r, np.ndarray) else r
                for r in self.base.read_chunks(indices)]

    def will_need(self, indices: Sequence[int]) -> None:
        self.base.will_need(indices)

    def describe(self) -> UnitDescription:
        return self.base.describe()

    def describe_chunk(self, index: int) -> dict[str, Any]:
        return self.base.describe_chunk(index)

    def close(self) -> None:
        self.base.close()


__all__ = ["ChannelView", "ChannelUnit"]
