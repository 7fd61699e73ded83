"""A dataset as every format presents it: layers of mags of volumes, a voxel size, problems.

``Dataset`` is what ``viewer.format.open_dataset(path)`` returns for any format: a webKnossos
dataset (layers and mags from its properties file), a plain WKW dataset (one layer, one mag),
an N5 root or multiscale group, an OME-Zarr image, a VDS file (LODs as mags).  Each ``Layer``
has a name, a category (``color`` or ``segmentation``), one channel's dtype, the channel count,
its box in mag-1 voxels and its ``mags`` (finest first); each ``Mag`` opens its ``Volume`` on
first use.  What could not be opened is in ``Dataset.problems`` (typed ``FormatError``s) and
the rest opens.

The tools that work on one array (inspector, compare, ``info``) pick one mag with
``select_mag``; two datasets are paired layer by layer and mag by mag with ``match_mags``.

Thread safety: built on one thread; afterwards read-only apart from the lazily opened volumes,
which open under a lock, so any thread may use it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.config import ReadConfig, effective, using
from viewer.format.errors import DatasetLayoutError, FormatError
from viewer.format.executor import Executor
from viewer.format.executor import current as current_executor
from viewer.format.executor import using as using_executor
from viewer.format.geometry import BoundingBox, VoxelSize, mag_name, parse_mag
from viewer.format.volume import Volume, check_index

Vec3 = tuple[int, int, int]


class NoMagsError(FormatError):
    """A layer lists no mags, or none of them is present."""


def _known(volume: Volume, index: Mapping[str, int]) -> dict[str, int]:
    """The entries of a dataset's ``index`` that name axes of ``volume`` (a layer without a
    time axis shows its one time point whatever time point the others show)."""
    axes = volume.extra_axes
    return {k: v for k, v in index.items() if k in axes}


class Mag:
    """One mag of a layer: ``mag`` (x, y, z factors), where it lives (``path``) and its
    ``volume``, opened on first use by ``opener``.  ``rel_path``: the path as the dataset's own
    metadata spells it (else ``path``)."""

    def __init__(self, mag: Sequence[int], path: str | os.PathLike[str], *, layer: str,
                 dtype: np.dtype[Any], num_channels: int, rel_path: str | None = None,
                 cube_length: int | None = None,
                 opener: Callable[[], Volume] | None = None) -> None:
        self.mag: Vec3 = parse_mag(list(mag))
        self.path = os.fspath(path)
        self.layer = layer
        self.dtype = np.dtype(dtype)
        self.num_channels = num_channels
        self.rel_path = rel_path if rel_path is not None else self.path
        self.cube_length = cube_length
        self._opener = opener
        #: How the dataset it belongs to was opened: its volume is opened the same way, even
        #: when first used long after (``viewer.format.config``).
        self.read_config: ReadConfig = effective()
        #: Whose threads its volume runs on: the executor in effect when the dataset was
        #: opened (``viewer.format.executor``).
        self.executor: Executor | None = current_executor()
        self._volume: Volume | None = None
        self._lock = threading.Lock()
        self._index: dict[str, int] = {}

    def set_index(self, index: Mapping[str, int]) -> None:
        """Show element ``index`` of the extra axes (``Volume.at_index``) from now on: the
        volume, open or opened later, is the array at that index."""
        with self._lock:
            self._index = dict(index)
            if self._volume is not None:
                with using_executor(self.executor):
                    self._volume = self._volume.at_index(_known(self._volume, self._index))

    @property
    def name(self) -> str:
        """The mag's short name, as the status bar shows it (``1``, ``2-2-1``, ``4``)."""
        return mag_name(self.mag)

    @property
    def is_open(self) -> bool:
        return self._volume is not None

    @property
    def volume(self) -> Volume:
        """The mag's volume, opened on first use (raises the ``FormatError`` that stops it)."""
        with self._lock:
            if self._volume is None:
                # (a format's ``_open_volume`` runs with the dataset's executor in effect)
                with using_executor(self.executor):
                    self._volume = self._open_volume()
            return self._volume

    def _open_volume(self) -> Volume:
        if self._opener is None:
            raise FormatError("no way to open this mag", self.path)
        with using(self.read_config), using_executor(self.executor):
            volume = self._opener()
            return volume.at_index(_known(volume, self._index)) if self._index else volume

    def check(self) -> FormatError | None:
        """Open the mag now; the problem, if any, instead of raising it."""
        try:
            _ = self.volume
        except FormatError as exc:
            return exc
        return None

    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        """The box ``[offset, offset + shape)`` in this mag's voxels, ``(C, X, Y, Z)``."""
        return self.volume.read(offset, shape)

    def close(self) -> None:
        with self._lock:
            vol, self._volume = self._volume, None
        if vol is not None:
            vol.close()

    def __repr__(self) -> str:
        return f"<Mag {self.name} of {self.layer!r} at {self.path!r}>"


@dataclass(frozen=True)
class ChannelInfo:
    """How a dataset says one channel of a layer should look (OME-Zarr ``omero`` channels):
    its ``label``, ``color`` (``"#RRGGBB"``), display ``window`` (lo, hi) and whether it is
    shown at first (``active``); None where it does not say."""

    label: str | None = None
    color: str | None = None
    window: tuple[float, float] | None = None
    active: bool = True


class Layer:
    """One layer: name, category, element class (``uint8``, ``uint24``, ``float``, ...), one
    channel's ``dtype``, channels, the box in mag-1 voxels, ``largest_segment_id``
    (segmentation), ``data_format`` and ``mags`` (finest first).

    ``bounding_box`` None at construction means the extent is not declared: it is then the
    box of the data present in the finest mag (``Volume.bounds``, a listing), found on first
    use; ``extent_declared`` tells which."""

    def __init__(self, name: str, category: str, element_class: str, num_channels: int,
                 bounding_box: BoundingBox | None, mags: Sequence[Mag], path: str,
                 largest_segment_id: int | None = None, data_format: str = "",
                 properties: Any = None, dtype: np.dtype[Any] | None = None) -> None:
        self.name = name
        self.category = category
        self.element_class = element_class
        self.num_channels = num_channels
        self._box = bounding_box
        self._box_lock = threading.Lock()
        self.mags: list[Mag] = sorted(mags, key=lambda m: (m.mag[0] * m.mag[1] * m.mag[2],
                                                           m.mag))
        self.path = path
        self.largest_segment_id = largest_segment_id
        self.data_format = data_format
        #: The format's own description of the layer (a webKnossos properties entry), if any.
        self.properties = properties
        #: How each channel should look, where the dataset says (else empty).
        self.channel_info: list[ChannelInfo] = []
        if dtype is None:
            dtype = self.mags[0].dtype if self.mags else np.dtype("u1")
        self._dtype = np.dtype(dtype)

    # -- description --------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy type of one channel (uint24: uint8 with 3 channels)."""
        return self._dtype

    @property
    def is_segmentation(self) -> bool:
        return self.category == "segmentation"

    @property
    def extent_declared(self) -> bool:
        """Whether the metadata declares the layer's box (a layer's own, or its finest
        array's shape), else it is found by listing the files present (a plain WKW
        dataset).  Opens the finest mag's volume when the layer declares no box."""
        if self._box is not None or not self.mags:
            return True
        try:
            return self.finest.volume.extent_declared
        except FormatError:
            return False

    @property
    def bounding_box(self) -> BoundingBox:
        """The layer's box in mag-1 voxels (found from the finest mag's data when not
        declared: see the class docstring)."""
        with self._box_lock:
            if self._box is None:
                finest = self.finest
                lo, hi = finest.volume.bounds
                m = finest.mag
                self._box = BoundingBox((lo[0] * m[0], lo[1] * m[1], lo[2] * m[2]),
                                        ((hi[0] - lo[0]) * m[0], (hi[1] - lo[1]) * m[1],
                                         (hi[2] - lo[2]) * m[2]))
            return self._box

    @property
    def mag_vectors(self) -> list[Vec3]:
        return [m.mag for m in self.mags]

    @property
    def finest(self) -> Mag:
        """The finest mag present (normally mag 1)."""
        if not self.mags:
            raise NoMagsError(f"layer {self.name!r} has no mags", self.path)
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
        """Open every mag now and return the problems found."""
        return [p for p in (m.check() for m in self.mags) if p is not None]

    def close(self) -> None:
        for m in self.mags:
            m.close()

    def __repr__(self) -> str:
        return (f"<Layer {self.name!r} {self.category} {self.element_class} x{self.num_channels}"
                f" mags {[m.name for m in self.mags]}>")


class Dataset:
    """An opened dataset of any format (see the module docstring).

    ``format``: the format's name (``"webknossos"``, ``"wkw"``, ``"n5"``, ...). ``kind``: what
    the path was (``"dataset"``, ``"layer"``, ``"mag"``, ``"array"``, ``"group"``, ``"file"``).
    ``scale``: the size of a mag-1 voxel (1, 1, 1 nm and ``voxel_size_declared`` False when
    the metadata does not say)."""

    def __init__(self, path: str, format: str, layers: Sequence[Layer] = (),
                 problems: Sequence[FormatError] = (), scale: VoxelSize | None = None,
                 kind: str = "dataset") -> None:
        self.path = path
        self.format = format
        self.layers: list[Layer] = list(layers)
        self.problems: list[FormatError] = list(problems)
        self.scale = scale if scale is not None else VoxelSize((1.0, 1.0, 1.0))
        self.voxel_size_declared = scale is not None
        self.kind = kind
        #: The settings it was opened with (``viewer.format.config``): what a child process or
        #: a Dask worker reopening it is handed.
        self.read_config: ReadConfig = effective()
        #: Whose threads its volumes run on (``viewer.format.executor``), and whether the
        #: dataset owns it (closes it in ``close``).
        self.executor: Executor | None = current_executor()
        self._owns_executor = False

    def own_executor(self, executor: Executor) -> None:
        """Run on ``executor`` and close it with the dataset (``open_dataset`` hands the
        dataset the executor it made for it)."""
        self.executor, self._owns_executor = executor, True

    @property
    def voxel_size(self) -> tuple[float, float, float]:
        """Nanometres per mag-1 voxel along x, y, z."""
        return self.scale.nanometers

    @property
    def name(self) -> str:
        return os.path.basename(os.path.abspath(self.path)) if "://" not in self.path \
            else self.path.rstrip("/").rsplit("/", 1)[-1]

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; ``KeyError`` when there is none."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        names = ", ".join(layer.name for layer in self.layers)
        raise KeyError(f"no layer {name!r} (layers: {names})")

    @property
    def color_layers(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.category == "color"]

    @property
    def segmentation_layers(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.category == "segmentation"]

    def check(self) -> list[FormatError]:
        """Open every mag now; the new problems found are added to ``problems`` and returned
        (each mag is checked once)."""
        found: list[FormatError] = []
        for layer in self.layers:
            for problem in layer.check():
                if all(str(problem) != str(p) for p in self.problems):
                    found.append(problem)
        self.problems.extend(found)
        return found

    def set_index(self, index: Mapping[str, int]) -> None:
        """Every mag shows element ``index`` of its extra axes (``Mag.set_index``; a layer
        without an axis ignores it).  ``KeyError`` for an axis no layer has, ``IndexError``
        for an element past the longest such axis (nothing is changed then)."""
        if index:
            check_index(self.extra_axes, index, self.path)
        for layer in self.layers:
            for mag in layer.mags:
                mag.set_index(index)

    @property
    def extra_axes(self) -> dict[str, int]:
        """The extra axes of the layers' finest mags that open: name -> the longest length."""
        out: dict[str, int] = {}
        for layer in self.layers:
            try:
                axes = layer.finest.volume.extra_axes
            except FormatError:
                continue
            for name, n in axes.items():
                out[name] = max(n, out.get(name, 0))
        return out

    def close(self) -> None:
        """Close every opened volume, then the executor the dataset owns."""
        for layer in self.layers:
            layer.close()
        if self._owns_executor and self.executor is not None:
            self._owns_executor = False
            self.executor.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.format} {self.path!r} layers "
                f"{[layer.name for layer in self.layers]} {len(self.problems)} problem(s)>")


# -- one array out of many: for tools that work per layer and mag (inspector, compare, info) --
def select_mag(dataset: Dataset, layer: str | None = None, mag: Any = None) -> Mag:
    """The mag a tool that works on one array should use: ``layer`` by name (default: the only
    layer, else the first color layer, else the first layer) and ``mag`` in any spelling
    (``2``, ``"2-2-1"``, ``(2, 2, 1)``; default: the finest).  ``KeyError`` naming what exists
    when there is no such layer or mag; ``DatasetLayoutError`` naming why each layer failed
    when none opened."""
    if not dataset.layers:
        why = "; ".join(str(p) for p in dataset.problems) or "it declares none"
        raise DatasetLayoutError(f"no layer opened: {why}", dataset.path)
    if layer is None:
        chosen = (dataset.layers[0] if len(dataset.layers) == 1 else
                  (dataset.color_layers or dataset.layers)[0])
    else:
        chosen = dataset.layer(layer)
    if mag is None:
        return chosen.finest
    try:
        return chosen.mag(mag)
    except (KeyError, ValueError):
        raise KeyError(f"layer {chosen.name!r} has no mag {mag!r} (mags: "
                       f"{', '.join(m.name for m in chosen.mags)})") from None


@dataclass
class MagPairs:
    """The (layer, mag) pairs two datasets share, and the ones only one of them has
    (as ``"layer/mag"`` labels)."""

    both: list[tuple[str, Vec3, Mag, Mag]]
    only_a: list[str]
    only_b: list[str]


def match_mags(a: Dataset, b: Dataset) -> MagPairs:
    """Pair the layers of two datasets by name and their mags by factor, in ``a``'s order."""
    both: list[tuple[str, Vec3, Mag, Mag]] = []
    only_a: list[str] = []
    only_b: list[str] = []
    b_layers = {layer.name: layer for layer in b.layers}
    for la in a.layers:
        lb = b_layers.get(la.name)
        b_mags = {m.mag: m for m in lb.mags} if lb is not None else {}
        for ma in la.mags:
            mb = b_mags.pop(ma.mag, None)
            if mb is None:
                only_a.append(f"{la.name}/{ma.name}")
            else:
                both.append((la.name, ma.mag, ma, mb))
        only_b.extend(f"{la.name}/{m.name}" for m in b_mags.values())
    a_names = {layer.name for layer in a.layers}
    for lb in b.layers:
        if lb.name not in a_names:
            only_b.extend(f"{lb.name}/{m.name}" for m in lb.mags)
    return MagPairs(both, only_a, only_b)


# -- JSON and text for `wkw-viewer info` ---------------------------------------------------------
def layers_json(dataset: Dataset) -> list[dict[str, Any]]:
    """The ``layers`` list of ``wkw-viewer info DATASET --json``: per opened layer ``name``,
    ``category``, ``element_class``, ``num_channels``, ``bounding_box`` (``{topLeft, width,
    height, depth}``, mag-1 voxels) and ``mags`` (``[{mag: [x, y, z], path}]``,
    finest first, ``path`` as the metadata spells it)."""
    return [
        {
            "name": layer.name,
            "category": layer.category,
            "element_class": layer.element_class,
            "num_channels": layer.num_channels,
            "bounding_box": layer.bounding_box.to_json(),
            "mags": [{"mag": list(m.mag), "path": m.rel_path} for m in layer.mags],
        }
        for layer in dataset.layers
    ]


def summary_lines(dataset: Dataset) -> list[str]:
    """A human-readable description for ``wkw-viewer info``: the voxel size, one line per
    layer (category, element class, box, mags) and one per problem."""
    size = ", ".join(f"{v:g}" for v in dataset.scale.factor)
    declared = "" if dataset.voxel_size_declared else " (not declared)"
    what = "webKnossos" if dataset.format == "webknossos" else dataset.format
    lines = [f"{what} {dataset.kind} {dataset.path}: {len(dataset.layers)} layer(s), "
             f"voxel size {size} {dataset.scale.unit}{declared}"]
    for layer in dataset.layers:
        box = layer.bounding_box
        channels = f" x{layer.num_channels}" if layer.num_channels > 1 else ""
        extra = (f", largest segment id {layer.largest_segment_id}"
                 if layer.largest_segment_id is not None else "")
        fmt = f" ({layer.data_format})" if layer.data_format not in ("", "wkw") else ""
        lines.append(
            f"  {layer.name}: {layer.category} {layer.element_class}{channels}{fmt}, box "
            f"{','.join(map(str, box.top_left))} size {'x'.join(map(str, box.size))}, mags "
            f"{' '.join(m.name for m in layer.mags)}{extra}")
    for problem in dataset.problems:
        lines.append(f"  problem ({type(problem).__name__}): {problem}")
    return lines


def problems_json(dataset: Dataset) -> list[dict[str, Any]]:
    """``[{kind, layer, mag, path, message}]`` for each problem of the dataset."""
    out = []
    for p in dataset.problems:
        mag = getattr(p, "mag", None)
        out.append({
            "kind": type(p).__name__,
            "layer": getattr(p, "layer", None),
            "mag": list(mag) if mag is not None else None,
            "path": p.path,
            "message": p.reason,
        })
    return out


__all__ = ["Dataset", "Layer", "Mag", "NoMagsError", "select_mag", "match_mags", "MagPairs",
           "layers_json", "summary_lines", "problems_json"]
