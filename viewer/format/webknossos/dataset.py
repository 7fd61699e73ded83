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
from typing import cast

from viewer.format.dataset import (
    Dataset,
    MagPairs,
    layers_json,
    match_mags,
    problems_json,
    select_mag,
    summary_lines,
)
from viewer.format.errors import DatasetLayoutError, FormatError
from viewer.format.webknossos.errors import PropertiesError, WebknossosError
from viewer.format.webknossos.layer import Layer
from viewer.format.webknossos.mag import is_mag_folder, parse_mag
from viewer.format.webknossos.properties import (
    PROPERTIES_FILE,
    DatasetProperties,
    read_properties,
)
from viewer.format.wkw.dataset import HEADER_FILE

Vec3 = tuple[int, int, int]


class WkDataset(Dataset):
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
        super().__init__(path, "webknossos")
        self.properties: DatasetProperties | None = None
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

    layers: list[Layer]  # type: ignore[assignment]

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; ``KeyError`` when there is none."""
        return cast(Layer, super().layer(name))

    def __enter__(self) -> WkDataset:
        return self


def _mag_subfolders(path: str) -> list[str]:
    """The subfolders of ``path`` named as mags that hold ``header.wkw``, in listing order.
    The registry asks this of every folder it is shown (and of each subfolder), N5 and zarr
    datasets' chunk folders among them: files are skipped by the listing's type (no
    ``stat``), and a folder's name is parsed only once it holds ``header.wkw`` (one ``stat``
    is cheaper than parsing a name)."""
    try:
        with os.scandir(path) as listing:
            entries = [e.name for e in listing if _is_dir(e)]
    except OSError:
        return []
    out = []
    for entry in entries:
        if not is_mag_folder(os.path.join(path, entry)):
            continue
        try:
            parse_mag(entry)
        except ValueError:
            continue
        out.append(entry)
    return out


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether a listed entry is a folder (following a link, as ``os.path.isdir``)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


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


__all__ = ["WkDataset", "open_dataset", "select_mag", "match_mags", "MagPairs",
           "is_webknossos_dataset", "layers_json", "problems_json", "summary_lines",
           "WebknossosError"]
