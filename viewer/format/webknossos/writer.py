"""Writing webKnossos datasets: the properties file, a folder per layer, a WKW dataset per mag.

For tests, benchmarks and the demo.  ``create_dataset`` lays out an empty dataset (properties
file and every mag's ``header.wkw``), in the current style (``mags`` with paths, ``scale``
object) or the legacy one (``wkwResolutions``, bare ``scale`` list); data goes into mag 1 with
``Mag.write`` and the coarser mags are built with ``downsample.downsample_layer``.
``write_synthetic_dataset`` does all of it from a synthetic volume (color + segmentation), in
one pass: each chunk is generated once, written, and reduced in memory to the coarser mags.
"""

from __future__ import annotations

import ctypes
import glob
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import lz4.block
import numpy as np
import numpy.typing as npt

from viewer.format.webknossos.dataset import WkDataset
from viewer.format.webknossos.downsample import (
    coarse_file_count,
    default_mode,
    downsample,
    downsample_layer,
    relative_factor,
)
from viewer.format.webknossos.layer import Layer
from viewer.format.webknossos.mag import mag_name, parse_mag
from viewer.format.webknossos.properties import (
    ELEMENT_CLASSES,
    BoundingBox,
    DatasetProperties,
    LayerProperties,
    MagProperties,
    VoxelSize,
    write_properties,
)
from viewer.format.wkw import BLOCK_TYPE_LZ4HC, Dataset, Header, morton
from viewer.format.wkw import writer as wkw_writer
from viewer.format.wkw.lz4block import LZ4HC_LEVEL

Vec3 = tuple[int, int, int]

#: The mags of the demo dataset: anisotropic EM style, x and y first.
DEMO_MAGS: tuple[Vec3, ...] = ((1, 1, 1), (2, 2, 1), (4, 4, 2))
#: Side of the fixed grid on which synthetic data is generated (its noise is seeded per box).
GENERATION_GRID = 128


@dataclass
class LayerSpec:
    """What ``create_dataset`` makes of one layer.  ``num_channels`` None: what the element
    class implies (uint24: 3).  ``short_names``: folder ``2`` rather than ``2-2-2``."""

    name: str
    bounding_box: BoundingBox
    category: str = "color"
    element_class: str = "uint8"
    mags: Sequence[Sequence[int]] = field(default_factory=lambda: [(1, 1, 1)])
    num_channels: int | None = None
    largest_segment_id: int | None = None
    block_len: int = 32
    file_len: int = 32
    block_type: int = BLOCK_TYPE_LZ4HC
    short_names: bool = True

    def layer_properties(self) -> LayerProperties:
        dtype, implied = ELEMENT_CLASSES[self.element_class]
        channels = implied if implied > 1 else (self.num_channels or 1)
        mags = [parse_mag(list(m)) for m in self.mags]
        return LayerProperties(
            name=self.name, category=self.category, data_format="wkw",
            bounding_box=self.bounding_box, element_class=self.element_class,
            num_channels=channels,
            mags=[MagProperties(m, f"./{self.name}/{mag_name(m, self.short_names)}",
                                self.block_len * self.file_len) for m in mags],
            largest_segment_id=self.largest_segment_id)

    def header(self) -> Header:
        dtype, implied = ELEMENT_CLASSES[self.element_class]
        channels = implied if implied > 1 else (self.num_channels or 1)
        return Header(dtype, num_channels=channels, block_len=self.block_len,
                      file_len=self.file_len, block_type=self.block_type)


def create_dataset(path: str | os.PathLike[str], layers: Sequence[LayerSpec],
                   voxel_size: Sequence[float] = (1.0, 1.0, 1.0), unit: str = "nanometer",
                   legacy: bool = False, name: str | None = None) -> WkDataset:
    """Create an empty webKnossos dataset at ``path`` and return it opened.

    ``legacy`` writes ``wkwResolutions`` and a bare ``scale`` list (converted to nanometres),
    as webKnossos datasets from before the ``mags`` key look.  ``name`` is the dataset's id
    name (default: the folder's name)."""
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    props = DatasetProperties(
        VoxelSize((float(voxel_size[0]), float(voxel_size[1]), float(voxel_size[2])), unit),
        [spec.layer_properties() for spec in layers],
        raw={"id": {"name": name or os.path.basename(os.path.abspath(path)), "team": ""}})
    for spec, lp in zip(layers, props.layers, strict=True):
        for mp in lp.mags:
            folder = os.path.join(path, spec.name, mag_name(mp.mag, spec.short_names))
            Dataset.create(folder, spec.header()).close()
    write_properties(path, props, legacy=legacy)
    return WkDataset(path)


def set_largest_segment_id(path: str | os.PathLike[str], layer: str, value: int,
                           legacy: bool = False) -> None:
    """Rewrite the properties file of ``path`` with ``largestSegmentId`` of ``layer`` set."""
    ds = WkDataset(path)
    if ds.properties is None:
        raise ValueError(f"{os.fspath(path)} has no properties file")
    for lp in ds.properties.layers:
        if lp.name == layer:
            lp.largest_segment_id = int(value)
            lp.raw = dict(lp.raw, largestSegmentId=int(value))
    write_properties(path, ds.properties, legacy=legacy)


class SyntheticVolume(Protocol):
    """What ``write_synthetic_dataset`` needs of a volume (``viewer.core.synthetic.EMVolume``
    has it): grey values and cell ids of any box, ``(X, Y, Z)``."""

    def em(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[np.uint8]: ...

    def segmentation(self, offset: Sequence[int],
                     shape: Sequence[int]) -> npt.NDArray[np.uint32]: ...

    def em_and_segmentation(self, offset: Sequence[int], shape: Sequence[int]
                            ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint32]]:
        """Both of one box in one pass (the generator shares its work between them)."""
        ...


def write_synthetic_dataset(path: str | os.PathLike[str], volume: SyntheticVolume,
                            shape: Sequence[int] = (256, 256, 128),
                            voxel_size: Sequence[float] = (11.24, 11.24, 28.0),
                            mags: Sequence[Sequence[int]] = DEMO_MAGS,
                            block_len: int = 32, file_len: int = 4,
                            block_type: int = BLOCK_TYPE_LZ4HC, legacy: bool = False,
                            progress: Callable[[int, int], None] | None = None,
                            workers: int = 2, name: str | None = None,
                            lz4hc_level: int = LZ4HC_LEVEL) -> WkDataset:
    """Write a webKnossos dataset with a ``color`` (uint8, ``volume.em``) and a
    ``segmentation`` (uint32, ``volume.segmentation``) layer of ``shape`` mag-1 voxels, the
    given ``mags`` (default 1, 2-2-1, 4-4-2) and an anisotropic ``voxel_size`` in nm; return
    it opened.  ``path`` must not hold a dataset yet (write into a temporary folder and rename
    it for an all-or-nothing result); ``name`` is the dataset's id name (default: the folder's).

    Mag 1 is generated on a fixed grid of ``GENERATION_GRID`` voxels from the origin (the
    volume's noise is seeded by the box), so the data do not depend on ``file_len``; coarser
    mags are downsampled (mean for color, mode for segmentation) exactly as
    ``downsample.downsample_layer`` would do it from the files, but from the chunks still in
    memory: each chunk of mag 1 (both layers from one ``em_and_segmentation`` call) is
    written and reduced to its part of every coarser mag, and a coarse file is written, once
    and whole, as soon as all its parts are there.  Memory stays near one chunk per worker
    plus the coarse files not complete yet.  (When a mag factor does not divide the chunk,
    the coarse mags are built afterwards by ``downsample_layer`` from the files.)

    LZ4HC blocks are encoded at ``lz4hc_level`` (default 9, as the reference writes; lower is
    faster, same format: a reader cannot tell).  ``largestSegmentId`` is the maximum id
    written.  Work runs on ``workers`` threads; ``progress(done, total)`` counts written files
    over the whole job and is called on the calling thread.  An exception from ``progress``
    (e.g. ``KeyboardInterrupt``) or from a task stops the work: queued tasks are dropped,
    running ones finish, then it propagates."""
    box = BoundingBox((0, 0, 0), (int(shape[0]), int(shape[1]), int(shape[2])))
    common: dict[str, Any] = dict(bounding_box=box, mags=list(mags), block_len=block_len,
                                  file_len=file_len, block_type=block_type)
    ds = create_dataset(path, [
        LayerSpec("color", category="color", element_class="uint8", **common),
        LayerSpec("segmentation", category="segmentation", element_class="uint32",
                  largest_segment_id=0, **common),
    ], voxel_size=voxel_size, legacy=legacy, name=name)
    try:
        largest = _SyntheticJob(ds, volume, box, workers, progress, lz4hc_level).run()
    finally:
        ds.close()
    set_largest_segment_id(path, "segmentation", largest, legacy=legacy)
    return WkDataset(path)


class _SyntheticJob:
    """The work of ``write_synthetic_dataset`` once the empty dataset exists.

    Tasks run on a thread pool: one generates a mag-1 chunk and submits its writing, one per
    layer, which reduces it to its parts of the coarser mags and submits the writing of every
    coarse file it completes.  The calling thread only waits, counts files and reports
    progress."""

    def __init__(self, ds: WkDataset, volume: SyntheticVolume, box: BoundingBox, workers: int,
                 progress: Callable[[int, int], None] | None, lz4hc_level: int) -> None:
        self.ds = ds
        self.lz4hc_level = lz4hc_level
        self.volume = volume
        self.box = box
        self.workers = max(1, workers)
        self.progress = progress
        self.layers = [ds.layer("color"), ds.layer("segmentation")]
        mag1 = self.layers[0].mags[0]
        side = mag1.dataset.file_len_vx
        self.chunk = max(side, GENERATION_GRID)
        self.chunks = [(x, y, z) for z in range(0, box.end[2], self.chunk)
                       for y in range(0, box.end[1], self.chunk)
                       for x in range(0, box.end[0], self.chunk)]
        mags = [m.mag for m in self.layers[0].mags]
        # sources[j]: the mag coarse mag j is built from (as downsample_layer chooses it)
        self.sources: list[int] = [0]
        for j in range(1, len(mags)):
            found = [i for i in range(j) if _whole_multiple(mags[i], mags[j])]
            if not found:
                raise ValueError(f"mag {mags[j]} is no whole multiple of a finer mag")
            self.sources.append(found[-1])
        self.in_memory = all(self.chunk % m[a] == 0 for m in mags for a in range(3))
        self.mags = mags
        # expected[j][file]: how many chunks contribute to coarse file ``file`` of mag j
        self.expected: list[dict[Vec3, int]] = [{} for _ in mags]
        if self.in_memory:
            for lo in self.chunks:
                for j in range(1, len(mags)):
                    c_lo, c_hi = self._piece_box(lo, j)
                    for f in self._coarse_files(j, c_lo, c_hi):
                        self.expected[j][f] = self.expected[j].get(f, 0) + 1
        self.pending: dict[tuple[int, int, Vec3], tuple[npt.NDArray[Any], int]] = {}
        self.lock = threading.Lock()
        self.largest = 0
        self.stopped = False
        self.outstanding = 0
        self.finished: queue.SimpleQueue[Future[int]] = queue.SimpleQueue()
        self.pool: ThreadPoolExecutor | None = None
        self.chunks_left = iter(self.chunks)
        self.writes_left: dict[Vec3, int] = {}

    # -- geometry ------------------------------------------------------------------------------
    def _piece_box(self, lo: Vec3, j: int) -> tuple[Vec3, Vec3]:
        """The part of mag j that the mag-1 chunk at ``lo`` covers, clipped to the box."""
        m = self.mags[j]
        hi = [min(a + self.chunk, e) for a, e in zip(lo, self.box.end, strict=True)]
        return ((lo[0] // m[0], lo[1] // m[1], lo[2] // m[2]),
                (-(-hi[0] // m[0]), -(-hi[1] // m[1]), -(-hi[2] // m[2])))

    def _coarse_files(self, j: int, lo: Sequence[int], hi: Sequence[int]) -> list[Vec3]:
        dataset = self.layers[0].mags[j].dataset
        return list(dataset.files_in_box(lo, [b - a for a, b in zip(lo, hi, strict=True)]))

    def _file_box(self, layer: Layer, j: int, f: Vec3) -> tuple[Vec3, Vec3]:
        """Coarse file ``f`` of mag j clipped to the layer's box at that mag."""
        side = layer.mags[j].dataset.file_len_vx
        end = self.box.at_mag(self.mags[j]).end
        lo = (f[0] * side, f[1] * side, f[2] * side)
        return lo, (min(lo[0] + side, end[0]), min(lo[1] + side, end[1]),
                    min(lo[2] + side, end[2]))

    # -- running -------------------------------------------------------------------------------
    def run(self) -> int:
        """Do all of it; the largest segment id written."""
        files = sum(len(self._coarse_files(0, lo, self._piece_box(lo, 0)[1]))
                    for lo in self.chunks) * len(self.layers)
        if self.in_memory:
            files += sum(len(e) for e in self.expected[1:]) * len(self.layers)
        else:
            files += sum(coarse_file_count(layer) for layer in self.layers)
        done = 0
        if self.progress is not None:
            self.progress(0, files)
        # Each worker's BLAS calls (the volume's smooth fields) on one thread: two workers, each
        # with OpenBLAS threads of its own, would crowd the cores (docs/performance.md).
        init = _single_threaded_blas if self.workers > 1 else None
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="synthetic",
                                initializer=init) as pool:
            self.pool = pool
            try:
                for _ in range(self.workers):
                    self._next_chunk()
                while True:
                    with self.lock:
                        if self.outstanding == 0:
                            break
                    future = self.finished.get()
                    with self.lock:
                        self.outstanding -= 1
                    written = future.result()
                    done += written
                    if written and self.progress is not None:
                        self.progress(done, files)
            except BaseException:
                with self.lock:
                    self.stopped = True
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        if not self.in_memory:
            def step(*_: int) -> None:
                nonlocal done
                done += 1
                if self.progress is not None:
                    self.progress(done, files)

            for layer in self.layers:
                downsample_layer(layer, workers=self.workers, progress=step)
        return self.largest

    def _submit(self, task: Callable[..., int], *args: Any) -> None:
        assert self.pool is not None
        with self.lock:
            if self.stopped:
                return
            self.outstanding += 1
        try:
            future = self.pool.submit(task, *args)
        except RuntimeError:  # the pool shut down after an error: the task is not wanted
            with self.lock:
                self.outstanding -= 1
            return
        future.add_done_callback(self.finished.put)

    def _next_chunk(self) -> None:
        """Start generating the next chunk, if any.  A chunk is generated when an earlier one
        is written (or at the start, one per worker), so generation cannot run ahead of the
        writing and memory holds about one chunk per worker."""
        with self.lock:
            lo = next(self.chunks_left, None)
            if lo is not None:
                self.writes_left[lo] = len(self.layers)
        if lo is not None:
            self._submit(self._one_chunk, lo)

    def _one_chunk(self, lo: Vec3) -> int:
        """Generate the mag-1 chunk at ``lo`` (both layers) and submit their writing."""
        hi = [min(a + self.chunk, e) for a, e in zip(lo, self.box.end, strict=True)]
        size = [b - a for a, b in zip(lo, hi, strict=True)]
        color = np.zeros(size, dtype=np.uint8, order="F")
        seg = np.zeros(size, dtype=np.uint32, order="F")
        g = GENERATION_GRID
        for gz in range(lo[2], hi[2], g):
            for gy in range(lo[1], hi[1], g):
                for gx in range(lo[0], hi[0], g):
                    if self.stopped:
                        return 0
                    at = (gx, gy, gz)
                    em, ids = self.volume.em_and_segmentation(at, (g, g, g))
                    e = [min(a + g, b) for a, b in zip(at, hi, strict=True)]
                    dst = (slice(gx - lo[0], e[0] - lo[0]), slice(gy - lo[1], e[1] - lo[1]),
                           slice(gz - lo[2], e[2] - lo[2]))
                    src = (slice(0, e[0] - gx), slice(0, e[1] - gy), slice(0, e[2] - gz))
                    color[dst] = em[src]
                    seg[dst] = ids[src]
        if seg.size:
            top = int(seg.max())
            with self.lock:
                self.largest = max(self.largest, top)
        for layer, data in zip(self.layers, (color, seg), strict=True):
            self._submit(self._write_chunk, layer, lo, data)
        return 0

    def _write_chunk(self, layer: Layer, lo: Vec3, data: npt.NDArray[Any]) -> int:
        """Write one layer's mag-1 chunk and reduce it; the number of files written."""
        if self.stopped:
            return 0
        written = _write_files(layer.mags[0].dataset, lo, data, self.lz4hc_level)
        if self.in_memory:
            self._reduce(layer, lo, data)
        with self.lock:
            self.writes_left[lo] -= 1
            last = self.writes_left[lo] == 0
        if last:
            self._next_chunk()
        return written

    def _reduce(self, layer: Layer, lo: Vec3, data: npt.NDArray[Any]) -> None:
        """The chunk's part of every coarser mag, put into the coarse files it belongs to."""
        mode = default_mode(layer.category)
        pieces = [data]
        li = self.layers.index(layer)
        for j in range(1, len(self.mags)):
            i = self.sources[j]
            factor = relative_factor(self.mags[i], self.mags[j])
            piece = downsample(pieces[i], factor, mode)
            pieces.append(piece)
            p_lo, p_hi = self._piece_box(lo, j)
            for f in self._coarse_files(j, p_lo, p_hi):
                f_lo, f_hi = self._file_box(layer, j, f)
                key = (li, j, f)
                a = [max(x, y) for x, y in zip(p_lo, f_lo, strict=True)]
                b = [min(x, y) for x, y in zip(p_hi, f_hi, strict=True)]
                part = piece[a[0] - p_lo[0]:b[0] - p_lo[0], a[1] - p_lo[1]:b[1] - p_lo[1],
                             a[2] - p_lo[2]:b[2] - p_lo[2]]
                with self.lock:
                    if key not in self.pending:
                        shape = [y - x for x, y in zip(f_lo, f_hi, strict=True)]
                        self.pending[key] = (np.zeros(shape, dtype=data.dtype, order="F"),
                                             self.expected[j][f])
                    target, left = self.pending[key]
                    target[a[0] - f_lo[0]:b[0] - f_lo[0], a[1] - f_lo[1]:b[1] - f_lo[1],
                           a[2] - f_lo[2]:b[2] - f_lo[2]] = part
                    left -= 1
                    if left:
                        self.pending[key] = (target, left)
                    else:
                        del self.pending[key]
                if not left:
                    self._submit(self._write_coarse, layer, j, f_lo, target)

    def _write_coarse(self, layer: Layer, j: int, lo: Vec3, data: npt.NDArray[Any]) -> int:
        if self.stopped:
            return 0
        return _write_files(layer.mags[j].dataset, lo, data, self.lz4hc_level)


def _write_files(dataset: Dataset, lo: Sequence[int], data: npt.NDArray[Any],
                 lz4hc_level: int) -> int:
    """Write ``data`` (``(X, Y, Z)``) at ``lo`` as whole new files; the number of files.

    Every file the box touches is replaced: the caller guarantees the box holds all that file's
    data (the rest of the file lies outside the layer's box, so it is zeros).  Unlike
    ``Dataset.write`` this neither reads the old file nor patches blocks, encodes LZ4HC blocks at
    ``lz4hc_level`` and encodes a block of zeros once per file.  Raw datasets go through
    ``Dataset.write``."""
    h = dataset.header
    shape = data.shape
    files = list(dataset.files_in_box(lo, shape))
    if not h.is_compressed:
        dataset.write(lo, data)
        return len(files)
    side = dataset.file_len_vx
    b = h.block_len
    hc = h.block_type == BLOCK_TYPE_LZ4HC
    coords = np.stack(morton.decode(np.arange(h.num_blocks)), axis=1) * b

    def encode(raw: bytes) -> bytes:
        out: bytes
        if hc:
            out = lz4.block.compress(raw, mode="high_compression", compression=lz4hc_level,
                                     store_size=False)
        else:
            out = lz4.block.compress(raw, mode="default", store_size=False)
        return out

    for f in files:
        origin = [g * side for g in f]
        # the data's part, file-local
        a = [max(int(x), o) - o for x, o in zip(lo, origin, strict=True)]
        e = [min(int(x) + n, o + side) - o for x, n, o in zip(lo, shape, origin, strict=True)]
        full = np.zeros((1, side, side, side), dtype=h.dtype, order="F")
        full[0, a[0]:e[0], a[1]:e[1], a[2]:e[2]] = data[
            a[0] + origin[0] - lo[0]:e[0] + origin[0] - lo[0],
            a[1] + origin[1] - lo[1]:e[1] + origin[1] - lo[1],
            a[2] + origin[2] - lo[2]:e[2] + origin[2] - lo[2]]
        zero: bytes | None = None
        blocks: list[bytes | memoryview] = []
        for x, y, z in coords.tolist():
            if all(c < hi and c + b > l0 for c, l0, hi in zip((x, y, z), a, e, strict=True)):
                blocks.append(encode(wkw_writer.block_bytes_of(full[:, x:x + b, y:y + b,
                                                                    z:z + b])))
            else:
                if zero is None:
                    zero = encode(bytes(h.block_bytes))
                blocks.append(zero)
        dataset.forget_file(*f)
        wkw_writer.write_atomically(dataset.file_path(*f),
                                    wkw_writer.assemble_compressed(h, blocks))
        dataset.forget_file(*f)
    return len(files)


def _single_threaded_blas() -> None:
    """Make numpy's OpenBLAS use one thread for the calling thread only (OpenBLAS >= 0.3.27,
    ``openblas_set_num_threads_local``; meant for a pool's own worker threads, which end with
    the pool).  Does nothing where that function is not found: another BLAS, an older one."""
    global _BLAS_LOCAL
    if _BLAS_LOCAL is None:
        _BLAS_LOCAL = _find_blas_local()
    if _BLAS_LOCAL is not False:
        _BLAS_LOCAL(1)


def _find_blas_local() -> Any:
    base = os.path.dirname(os.path.abspath(np.__file__))
    candidates = (glob.glob(os.path.join(base + ".libs", "*openblas*"))  # Linux, Windows wheels
                  + glob.glob(os.path.join(base, ".dylibs", "*openblas*")))  # macOS wheels
    for path in candidates:
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_int]
        fn.restype = ctypes.c_int
        return fn
    return False


#: ``openblas_set_num_threads_local`` once looked up (False: not found).
_BLAS_LOCAL: Any = None


def _whole_multiple(finer: Sequence[int], coarser: Sequence[int]) -> bool:
    return tuple(finer) != tuple(coarser) and all(
        int(c) % int(f) == 0 and int(c) >= int(f) for f, c in zip(finer, coarser, strict=True))


__all__ = ["LayerSpec", "create_dataset", "set_largest_segment_id", "write_synthetic_dataset",
           "SyntheticVolume", "DEMO_MAGS"]
