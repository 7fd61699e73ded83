"""WKW's place in the format registry: a folder holding ``header.wkw``, or one ``.wkw`` file,
opens as a dataset of one layer with one mag whose extent is the box of the files present
(found by listing on first use: the window lists on a thread of its own)."""

from __future__ import annotations

import os

from viewer.format.dataset import Dataset, Layer, Mag
from viewer.format.registry import FormatEntry, register
from viewer.format.wkw.dataset import HEADER_FILE
from viewer.format.wkw.dataset import Dataset as WkwDataset
from viewer.format.wkw.header import MAGIC
from viewer.format.wkw.volume import WkwVolume


def detect(path: str) -> bool:
    """A folder with ``header.wkw``, ``header.wkw`` itself, a file starting with the WKW
    magic, or a ``.wkw`` file (whose damaged header then fails to open with its own
    ``HeaderError``, rather than as "not a dataset")."""
    if os.path.isdir(path):
        return os.path.isfile(os.path.join(path, HEADER_FILE))
    if not os.path.isfile(path):
        return False
    if path.endswith(".wkw"):
        return True
    with open(path, "rb") as fh:
        return fh.read(3) == MAGIC


def element_class(dtype_name: str, channels: int) -> str:
    """The element class a person reads (webKnossos' names: 3 x uint8 is ``uint24``)."""
    if dtype_name == "uint8" and channels == 3:
        return "uint24"
    return {"float32": "float", "float64": "double"}.get(dtype_name, dtype_name)


def open_dataset(path: str) -> Dataset:
    if os.path.basename(path) == HEADER_FILE and os.path.isfile(path):
        path = os.path.dirname(path) or "."
    ds = WkwDataset.open(path)
    h = ds.header
    name = os.path.basename(os.path.abspath(path))
    single = ds.single_file is not None
    if single:
        name = os.path.splitext(name)[0]
    category = "segmentation" if "seg" in name.lower() else "color"
    mag = Mag((1, 1, 1), path, layer=name, dtype=h.dtype, num_channels=h.num_channels,
              opener=lambda: WkwVolume(ds))
    layer = Layer(name, category, element_class(h.dtype.name, h.num_channels), h.num_channels,
                  None, [mag], path, data_format="wkw", dtype=h.dtype)
    return Dataset(path, "wkw", [layer], kind="file" if single else "mag")


register(FormatEntry("wkw", detect, open_dataset, priority=10,
                     describes="a WKW dataset folder (header.wkw) or a .wkw file"))
