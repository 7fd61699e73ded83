"""A webKnossos layer: one folder holding one WKW dataset per mag.

A ``Layer`` is built from its properties-file entry (``Layer.from_properties``) or, for a bare
layer folder with no properties file, from the mag folders found in it
(``Layer.from_folder``).  Either way only the mags that are actually there become ``Layer.mags``
(finest first); the others are returned as problems for the dataset to report.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from viewer.format.dataset import Layer as BaseLayer
from viewer.format.webknossos.errors import (
    MissingMagError,
    NoMagsError,
    UnsupportedLayerError,
    WebknossosError,
)
from viewer.format.webknossos.mag import (
    Mag,
    is_any_mag_folder,
    is_mag_folder,
    mag_folder_names,
    parse_mag,
)
from viewer.format.webknossos.properties import (
    BoundingBox,
    LayerProperties,
    MagProperties,
    element_class_of,
)
from viewer.format.wkw import Dataset
from viewer.format.wkw.dataset import HEADER_FILE

Vec3 = tuple[int, int, int]

#: Data formats of layers this program reads (their mags open through the format registry).
SUPPORTED_FORMATS = ("wkw", "zarr3", "zarr", "n5")


def _readable(data_format: str) -> bool:
    if data_format == "wkw":
        return True
    from viewer.format import registry

    return data_format in registry.format_names()


class Layer(BaseLayer):
    """One webKnossos layer (see ``viewer.format.dataset.Layer``), built from its properties
    entry (``from_properties``) or from the mag folders found (``from_folder``)."""

    mags: list[Mag]  # type: ignore[assignment]  # webKnossos mags (with their WKW dataset)

    @property
    def finest(self) -> Mag:
        """The finest mag present (normally mag 1)."""
        if not self.mags:
            raise NoMagsError("the layer has no mags", self.path, layer=self.name)
        return self.mags[0]

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def from_properties(cls, props: LayerProperties, dataset_dir: str
                        ) -> tuple[Layer | None, list[WebknossosError]]:
        """The layer of a properties entry and the problems found, or ``(None, problems)`` when
        no part of it can be opened (unsupported format, no mags at all, every mag missing).

        A mag's folder is its ``path`` (relative to the dataset, or absolute, or ``file://``,
        or a URL: ``http(s)://``, ``s3://``, ``gs://``, read over the network) when the entry
        gives one, else the layer folder's ``{short name}`` or ``{long name}``
        subfolder, whichever exists."""
        layer_dir = os.path.join(dataset_dir, props.name)
        if not _readable(props.data_format):
            readable = [f for f in SUPPORTED_FORMATS if _readable(f)]
            return None, [UnsupportedLayerError(
                f"dataFormat {props.data_format!r} is not supported yet (readable: "
                f"{', '.join(readable)})", layer_dir, layer=props.name)]
        if not props.mags:
            return None, [NoMagsError(
                "the layer lists no mags (a half-written dataset?)", layer_dir,
                layer=props.name)]
        problems: list[WebknossosError] = []
        mags: list[Mag] = []
        for mp in props.mags:
            located = _locate_mag(mp, props.name, dataset_dir, layer_dir, props.data_format)
            if isinstance(located, WebknossosError):
                problems.append(located)
                continue
            path, rel = located
            box = props.bounding_box.at_mag(mp.mag)
            mags.append(Mag(mp.mag, path, layer=props.name, dtype=props.dtype,
                            num_channels=props.num_channels, rel_path=rel,
                            cube_length=mp.cube_length, data_format=props.data_format,
                            bounds=(box.top_left, box.end)))
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
                    rel_path=_relative(p, base), bounds=_at_mag(box, m)) for m, p in found]
        props = LayerProperties(name, category, "wkw", box, element_class, num_channels,
                                [MagProperties(m.mag, m.rel_path) for m in mags])
        return cls(name, category, element_class, num_channels, box, mags, path, None, "wkw",
                   props)


def _at_mag(box: BoundingBox, mag: Vec3) -> tuple[Vec3, Vec3]:
    b = box.at_mag(mag)
    return b.top_left, b.end


def _locate_mag(mp: MagProperties, layer: str, dataset_dir: str, layer_dir: str,
                data_format: str = "wkw") -> tuple[str, str] | WebknossosError:
    """The folder of a mag entry and its dataset-relative spelling, or the problem."""
    is_mag = is_mag_folder if data_format == "wkw" else is_any_mag_folder
    marker = HEADER_FILE if data_format == "wkw" else f"{data_format} metadata"
    if mp.path is not None:
        text = mp.path
        if text.startswith("file://"):
            text = text[len("file://"):]
        elif "://" in text:
            from viewer.format.remote.store import SCHEMES

            if text.partition("://")[0].lower() not in SCHEMES:
                return UnsupportedLayerError(
                    f"remote mag path {mp.path!r}: only http, https, s3 and gs URLs are read",
                    mp.path, layer=layer, mag=mp.mag)
            # A mag at a URL: opened through the remote store when first used (``Mag``).
            return text.rstrip("/"), mp.path
        path = os.path.normpath(text if os.path.isabs(text) else os.path.join(dataset_dir, text))
        if not os.path.isdir(path):
            return MissingMagError("mag folder is missing", path, layer=layer, mag=mp.mag)
        if not is_mag(path):
            return MissingMagError(f"mag folder has no {marker}", path, layer=layer,
                                   mag=mp.mag)
        return path, mp.path if not os.path.isabs(text) else path
    names = mag_folder_names(mp.mag)
    for folder in names:
        path = os.path.join(layer_dir, folder)
        if is_mag(path):
            return path, f"./{layer}/{folder}"
    expected = os.path.join(layer_dir, names[0])
    if os.path.isdir(expected):
        return MissingMagError(f"mag folder has no {marker}", expected, layer=layer,
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
