"""Channels stored in chunks of their own, read as one volume of ``(C, X, Y, Z)``.

OME-Zarr writers and webKnossos chunk a multi-channel image one channel per chunk (or a few
per chunk, or a shard per channel).  A format opens such an array as *groups*: one ``Volume``
per run of channels that share their chunks, all with the same grid, extent and storage
units along x, y, z.  ``ChannelStack`` puts them back together:

* ``read`` reads each group into its channels of the output;
* a storage unit of the stack is the group units at the same grid position
  (``StackedUnit``): its chunks are numbered x fastest (the default ``chunk_index``); chunk
  ``n`` is the chunk at the same place of every group, decoded and stacked along C
  (a group whose chunk is absent reads as the fill value there; a damaged one is the chunk's
  error); its stored bytes are the groups' stored bytes one after the other;
* ``channel_groups`` names the groups, so that a reader that shows some channels only (the
  window) reads only theirs; ``channel_volume`` is one channel alone (a group of one, or a
  ``ChannelView`` of a shared chunk).

Threads: like any ``Volume``: every method from any thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.channel_view import ChannelView
from viewer.format.description import described
from viewer.format.errors import FormatError
from viewer.format.volume import (
    ChunkResult,
    ChunkTable,
    StorageUnit,
    StoredResult,
    UnitRead,
    Volume,
    VolumeInfo,
)

Vec3 = tuple[int, int, int]


class ChannelStack(Volume):
    """The channel ``groups`` (volumes of the same grid, in channel order) as one volume.  A
    format subclasses it to name itself (``format``)."""

    def __init__(self, groups: Sequence[Volume]) -> None:
        if not groups:
            raise ValueError("a channel stack needs at least one group")
        self.groups = list(groups)
        first = self.groups[0]
        self.path = first.path
        self.dtype = first.dtype
        self.num_channels = sum(g.num_channels for g in self.groups)
        self.chunk_shape = first.chunk_shape
        self.unit_shape = first.unit_shape
        self.fill_value = first.fill_value
        self.axis_names = first.axis_names
        self.axis_units = first.axis_units
        self.value_range = first.value_range
        self.small_units = first.small_units
        starts = np.cumsum([0] + [g.num_channels for g in self.groups]).tolist()
        #: ``[first, end)`` channels of each group.
        self.ranges = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:], strict=True)]

    # -- what the stack is made of --------------------------------------------------------------
    def channel_groups(self) -> list[tuple[tuple[int, int], Volume]]:
        return list(zip(self.ranges, self.groups, strict=True))

    # -- extent ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Vec3:
        return self.groups[0].shape

    @property
    def origin(self) -> Vec3:
        return self.groups[0].origin

    @property
    def extent_declared(self) -> bool:
        return self.groups[0].extent_declared

    def set_extent(self, bounds: tuple[Vec3, Vec3]) -> None:
        for g in self.groups:
            g.set_extent(bounds)

    # -- extra axes -----------------------------------------------------------------------------
    @property
    def extra_axes(self) -> dict[str, int]:
        return self.groups[0].extra_axes

    @property
    def extra_index(self) -> dict[str, int]:
        return self.groups[0].extra_index

    def at_index(self, index: Mapping[str, int]) -> Volume:
        moved = [g.at_index(index) for g in self.groups]
        if all(a is b for a, b in zip(moved, self.groups, strict=True)):
            return self
        return type(self)(moved)

    # -- storage units ----------------------------------------------------------------------------
    def unit_path(self, unit: Vec3) -> str:
        return self.groups[0].unit_path(unit)

    def open_unit(self, unit: Vec3) -> StorageUnit | None:
        parts = [g.open_unit(unit) for g in self.groups]
        if all(p is None for p in parts):
            return None
        return StackedUnit(self, parts)

    def read_units(self, jobs: Sequence[tuple[Vec3, Sequence[int]]]) -> list[UnitRead]:
        per_group = [g.read_units([(pos, self.part_index(k, idx)) for pos, idx in jobs])
                     for k, g in enumerate(self.groups)]
        out: list[UnitRead] = []
        for k, (_pos, indices) in enumerate(jobs):
            found = [reads[k] for reads in per_group]
            failed = next((f for f in found if isinstance(f, FormatError)), None)
            if failed is not None:
                out.append(failed)
            elif all(f is None for f in found):
                out.append(None)
            else:
                out.append([self.stack([None if f is None or isinstance(f, FormatError)
                                        else f[n] for f in found])
                            for n in range(len(indices))])
        return out

    def stack(self, parts: Sequence[ChunkResult]) -> ChunkResult:
        """One chunk of every group as one chunk of the stack (see the module docstring)."""
        for p in parts:
            if isinstance(p, FormatError):
                return p
        if all(p is None for p in parts):
            return None
        shape = next(p.shape[1:] for p in parts if isinstance(p, np.ndarray))
        out = np.empty((self.num_channels, *shape), dtype=self.dtype, order="F")
        for (c0, c1), p in zip(self.ranges, parts, strict=True):
            if isinstance(p, np.ndarray):
                out[c0:c1] = p
            else:
                out[c0:c1] = self.fill_value
        out.flags.writeable = False
        return out

    def iter_units(self) -> Iterator[Vec3]:
        seen: set[Vec3] = set()
        for g in self.groups:
            for pos in g.iter_units():
                if pos not in seen:
                    seen.add(pos)
                    yield pos

    @property
    def lists_units(self) -> bool:
        return all(g.lists_units for g in self.groups)

    def part_index(self, group: int, indices: Sequence[int]) -> list[int]:
        """The stack's chunk ``indices`` (x fastest in the unit, the default
        ``chunk_index``) as group ``group``'s own (a shard holding several channel chunks
        numbers them apart)."""
        local = self.chunk_local(np.asarray(indices, dtype=np.int64))
        out: list[int] = self.groups[group].chunk_index(local).tolist()
        return out

    # -- reading ----------------------------------------------------------------------------------
    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """Each group reads its channels of ``out`` with its own ``read_into`` (the shared
        parallel one or its format's), which replaces the shared one of the stack: that one
        would read ``StackedUnit`` chunks, each the groups' chunks decoded, stacked into a
        chunk of all channels and copied again."""
        for (c0, c1), g in zip(self.ranges, self.groups, strict=True):
            g.read_into(out[c0:c1], offset)

    # -- description ------------------------------------------------------------------------------
    def info(self) -> VolumeInfo:
        first = self.groups[0].info()
        header = dict(first.header)
        header["channel_groups"] = [list(r) for r in self.ranges]
        return VolumeInfo(self.format, first.compression, header)

    def problems(self) -> list[FormatError]:
        return [p for g in self.groups for p in g.problems()]

    def forget_unit(self, unit: Vec3) -> None:
        for g in self.groups:
            g.forget_unit(unit)

    def drop_read_ahead(self, keep: Iterable[Sequence[int]] = ()) -> None:
        kept = list(keep)
        for g in self.groups:
            g.drop_read_ahead(kept)

    def done_with(self, unit: StorageUnit) -> None:
        if isinstance(unit, StackedUnit):
            for g, p in zip(self.groups, unit.parts, strict=True):
                if p is not None:
                    g.done_with(p)

    def close(self) -> None:
        for g in self.groups:
            g.close()


class StackedUnit(StorageUnit):
    """The storage units of every group at one grid position (``None`` where a group has
    none), as one unit of the stack."""

    def __init__(self, stack: ChannelStack, parts: Sequence[StorageUnit | None]) -> None:
        self.stack = stack
        self.parts = list(parts)
        present = [p for p in self.parts if p is not None]
        self.path = present[0].path
        u = stack.unit_shape
        self.num_chunks = u[0] * u[1] * u[2]
        self.table_bytes = sum(p.table_bytes for p in present)
        #: Each group's index of every chunk of the stack's unit.
        every = list(range(self.num_chunks))
        self._maps = [np.asarray(stack.part_index(k, every), dtype=np.int64)
                      for k in range(len(self.parts))]

    def _part(self, k: int, indices: Sequence[int]) -> list[int]:
        out: list[int] = self._maps[k][np.asarray(indices, dtype=np.int64)].tolist()
        return out

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts if p is not None)

    def _tables(self) -> list[ChunkTable | None]:
        """Each group's chunk table in the stack's chunk order."""
        out: list[ChunkTable | None] = []
        for p, m in zip(self.parts, self._maps, strict=True):
            if p is None:
                out.append(None)
                continue
            t = p.chunk_table()
            out.append(ChunkTable(t.offsets[m], t.nbytes[m], t.present[m],
                                  t.constant[m] if t.constant is not None else None))
        return out

    def chunk_table(self) -> ChunkTable:
        """A chunk is present where any group has it; its bytes are all groups' together, its
        offset the first present group's."""
        tables = [t for t in self._tables() if t is not None]
        present = np.logical_or.reduce([t.present for t in tables])
        nbytes = np.sum([np.where(t.present, t.nbytes, 0) for t in tables], axis=0)
        offsets = np.full(len(present), -1, dtype=np.int64)
        for t in reversed(tables):
            offsets = np.where(t.present, t.offsets, offsets)
        return ChunkTable(offsets.astype(np.int64), nbytes.astype(np.int64), present)

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        reads = [p.read_stored(self._part(k, indices)) if p is not None
                 else [None] * len(indices) for k, p in enumerate(self.parts)]
        out: list[StoredResult] = []
        for n in range(len(indices)):
            got = [r[n] for r in reads]
            failed = next((g for g in got if isinstance(g, FormatError)), None)
            if failed is not None:
                out.append(failed)
            elif all(g is None for g in got):
                out.append(None)
            else:
                out.append(b"".join(bytes(g) for g in got
                                    if g is not None and not isinstance(g, FormatError)))
        return out

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        """The groups' stored bytes split by their chunk tables' sizes, each decoded."""
        parts: list[ChunkResult] = []
        at = 0
        view = memoryview(stored)
        for k, (p, t) in enumerate(zip(self.parts, self._tables(), strict=True)):
            if p is None or t is None or not t.present[index]:
                parts.append(None)
                continue
            n = int(t.nbytes[index])
            parts.append(p.decode(int(self._maps[k][index]), view[at:at + n]))
            at += n
        out = self.stack.stack(parts)
        if not isinstance(out, np.ndarray):  # every group absent: a chunk of fill values
            c = self.stack.chunk_shape
            return np.full((self.stack.num_channels, *c), self.stack.fill_value,
                           dtype=self.stack.dtype, order="F")
        return out

    def read_chunks(self, indices: Sequence[int]) -> list[ChunkResult]:
        reads = [p.read_chunks(self._part(k, indices)) if p is not None
                 else [None] * len(indices) for k, p in enumerate(self.parts)]
        return [self.stack.stack([r[n] for r in reads]) for n in range(len(indices))]

    def will_need(self, indices: Sequence[int]) -> None:
        for k, p in enumerate(self.parts):
            if p is not None:
                p.will_need(self._part(k, indices))

    @described
    def describe(self) -> dict[str, Any]:
        first = next(p for p in self.parts if p is not None)
        out = first.describe().as_dict()
        out["channel_units"] = [p.path if p is not None else None for p in self.parts]
        return out

    def describe_chunk(self, index: int) -> dict[str, Any]:
        k, first = next((k, p) for k, p in enumerate(self.parts) if p is not None)
        return first.describe_chunk(int(self._maps[k][index]))

    def close(self) -> None:
        for p in self.parts:
            if p is not None:
                p.close()





def channel_volume(volume: Volume, channel: int) -> Volume:
    """Channel ``channel`` of ``volume`` as a volume of its own that reads only that channel's
    chunks where they are stored apart (``Volume.channel_groups``), else a ``ChannelView``."""
    for (c0, c1), group in volume.channel_groups():
        if c0 <= channel < c1:
            return group if c1 - c0 == 1 else ChannelView(group, channel - c0)
    raise ValueError(f"no channel {channel} in {volume.num_channels}")
__all__ = ["ChannelStack", "StackedUnit", "ChannelView", "channel_volume"]
