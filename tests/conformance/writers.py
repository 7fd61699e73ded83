"""The conformance matrix's data: one small array written by each peer tool, and a damaged copy
of each (a chunk file or the data file cut to half its length).

Every writer gets the same ``(x, y, z)`` array and writes it in its own convention; every
dataset then reads, through ``viewer.format.open_volume``, as that array.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: The array every tool writes: (x, y, z), small (a few chunks of 8^3).
SHAPE = (16, 12, 10)
CHUNK = 8


def truth() -> np.ndarray:
    return np.random.default_rng(2027).integers(1, 60000, SHAPE, dtype=np.uint16)


def truth_float() -> np.ndarray:
    """For the writers of float data (zfpc, OpenVDS): the same values as float32."""
    return truth().astype(np.float32)


def truth_new() -> np.ndarray:
    """The array of the other version of each dataset (``rewrite/<name>`` is rewritten in
    place between the two): other values everywhere, so that a block of two versions is
    seen."""
    return np.random.default_rng(2028).integers(1, 60000, SHAPE, dtype=np.uint16)


def _tensorstore_n5(path: Path, data: np.ndarray) -> None:
    import tensorstore as ts

    ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}, "create": True,
             "metadata": {"dimensions": list(data.shape), "blockSize": [CHUNK] * 3,
                          "dataType": "uint16", "compression": {"type": "gzip"}}}
            ).result().write(data).result()


def _tensorstore_zarr3(path: Path, data: np.ndarray) -> None:
    import tensorstore as ts

    zyx = np.ascontiguousarray(data.transpose(2, 1, 0))
    ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
             "create": True,
             "metadata": {"shape": list(zyx.shape), "data_type": "uint16",
                          "chunk_grid": {"name": "regular",
                                         "configuration": {"chunk_shape": [16, 16, 16]}},
                          "codecs": [{"name": "sharding_indexed", "configuration": {
                              "chunk_shape": [CHUNK] * 3,
                              "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                         {"name": "zstd", "configuration": {"level": 3}}],
                              "index_codecs": [{"name": "bytes",
                                                "configuration": {"endian": "little"}},
                                               {"name": "crc32c"}]}}],
                          "dimension_names": ["z", "y", "x"]}}).result().write(zyx).result()


def _z5py_n5(path: Path, data: np.ndarray) -> None:
    import z5py

    f = z5py.File(str(path.parent / (path.name + ".n5")), mode="a", use_zarr_format=False)
    ds = f.create_dataset("arr", shape=data.shape[::-1], chunks=(CHUNK,) * 3, dtype=data.dtype,
                          compression="gzip")
    ds[...] = np.ascontiguousarray(data.T)
    shutil.move(str(path.parent / (path.name + ".n5") / "arr"), str(path))
    shutil.rmtree(path.parent / (path.name + ".n5"))


def _zarr_python(fmt: int) -> Callable[[Path, np.ndarray], None]:
    def write(path: Path, data: np.ndarray) -> None:
        import zarr

        zyx = np.ascontiguousarray(data.transpose(2, 1, 0))
        arr = zarr.open_array(str(path), mode="w", shape=zyx.shape, chunks=(CHUNK,) * 3,
                              dtype="<u2", zarr_format=fmt)
        arr[...] = zyx

    return write


def _reference_wkw(path: Path, data: np.ndarray) -> None:
    import wkw as reference

    header = reference.Header(np.uint16, block_len=CHUNK, file_len=2,
                              block_type=reference.Header.BLOCK_TYPE_LZ4HC)
    side = CHUNK * 2  # a compressed file is written whole: zeros beyond the array
    padded = np.zeros([-(-n // side) * side for n in data.shape], data.dtype)
    padded[:data.shape[0], :data.shape[1], :data.shape[2]] = data
    with reference.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), padded)


def _zfpc(path: Path, data: np.ndarray) -> None:
    import zfpc

    path.mkdir()
    (path / "a.zfpc").write_bytes(bytes(zfpc.compress(
        np.asfortranarray(data.astype(np.float32)), correlated_dims=[True, True, True, False])))


def _openvds(path: Path, data: np.ndarray) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vds"))
    from vdswriter import write_vds

    path.mkdir()
    write_vds(str(path / "a.vds"), np.ascontiguousarray(data.astype(np.float32).transpose(2, 1, 0)),
              method="Zip", brick=32, value_range=(0.0, 60000.0))


#: name -> (writer, what to open below the dataset folder, the file a damage cuts, a piece of
#: the URL of the chunk files only (faults aimed at chunks, not at metadata), float data).
#: A one-file format's chunks are the requests past its header (``FAULT_FROM``).
WRITERS: dict[str, tuple[Callable[[Path, np.ndarray], None], str, str, str, bool]] = {
    "tensorstore-n5": (_tensorstore_n5, "", "1/0/0", "/tensorstore-n5/1/", False),
    "tensorstore-zarr3": (_tensorstore_zarr3, "", "c/0/0/0", "/tensorstore-zarr3/c/", False),
    "z5py-n5": (_z5py_n5, "", "1/0/0", "/z5py-n5/1/", False),
    "zarr-python-v2": (_zarr_python(2), "", "0.0.1", "/zarr-python-v2/0.", False),
    "zarr-python-v3": (_zarr_python(3), "", "c/0/0/1", "/zarr-python-v3/c/", False),
    "wkw": (_reference_wkw, "", "z0/y0/x0.wkw", "/x0.wkw", False),
    "zfpc": (_zfpc, "a.zfpc", "a.zfpc", "a.zfpc", True),
    "openvds": (_openvds, "a.vds", "a.vds", "a.vds", True),
}


#: name -> first byte of a one-file format's chunk data (faults aimed at what comes after).
FAULT_FROM = {"zfpc": 39}


def write_all(root: Path) -> None:
    """``root/good/<name>`` and ``root/damaged/<name>`` for every writer; ``root/new/<name>``
    the same dataset written with ``truth_new``, and ``root/rewrite/<name>`` a copy of the
    good one whose victim file a cell rewrites in place with the new one's bytes."""
    for name, (write, _, victim, _, floats) in WRITERS.items():
        data: Any = truth_float() if floats else truth()
        write(root / "good" / name, data)
        shutil.copytree(root / "good" / name, root / "damaged" / name)
        shutil.copytree(root / "good" / name, root / "rewrite" / name)
        cut = root / "damaged" / name / victim
        raw = cut.read_bytes()
        cut.write_bytes(raw[:len(raw) // 2])
        new: Any = truth_new().astype(np.float32) if floats else truth_new()
        write(root / "new" / name, new)
