"""Zarr's place in the format registry: a folder holding ``zarr.json``, ``.zarray`` or
``.zgroup`` (an array, an OME-Zarr multiscale image, a plain group, or a webKnossos mag or
layer folder of ``dataFormat`` zarr3 / zarr), or one of those files.  Asked after webKnossos
(whose dataset folders may hold a ``zarr.json`` group too)."""

from __future__ import annotations

import os

from viewer.format.registry import FormatEntry, register
from viewer.format.store import is_url, open_store
from viewer.format.zarr.dataset import open_dataset
from viewer.format.zarr.node import MARKERS

FILES = (*MARKERS, ".zattrs")


def detect(path: str) -> bool:
    if is_url(path):  # a remote array or group: its metadata through the store
        store = open_store(path)
        return any(store.exists(m) for m in MARKERS)
    if os.path.isfile(path):
        return os.path.basename(path) in FILES and any(
            os.path.isfile(os.path.join(os.path.dirname(path) or ".", m)) for m in MARKERS)
    if not os.path.isdir(path):
        return False
    return any(os.path.isfile(os.path.join(path, m)) for m in MARKERS)


register(FormatEntry("zarr", detect, open_dataset, priority=50, names=("zarr", "zarr3"),
                     describes="a zarr v2 or v3 array or group folder (zarr.json, .zarray, "
                               ".zgroup), sharded or not, OME-Zarr 0.4/0.5"))
