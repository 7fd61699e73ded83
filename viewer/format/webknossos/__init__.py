"""webKnossos datasets: ``datasource-properties.json``, a folder per layer, a WKW dataset per mag.

``WkDataset(path)`` opens a dataset folder (or a single layer or mag folder) into ``layers``
(each with its ``mags``, lazily opened) and ``problems`` (what could not be opened, typed);
``layers_json`` gives the ``layers`` list of ``wkw-viewer info --json``.  ``writer`` and
``downsample`` create datasets and build coarser mags.
"""

from viewer.format.webknossos.dataset import (
    MagPairs,
    WkDataset,
    is_webknossos_dataset,
    layers_json,
    match_mags,
    open_dataset,
    problems_json,
    select_mag,
    summary_lines,
)
from viewer.format.webknossos.errors import (
    MagMismatchError,
    MissingMagError,
    NoMagsError,
    PropertiesError,
    UnsupportedLayerError,
    WebknossosError,
)
from viewer.format.webknossos.layer import Layer
from viewer.format.webknossos.mag import Mag, mag_name, parse_mag
from viewer.format.webknossos.properties import (
    PROPERTIES_FILE,
    BoundingBox,
    DatasetProperties,
    LayerProperties,
    MagProperties,
    VoxelSize,
    read_properties,
)

__all__ = [
    "WkDataset",
    "open_dataset",
    "select_mag",
    "match_mags",
    "MagPairs",
    "is_webknossos_dataset",
    "layers_json",
    "problems_json",
    "summary_lines",
    "Layer",
    "Mag",
    "mag_name",
    "parse_mag",
    "PROPERTIES_FILE",
    "BoundingBox",
    "DatasetProperties",
    "LayerProperties",
    "MagProperties",
    "VoxelSize",
    "read_properties",
    "WebknossosError",
    "PropertiesError",
    "NoMagsError",
    "MissingMagError",
    "UnsupportedLayerError",
    "MagMismatchError",
]
