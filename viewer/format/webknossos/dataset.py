"""A webKnossos dataset: ``datasource-properties.json`` plus a folder per layer and per mag.

``WkDataset(path)`` opens, in this order of preference:

1. a dataset folder with ``datasource-properties.json`` (or the file itself);
2. a single layer folder: mag subfolders (``1``, ``2-2-1``, ...) each with ``header.wkw``;
3. a single mag folder, i.e. a plain WKW dataset with ``header.wkw`` (one layer, mag 1, in its
   own voxel coordinates);
4. a dataset folder whose properties file is missing but whose subfolders are layer folders
   (reported as a ``PropertiesError``; the layers are inferred as in 2).

What cannot be opened is reported in ``problems`` (typed ``FormatError`` subclasses carrying the
path, layer and mag) and the rest opens.  No data file is opened or listed for a dataset with a
properties file; each mag's ``header.wkw`` is read on first use (``Layer.check`` or
``WkDataset.check`` read them all now).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from viewer.format.errors import DatasetLayoutError, FormatError
from viewer.format.webknossos.errors import PropertiesError, WebknossosError
from viewer.format.webknossos.layer import Layer
from viewer.format.webknossos.mag import Mag, is_mag_folder, parse_mag
from viewer.format.wkw.dataset import HEADER_FILE
from viewer.format.webknossos.properties import (
    PROPERTIES_FILE,
    DatasetProperties,
    VoxelSize,
    read_properties,
)

Vec3 = tuple[int, int, int]


class WkDataset:
    """An opened webKnossos dataset (see the module doc for what opens).

    ``layers``: the layers that opened (each with at least one mag present), in file order.
    ``voxel_size``: nanometres per mag-1 voxel along x, y, z (1, 1, 1 and
    ``voxel_size_declared`` False when no properties file says).  ``problems``: what did not
    open.  ``kind``: ``"dataset"``, ``"layer"`` or ``"mag"`` (what ``path`` was).

    Construction happens on one thread; afterwards the object is read-only apart from the
    lazily opened mags and may be shared between threads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        path = os.path.normpath(os.fspath(path))
        if os.path.isfile(path) and os.path.basename(path) in (PROPERTIES_FILE, HEADER_FILE):
            path = os.path.dirname(path) or "."
        self.path = path
        self.layers: list[Layer] = []
        self.problems: list[FormatError] = []
        self.properties: DatasetProperties | None = None
        self.scale = VoxelSize((1.0, 1.0, 1.0))
        self.voxel_size_declared = False
        self.kind = "dataset"
        if not os.path.exists(path):
            raise DatasetLayoutError("no such file or directory", path)
        if os.path.isfile(os.path.join(path, PROPERTIES_FILE)):
            self._open_properties()
        elif is_mag_folder(path):
            self._open_mag_folder()
        elif _mag_subfolders(path):
            self.kind = "layer"
            self.layers.append(Layer.from_folder(path))
        else:
            self._open_inferred()

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> WkDataset:
        """Same as ``WkDataset(path)``."""
        return cls(path)

    # -- opening ------------------------------------------------------------------------------
    def _open_properties(self) -> None:
        props, problems = read_properties(os.path.join(self.path, PROPERTIES_FILE))
        self.properties = props
        self.scale = props.voxel_size
        self.voxel_size_declared = True
        self.problems.extend(problems)
        for lp in props.layers:
            layer, layer_problems = Layer.from_properties(lp, self.path)
            self.problems.extend(layer_problems)
            if layer is not None:
                self.layers.append(layer)

    def _open_mag_folder(self) -> None:
        self.kind = "mag"
        folder = self.path
        base = os.path.basename(folder)
        try:
            parse_mag(base)
            name = os.path.basename(os.path.dirname(folder)) or base
        except ValueError:
            name = base
        self.layers.append(Layer.from_mag_folders([((1, 1, 1), folder)], folder, name,
                                                  dataset_dir=folder))

    def _open_inferred(self) -> None:
        try:
            entries = sorted(os.listdir(self.path))
        except NotADirectoryError:
            raise DatasetLayoutError("not a webKnossos dataset, layer or mag folder",
                                     self.path) from None
        for entry in entries:
            sub = os.path.join(self.path, entry)
            if os.path.isdir(sub) and _mag_subfolders(sub):
                try:
                    self.layers.append(Layer.from_folder(sub, dataset_dir=self.path))
                except FormatError as exc:
                    self.problems.append(exc)
        if not self.layers and not self.problems:
            raise DatasetLayoutError(
                f"not a webKnossos dataset, layer or mag folder: no {PROPERTIES_FILE}, no "
                "header.wkw, no mag or layer folders", self.path)
        self.problems.insert(0, PropertiesError(
            f"no {PROPERTIES_FILE}: layers inferred from the folders, voxel size unknown",
            os.path.join(self.path, PROPERTIES_FILE)))

    # -- access -------------------------------------------------------------------------------
    @property
    def voxel_size(self) -> tuple[float, float, float]:
        """Nanometres per mag-1 voxel along x, y, z."""
        return self.scale.nanometers

    @property
    def name(self) -> str:
        return os.path.basename(os.path.abspath(self.path))

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; ``KeyError`` when there is none."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"no layer {name!r} (layers: {', '.join(l.name for l in self.layers)})")

    @property
    def color_layers(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.category == "color"]

    @property
    def segmentation_layers(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.category == "segmentation"]

    def check(self) -> list[FormatError]:
        """Open every mag's header.wkw now; the new problems found are added to ``problems``
        and returned (each mag is checked once)."""
        found: list[FormatError] = []
        for layer in self.layers:
            for problem in layer.check():
                if all(str(problem) != str(p) for p in self.problems):
                    found.append(problem)
        self.problems.extend(found)
        return found

    def close(self) -> None:
        for layer in self.layers:
            layer.close()

    def __enter__(self) -> WkDataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<WkDataset {self.path!r} layers {[layer.name for layer in self.layers]} "
                f"{len(self.problems)} problem(s)>")


def _mag_subfolders(path: str) -> list[str]:
    try:
        entries = os.listdir(path)
    except OSError:
        return []
    out = []
    for entry in entries:
        try:
            parse_mag(entry)
        except ValueError:
            continue
        if is_mag_folder(os.path.join(path, entry)):
            out.append(entry)
    return out


def open_dataset(path: str | os.PathLike[str]) -> WkDataset:
    """Open a webKnossos dataset, layer folder or mag folder (see :class:`WkDataset`)."""
    return WkDataset(path)


def is_webknossos_dataset(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a dataset folder with a properties file, or a layer folder (mag
    subfolders): the cases where ``WkDataset`` adds something over a plain WKW dataset."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return os.path.basename(path) == PROPERTIES_FILE
    return os.path.isfile(os.path.join(path, PROPERTIES_FILE)) or bool(_mag_subfolders(path))


# -- one WKW dataset out of many: for tools that work per layer and mag (inspector, compare) --
def select_mag(dataset: WkDataset, layer: str | None = None, mag: Any = None) -> Mag:
    """The mag a tool that works on one WKW dataset should use: ``layer`` by name (default:
    the only layer, else the first color layer, else the first layer) and ``mag`` in any
    spelling (``2``, ``"2-2-1"``, ``(2, 2, 1)``; default: the finest).  ``KeyError`` naming
    what exists when there is no such layer or mag."""
    if not dataset.layers:
        raise KeyError(f"{dataset.path} has no layer that opened")
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


def match_mags(a: WkDataset, b: WkDataset) -> MagPairs:
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


# -- JSON for `wkw-viewer info --json` ---------------------------------------------------------
def layers_json(dataset: WkDataset) -> list[dict[str, Any]]:
    """The ``layers`` list of ``wkw-viewer info DATASET --json``: per opened layer ``name``,
    ``category``, ``element_class``, ``num_channels``, ``bounding_box`` (``{topLeft, width,
    height, depth}``, mag-1 voxels) and ``mags`` (``[{mag: [x, y, z], path}]``, finest first,
    ``path`` as the properties file spells it, else dataset-relative ``./layer/mag``)."""
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


def summary_lines(dataset: WkDataset) -> list[str]:
    """A human-readable description for ``wkw-viewer info``: the voxel size, one line per
    layer (category, element class, box, mags) and one per problem."""
    size = ", ".join(f"{v:g}" for v in dataset.scale.factor)
    declared = "" if dataset.voxel_size_declared else " (not declared)"
    lines = [f"webKnossos {dataset.kind} {dataset.path}: {len(dataset.layers)} layer(s), "
             f"voxel size {size} {dataset.scale.unit}{declared}"]
    for layer in dataset.layers:
        box = layer.bounding_box
        channels = f" x{layer.num_channels}" if layer.num_channels > 1 else ""
        extra = (f", largest segment id {layer.largest_segment_id}"
                 if layer.largest_segment_id is not None else "")
        lines.append(
            f"  {layer.name}: {layer.category} {layer.element_class}{channels}, box "
            f"{','.join(map(str, box.top_left))} size {'x'.join(map(str, box.size))}, mags "
            f"{' '.join(m.name for m in layer.mags)}{extra}")
    for problem in dataset.problems:
        lines.append(f"  problem ({type(problem).__name__}): {problem}")
    return lines


def problems_json(dataset: WkDataset) -> list[dict[str, Any]]:
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


__all__ = ["WkDataset", "open_dataset", "select_mag", "match_mags", "MagPairs",
           "is_webknossos_dataset", "layers_json", "problems_json", "summary_lines",
           "WebknossosError"]
