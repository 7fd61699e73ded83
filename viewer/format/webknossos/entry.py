"""webKnossos' place in the format registry: a dataset folder with
``datasource-properties.json`` (or the file itself), a layer folder (mag subfolders), or a
folder of layer folders that is not itself another format's array (an N5 dataset, a zarr
array: its subfolders hold chunks, and are not looked through).  Asked before plain WKW, whose
mag folders it also holds."""

from __future__ import annotations

import json
import os

from viewer.format.dataset import Dataset
from viewer.format.registry import FormatEntry, register
from viewer.format.webknossos.dataset import WkDataset, _is_dir, _mag_subfolders
from viewer.format.webknossos.properties import PROPERTIES_FILE


def detect(path: str) -> bool:
    if os.path.isfile(path):
        return os.path.basename(path) == PROPERTIES_FILE
    if not os.path.isdir(path):
        return False
    if os.path.isfile(os.path.join(path, PROPERTIES_FILE)) or _mag_subfolders(path):
        return True
    # A dataset folder without its properties file: layer folders inside (among its first
    # entries by name; a listing's types spare a stat of each).  Not in another format's
    # array, whose subfolders hold its chunks (an N5 dataset's hold thousands).
    if _array_of_another_format(path):
        return False
    try:
        with os.scandir(path) as listing:
            entries = sorted((e.name, _is_dir(e)) for e in listing)[:64]
    except OSError:
        return False
    return any(is_dir and _mag_subfolders(os.path.join(path, name)) for name, is_dir in entries)


#: Most bytes of a metadata file read to tell whether a folder is another format's array.
_MARKER_BYTES = 1 << 16


def _array_of_another_format(path: str) -> bool:
    """Whether the folder is itself an array of another format: a zarr v2 ``.zarray``, an N5
    dataset's ``attributes.json`` (``dimensions`` and ``dataType``; a group's has neither), a
    zarr v3 ``zarr.json`` whose ``node_type`` is ``array``.  A file that cannot be read or
    parsed says no."""
    if os.path.isfile(os.path.join(path, ".zarray")):
        return True
    for name in ("attributes.json", "zarr.json"):
        try:
            with open(os.path.join(path, name), "rb") as fh:
                text = fh.read(_MARKER_BYTES + 1)
            doc = json.loads(text) if len(text) <= _MARKER_BYTES else None
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(doc, dict):
            continue
        if name == "attributes.json" and "dimensions" in doc and "dataType" in doc:
            return True
        if name == "zarr.json" and doc.get("node_type") == "array":
            return True
    return False


def open_dataset(path: str) -> Dataset:
    return WkDataset(path)


register(FormatEntry("webknossos", detect, open_dataset, priority=100,
                     describes="a webKnossos dataset, layer or mag folder"))
