"""OpenVDS's place in the format registry: a file starting with ``HueDataStore`` opens as a
dataset of one layer (the primary channel) whose mags are its LODs (``2**k`` per axis)."""

from __future__ import annotations

import os

from viewer.format.dataset import Dataset, Layer, Mag
from viewer.format.geometry import BoundingBox
from viewer.format.registry import FormatEntry, register
from viewer.format.store import is_url, split
from viewer.format.vds.container import MAGIC
from viewer.format.vds.volume import VdsFile, VdsVolume


def detect(path: str) -> bool:
    """A file whose first twelve bytes are ``HueDataStore``."""
    if is_url(path):  # one ranged request for the magic; absent (404): not this format
        store, key = split(path)
        try:
            return store.read(key, 0, len(MAGIC)) == MAGIC
        except FileNotFoundError:
            return False
    if not os.path.isfile(path):
        return False
    store, key = split(path)
    return store.read(key, 0, len(MAGIC)) == MAGIC


def open_dataset(path: str) -> Dataset:
    f = VdsFile(path)
    ch = f.channel
    lods = f.lods()
    if not lods or lods[0] != 0:
        f.close()
        from viewer.format.errors import MetadataError
        raise MetadataError(f"the file holds no {f.layer_name(0)} layer (files: "
                            f"{', '.join(f.container.files)})", path)
    mags = []
    for k in lods:
        m = f.lod_factors(k)

        def opener(k: int = k) -> VdsVolume:
            return VdsVolume(f, k)

        mags.append(Mag(m, path, layer=ch.name, dtype=ch.dtype,
                        num_channels=1, rel_path=f.layer_name(k), opener=opener))
    element = {"float32": "float", "float64": "double"}.get(ch.dtype.name, ch.dtype.name)
    box = BoundingBox((0, 0, 0), f.samples)
    layer = Layer(ch.name, "color", element, 1, box, mags, path, data_format="vds",
                  properties=f.layout, dtype=ch.dtype)
    ds = Dataset(path, "vds", [layer], kind="file")
    close = ds.close

    def close_all() -> None:
        close()
        f.close()

    ds.close = close_all  # type: ignore[method-assign]
    return ds


register(FormatEntry("vds", detect, open_dataset, priority=5, names=("vds",),
                     describes="a .vds file (OpenVDS HueDataStore container)"))
