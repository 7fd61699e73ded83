"""One LOD of a VDS file's primary channel as a ``Volume``.

Axes: dimension 0 (the fastest, e.g. "Sample") is X, 1 is Y, 2 is Z; further dimensions must
have one sample.  LOD ``k`` has ``ceil(n / 2**k)`` samples per axis and is shown as mag
``(2**k, 2**k, 2**k)``.

The chunk grid steps by a brick's interior, ``brick - negative margin - positive margin``;
brick ``j`` of the layer stores the samples ``[step*j, step*j + brick)`` (clipped at the end of
the data), so chunk ``i`` of the grid reads its part of brick ``min(i, bricks - 1)``.  There are
as many bricks per axis as OpenVDS makes: ``max(1, ceil((n - margins) / step))``, enough for
the last brick's stored span, positive margin included, to reach the end of the data.  The layer
(``Dimensions_012LOD{k}``) is one storage unit, its ``ChunkTable`` the layer's index pages: a
chunk never written is absent (fill value), a constant chunk has no stored bytes and decodes to
its constant.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.description import described
from viewer.format.errors import (
    ChunkDecodeError,
    FileChangedError,
    FileChangingError,
    FormatError,
    MetadataError,
    UnsupportedFormatError,
    read_failure,
)
from viewer.format.handles import changing_error, settle_deadline
from viewer.format.store import Store, split
from viewer.format.vds import codecs, container
from viewer.format.vds.container import METHODS, WAVELET_METHODS, ChunkIndex, Container
from viewer.format.vds.layout import FORMAT_CODES, Channel, Layout, check_primary, parse_layout
from viewer.format.vds.wavelet import WaveletReader
from viewer.format.volume import ChunkTable, StorageUnit, StoredResult, Vec3, Volume, VolumeInfo


class VdsFile:
    """A ``.vds`` file opened once: container, layout, primary channel, layer indexes (read on
    first use) and, for wavelet layers, the OpenVDS reader.  Shared by its LOD volumes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        store, key = split(self.path)
        self.store: Store = store
        self.key = key
        deadline = settle_deadline()
        while True:  # the container and its layout of one version of the file
            try:
                self.container: Container = container.read_container(store, key, self.path)
                raw = container.read_json_file(store, key, self.path, self.container,
                                               "VolumeDataLayout")
                break
            except FileChangingError:
                raise
            except FileChangedError:
                if time.monotonic_ns() > deadline:
                    raise changing_error(self.path) from None
        self.layout: Layout = parse_layout(raw, self.path)
        self.channel: Channel = check_primary(self.layout, self.path)
        axes = self.layout.axes
        extra = [f"{a.name} ({a.samples})" for a in axes[3:] if a.samples > 1]
        if extra:
            raise UnsupportedFormatError(f"dimensions beyond the third have more than one "
                                         f"sample: {', '.join(extra)}", self.path)
        self.dims = min(len(axes), 3)
        self.group = "Dimensions_" + "".join(str(d) for d in range(self.dims))
        self.wavelet = WaveletReader(self.path)
        self._indexes: dict[int, ChunkIndex] = {}
        self._lock = threading.Lock()

    @property
    def samples(self) -> tuple[int, int, int]:
        s = [a.samples for a in self.layout.axes[:3]] + [1, 1]
        return (s[0], s[1], s[2])

    def lod_factors(self, lod: int) -> tuple[int, int, int]:
        """How many samples of LOD 0 one sample of LOD ``lod`` spans per axis: ``2**lod``,
        except along the axes past the file's dimensions and the one the layout keeps at full
        resolution (``forceFullResolutionDimension``)."""
        full = self.layout.full_resolution_dimension
        f = [1 << lod if d < self.dims and d != full else 1 for d in range(3)]
        return (f[0], f[1], f[2])

    def lod_margins(self, lod: int) -> list[tuple[int, int]]:
        """Per axis, the negative and positive margins of LOD ``lod``'s bricks: OpenVDS halves
        them at each LOD along the axes it halves (the brick's interior, the chunk grid's
        step, stays)."""
        lay = self.layout
        halvings = [f.bit_length() - 1 for f in self.lod_factors(lod)]
        return [(lay.negative_margin >> h, lay.positive_margin >> h) for h in halvings]

    def layer_name(self, lod: int) -> str:
        return f"{self.group}LOD{lod}"

    def lods(self) -> list[int]:
        """The LODs whose layer the file holds, finest first."""
        return [k for k in range(self.layout.lod_levels + 1)
                if self.layer_name(k) in self.container.files]

    def index(self, lod: int) -> ChunkIndex:
        with self._lock:
            idx = self._indexes.get(lod)
            if idx is None:
                f = self.container.files[self.layer_name(lod)]
                idx = container.read_index(self.store, self.key, self.path, self.container, f)
                self._indexes[lod] = idx
            return idx

    def close(self) -> None:
        self.wavelet.close()


class VdsUnit(StorageUnit):
    """A layer of the file as the one storage unit of its volume."""

    def __init__(self, volume: VdsVolume) -> None:
        self.volume = volume
        self.path = f"{volume.path}#{volume.layer}"
        self.num_chunks = volume.num_chunks
        idx = volume.index
        self.table_bytes = idx.offsets.nbytes * 3 + idx.metadata.nbytes
        self._table: ChunkTable | None = None

    @property
    def size(self) -> int:
        return self.volume.file.container.size

    def chunk_table(self) -> ChunkTable:
        if self._table is None:
            v = self.volume
            m = v.brick_of
            idx = v.index
            const = (idx.constant | idx.novalue)[m]
            present = idx.written[m]
            offsets = np.where(present & ~const, idx.offsets[m], np.where(present, 0, -1))
            self._table = ChunkTable(offsets.astype(np.int64),
                                     np.where(present, idx.lengths[m], 0).astype(np.int64),
                                     present, const & present)
        return self._table

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        v = self.volume
        idx = v.index
        size = self.size
        out: list[StoredResult] = []
        ranges: list[tuple[int, int]] = []
        slots: list[int] = []
        for index in indices:
            n = int(index)
            if not 0 <= n < v.num_chunks:
                out.append(FormatError(f"no chunk {n} in {v.layer}", v.path))
                continue
            m = int(v.brick_of[n])
            if not idx.written[m]:
                out.append(None)
                continue
            off, length = int(idx.offsets[m]), int(idx.lengths[m])
            if length == 0:
                if idx.constant[m] or idx.novalue[m]:
                    out.append(b"")
                else:
                    out.append(ChunkDecodeError(
                        f"brick {m} of {v.layer} has no stored bytes and no constant hash",
                        v.path, chunk=v.chunk_position(n)))
                continue
            if off < 0 or length < 0 or off + length > size:
                out.append(ChunkDecodeError(
                    f"brick {m} of {v.layer}: {length} bytes at {off} run past the end of the "
                    f"file ({size} bytes)", v.path, offset=off, chunk=v.chunk_position(n)))
                continue
            slots.append(len(out))
            out.append(None)
            ranges.append((off, length))
        if ranges:
            try:
                # Of the version the indexes were read from: a file rewritten since it
                # was opened is another volume (another layout, maybe), to be opened again.
                blobs = v.file.store.read_ranges_of(v.file.key, ranges,
                                                    v.file.container.object_version)
            except FileChangedError as exc:
                changed = FileChangedError(f"{exc.reason}; open it again", v.path)
                for s in slots:
                    out[s] = changed.at(chunk=v.chunk_position(int(indices[s])))
                return out
            except OSError as exc:
                err = read_failure(exc, FormatError, "cannot read", v.path)
                for s in slots:
                    out[s] = err
                return out
            for s, blob, (off, length) in zip(slots, blobs, ranges, strict=True):
                out[s] = blob if len(blob) == length else ChunkDecodeError(
                    f"{len(blob)} of {length} bytes at {off} could be read: truncated", v.path,
                    offset=off)
        return out

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        v = self.volume
        c = v.chunk_shape
        out = np.empty((1, c[0], c[1], c[2]), dtype=v.dtype, order="F")
        out[...] = v.fill_value
        region = v.chunk_region(index)
        dst: tuple[Any, ...] = (0, *(slice(0, hi - lo) for lo, hi in region))
        out[dst] = v.decode_part(index, stored, region)
        return out

    @described
    def describe(self) -> dict[str, Any]:
        v = self.volume
        f = v.file.container.files[v.layer]
        idx = v.index
        d = {"layer": v.layer, **f.describe(), "compression": METHODS.get(idx.method,
                                                                            idx.method),
             **({"tolerance": idx.tolerance} if idx.method in WAVELET_METHODS else {}),
             "index_pages": idx.pages,
             "bricks_written": int(idx.written.sum()),
             "bricks_constant": int((idx.constant | idx.novalue).sum())}
        totals = idx.adaptive_totals()
        if totals:
            d["adaptive_level_totals"] = totals
        if idx.problems:
            d["index_problems"] = list(idx.problems)
        return d

    def describe_chunk(self, index: int) -> dict[str, Any]:
        v = self.volume
        idx = v.index
        n = int(index)
        m = int(v.brick_of[n])
        region = v.chunk_region(n)
        bpos = v.brick_position(m)
        step, brick = v.step, v.brick
        out: dict[str, Any] = {
            "brick": m, "brick_position": list(bpos),
            "extent": [[lo, hi] for lo, hi in region],
            "brick_extent": [[step * b, min(step * b + brick, s)]
                              for b, s in zip(bpos, v.shape, strict=True)],
            "offset": int(idx.offsets[m]), "stored_bytes": int(idx.lengths[m]),
            "hash": f"{int(idx.hashes[m]):016x}"}
        if not idx.written[m]:
            out["state"] = "not written"
        elif idx.novalue[m]:
            out["state"] = "constant NoValue"
        elif idx.constant[m]:
            out["state"] = "constant"
            out["constant_value"] = idx.constant_value(m)
        else:
            out["state"] = "stored"
        if idx.method in WAVELET_METHODS and idx.metadata.shape[1] >= 24 and idx.lengths[m]:
            levels = idx.metadata[m, 8:24].tolist()
            sizes, size = [], float(idx.lengths[m])
            for b in levels:
                if b == 0:
                    break
                size = size * b / 255.0
                sizes.append(int(round(size)))
            out["adaptive_level_bytes"] = levels
            out["adaptive_level_sizes"] = sizes
        return out

    def close(self) -> None:
        """Nothing: the volume owns it."""


class VdsVolume(Volume):
    """LOD ``lod`` of the primary channel of a VDS file (see the module docstring)."""

    format = "vds"

    def __init__(self, file: VdsFile, lod: int = 0) -> None:
        self.file = file
        self.lod = lod
        self.path = file.path
        self.layer = file.layer_name(lod)
        if self.layer not in file.container.files:
            known = ", ".join(n for n in file.container.files if n != "VolumeDataLayout")
            raise MetadataError(f"no layer {self.layer!r} (layers: {known})", file.path)
        lay = file.layout
        ch = file.channel
        self.channel = ch
        self.dtype = ch.dtype
        self.num_channels = 1
        n0 = file.samples
        fac = file.lod_factors(lod)
        self._shape: Vec3 = ((n0[0] + fac[0] - 1) // fac[0], (n0[1] + fac[1] - 1) // fac[1],
                             (n0[2] + fac[2] - 1) // fac[2])
        self.brick = lay.brick_size if file.dims == 3 else lay.brick_size * lay.brick_2d_multiplier
        step = self.brick - lay.negative_margin - lay.positive_margin
        if step < 1:
            raise MetadataError(f"brick {self.brick} is no larger than its margins", self.path)
        self.step = step
        dims = file.dims
        cs = [step if d < dims else 1 for d in range(3)]
        self.chunk_shape = (cs[0], cs[1], cs[2])
        grid = [-(-self._shape[d] // cs[d]) for d in range(3)]
        self.unit_shape = (grid[0], grid[1], grid[2])
        self.num_chunks = grid[0] * grid[1] * grid[2]
        # As OpenVDS counts them: bricks until the last one's stored span (its positive margin
        # included) reaches the end of the data; margins halve at each LOD.
        margins = file.lod_margins(lod)
        bricks = [max(1, -(-(self._shape[d] - sum(margins[d])) // step)) if d < dims else 1
                  for d in range(3)]
        self.bricks: tuple[int, int, int] = (bricks[0], bricks[1], bricks[2])
        self.index = file.index(lod)
        declared = file.container.files[self.layer].chunk_count
        if bricks[0] * bricks[1] * bricks[2] != declared:
            raise MetadataError(f"{self.layer} holds {declared} bricks; its extent "
                                f"{self._shape} in bricks of {self.brick} (margins "
                                f"{lay.negative_margin}/{lay.positive_margin}) makes "
                                f"{bricks[0]}x{bricks[1]}x{bricks[2]}", self.path)
        # brick of each chunk of the grid
        local = self.chunk_local(np.arange(self.num_chunks, dtype=np.int64))
        b = np.minimum(local, np.asarray(self.bricks, dtype=np.int64) - 1)
        self.brick_of = b[:, 0] + bricks[0] * (b[:, 1] + bricks[1] * b[:, 2])
        self.fill_value = self._value(ch.no_value) if ch.use_no_value else 0
        lo, hi = ch.value_range
        if ch.integer_scale != 1.0 or ch.integer_offset != 0.0:
            lo = (lo - ch.integer_offset) / ch.integer_scale
            hi = (hi - ch.integer_offset) / ch.integer_scale
        self.value_range = (float(lo), float(hi)) if hi > lo else None
        axes = lay.axes
        names = [a.name for a in axes[:3]] + ["", ""]
        units = [a.unit for a in axes[:3]] + ["", ""]
        self.axis_names = (names[0] or "x", names[1] or "y", names[2] or "z")
        self.axis_units = (units[0], units[1], units[2])
        self.method = self.index.method
        self._unit = VdsUnit(self)

    # -- geometry ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Vec3:
        return self._shape

    def chunk_position(self, index: int) -> tuple[int, int, int]:
        g = self.chunk_local(np.asarray([index], dtype=np.int64))[0]
        return (int(g[0]), int(g[1]), int(g[2]))

    def brick_position(self, brick: int) -> tuple[int, int, int]:
        b = self.bricks
        return (brick % b[0], (brick // b[0]) % b[1], brick // (b[0] * b[1]))

    def chunk_region(self, index: int) -> list[tuple[int, int]]:
        """The samples ``[(lo, hi)]`` along x, y, z that chunk ``index`` covers."""
        pos = self.chunk_position(index)
        return [(p * c, min((p + 1) * c, s))
                for p, c, s in zip(pos, self.chunk_shape, self._shape, strict=True)]

    def _value(self, v: float) -> int | float:
        ch = self.channel
        if self.dtype.kind == "f":
            return float(v)
        raw = (v - ch.integer_offset) / ch.integer_scale
        info = np.iinfo(self.dtype)
        return int(min(max(round(raw), info.min), info.max))

    # -- units ------------------------------------------------------------------------------------
    def unit_path(self, unit: Vec3) -> str:
        return self.path

    def open_unit(self, unit: Vec3) -> VdsUnit | None:
        return self._unit if tuple(unit) == (0, 0, 0) else None

    def done_with(self, unit: StorageUnit) -> None:
        """The volume keeps its one unit."""

    def iter_units(self) -> Iterator[Vec3]:
        yield (0, 0, 0)

    # -- decoding ---------------------------------------------------------------------------------
    def decode_part(self, index: int, stored: bytes | memoryview,
                    region: list[tuple[int, int]]) -> npt.NDArray[Any]:
        """The samples of ``region`` (chunk ``index``'s) as an ``(x, y, z)`` array."""
        idx = self.index
        m = int(self.brick_of[index])
        shape = tuple(hi - lo for lo, hi in region)
        if len(stored) == 0:
            if idx.novalue[m]:
                return np.full(shape, self._value(self.channel.no_value), dtype=self.dtype)
            if idx.constant[m]:
                return np.full(shape, self._value(idx.constant_value(m)), dtype=self.dtype)
        bpos = self.brick_position(m)
        start = [self.step * b for b in bpos]
        full = [min(self.brick, s - st) for st, s in zip(start, self._shape, strict=True)]
        pos = self.chunk_position(index)
        try:
            if self.method in WAVELET_METHODS:
                zyx = self.file.wavelet.read_chunk(self.lod, m, pos)
                if zyx.ndim != 3:
                    zyx = zyx.reshape((-1,) + zyx.shape[-2:]) if zyx.ndim > 3 else \
                        zyx.reshape((1,) * (3 - zyx.ndim) + zyx.shape)
                xyz = zyx.transpose(2, 1, 0)
            else:
                xyz = self._decode_plain(stored, full)
            crop = []
            for d, (lo, hi) in enumerate(region):
                a = lo - start[d]
                b = hi - start[d]
                if a < 0 or b > xyz.shape[d]:
                    raise codecs.CodecError(
                        f"brick stores {list(xyz.shape)} samples from {start}; chunk needs "
                        f"{region}")
                crop.append(slice(a, b))
            part = xyz[tuple(crop)]
            if part.dtype != self.dtype:
                part = part.astype(self.dtype)
            return part
        except codecs.CodecError as exc:
            raise ChunkDecodeError(f"brick {m} of {self.layer} ({METHODS.get(self.method)}): "
                                   f"{exc}", self.path, offset=int(idx.offsets[m]),
                                   chunk=pos) from None

    def _decode_plain(self, stored: bytes | memoryview,
                      full: list[int]) -> npt.NDArray[Any]:
        desc = codecs.parse_descriptor(stored)
        want_fmt = FORMAT_CODES[self.channel.format]
        if desc.format_code != want_fmt or desc.components != 1:
            raise codecs.CodecError(f"brick holds format {desc.format_code} x "
                                    f"{desc.components}, the channel is {self.channel.format}")
        if any(s > self.brick for s in desc.size) or desc.voxels > self.brick ** 3:
            raise codecs.CodecError(f"brick of {desc.size} is larger than {self.brick}")
        if any(a > b for a, b in zip(desc.size, full, strict=True)):
            raise codecs.CodecError(f"brick of {list(desc.size)} samples where the data has "
                                    f"room for {full}")
        nbytes = desc.voxels * self.dtype.itemsize
        payload = memoryview(stored)[codecs.DESCRIPTOR.size:]
        if self.method == 0:
            if len(payload) != nbytes:
                raise codecs.CodecError(f"{len(payload)} sample bytes stored, {desc.size} "
                                        f"needs {nbytes}")
            raw: bytes | memoryview = payload
        elif self.method == 3:
            if nbytes > 1100 * len(payload) + 1024:
                raise codecs.CodecError(f"{len(payload)} zlib bytes cannot hold {nbytes}")
            raw = codecs.inflate(payload, nbytes)
        elif self.method == 2:
            if nbytes > 16384 * len(payload):
                raise codecs.CodecError(f"{len(payload)} RLE bytes cannot hold {nbytes}")
            raw = codecs.unrle(payload, nbytes)
        else:
            raise codecs.CodecError(f"compression method {self.method}")
        sx, sy, sz = desc.size
        return np.frombuffer(raw, dtype=self.dtype).reshape(sz, sy, sx).transpose(2, 1, 0)

    def read_into(self, out: npt.NDArray[Any], offset: Sequence[int]) -> None:
        """Wavelet layers: the box from OpenVDS in one request (it decodes on its own threads),
        which replaces the shared ``Volume.read_into`` because a wavelet brick decodes only
        through OpenVDS (figures: docs/performance.md, containers); the other layers through
        the shared one, chunk by chunk."""
        if self.method not in WAVELET_METHODS:
            super().read_into(out, offset)
            return
        off = [int(v) for v in offset]
        lo = [max(o, 0) for o in off]
        hi = [min(o + n, s) for o, n, s in zip(off, out.shape[1:], self._shape, strict=True)]
        if any(h <= lo_ for lo_, h in zip(lo, hi, strict=True)):
            return
        zyx = self.file.wavelet.read_box(self.lod, (lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2]),
                                         self.dtype, self.file.samples)
        dst: tuple[Any, ...] = (0, *(slice(a - o, b - o)
                                     for a, b, o in zip(lo, hi, off, strict=True)))
        out[dst] = zyx.transpose(2, 1, 0)

    # -- description ------------------------------------------------------------------------------
    def info(self) -> VolumeInfo:
        lay = self.file.layout
        ch = self.channel
        method = METHODS.get(self.method, str(self.method))
        comp = (method if self.method in (0, 2, 3)
                else f"{method} (tolerance {self.index.tolerance:g})")
        return VolumeInfo("vds", comp, {
            **self.file.container.describe(),
            "layer": self.layer, "lod": self.lod, "lod_levels": lay.lod_levels,
            "axes": [{"name": a.name, "unit": a.unit, "samples": a.samples,
                      "min": a.coordinate_min, "max": a.coordinate_max} for a in lay.axes],
            "channel": ch.name, "channel_format": ch.format, "channel_unit": ch.unit,
            "value_range": list(ch.value_range), "no_value": ch.no_value if ch.use_no_value
            else None, "integer_scale": ch.integer_scale, "integer_offset": ch.integer_offset,
            "other_channels": [c.name for c in lay.channels[1:]],
            "brick_size": self.brick, "negative_margin": lay.negative_margin,
            "positive_margin": lay.positive_margin, "compression": method,
            **({"tolerance": self.index.tolerance} if self.method in WAVELET_METHODS else {}),
            "layers": [n for n in self.file.container.files if n != "VolumeDataLayout"]})

    def problems(self) -> list[FormatError]:
        return [MetadataError(p, self.path) for p in self.index.problems]

    def close(self) -> None:
        """Drop the OpenVDS handle of wavelet layers (reopened if the volume is read again)."""
        self.file.close()


__all__ = ["VdsFile", "VdsVolume", "VdsUnit"]
