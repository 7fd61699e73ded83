"""Data as other tools write it, for the extent and store tests: zarr-python and tensorstore
Zarr (v2, v3, v3 sharded) whose extents are not multiples of their chunks or shards, OME-Zarr
(arrays by zarr-python, metadata by hand after the 0.4 spec), webKnossos datasets written by
the ``webknossos`` package (AGPL: a test dependency, never imported by the program) in zarr3
and WKW, and N5 multiscale groups in the BigDataViewer, Paintera and N5 viewer conventions
(levels by tensorstore, attributes by hand after each convention).

Every writer takes the truth as an ``(X, Y, Z)`` array (``(C, X, Y, Z)`` for channels) and
returns the path to open.  Test modules import this as ``extents_writers`` (see
``conftest.py``).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: The odd extent: no side a multiple of a chunk (16 or 32) or a shard (32).
ODD = (70, 50, 28)
#: The webKnossos layers' box: a non-zero top-left, the odd size.
WK_TOP_LEFT = (6, 4, 2)


def truth(shape: Sequence[int], dtype: Any = np.uint16, seed: int = 0) -> np.ndarray:
    """Deterministic data with structure (each voxel its own value, mostly) and no zeros, so
    that a voxel read from the wrong place or left as fill shows."""
    rng = np.random.default_rng(seed)
    x, y, z = np.indices(tuple(shape), dtype=np.int64)
    v = (x * 7 + y * 131 + z * 1031 + rng.integers(0, 5, tuple(shape))) % 60000 + 1
    return v.astype(dtype)


def _attrs(path: Path, doc: dict[str, Any]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    target = path / "attributes.json"
    if target.exists():
        doc = {**json.loads(target.read_text()), **doc}
    target.write_text(json.dumps(doc))


# -- zarr ---------------------------------------------------------------------------------------
def zarr_python(path: Path, data: np.ndarray, version: int, chunks: int = 32,
                shards: int | None = None) -> Path:
    """An array written by zarr-python, C order ``(Z, Y, X)`` as it writes images."""
    import zarr

    zyx = np.ascontiguousarray(data.transpose(2, 1, 0))
    kwargs: dict[str, Any] = {"chunks": (chunks,) * 3}
    if shards is not None:
        kwargs["shards"] = (shards,) * 3
    if version == 3:
        kwargs["dimension_names"] = ["z", "y", "x"]
    arr = zarr.create_array(str(path), shape=zyx.shape, dtype=zyx.dtype, zarr_format=version,
                            fill_value=0, **kwargs)
    arr[...] = zyx
    return path


def tensorstore_zarr(path: Path, data: np.ndarray, driver: str, chunks: int = 32,
                     shards: int | None = None) -> Path:
    """An array written by tensorstore (``zarr`` or ``zarr3``), ``(Z, Y, X)``."""
    import tensorstore as ts

    zyx = np.ascontiguousarray(data.transpose(2, 1, 0))
    meta: dict[str, Any]
    if driver == "zarr":
        meta = {"shape": list(zyx.shape), "chunks": [chunks] * 3, "dtype": zyx.dtype.str,
                "compressor": {"id": "zlib", "level": 5}, "fill_value": 0}
    else:
        inner = [{"name": "bytes", "configuration": {"endian": "little"}},
                 {"name": "zstd", "configuration": {"level": 3}}]
        meta = {"shape": list(zyx.shape), "data_type": zyx.dtype.name,
                "dimension_names": ["z", "y", "x"], "fill_value": 0}
        if shards is None:
            meta["chunk_grid"] = {"name": "regular",
                                  "configuration": {"chunk_shape": [chunks] * 3}}
            meta["codecs"] = inner
        else:
            meta["chunk_grid"] = {"name": "regular",
                                  "configuration": {"chunk_shape": [shards] * 3}}
            meta["codecs"] = [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [chunks] * 3, "codecs": inner,
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}]}}]
    arr = ts.open({"driver": driver, "kvstore": {"driver": "file", "path": str(path)},
                   "metadata": meta, "create": True, "delete_existing": True}).result()
    arr.write(zyx).result()
    return path


def ome_zarr(path: Path, levels: Sequence[np.ndarray]) -> Path:
    """An OME-Zarr 0.4 image: levels ``0, 1, ...`` written by zarr-python (v2, ``(Z, Y,
    X)``), the ``multiscales`` metadata by hand (each level's scale from its size)."""
    import zarr

    group = zarr.open_group(str(path), mode="w", zarr_format=2)
    datasets = []
    for k, level in enumerate(levels):
        zyx = np.ascontiguousarray(level.transpose(2, 1, 0))
        arr = group.create_array(str(k), shape=zyx.shape, dtype=zyx.dtype, chunks=(32,) * 3,
                                 fill_value=0)
        arr[...] = zyx
        f = [levels[0].shape[a] // level.shape[a] for a in (2, 1, 0)]
        datasets.append({"path": str(k), "coordinateTransformations": [
            {"type": "scale", "scale": [float(f[0] * 40), float(f[1] * 8), float(f[2] * 8)]}]})
    group.attrs["multiscales"] = [{
        "version": "0.4", "name": "image",
        "axes": [{"name": "z", "type": "space", "unit": "nanometer"},
                 {"name": "y", "type": "space", "unit": "nanometer"},
                 {"name": "x", "type": "space", "unit": "nanometer"}],
        "datasets": datasets}]
    return path


#: OME ``omero`` channel metadata for up to three channels (colours, windows, labels).
OMERO_CHANNELS = [
    {"label": "DAPI", "color": "0000FF", "active": True,
     "window": {"start": 10.0, "end": 30000.0, "min": 0.0, "max": 65535.0}},
    {"label": "GFP", "color": "00FF00", "active": True,
     "window": {"start": 0.0, "end": 50000.0, "min": 0.0, "max": 65535.0}},
    {"label": "mCherry", "color": "FF0000", "active": False,
     "window": {"start": 100.0, "end": 60000.0, "min": 0.0, "max": 65535.0}},
]


def ome_zarr_channels(path: Path, data: np.ndarray, version: int, chunk_c: int = 1,
                      shard_c: int | None = None) -> Path:
    """An OME-Zarr image of one level with channels, written by zarr-python, its metadata
    by hand after the spec (0.4 in zarr v2, 0.5 in zarr v3) with ``omero`` channels.
    ``data`` is ``(C, X, Y, Z)`` (axes ``c, z, y, x``) or ``(T, C, X, Y, Z)`` (axes ``t, c,
    z, y, x``); the channel axis is chunked ``chunk_c`` channels per chunk (and, zarr v3,
    ``shard_c`` per shard)."""
    import zarr

    spatial = data.ndim - 3
    order = tuple(range(spatial)) + (data.ndim - 1, data.ndim - 2, data.ndim - 3)
    arr_data = np.ascontiguousarray(data.transpose(order))
    names = (["t"] if data.ndim == 5 else []) + ["c", "z", "y", "x"]
    chunks = tuple([1] * (data.ndim - 4) + [chunk_c] + [16, 16, 16])
    group = zarr.open_group(str(path), mode="w", zarr_format=version)
    kwargs: dict[str, Any] = {"chunks": chunks, "fill_value": 0}
    if version == 3:
        kwargs["dimension_names"] = names
        if shard_c is not None:
            kwargs["shards"] = tuple([1] * (data.ndim - 4) + [shard_c] + [32, 32, 32])
    arr = group.create_array("0", shape=arr_data.shape, dtype=arr_data.dtype, **kwargs)
    arr[...] = arr_data
    types = {"t": "time", "c": "channel"}
    axes: list[dict[str, Any]] = [{"name": n, "type": types.get(n, "space")} for n in names]
    for a in axes:
        if a["type"] == "space":
            a["unit"] = "micrometer"
    scale = [1.0] * (data.ndim - 3) + [0.5, 0.25, 0.25]
    ms = {"version": "0.4", "name": "cells", "axes": axes, "datasets": [
        {"path": "0", "coordinateTransformations": [{"type": "scale", "scale": scale}]}]}
    omero = {"name": "cells", "version": "0.4",
             "channels": OMERO_CHANNELS[:data.shape[spatial - 1]],
             "rdefs": {"defaultT": 0, "defaultZ": 0, "model": "color"}}
    if version == 2:
        group.attrs["multiscales"] = [ms]
        group.attrs["omero"] = omero
    else:
        del ms["version"]
        group.attrs["ome"] = {"version": "0.5", "multiscales": [ms], "omero": omero}
    return path


def consolidated_group(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    """A zarr v3 group of arrays written by zarr-python, its metadata consolidated into the
    group's ``zarr.json`` (how a store that cannot list finds the arrays)."""
    import zarr

    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    for name, data in arrays.items():
        zyx = np.ascontiguousarray(data.transpose(2, 1, 0))
        arr = group.create_array(name, shape=zyx.shape, dtype=zyx.dtype, chunks=(32,) * 3,
                                 dimension_names=["z", "y", "x"], fill_value=0)
        arr[...] = zyx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # consolidated metadata is not in the v3 spec yet
        zarr.consolidate_metadata(str(path))
    return path


# -- webKnossos -----------------------------------------------------------------------------------
def webknossos(root: Path, data: np.ndarray, data_format: str) -> Path:
    """A webKnossos dataset written by the ``webknossos`` package: layer ``color``, box
    ``WK_TOP_LEFT`` + the data's size, mags 1 and 2-2-1 (``data[::2, ::2, :]``), chunks of
    16^3 in shards (zarr3) or files (WKW) of 64^3, or (zarr v2) of 32^3: the arrays are
    larger than the box.  ``data`` ``(C, X, Y, Z)``: a layer of C channels."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optional image readers it cannot import
        import webknossos as wk

    ds = wk.Dataset(str(root), voxel_size=(11.0, 11.0, 24.0))
    channels = data.shape[0] if data.ndim == 4 else 1
    layer = ds.add_layer("color", wk.COLOR_CATEGORY, dtype_per_channel=data.dtype.name,
                         data_format=data_format, num_channels=channels,
                         bounding_box=wk.BoundingBox(WK_TOP_LEFT, data.shape[-3:]))
    # zarr v2 has no shards: chunks of 32^3, the array rounded up to them
    shape = {"chunk_shape": 32} if data_format == "zarr" else \
        {"chunk_shape": 16, "shard_shape": 64}
    m1 = layer.add_mag(1, **shape)
    m1.write(data, absolute_offset=WK_TOP_LEFT)
    m2 = layer.add_mag("2-2-1", **shape)
    m2.write(np.ascontiguousarray(data[..., ::2, ::2, :]), absolute_offset=WK_TOP_LEFT)
    return root


# -- N5 multiscale groups -------------------------------------------------------------------------
def n5_level(path: Path, data: np.ndarray, extra: dict[str, Any] | None = None) -> None:
    """One N5 dataset by tensorstore (gzip, blocks of 32^3), attributes added by hand."""
    import tensorstore as ts

    meta = {"dimensions": list(data.shape), "blockSize": [32, 32, 32],
            "dataType": data.dtype.name, "compression": {"type": "gzip"}}
    arr = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)},
                   "metadata": meta, "create": True, "delete_existing": True}).result()
    arr.write(data).result()
    if extra:
        _attrs(path, extra)


FACTORS = ((1, 1, 1), (2, 2, 1))


def pyramid(data: np.ndarray) -> list[np.ndarray]:
    return [np.ascontiguousarray(data[..., ::f[0], ::f[1], ::f[2]]) for f in FACTORS]


def n5_bigdataviewer(root: Path, data: np.ndarray) -> Path:
    """BigDataViewer's layout: ``setup0`` (``downsamplingFactors`` per level, ``dataType``)
    / ``timepoint0`` / ``s0, s1``; no per-level factors."""
    _attrs(root, {"n5": "2.5.1"})
    _attrs(root / "setup0", {"downsamplingFactors": [list(f) for f in FACTORS],
                             "dataType": data.dtype.name})
    for k, level in enumerate(pyramid(data)):
        n5_level(root / "setup0" / "timepoint0" / f"s{k}", level)
    _attrs(root / "setup0" / "timepoint0", {"multiScale": True, "resolution": [8.0, 8.0, 40.0]})
    return root


def n5_paintera(root: Path, data: np.ndarray) -> Path:
    """Paintera's layout: a group with ``painteraData`` whose ``data`` group is the
    multiscale (``multiScale``, ``resolution``), levels with ``downsamplingFactors``.  The
    path to open is the Paintera group (``root/raw``)."""
    _attrs(root, {"n5": "2.5.1"})
    _attrs(root / "raw", {"painteraData": {"type": "raw"}})
    for k, level in enumerate(pyramid(data)):
        n5_level(root / "raw" / "data" / f"s{k}", level,
                 {"downsamplingFactors": list(FACTORS[k])} if k else None)
    _attrs(root / "raw" / "data", {"multiScale": True, "resolution": [8.0, 8.0, 40.0],
                                   "offset": [0.0, 0.0, 0.0]})
    return root / "raw"


def n5_viewer(root: Path, channels: Sequence[np.ndarray]) -> Path:
    """The N5 viewer's layout: root attributes (``scales``, ``pixelResolution``) the defaults
    of channel groups ``c0, c1, ...`` (no attributes of their own), each with levels ``s0,
    s1``."""
    _attrs(root, {"n5": "2.5.1", "scales": [list(f) for f in FACTORS],
                  "pixelResolution": {"unit": "nm", "dimensions": [8.0, 8.0, 40.0]}})
    for c, data in enumerate(channels):
        for k, level in enumerate(pyramid(data)):
            n5_level(root / f"c{c}" / f"s{k}", level)
    return root


def webknossos_in_child(roots: dict[Path, str]) -> None:
    """``webknossos(root, truth(ODD), data_format)`` for each ``root: data_format``, in one
    child process: the package's import sets up logging, progress bars and warnings that the
    rest of the test session should not inherit.  ``ImportError`` when the package is not
    installed."""
    import subprocess
    import sys

    args = [a for root, fmt in roots.items() for a in (str(root), fmt)]
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          timeout=600)
    if done.returncode == 3:
        raise ImportError("the webknossos package is not installed")
    if done.returncode != 0:
        raise RuntimeError(f"writing {list(roots)} failed: {done.stderr[-2000:]}")


if __name__ == "__main__":  # the child of ``webknossos_in_child``
    import sys

    try:
        import webknossos as _wk  # noqa: F401
    except ImportError:
        sys.exit(3)
    for _root, _fmt in zip(sys.argv[1::2], sys.argv[2::2], strict=True):
        if _fmt.endswith("-2ch"):  # two channels: the truth and its seed-1 twin
            webknossos(Path(_root), np.stack([truth(ODD), truth(ODD, seed=1)]),
                       _fmt.removesuffix("-2ch"))
        else:
            webknossos(Path(_root), truth(ODD), _fmt)
