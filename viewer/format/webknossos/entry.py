"""webKnossos' place in the format registry: a dataset folder with
``datasource-properties.json`` (or the file itself), a layer folder (mag subfolders), or a
folder of layer folders.  Asked before plain WKW, whose mag folders it also holds."""

from __future__ import annotations

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
    # entries by name; a listing's types spare a stat of each).
    try:
        with os.scandir(path) as listing:
            entries = sorted((e.name, _is_dir(e)) for e in listing)[:64]
    except OSError:
        return False
    return any(is_dir and _mag_subfolders(os.path.join(path, name)) for name, is_dir in entries)


def open_dataset(path: str) -> Dataset:
    return WkDataset(path)


register(FormatEntry("webknossos", detect, open_dataset, priority=100,
                     describes="a webKnossos dataset, layer or mag folder"))
