"""A webKnossos layer: one folder holding one WKW dataset per mag.

A ``Layer`` is built from its properties-file entry (``Layer.from_properties``) or, for a bare
layer folder with no properties file, from the mag folders found in it
(``Layer.from_folder``).  Either way only the mags that are actually there become ``Layer.mags``
(finest first); the others are returned as problems for the dataset to report.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import FormatError
from viewer.format.webknossos.errors import (
    MissingMagError,
    NoMagsError,
    UnsupportedLayerError,
    WebknossosError,
)
from viewer.format.webknossos.mag import Mag, is_mag_folder, mag_folder_names, parse_mag
from viewer.format.webknossos.properties import (
    ELEMENT_CLASSES,
    BoundingBox,
    LayerProperties,
    MagProperties,
    element_class_of,
)
from viewer.format.wkw import Dataset
from viewer.format.wkw.dataset import HEADER_FILE

Vec3 = tuple[int, int, int]

#: Data formats this program reads.
SUPPORTED_FORMATS = ("wkw",)


class Layer:
    """One layer: name, category, element class, channels, bounding box (mag-1 voxels),
    ``largest_segment_id`` (segmentation) and ``mags`` (finest first, each lazily opened).

    Immutable after construction apart from the lazily opened mags; safe to read from any
    thread."""

    def __init__(self, name: str, category: str, element_class: str, num_channels: int,
                 bounding_box: BoundingBox, mags: Sequence[Mag], path: str,
                 largest_segment_id: int | None = None, data_format: str = "wkw",
                 properties: LayerProperties | None = None) -> None:
        self.name = name
        self.category = category
        self.element_class = element_class
        self.num_channels = num_channels
        self.bounding_box = bounding_box
        self.mags: list[Mag] = sorted(mags, key=lambda m: (m.mag[0] * m.mag[1] * m.mag[2],
                                                           m.mag))
        self.path = path
        self.largest_segment_id = largest_segment_id
        self.data_format = data_format
        self.properties = properties

    # -- description --------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy type of one channel (uint24: uint8 with 3 channels)."""
        return ELEMENT_CLASSES[self.element_class][0]

    @property
    def is_segmentation(self) -> bool:
        return self.category == "segmentation"

    @property
    def mag_vectors(self) -> list[Vec3]:
        return [m.mag for m in self.mags]

    @property
    def finest(self) -> Mag:
        """The finest mag present (normally mag 1)."""
        if not self.mags:
            raise NoMagsError("the layer has no mags", self.path, layer=self.name)
        return self.mags[0]

    def mag(self, mag: Any) -> Mag:
        """The mag with factor ``mag`` (any spelling: ``2``, ``"2-2-1"``, ``(2, 2, 1)``);
        ``KeyError`` when the layer does not have it."""
        want = parse_mag(mag)
        for m in self.mags:
            if m.mag == want:
                return m
        raise KeyError(f"layer {self.name!r} has no mag {want}")

    def bounding_box_at(self, mag: Any) -> BoundingBox:
        """The layer's box in the voxels of ``mag``."""
        return self.bounding_box.at_mag(parse_mag(mag))

    def read(self, mag: Any, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        """A box of ``mag`` (in that mag's voxel coordinates) as ``(C, X, Y, Z)``."""
        return self.mag(mag).read(offset, shape)

    def check(self) -> list[FormatError]:
        """Open every mag's header.wkw now and return the problems found."""
        return [p for p in (m.check() for m in self.mags) if p is not None]

    def close(self) -> None:
        for m in self.mags:
            m.close()

    def __repr__(self) -> str:
        return (f"<Layer {self.name!r} {self.category} {self.element_class} x{self.num_channels}"
                f" mags {[m.name for m in self.mags]}>")

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def from_properties(cls, props: LayerProperties, dataset_dir: str
                        ) -> tuple[Layer | None, list[WebknossosError]]:
        """The layer of a properties entry and the problems found, or ``(None, problems)`` when
        no part of it can be opened (unsupported format, no mags at all, every mag missing).

        A mag's folder is its ``path`` (relative to the dataset, or absolute, or ``file://``)
        when the entry gives one, else the layer folder's ``{short name}`` or ``{long name}``
        subfolder, whichever exists."""
        layer_dir = os.path.join(dataset_dir, props.name)
        if props.data_format not in SUPPORTED_FORMATS:
            return None, [UnsupportedLayerError(
                f"dataFormat {props.data_format!r} is not supported yet (readable: "
                f"{', '.join(SUPPORTED_FORMATS)})", layer_dir, layer=props.name)]
        if not props.mags:
            return None, [NoMagsError(
                "the layer lists no mags (a half-written dataset?)", layer_dir,
                layer=props.name)]
        problems: list[WebknossosError] = []
        mags: list[Mag] = []
        for mp in props.mags:
            located = _locate_mag(mp, props.name, dataset_dir, layer_dir)
            if isinstance(located, WebknossosError):
                problems.append(located)
                continue
            path, rel = located
            mags.append(Mag(mp.mag, path, layer=props.name, dtype=props.dtype,
                            num_channels=props.num_channels, rel_path=rel,
                            cube_length=mp.cube_length))
        if not mags:
            problems.append(NoMagsError("none of the listed mags is present", layer_dir,
                                        layer=props.name))
            return None, problems
        return cls(props.name, props.category, props.element_class, props.num_channels,
                   props.bounding_box, mags, layer_dir, props.largest_segment_id,
                   props.data_format, props), problems

    @classmethod
    def from_folder(cls, path: str, name: str | None = None, category: str | None = None,
                    dataset_dir: str | None = None) -> Layer:
        """A layer from a bare layer folder (mag subfolders with header.wkw, no properties
        file).  The element class comes from mag 1's header.wkw; the bounding box is the extent
        of the data files present (read from directory names, no file opened), so it is exact
        to a whole file only; the category is ``segmentation`` when the folder name says
        ``seg``, else ``color``.  ``DatasetLayoutError`` when the folder holds no mag."""
        found: list[tuple[Vec3, str]] = []
        try:
            entries = sorted(os.listdir(path))
        except OSError as exc:
            raise MissingMagError(f"cannot list the layer folder: {exc.strerror}", path) from None
        for entry in entries:
            try:
                mag = parse_mag(entry)
            except ValueError:
                continue
            sub = os.path.join(path, entry)
            if is_mag_folder(sub) and all(m != mag for m, _ in found):
                found.append((mag, sub))
        name = name or os.path.basename(os.path.normpath(path))
        if not found:
            raise MissingMagError("no mag folder (such as 1/ or 2-2-1/ with header.wkw)", path,
                                  layer=name)
        return cls.from_mag_folders(found, path, name, category, dataset_dir)

    @classmethod
    def from_mag_folders(cls, found: Sequence[tuple[Vec3, str]], path: str, name: str,
                         category: str | None = None, dataset_dir: str | None = None) -> Layer:
        """A layer from ``(mag, folder)`` pairs of WKW datasets (see :meth:`from_folder`)."""
        found = sorted(found, key=lambda mf: (mf[0][0] * mf[0][1] * mf[0][2], mf[0]))
        finest_mag, finest_path = found[0]
        with Dataset.open(finest_path) as ds:
            header = ds.header
            box = _files_extent(ds)
        fx, fy, fz = finest_mag
        box = BoundingBox((box.top_left[0] * fx, box.top_left[1] * fy, box.top_left[2] * fz),
                          (box.size[0] * fx, box.size[1] * fy, box.size[2] * fz))
        if category is None:
            category = "segmentation" if "seg" in name.lower() else "color"
        try:
            element_class = element_class_of(header.dtype, header.num_channels)
        except ValueError:
            element_class = element_class_of(header.dtype, 1)
        num_channels = 3 if element_class == "uint24" else header.num_channels
        base = dataset_dir if dataset_dir is not None else path
        mags = [Mag(m, p, layer=name, dtype=header.dtype, num_channels=header.num_channels,
                    rel_path=_relative(p, base)) for m, p in found]
        props = LayerProperties(name, category, "wkw", box, element_class, num_channels,
                                [MagProperties(m.mag, m.rel_path) for m in mags])
        return cls(name, category, element_class, num_channels, box, mags, path, None, "wkw",
                   props)


def _locate_mag(mp: MagProperties, layer: str, dataset_dir: str, layer_dir: str
                ) -> tuple[str, str] | WebknossosError:
    """The folder of a mag entry and its dataset-relative spelling, or the problem."""
    if mp.path is not None:
        text = mp.path
        if text.startswith("file://"):
            text = text[len("file://"):]
        elif "://" in text:
            return UnsupportedLayerError(f"remote mag path {mp.path!r} is not supported",
                                         mp.path, layer=layer, mag=mp.mag)
        path = os.path.normpath(text if os.path.isabs(text) else os.path.join(dataset_dir, text))
        if not os.path.isdir(path):
            return MissingMagError("mag folder is missing", path, layer=layer, mag=mp.mag)
        if not is_mag_folder(path):
            return MissingMagError(f"mag folder has no {HEADER_FILE}", path, layer=layer,
                                   mag=mp.mag)
        return path, mp.path if not os.path.isabs(text) else path
    names = mag_folder_names(mp.mag)
    for folder in names:
        path = os.path.join(layer_dir, folder)
        if is_mag_folder(path):
            return path, f"./{layer}/{folder}"
    expected = os.path.join(layer_dir, names[0])
    if os.path.isdir(expected):
        return MissingMagError(f"mag folder has no {HEADER_FILE}", expected, layer=layer,
                               mag=mp.mag)
    return MissingMagError(f"mag folder is missing (looked for {' and '.join(names)})",
                           expected, layer=layer, mag=mp.mag)


def _relative(path: str, base: str) -> str:
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return os.path.abspath(path)
    if rel.startswith(".."):
        return os.path.abspath(path)
    return "./" + rel.replace(os.sep, "/") if rel != "." else "."


def _files_extent(ds: Dataset) -> BoundingBox:
    """The voxel box of the data files a WKW dataset holds, from directory names only."""
    side = ds.file_len_vx
    if ds.single_file is not None:
        return BoundingBox((0, 0, 0), (side, side, side))
    positions = [ds.file_position(path) for path in ds.list_files()]
    if not positions:
        return BoundingBox((0, 0, 0), (0, 0, 0))
    grid = np.asarray(positions, dtype=np.int64)
    start = grid.min(axis=0) * side
    stop = (grid.max(axis=0) + 1) * side
    return BoundingBox((int(start[0]), int(start[1]), int(start[2])),
                       (int(stop[0] - start[0]), int(stop[1] - start[1]),
                        int(stop[2] - start[2])))


__all__ = ["Layer", "SUPPORTED_FORMATS"]
