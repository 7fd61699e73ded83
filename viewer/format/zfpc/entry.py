"""zfpc's place in the format registry: a file starting with ``zfpc`` opens as a dataset of
one layer (named after the file) with one mag."""

from __future__ import annotations

import os

from viewer.format.dataset import Dataset, Layer, Mag
from viewer.format.registry import FormatEntry, register
from viewer.format.store import is_url, split
from viewer.format.zfpc.container import MAGIC
from viewer.format.zfpc.volume import ZfpcVolume


def detect(path: str) -> bool:
    """A file whose first four bytes are ``zfpc``."""
    if is_url(path):  # one ranged request for the magic; absent (404): not this format
        store, key = split(path)
        try:
            return store.read(key, 0, 4) == MAGIC
        except FileNotFoundError:
            return False
    if not os.path.isfile(path):
        return False
    store, key = split(path)
    return store.read(key, 0, 4) == MAGIC


def open_dataset(path: str) -> Dataset:
    volume = ZfpcVolume(path)
    name = os.path.splitext(os.path.basename(path))[0]
    mag = Mag((1, 1, 1), path, layer=name, dtype=volume.dtype,
              num_channels=volume.num_channels, opener=lambda: volume)
    element = {"float32": "float", "float64": "double"}.get(volume.dtype.name,
                                                            volume.dtype.name)
    layer = Layer(name, "color", element, volume.num_channels, None, [mag], path,
                  data_format="zfpc", dtype=volume.dtype)
    return Dataset(path, "zfpc", [layer], kind="file")


register(FormatEntry("zfpc", detect, open_dataset, priority=5, names=("zfpc",),
                     describes="a .zfpc file (zfp streams in a zfpc container)"))
