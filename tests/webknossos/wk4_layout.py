"""Datasets laid out the way webKnossos 4.x (and webknossos-libs) write them, built by hand.

Independent of ``viewer.format.webknossos.writer`` on purpose: the JSON is written as literal
dicts and the mags with the project's WKW writer or the reference ``wkw`` package, so a
mistake in the project's own properties writer cannot hide one in its reader.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from viewer.format import wkw

#: Small geometry so that a few dozen voxels span several files: 8^3 blocks, 2^3 blocks a file.
BLOCK_LEN = 8
FILE_LEN = 2


def write_properties(root: Path, layers: list[dict[str, Any]], scale: Any = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    doc = {
        "id": {"name": root.name, "team": ""},
        "scale": scale if scale is not None else {"factor": [11.24, 11.24, 28.0],
                                                   "unit": "nanometer"},
        "dataLayers": layers,
    }
    path = root / "datasource-properties.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def bbox(top_left: tuple[int, int, int], size: tuple[int, int, int]) -> dict[str, Any]:
    return {"topLeft": list(top_left), "width": size[0], "height": size[1], "depth": size[2]}


def mags_entry(layer: str, mags: list[tuple[int, int, int]], names: list[str] | None = None,
               ) -> list[dict[str, Any]]:
    """The current ``mags`` key: ``{mag, path: "./layer/name", axisOrder}``."""
    names = names or [mag_folder(m) for m in mags]
    return [{"mag": list(m), "path": f"./{layer}/{n}", "cubeLength": BLOCK_LEN * FILE_LEN,
             "axisOrder": {"x": 1, "y": 2, "z": 3, "c": 0}}
            for m, n in zip(mags, names, strict=True)]


def resolutions_entry(mags: list[tuple[int, int, int]]) -> list[dict[str, Any]]:
    """The legacy ``wkwResolutions`` key: ``resolution`` an int when all factors agree."""
    return [{"resolution": m[0] if m[0] == m[1] == m[2] else list(m), "cubeLength": 1024}
            for m in mags]


def layer(name: str, category: str, element_class: str, box: dict[str, Any],
          mags: list[dict[str, Any]] | None = None, key: str = "mags",
          data_format: str = "wkw", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "category": category, "boundingBox": box,
                           "elementClass": element_class, "dataFormat": data_format}
    if mags is not None:
        out[key] = mags
    out.update(extra)
    return out


def mag_folder(mag: tuple[int, int, int]) -> str:
    return str(mag[0]) if mag[0] == mag[1] == mag[2] else "-".join(map(str, mag))


def model(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Low-entropy random data with the type's maximum sprinkled in (compresses, and a width
    or byte-order mistake cannot hide)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    arr = rng.integers(0, 7, size=shape).astype(dt)
    flat = arr.reshape(-1)
    flat[rng.integers(0, flat.size, size=max(1, flat.size // 50))] = np.iinfo(dt).max
    return arr


def write_mag(folder: Path, data: np.ndarray, offset: tuple[int, int, int] = (0, 0, 0),
              reference: bool = False, block_type: int = wkw.BLOCK_TYPE_LZ4HC) -> None:
    """Write ``data`` (``(X, Y, Z)`` or ``(C, X, Y, Z)``) as a WKW dataset at ``folder`` (in the
    mag's own voxel coordinates).  ``reference``: with the PyPI ``wkw`` package, raw blocks
    (it refuses partial compressed writes)."""
    channels = 1 if data.ndim == 3 else data.shape[0]
    os.makedirs(folder, exist_ok=True)
    if reference:
        import wkw as wkw_ref

        header = wkw_ref.Header(data.dtype.type, num_channels=channels, block_len=BLOCK_LEN,
                                file_len=FILE_LEN, block_type=wkw_ref.Header.BLOCK_TYPE_RAW)
        with wkw_ref.Dataset.create(str(folder), header) as ds:
            ds.write(list(offset), data)
        return
    header = wkw.Header(data.dtype.type, num_channels=channels, block_len=BLOCK_LEN,
                        file_len=FILE_LEN, block_type=block_type)
    with wkw.Dataset.create(folder, header) as ds:
        ds.write(offset, data)


def coarse_box(top_left: tuple[int, int, int], size: tuple[int, int, int],
               mag: tuple[int, int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The mag's voxel box covering a mag-1 box (start floored, end ceiled)."""
    lo = tuple(t // m for t, m in zip(top_left, mag, strict=True))
    hi = tuple(-(-(t + s) // m) for t, s, m in zip(top_left, size, mag, strict=True))
    return lo, tuple(h - low for low, h in zip(lo, hi, strict=True))
