"""Writers of zarr test data, by the real tools: zarr-python, tensorstore and the
``webknossos`` package (AGPL: a test dependency only, never imported by the program).

``wkw_to_zarr3`` converts one WKW mag (a folder with ``header.wkw``) into a sharded zarr3
array laid out as webKnossos writes it (shape ``[c, x, y, z]``, ``dimension_names
["c","x","y","z"]``, shards of ``shard_len**3`` voxels holding ``chunk_len**3`` chunks, codecs
transpose ``[3,2,1,0]``, bytes, zstd level 5 with checksum, index bytes + crc32c at the end),
written with tensorstore; ``wk_dataset_to_zarr3`` does it for every WKW layer and mag of a
webKnossos dataset and writes the properties file with ``dataFormat: "zarr3"``: the
conversion a WKW dataset goes through, for compare.

Test modules import this as ``zarr_test_fixtures`` (see ``conftest.py``): the plain name
``fixtures`` may be another test folder's.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

Vec3 = tuple[int, int, int]


def sample(shape: Sequence[int], dtype: Any, seed: int = 0) -> np.ndarray:
    """Deterministic data of ``shape`` and ``dtype`` with structure (gradients and noise) and
    values across the type's range."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    grids = np.indices(tuple(shape), dtype=np.int64)
    base = sum((g * (k + 3)) for k, g in enumerate(grids)) if len(shape) else np.int64(0)
    noise = rng.integers(0, 7, size=tuple(shape))
    if dt.kind == "f":
        return ((base + noise) * 0.37 - 11.5).astype(dt)
    info = np.iinfo(dt)
    span = min(int(info.max) - int(info.min), 1 << 40)
    v = (base * 131 + noise * 977) % span + int(info.min)
    return v.astype(dt)


# -- tensorstore --------------------------------------------------------------------------------
def webknossos_zarr3_metadata(shape_cxyz: Sequence[int], dtype: Any, shard_len: int = 1024,
                              chunk_len: int = 32, index_location: str = "end"
                              ) -> dict[str, Any]:
    """The ``zarr.json`` metadata webKnossos writes for a mag (see FORMAT-NOTES.md)."""
    c = int(shape_cxyz[0])
    return {
        "shape": [int(s) for s in shape_cxyz],
        "data_type": np.dtype(dtype).name,
        "chunk_grid": {"name": "regular",
                       "configuration": {"chunk_shape": [c, shard_len, shard_len, shard_len]}},
        "chunk_key_encoding": {"name": "default"},
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [c, chunk_len, chunk_len, chunk_len],
            "codecs": [{"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}},
                       {"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "zstd", "configuration": {"level": 5, "checksum": True}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}],
            "index_location": index_location}}],
        "dimension_names": ["c", "x", "y", "z"],
        "fill_value": 0,
    }


def write_tensorstore_zarr3(path: str | os.PathLike[str], data_cxyz: np.ndarray | None,
                            shard_len: int = 1024, chunk_len: int = 32,
                            index_location: str = "end", offset: Sequence[int] = (0, 0, 0),
                            shape_xyz: Sequence[int] | None = None, *,
                            channels: int | None = None, dtype: Any = None,
                            pieces: Any = None) -> str:
    """Write ``data_cxyz`` (``(C, X, Y, Z)``) at ``offset`` into a new webKnossos-style sharded
    zarr3 array at ``path`` with tensorstore; the array's shape is ``shape_xyz`` (default:
    the data's end rounded up to whole shards, as webKnossos does).

    For data too big to hold at once pass ``data_cxyz=None``, ``channels``, ``dtype``,
    ``shape_xyz`` and ``pieces``: an iterable of ``(offset, (C, X, Y, Z) array)`` written in
    one transaction (each shard is encoded once, at the commit)."""
    import tensorstore as ts

    if data_cxyz is not None:
        channels, dtype = data_cxyz.shape[0], data_cxyz.dtype
        pieces = [(tuple(offset), data_cxyz)]
        end = [o + s for o, s in zip(offset, data_cxyz.shape[1:], strict=True)]
        if shape_xyz is None:
            shape_xyz = [-(-e // shard_len) * shard_len for e in end]
    assert channels is not None and shape_xyz is not None and pieces is not None
    meta = webknossos_zarr3_metadata([channels, *shape_xyz], dtype, shard_len, chunk_len,
                                     index_location)
    store = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.fspath(path)},
                     "metadata": meta, "create": True, "delete_existing": True}).result()
    with ts.Transaction() as txn:
        for (ox, oy, oz), piece in pieces:
            sx, sy, sz = piece.shape[1:]
            store.with_transaction(txn)[:, ox:ox + sx, oy:oy + sy, oz:oz + sz].write(
                piece).result()
    return os.fspath(path)


# -- WKW to zarr3 -------------------------------------------------------------------------------
def _read_wkw(mag_dir: str, offset: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    try:
        import wkw as wkw_ref  # the reference binding (a test dependency)
    except ImportError:  # pragma: no cover - CI installs it
        from viewer.format import wkw as wkw_ref  # type: ignore[no-redef]
    with wkw_ref.Dataset.open(mag_dir) as ds:
        return np.asarray(ds.read(list(offset), list(shape)))


def wkw_mag_bounds(mag_dir: str | os.PathLike[str]) -> tuple[Vec3, Vec3]:
    """``(lo, hi)`` of a WKW mag: the layer's bounding box at this mag when the folder is a
    mag of a webKnossos dataset (``../../datasource-properties.json``), else the box of the
    WKW files present (file-aligned: 1024^3 voxels per file as webKnossos writes them)."""
    from viewer.format import open_dataset, open_volume
    from viewer.format.geometry import parse_mag

    mag_dir = Path(mag_dir).resolve()
    dataset_dir = mag_dir.parent.parent
    if (dataset_dir / "datasource-properties.json").is_file():
        try:
            mag = parse_mag(mag_dir.name)
        except ValueError:
            mag = None
        if mag is not None:
            with open_dataset(dataset_dir) as ds:
                for layer in ds.layers:
                    if layer.name == mag_dir.parent.name:
                        box = layer.bounding_box.at_mag(mag)
                        return box.top_left, box.end
    with open_volume(os.fspath(mag_dir)) as v:
        return v.bounds


def wkw_to_zarr3(mag_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                 shard_len: int = 1024, chunk_len: int = 32,
                 bounds: tuple[Sequence[int], Sequence[int]] | None = None,
                 piece: int = 256) -> str:
    """Convert one WKW mag folder into a webKnossos-style sharded zarr3 array at ``out_dir``
    (data read with the reference ``wkw`` package in pieces of ``piece``^3 voxels, written
    with tensorstore in one transaction).  ``bounds`` ``(lo, hi)``: the box to copy (default:
    ``wkw_mag_bounds``); the array starts at voxel 0 like webKnossos' (its shape reaches
    ``hi`` rounded up to whole shards).  Pieces that are all zero are not written (they
    stay absent, as webKnossos leaves them)."""
    mag_dir = os.fspath(mag_dir)
    lo, hi = bounds if bounds is not None else wkw_mag_bounds(mag_dir)
    lo = [int(v) for v in lo]
    hi = [int(v) for v in hi]
    with open_header(mag_dir) as (dtype, channels):
        pass
    shape = [-(-h // shard_len) * shard_len for h in hi]

    def pieces() -> Any:
        for z in range(lo[2], hi[2], piece):
            for y in range(lo[1], hi[1], piece):
                for x in range(lo[0], hi[0], piece):
                    size = [min(piece, h - a) for a, h in zip((x, y, z), hi, strict=True)]
                    data = _read_wkw(mag_dir, (x, y, z), size)
                    if data.any():
                        yield (x, y, z), data

    return write_tensorstore_zarr3(out_dir, None, shard_len, chunk_len, shape_xyz=shape,
                                   channels=channels, dtype=dtype, pieces=pieces())


class open_header:
    """``with open_header(mag_dir) as (dtype, channels)``: a WKW mag's voxel type."""

    def __init__(self, mag_dir: str) -> None:
        from viewer.format import wkw

        self.ds = wkw.Dataset.open(mag_dir)

    def __enter__(self) -> tuple[np.dtype, int]:
        return self.ds.header.dtype, self.ds.header.num_channels

    def __exit__(self, *exc: object) -> None:
        self.ds.close()


def wk_dataset_to_zarr3(src: str | os.PathLike[str], dst: str | os.PathLike[str],
                        shard_len: int = 1024, chunk_len: int = 32) -> str:
    """Convert a webKnossos dataset's WKW layers to zarr3 (other layers are copied): the
    properties file is rewritten with ``dataFormat: "zarr3"`` and each mag's ``axisOrder``;
    each mag covers the layer's bounding box at that mag."""
    src, dst = Path(src), Path(dst)
    props = json.loads((src / "datasource-properties.json").read_text())
    dst.mkdir(parents=True, exist_ok=True)
    for layer in props["dataLayers"]:
        name = layer["name"]
        if layer.get("dataFormat", "wkw") != "wkw":
            shutil.copytree(src / name, dst / name)
            continue
        box = layer["boundingBox"]
        top = box["topLeft"]
        end = [top[0] + box["width"], top[1] + box["height"], top[2] + box["depth"]]
        mags = layer.get("mags") or [{"mag": r["resolution"] if isinstance(r["resolution"], list)
                                      else [r["resolution"]] * 3}
                                     for r in layer.get("wkwResolutions", [])]
        new_mags = []
        for m in mags:
            mag = [int(v) for v in m["mag"]]
            rel = m.get("path") or f"./{name}/{mag_folder(mag, src / name)}"
            src_mag = (src / rel).resolve()
            out_rel = f"./{name}/{src_mag.name}"
            lo = [top[a] // mag[a] for a in range(3)]
            hi = [-(-end[a] // mag[a]) for a in range(3)]
            wkw_to_zarr3(src_mag, dst / out_rel, shard_len, chunk_len, bounds=(lo, hi))
            new_mags.append({"mag": mag, "path": out_rel,
                             "axisOrder": {"c": 0, "x": 1, "y": 2, "z": 3}})
        layer["dataFormat"] = "zarr3"
        layer["mags"] = new_mags
        layer.pop("wkwResolutions", None)
    (dst / "datasource-properties.json").write_text(json.dumps(props, indent=2))
    (dst / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    return os.fspath(dst)


def mag_folder(mag: Sequence[int], layer_dir: Path) -> str:
    x, y, z = mag
    short = str(x) if x == y == z else f"{x}-{y}-{z}"
    return short if (layer_dir / short).is_dir() else f"{x}-{y}-{z}"


# -- webknossos (the package) ------------------------------------------------------------------
def write_webknossos_dataset(path: str | os.PathLike[str],
                             layers: dict[str, tuple[str, np.ndarray]],
                             voxel_size: Sequence[float] = (11.0, 11.0, 24.0),
                             downsample: bool = False, shard_len: int = 64) -> str:
    """A webKnossos dataset written by the ``webknossos`` package: ``layers`` maps a layer name
    to ``(data_format, data (C, X, Y, Z))``.  With ``downsample`` each layer gets mags 2 and 4
    too, written by the package from every 2nd and 4th voxel (its own downsampling is slow).
    zarr3 layers get shards of ``shard_len`` voxels (the package's default 1024 makes every
    small write rewrite a 1 GiB shard: 20 s each)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import webknossos as wk

        ds = wk.Dataset(os.fspath(path), voxel_size=tuple(voxel_size))
        for name, (fmt, data) in layers.items():
            category = wk.SEGMENTATION_CATEGORY if "seg" in name else wk.COLOR_CATEGORY
            kwargs: dict[str, Any] = {}
            if category == wk.SEGMENTATION_CATEGORY:
                kwargs["largest_segment_id"] = int(data.max())
            layer = ds.add_layer(name, category, dtype_per_channel=data.dtype.name,
                                 num_channels=data.shape[0], data_format=fmt, **kwargs)
            for factor in ((1, 2, 4) if downsample else (1,)):
                part = strided(data, factor)
                extra = ({"chunk_shape": 32, "shard_shape": shard_len} if fmt == "zarr3"
                         else {})
                mag = layer.add_mag(factor, **extra)
                mag.write(part if part.shape[0] > 1 else part[0],
                          absolute_offset=(0, 0, 0), allow_resize=True)
    return os.fspath(path)


def strided(data: np.ndarray, factor: int) -> np.ndarray:
    """Every ``factor``-th voxel of ``(C, X, Y, Z)`` data (a stand-in for a downsampled mag)."""
    return np.ascontiguousarray(data[:, ::factor, ::factor, ::factor])


__all__ = ["strided", "sample", "write_tensorstore_zarr3", "webknossos_zarr3_metadata",
           "wkw_to_zarr3", "wk_dataset_to_zarr3", "wkw_mag_bounds", "write_webknossos_dataset"]
