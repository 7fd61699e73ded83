"""On-disk formats, free of Qt, behind one interface.

``open_volume(path, layer=None, mag=None)`` opens one chunked 3-D array of any format this
program reads (a ``Volume``: ``dtype``, ``num_channels``, ``shape``, ``chunk_shape``,
``read(offset, shape) -> (C, X, Y, Z)`` and the chunk and storage-unit level below it);
``open_dataset(path)`` opens a whole dataset (layers of mags, voxel size, problems).  What a
path is gets decided by the registry (``viewer.format.registry``), which every format joins.
``FormatError`` is the root of every error about an input.

The formats' own packages (``viewer.format.wkw``, ``viewer.format.webknossos``, ...) are for
the format layer and for tools that write a format; nothing above ``viewer.format`` imports
them (an import-linter contract).  Writing the demo (a synthetic webKnossos dataset) is the one
writer the program itself uses: ``write_synthetic_dataset``.
"""

from viewer.format import formats as _formats  # noqa: F401 - registers the built-in formats
from viewer.format import wkw
from viewer.format.config import ReadConfig
from viewer.format.config import set_default as set_default_read_config
from viewer.format.dataset import (
    Dataset,
    Layer,
    Mag,
    MagPairs,
    layers_json,
    match_mags,
    problems_json,
    select_mag,
    summary_lines,
)
from viewer.format.errors import (
    BlockDecodeError,
    ChecksumError,
    ChunkDecodeError,
    DatasetLayoutError,
    FileChangedError,
    FileChangingError,
    FormatError,
    HeaderError,
    JumpTableError,
    MetadataError,
    RemoteError,
    UnsupportedFormatError,
)
from viewer.format.geometry import BoundingBox, VoxelSize, mag_name, parse_mag
from viewer.format.lifecycle import shutdown
from viewer.format.registry import detect, format_names, open_dataset, open_volume
from viewer.format.remote import CacheInfo as RemoteCacheInfo
from viewer.format.remote import RemoteStats
from viewer.format.remote import apply_cache_setting as apply_remote_cache_setting
from viewer.format.remote import cache_info as remote_cache_info
from viewer.format.remote import clear_cache as clear_remote_cache
from viewer.format.remote import configure as configure_remote
from viewer.format.remote import set_cache_mb as set_remote_cache_mb
from viewer.format.remote import stats as remote_stats
from viewer.format.store import is_url
from viewer.format.unitcheck import SoundUnits
from viewer.format.volume import ChunkTable, StorageUnit, Volume, VolumeInfo
from viewer.format.webknossos.properties import PROPERTIES_FILE
from viewer.format.webknossos.writer import DEMO_MAGS, write_synthetic_dataset

__all__ = [
    "ReadConfig",
    "set_default_read_config",
    "shutdown",
    "is_url",
    "remote_stats",
    "RemoteStats",
    "configure_remote",
    "RemoteCacheInfo",
    "remote_cache_info",
    "clear_remote_cache",
    "set_remote_cache_mb",
    "apply_remote_cache_setting",
    "write_synthetic_dataset",
    "DEMO_MAGS",
    "PROPERTIES_FILE",
    "open_volume",
    "open_dataset",
    "detect",
    "format_names",
    "Volume",
    "StorageUnit",
    "ChunkTable",
    "SoundUnits",
    "VolumeInfo",
    "Dataset",
    "Layer",
    "Mag",
    "MagPairs",
    "select_mag",
    "match_mags",
    "layers_json",
    "problems_json",
    "summary_lines",
    "BoundingBox",
    "VoxelSize",
    "mag_name",
    "parse_mag",
    "wkw",
    "FormatError",
    "HeaderError",
    "JumpTableError",
    "BlockDecodeError",
    "ChunkDecodeError",
    "ChecksumError",
    "FileChangedError",
    "FileChangingError",
    "MetadataError",
    "RemoteError",
    "UnsupportedFormatError",
    "DatasetLayoutError",
]
