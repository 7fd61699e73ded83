"""One mag (resolution level) of a webKnossos layer: a WKW dataset folder named after its factor.

A mag is the factor by which the layer is downsampled along x, y and z: ``(1, 1, 1)`` is the full
resolution, ``(2, 2, 1)`` halves x and y only (the usual first step for anisotropic EM).  Its
folder is named ``2-2-1``; when all three factors are equal webKnossos writes the short name
(``2`` for ``(2, 2, 2)``, ``1`` for mag 1) and older tools the long one, so both are accepted.

Voxel ``p`` of mag ``m`` covers the mag-1 voxels ``[p * m, (p + 1) * m)`` on every axis: the mag
grids are aligned at the origin, not at the layer's bounding box.

The WKW dataset of a mag is opened lazily, on first use (which reads ``header.wkw`` only, never a
listing of the data files), and checked against the layer's element class then.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.dataset import Mag as BaseMag
from viewer.format.errors import FormatError
from viewer.format.geometry import mag_name, parse_mag
from viewer.format.store import is_url
from viewer.format.volume import Volume
from viewer.format.webknossos.errors import MagMismatchError, MissingMagError
from viewer.format.webknossos.properties import voxel_matches
from viewer.format.wkw import Dataset
from viewer.format.wkw.dataset import HEADER_FILE
from viewer.format.wkw.volume import WkwVolume

Vec3 = tuple[int, int, int]

def mag_folder_names(mag: Sequence[int]) -> list[str]:
    """Folder names under which a mag may be stored, preferred first."""
    names = [mag_name(mag, short=True)]
    long = mag_name(mag, short=False)
    if long not in names:
        names.append(long)
    return names


#: Files that make a folder a mag of some format (WKW, zarr v3, zarr v2, N5).
MAG_MARKERS = (HEADER_FILE, "zarr.json", ".zarray", "attributes.json")


def is_mag_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a WKW dataset folder (holds ``header.wkw``)."""
    return os.path.isfile(os.path.join(os.fspath(path), HEADER_FILE))


def is_any_mag_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds the metadata of an array of any format a layer may use."""
    p = os.fspath(path)
    return any(os.path.isfile(os.path.join(p, m)) for m in MAG_MARKERS)


class Mag(BaseMag):
    """One mag of a webKnossos layer: ``mag`` (x, y, z factors), its folder ``path``, its
    ``volume`` (any format the registry reads, by the layer's ``dataFormat``) and, for a WKW
    mag, its writable WKW ``dataset``.

    ``rel_path`` is the path as a webKnossos properties file writes it (``./color/2-2-1``) when
    the folder lies inside the dataset, else the absolute path.  ``bounds``: the layer's box at
    this mag, as the volume's extent.  Opening is lazy and thread-safe; every method may be
    called from any thread.
    """

    def __init__(self, mag: Sequence[int], path: str | os.PathLike[str], *, layer: str,
                 dtype: np.dtype[Any], num_channels: int, rel_path: str | None = None,
                 cube_length: int | None = None, data_format: str = "wkw",
                 bounds: tuple[Vec3, Vec3] | None = None) -> None:
        super().__init__(mag, path, layer=layer, dtype=dtype, num_channels=num_channels,
                         rel_path=rel_path, cube_length=cube_length)
        self.data_format = data_format
        self.bounds = bounds
        self._dataset: Dataset | None = None
        self._ds_lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return self._dataset is not None or super().is_open

    @property
    def dataset(self) -> Dataset:
        """The mag's WKW dataset (a ``wkw`` layer only), opened on first use.

        Raises ``MissingMagError`` when the folder or its header.wkw is gone, ``MagMismatchError``
        when header.wkw disagrees with the layer's element class, and the WKW ``FormatError`` of
        a damaged header.wkw."""
        with self._ds_lock:
            if self._dataset is None:
                self._dataset = self._open_wkw()
            return self._dataset

    def _open_volume(self) -> Volume:
        if is_url(self.path):  # a mag at a URL in a local properties file
            from viewer.format.remote.entry import mag_opener

            return mag_opener(self.path, self.layer, self.mag, self.data_format, self.dtype,
                              self.num_channels, self.bounds)()
        if self.data_format == "wkw":
            return WkwVolume(self.dataset, self.bounds, own_dataset=False)
        from viewer.format import registry
        from viewer.format.dataset import select_mag

        if not os.path.isdir(self.path):
            raise MissingMagError("no mag folder", self.path, layer=self.layer, mag=self.mag)
        try:
            volume = select_mag(registry.open_dataset(self.path)).volume
        except KeyError as exc:
            raise MissingMagError(str(exc), self.path, layer=self.layer, mag=self.mag) from None
        except FormatError as exc:
            if isinstance(exc, MissingMagError):
                raise
            raise MagMismatchError(f"the {self.data_format} mag cannot be read: {exc.reason}",
                                   exc.path or self.path, offset=exc.offset, layer=self.layer,
                                   mag=self.mag) from exc
        if not voxel_matches(volume.dtype, volume.num_channels, self.dtype, self.num_channels):
            volume.close()
            raise MagMismatchError(
                f"the mag holds {volume.num_channels} x {volume.dtype.name}, the layer declares "
                f"{self.num_channels} x {self.dtype.name}", self.path, layer=self.layer,
                mag=self.mag)
        if self.bounds is not None:  # the layer's data, not the array's allocated size
            volume.set_extent(self.bounds)
        return volume

    def _open_wkw(self) -> Dataset:
        if is_url(self.path):
            raise MissingMagError("a mag at a URL is read only (no writable WKW dataset)",
                                  self.path, layer=self.layer, mag=self.mag)
        if not is_mag_folder(self.path):
            what = "no mag folder" if not os.path.isdir(self.path) else f"no {HEADER_FILE}"
            raise MissingMagError(what, self.path, layer=self.layer, mag=self.mag)
        try:
            ds = Dataset.open(self.path)
        except FormatError as exc:
            if isinstance(exc, MissingMagError):
                raise
            raise MagMismatchError(f"{HEADER_FILE} cannot be read: {exc.reason}",
                                   exc.path or self.path, offset=exc.offset, layer=self.layer,
                                   mag=self.mag) from exc
        h = ds.header
        if not voxel_matches(h.dtype, h.num_channels, self.dtype, self.num_channels):
            ds.close()
            raise MagMismatchError(
                f"{HEADER_FILE} holds {h.num_channels} x {h.dtype.name}, the layer declares "
                f"{self.num_channels} x {self.dtype.name}",
                os.path.join(self.path, HEADER_FILE), offset=6, layer=self.layer, mag=self.mag)
        return ds

    def write(self, offset: Sequence[int], data: npt.NDArray[Any]) -> None:
        """Write ``(X, Y, Z)`` or ``(C, X, Y, Z)`` data at ``offset`` (this mag's coordinates)."""
        self.dataset.write(offset, data)

    def close(self) -> None:
        super().close()
        with self._ds_lock:
            ds, self._dataset = self._dataset, None
        if ds is not None:
            ds.close()

    def __repr__(self) -> str:
        return f"<Mag {self.name} of {self.layer!r} at {self.path!r}>"


__all__ = ["Mag", "parse_mag", "mag_name", "mag_folder_names", "is_mag_folder"]
