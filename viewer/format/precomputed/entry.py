"""Neuroglancer precomputed's place in the format registry: a folder (or URL) whose ``info``
file is a ``neuroglancer_multiscale_volume``, the ``info`` file itself, or either written as
neuroglancer does, behind a ``precomputed://`` prefix.

The volume is one layer (``image`` as color, ``segmentation`` as segmentation); each scale is
a mag, its factor the scale's ``resolution`` over the first scale's (a scale whose ratio is
not a whole number on every axis is left out and named in ``problems``).  The voxel size is the
first scale's resolution in nanometres; the layer's box is the first scale's extent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from viewer.format.dataset import Dataset, Layer, Mag
from viewer.format.errors import DatasetLayoutError, FormatError, MetadataError
from viewer.format.geometry import BoundingBox, VoxelSize
from viewer.format.precomputed.info import INFO_FILE, VOLUME_TYPE, InfoFile, parse_info
from viewer.format.precomputed.volume import PrecomputedVolume
from viewer.format.registry import FormatEntry, register
from viewer.format.store import Store, is_url, open_store
from viewer.format.volume import Volume

PREFIX = "precomputed://"


def root_of(path: str) -> str:
    """The volume's folder or URL: ``precomputed://`` and a trailing ``/info`` removed (a
    ``file://`` URL becomes its local path)."""
    p = path[len(PREFIX):] if path.startswith(PREFIX) else path
    if p.startswith("file://"):
        p = p[len("file://"):]
    p = p.rstrip("/")
    if p.endswith("/" + INFO_FILE) or p == INFO_FILE:
        p = p[: -len(INFO_FILE)].rstrip("/") or ("." if not is_url(p) else p)
    elif not is_url(p) and os.path.basename(p) == INFO_FILE and os.path.isfile(p):
        p = os.path.dirname(p) or "."
    return p


def detect_prefixed(path: str) -> bool:
    """A path or URL written as neuroglancer does, ``precomputed://...`` (asked first: no
    other format could read it)."""
    return path.startswith(PREFIX)


def detect(path: str) -> bool:
    """A folder, URL or ``info`` file of a precomputed volume (asked after the other formats:
    a URL costs a request for its ``info``)."""
    if path.startswith(PREFIX):
        return True
    root = root_of(path)
    if not is_url(root):
        info = os.path.join(root, INFO_FILE)
        if not os.path.isfile(info):
            return False
        try:
            with open(info, "rb") as f:
                head = f.read(1 << 16)
        except OSError:
            return False
        return _is_volume_info(head)
    try:
        head = open_store(root).read(INFO_FILE, 0, 1 << 16)
    except FileNotFoundError:
        return False
    return _is_volume_info(head)


def _is_volume_info(head: bytes) -> bool:
    """Whether the start of an ``info`` file is a precomputed volume's: its ``@type``, or
    (older files have none) ``scales`` and ``data_type``."""
    if VOLUME_TYPE.encode() in head:
        return True
    return b'"scales"' in head and b'"data_type"' in head and b'"@type"' not in head


def read_info(store: Store) -> InfoFile:
    where = store.location(INFO_FILE)
    try:
        raw = store.read(INFO_FILE)
    except FileNotFoundError:
        raise DatasetLayoutError("no info file: not a Neuroglancer precomputed volume",
                                 where) from None
    except OSError as exc:
        raise DatasetLayoutError(f"cannot read: {exc.strerror or exc}", where) from None
    return parse_info(raw, where)


def open_dataset(path: str) -> Dataset:
    root = root_of(path)
    store = open_store(root)
    info = read_info(store)
    problems: list[FormatError] = []
    first = info.scales[0]
    mags: list[Mag] = []
    seen: set[tuple[int, int, int]] = set()
    name = root.rstrip("/").rsplit("/", 1)[-1] if is_url(root) else \
        os.path.basename(os.path.abspath(root))
    for scale in info.scales:
        ratio = [r / r0 for r, r0 in zip(scale.resolution, first.resolution, strict=True)]
        mag = tuple(round(r) for r in ratio)
        if any(m < 1 or abs(r - m) > 1e-3 * m for r, m in zip(ratio, mag, strict=True)):
            problems.append(MetadataError(
                f"scale {scale.key!r}: resolution {list(scale.resolution)} is not a whole "
                f"multiple of the first scale's {list(first.resolution)}; scale left out",
                info.where))
            continue
        m3 = (mag[0], mag[1], mag[2])
        if m3 in seen:
            problems.append(MetadataError(f"scale {scale.key!r} repeats mag {m3}; scale left "
                                          "out", info.where))
            continue
        seen.add(m3)
        volume = PrecomputedVolume(store, info, scale)
        problems.extend(volume.problems())
        mags.append(Mag(m3, volume.path, layer=name, dtype=info.dtype,
                        num_channels=info.num_channels, rel_path=scale.key,
                        opener=_fixed(volume)))
    category = "segmentation" if info.type == "segmentation" else "color"
    box = BoundingBox(first.voxel_offset, first.size)
    element = "uint24" if info.data_type == "uint8" and info.num_channels == 3 else \
        {"float32": "float", "float64": "double"}.get(info.data_type, info.data_type)
    layer = Layer(name, category, element, info.num_channels, box, mags, root,
                  data_format="precomputed", properties=json.loads(json.dumps(info.document)),
                  dtype=info.dtype)
    voxel = VoxelSize(first.resolution, "nanometer")
    return Dataset(root, "precomputed", [layer], problems, voxel, kind="dataset")


def _fixed(volume: PrecomputedVolume) -> Callable[[], Volume]:
    return lambda: volume


register(FormatEntry("precomputed-prefixed", detect_prefixed, open_dataset, priority=102,
                     names=("precomputed",)))
register(FormatEntry("precomputed", detect, open_dataset, priority=8, names=("precomputed",),
                     describes="a Neuroglancer precomputed volume (a folder or URL with an "
                               "info file; precomputed:// prefixes too), sharded or not"))
