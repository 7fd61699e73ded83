"""The registry's entries for datasets at a URL (``http://``, ``https://``, ``s3://``,
``gs://``): a WKW dataset (``header.wkw`` at the URL), one ``.wkw`` file, and a webKnossos
dataset (``datasource-properties.json`` at the URL).  Detection reads through a ``Store`` (one
small request each); local paths are left to the local entries.

A webKnossos dataset at a URL is opened from its properties file alone (no listing, which plain
HTTP cannot do): each mag's folder is its ``path`` (relative to the dataset or a URL), or the
layer's ``{mag}`` subfolder for entries that give none; the extent is the declared bounding box.
Mags whose ``dataFormat`` is zarr, zarr3 or N5 open through the registry at their URL.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from viewer.format.dataset import Dataset, Layer, Mag
from viewer.format.errors import DatasetLayoutError, FormatError
from viewer.format.registry import FormatEntry, register
from viewer.format.store import Store, is_url, open_store
from viewer.format.volume import Volume

PROPERTIES_FILE = "datasource-properties.json"
HEADER_FILE = "header.wkw"


def _split_file(url: str, name: str) -> str:
    """``url`` without a trailing ``/name`` (the dataset's folder URL)."""
    url = url.rstrip("/")
    if url.endswith("/" + name):
        return url[: -len(name) - 1]
    return url


def _store(url: str) -> Store:
    return open_store(url)


# -- WKW ------------------------------------------------------------------------------------------
def detect_wkw(path: str) -> bool:
    if not is_url(path):
        return False
    url = _split_file(path, HEADER_FILE)
    if url.endswith(".wkw"):
        parent, _, name = url.rpartition("/")
        try:
            return _store(parent).read(name, 0, 3) == b"WKW"
        except FileNotFoundError:
            return False
    return _store(url).exists(HEADER_FILE)


def open_wkw(path: str) -> Dataset:
    from viewer.format.webknossos.properties import element_class_of
    from viewer.format.wkw.remote import StoreWkwVolume

    url = _split_file(path, HEADER_FILE)
    if url.endswith(".wkw"):
        parent, _, name = url.rpartition("/")
        volume = StoreWkwVolume.open_file(_store(parent), name)
        layer_name, kind = name[:-4], "file"
    else:
        volume = StoreWkwVolume.open(_store(url))
        layer_name, kind = url.rstrip("/").rsplit("/", 1)[-1], "mag"
    h = volume.header
    try:
        element = element_class_of(h.dtype, h.num_channels)
    except ValueError:
        element = h.dtype.name
    category = "segmentation" if "seg" in layer_name.lower() else "color"
    mag = Mag((1, 1, 1), url, layer=layer_name, dtype=h.dtype, num_channels=h.num_channels,
              opener=lambda: volume)
    layer = Layer(layer_name, category, element, h.num_channels, None, [mag], url,
                  data_format="wkw", dtype=h.dtype)
    return Dataset(url, "wkw", [layer], kind=kind)


# -- webKnossos -----------------------------------------------------------------------------------
def detect_webknossos(path: str) -> bool:
    if not is_url(path):
        return False
    return _store(_split_file(path, PROPERTIES_FILE)).exists(PROPERTIES_FILE)


def _join(base: str, rel: str) -> str:
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    out = base.rstrip("/")
    for p in parts:
        out = out.rsplit("/", 1)[0] if p == ".." else f"{out}/{p}"
    return out


def open_webknossos(path: str) -> Dataset:
    from viewer.format.geometry import mag_name
    from viewer.format.webknossos.errors import MissingMagError, UnsupportedLayerError
    from viewer.format.webknossos.properties import parse_properties

    url = _split_file(path, PROPERTIES_FILE)
    store = _store(url)
    location = store.location(PROPERTIES_FILE)
    try:
        raw = store.read(PROPERTIES_FILE)
    except FileNotFoundError:
        raise DatasetLayoutError(f"no {PROPERTIES_FILE}", url) from None
    except OSError as exc:
        from viewer.format.wkw.remote_unit import _remote_error
        raise _remote_error(exc, location) from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        from viewer.format.webknossos.errors import PropertiesError
        raise PropertiesError(f"not valid JSON: {exc}", location) from None
    props, problems = parse_properties(doc, location)
    dataset = Dataset(url, "webknossos", [], list(problems), props.voxel_size, kind="dataset")
    for lp in props.layers:
        layer_url = _join(url, lp.name)
        if lp.data_format != "wkw" and lp.data_format not in _format_names():
            dataset.problems.append(UnsupportedLayerError(
                f"dataFormat {lp.data_format!r} is not supported", layer_url, layer=lp.name))
            continue
        mags: list[Mag] = []
        for mp in lp.mags:
            if mp.path is None:
                mag_url = _join(layer_url, mag_name(mp.mag, short=True))
            elif is_url(mp.path):
                mag_url = mp.path.rstrip("/")
            elif mp.path.startswith("/") or mp.path.startswith("file:"):
                dataset.problems.append(MissingMagError(
                    f"a local mag path ({mp.path}) in a dataset read from a URL", mp.path,
                    layer=lp.name, mag=mp.mag))
                continue
            else:
                mag_url = _join(url, mp.path)
            box = lp.bounding_box.at_mag(mp.mag)
            mags.append(Mag(mp.mag, mag_url, layer=lp.name, dtype=lp.dtype,
                            num_channels=lp.num_channels, rel_path=mp.path or None,
                            cube_length=mp.cube_length,
                            opener=mag_opener(mag_url, lp.name, mp.mag, lp.data_format,
                                               lp.dtype, lp.num_channels,
                                               (box.top_left, box.end))))
        if not mags:
            continue
        dataset.layers.append(Layer(lp.name, lp.category, lp.element_class, lp.num_channels,
                                    lp.bounding_box, mags, layer_url, lp.largest_segment_id,
                                    lp.data_format, lp, lp.dtype))
    return dataset


def _format_names() -> list[str]:
    from viewer.format import registry

    return registry.format_names()


def mag_opener(url: str, layer: str, mag: tuple[int, int, int], data_format: str, dtype: Any,
               channels: int, bounds: Any) -> Callable[[], Volume]:
    """Opens the mag at ``url`` (a webKnossos layer's, at a URL or in a local properties file
    whose mag path is one): its format by ``data_format``, checked against the layer's
    element class; ``bounds`` the layer's box at this mag."""

    def open_mag() -> Volume:
        from viewer.format.webknossos.errors import MagMismatchError, MissingMagError

        volume: Volume
        try:
            if data_format == "wkw":
                from viewer.format.wkw.remote import StoreWkwVolume
                volume = StoreWkwVolume.open(_store(url), bounds)
            else:
                from viewer.format import registry
                from viewer.format.dataset import select_mag
                volume = select_mag(registry.open_dataset(url)).volume
        except DatasetLayoutError as exc:
            raise MissingMagError(exc.reason, exc.path or url, layer=layer, mag=mag) from None
        except KeyError as exc:
            raise MissingMagError(str(exc), url, layer=layer, mag=mag) from None
        except FormatError as exc:
            from viewer.format.remote.errors import RemoteError
            if isinstance(exc, RemoteError):
                raise
            raise MagMismatchError(f"the {data_format} mag cannot be read: {exc.reason}",
                                   exc.path or url, offset=exc.offset, layer=layer,
                                   mag=mag) from exc
        from viewer.format.webknossos.properties import voxel_matches

        if not voxel_matches(volume.dtype, volume.num_channels, dtype, channels):
            volume.close()
            raise MagMismatchError(
                f"the mag holds {volume.num_channels} x {volume.dtype.name}, the layer declares "
                f"{channels} x {dtype.name}", url, layer=layer, mag=mag)
        if bounds is not None and data_format != "wkw":  # the layer's data, not the array's
            volume.set_extent(bounds)
        return volume
    return open_mag


register(FormatEntry("webknossos-url", detect_webknossos, open_webknossos, priority=101,
                     names=("webknossos",),
                     describes="a webKnossos dataset at a URL (http, https, s3, gs)"))
register(FormatEntry("wkw-url", detect_wkw, open_wkw, priority=11, names=("wkw",),
                     describes="a WKW dataset or .wkw file at a URL"))
