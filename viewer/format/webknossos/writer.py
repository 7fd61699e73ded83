"""Writing webKnossos datasets: the properties file, a folder per layer, a WKW dataset per mag.

For tests, benchmarks and the demo.  ``create_dataset`` lays out an empty dataset (properties
file and every mag's ``header.wkw``), in the current style (``mags`` with paths, ``scale``
object) or the legacy one (``wkwResolutions``, bare ``scale`` list); data goes into mag 1 with
``Mag.write`` and the coarser mags are built with ``downsample.downsample_layer``.
``write_synthetic_dataset`` does all of it from a synthetic volume (color + segmentation).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from viewer.format.webknossos.dataset import WkDataset
from viewer.format.webknossos.downsample import coarse_file_count, downsample_layer, run_parallel
from viewer.format.webknossos.mag import Mag, mag_name, parse_mag
from viewer.format.webknossos.properties import (
    ELEMENT_CLASSES,
    BoundingBox,
    DatasetProperties,
    LayerProperties,
    MagProperties,
    VoxelSize,
    write_properties,
)
from viewer.format.wkw import BLOCK_TYPE_LZ4HC, Dataset, Header

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
                   legacy: bool = False) -> WkDataset:
    """Create an empty webKnossos dataset at ``path`` and return it opened.

    ``legacy`` writes ``wkwResolutions`` and a bare ``scale`` list (converted to nanometres),
    as webKnossos datasets from before the ``mags`` key look."""
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    props = DatasetProperties(
        VoxelSize((float(voxel_size[0]), float(voxel_size[1]), float(voxel_size[2])), unit),
        [spec.layer_properties() for spec in layers],
        raw={"id": {"name": os.path.basename(os.path.abspath(path)), "team": ""}})
    for spec, lp in zip(layers, props.layers):
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


def write_synthetic_dataset(path: str | os.PathLike[str], volume: SyntheticVolume,
                            shape: Sequence[int] = (256, 256, 128),
                            voxel_size: Sequence[float] = (11.24, 11.24, 28.0),
                            mags: Sequence[Sequence[int]] = DEMO_MAGS,
                            block_len: int = 32, file_len: int = 4,
                            block_type: int = BLOCK_TYPE_LZ4HC, legacy: bool = False,
                            progress: Callable[[int, int], None] | None = None,
                            workers: int = 2) -> WkDataset:
    """Write a webKnossos dataset with a ``color`` (uint8, ``volume.em``) and a
    ``segmentation`` (uint32, ``volume.segmentation``) layer of ``shape`` mag-1 voxels, the
    given ``mags`` (default 1, 2-2-1, 4-4-2) and an anisotropic ``voxel_size`` in nm; return
    it opened.  ``path`` must not hold a dataset yet (write into a temporary folder and rename
    it for an all-or-nothing result).

    Mag 1 is generated on a fixed grid of ``GENERATION_GRID`` voxels from the origin (the
    volume's noise is seeded by the box), so the data do not depend on ``file_len``; coarser
    mags are downsampled (mean for color, mode for segmentation).  ``largestSegmentId`` is the
    maximum id written.  Work runs on ``workers`` threads; ``progress(done, total)`` counts
    written chunks and files over the whole job (called from worker threads)."""
    box = BoundingBox((0, 0, 0), (int(shape[0]), int(shape[1]), int(shape[2])))
    common: dict[str, Any] = dict(bounding_box=box, mags=list(mags), block_len=block_len,
                                  file_len=file_len, block_type=block_type)
    ds = create_dataset(path, [
        LayerSpec("color", category="color", element_class="uint8", **common),
        LayerSpec("segmentation", category="segmentation", element_class="uint32",
                  largest_segment_id=0, **common),
    ], voxel_size=voxel_size, legacy=legacy)
    chunk = max(block_len * file_len, GENERATION_GRID)
    chunks = [(x, y, z) for z in range(0, box.end[2], chunk)
              for y in range(0, box.end[1], chunk) for x in range(0, box.end[0], chunk)]
    total = len(ds.layers) * len(chunks) + sum(coarse_file_count(layer) for layer in ds.layers)
    done = [0]
    largest = [0]
    lock = threading.Lock()

    def step(*_: int) -> None:
        with lock:
            done[0] += 1
            now = done[0]
        if progress is not None:
            progress(now, total)

    for layer in ds.layers:
        is_seg = layer.category == "segmentation"
        mag1 = layer.mag((1, 1, 1))

        def one_chunk(lo: Vec3, is_seg: bool = is_seg, mag1: Mag = mag1) -> None:
            hi = [min(a + chunk, e) for a, e in zip(lo, box.end)]
            out = np.zeros([b - a for a, b in zip(lo, hi)],
                           dtype=np.uint32 if is_seg else np.uint8, order="F")
            for gz in range(lo[2], hi[2], GENERATION_GRID):
                for gy in range(lo[1], hi[1], GENERATION_GRID):
                    for gx in range(lo[0], hi[0], GENERATION_GRID):
                        g = (gx, gy, gz)
                        size = (GENERATION_GRID,) * 3
                        data = volume.segmentation(g, size) if is_seg else volume.em(g, size)
                        b = [min(gv + GENERATION_GRID, hv) for gv, hv in zip(g, hi)]
                        out[gx - lo[0]:b[0] - lo[0], gy - lo[1]:b[1] - lo[1],
                            gz - lo[2]:b[2] - lo[2]] = data[:b[0] - gx, :b[1] - gy, :b[2] - gz]
            if is_seg and out.size:
                with lock:
                    largest[0] = max(largest[0], int(out.max()))
            mag1.write(lo, out)
            step()

        run_parallel(one_chunk, chunks, workers)
        downsample_layer(layer, progress=step, workers=workers)
    ds.close()
    set_largest_segment_id(path, "segmentation", largest[0], legacy=legacy)
    return WkDataset(path)


__all__ = ["LayerSpec", "create_dataset", "set_largest_segment_id", "write_synthetic_dataset",
           "SyntheticVolume", "DEMO_MAGS"]
