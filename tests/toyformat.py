"""A test-only format: one ``.npy`` file per chunk, the proof that nothing above
``viewer.format`` knows WKW.

Layout of a toy array folder::

    toy.json          {"toy": 1, "shape": [X, Y, Z], "chunk_shape": [cx, cy, cz],
                       "dtype": "uint16", "channels": 1, "fill_value": 0}
    c/I.J.K.npy       chunk (I, J, K) as a (C, cx, cy, cz) array (edge chunks full size)

A chunk file that is missing is an absent chunk (reads as the fill value); one that is not a
valid ``.npy`` of the right shape is a damaged chunk (a ``ChunkDecodeError``).  It is a format
plugin: ``tests/wkw_viewer_toyformat-1.0.dist-info`` declares it in the ``wkw_viewer.formats``
entry point group, so the registry imports it (and it registers itself) in any process with
``tests/`` on its path (``tests/conftest.py`` puts it there for the tests and their children).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format import ChunkDecodeError, ChunkTable, Dataset, Layer, Mag, MetadataError
from viewer.format.registry import FormatEntry, register
from viewer.format.store import LocalStore
from viewer.format.volume import StorageUnit, StoredResult, Volume, VolumeInfo

META = "toy.json"
Vec3 = tuple[int, int, int]


class ToyUnit(StorageUnit):
    def __init__(self, volume: ToyVolume, unit: Vec3, size: int) -> None:
        self.volume = volume
        self.unit = unit
        self.key = f"c/{unit[0]}.{unit[1]}.{unit[2]}.npy"
        self.path = volume.store.location(self.key)
        self.num_chunks = 1
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def chunk_table(self) -> ChunkTable:
        return ChunkTable.single(self._size)

    def read_stored(self, indices: Sequence[int]) -> list[StoredResult]:
        try:
            data = self.volume.store.read(self.key)
        except FileNotFoundError:
            return [None for _ in indices]
        return [data for _ in indices]

    def decode(self, index: int, stored: bytes | memoryview) -> npt.NDArray[Any]:
        v = self.volume
        want = (v.num_channels, *v.chunk_shape)
        try:
            arr = np.load(io.BytesIO(bytes(stored)), allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - any failure of np.load is damage
            raise ChunkDecodeError(f"not a .npy chunk: {exc}", self.path, offset=0,
                                   chunk=self.unit) from None
        if arr.shape != want or arr.dtype != v.dtype:
            raise ChunkDecodeError(f"chunk is {arr.dtype} {arr.shape}, expected {v.dtype} {want}",
                                   self.path, offset=0, chunk=self.unit)
        return np.asfortranarray(arr)

    def describe_chunk(self, index: int) -> dict[str, Any]:
        return {"encoding": "npy"}


class ToyVolume(Volume):
    format = "toy"

    def __init__(self, path: str) -> None:
        self.path = path
        self.store = LocalStore(path)
        try:
            meta = json.loads(self.store.read(META))
            self._shape = tuple(int(v) for v in meta["shape"])
            self.chunk_shape = tuple(int(v) for v in meta["chunk_shape"])  # type: ignore[assignment]
            self.dtype = np.dtype(meta["dtype"])
            self.num_channels = int(meta.get("channels", 1))
            self.fill_value = meta.get("fill_value", 0)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MetadataError(f"bad {META}: {exc}", os.path.join(path, META)) from None
        self.unit_shape = (1, 1, 1)

    @property
    def shape(self) -> Vec3:
        s = self._shape
        return (s[0], s[1], s[2])

    def unit_path(self, unit: Vec3) -> str:
        return self.store.location(f"c/{unit[0]}.{unit[1]}.{unit[2]}.npy")

    def open_unit(self, unit: Vec3) -> ToyUnit | None:
        size = self.store.size(f"c/{unit[0]}.{unit[1]}.{unit[2]}.npy")
        return None if size is None else ToyUnit(self, unit, size)

    def iter_units(self) -> Iterator[Vec3]:
        for name in self.store.list_dir("c"):
            if name.endswith(".npy"):
                i, j, k = name[:-4].split(".")
                yield (int(i), int(j), int(k))

    def info(self) -> VolumeInfo:
        return VolumeInfo("toy", "npy", {"shape": list(self.shape),
                                         "chunk_shape": list(self.chunk_shape)})


def write_toy(path: str | os.PathLike[str], data: npt.NDArray[Any],
              chunk_shape: Sequence[int], skip: Sequence[Vec3] = (),
              fill_value: int = 0) -> str:
    """Write ``data`` (``(C, X, Y, Z)``) as a toy array; chunks in ``skip`` are left absent."""
    path = os.fspath(path)
    os.makedirs(os.path.join(path, "c"), exist_ok=True)
    c, *shape = data.shape
    cs = [int(v) for v in chunk_shape]
    with open(os.path.join(path, META), "w") as fh:
        json.dump({"toy": 1, "shape": shape, "chunk_shape": cs, "dtype": data.dtype.name,
                   "channels": c, "fill_value": fill_value}, fh)
    grid = [-(-s // k) for s, k in zip(shape, cs, strict=True)]
    for i in range(grid[0]):
        for j in range(grid[1]):
            for k in range(grid[2]):
                if (i, j, k) in skip:
                    continue
                chunk = np.full((c, *cs), fill_value, dtype=data.dtype)
                part = data[:, i * cs[0]:(i + 1) * cs[0], j * cs[1]:(j + 1) * cs[1],
                            k * cs[2]:(k + 1) * cs[2]]
                chunk[:, :part.shape[1], :part.shape[2], :part.shape[3]] = part
                np.save(os.path.join(path, "c", f"{i}.{j}.{k}.npy"), chunk)
    return path


def detect(path: str) -> bool:
    return os.path.isfile(os.path.join(path, META))


def open_dataset(path: str) -> Dataset:
    vol = ToyVolume(path)
    name = os.path.basename(os.path.abspath(path))
    category = "segmentation" if "seg" in name else "color"
    mag = Mag((1, 1, 1), path, layer=name, dtype=vol.dtype, num_channels=vol.num_channels,
              opener=lambda: vol)
    from viewer.format import BoundingBox

    layer = Layer(name, category, vol.dtype.name, vol.num_channels,
                  BoundingBox((0, 0, 0), vol.shape), [mag], path, data_format="toy",
                  dtype=vol.dtype)
    return Dataset(path, "toy", [layer], kind="array")


register(FormatEntry("toy", detect, open_dataset, priority=5,
                     describes="a toy array (test only)"))
