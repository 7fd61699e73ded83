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

from viewer.format.errors import FormatError
from viewer.format.webknossos.errors import MagMismatchError, MissingMagError
from viewer.format.wkw import Dataset
from viewer.format.wkw.dataset import HEADER_FILE

Vec3 = tuple[int, int, int]

#: Largest mag factor accepted (2^20 already shrinks a petavoxel axis to one voxel).
MAX_FACTOR = 1 << 20


def parse_mag(value: Any) -> Vec3:
    """A mag from any of its spellings: ``2``, ``[2, 2, 1]``, ``"2"``, ``"2-2-1"``.

    Raises ``ValueError`` for anything else (a factor below 1, two or four entries, ...)."""
    if isinstance(value, bool):
        raise ValueError(f"not a mag: {value!r}")
    if isinstance(value, (int, np.integer)):
        parts: list[Any] = [value] * 3
    elif isinstance(value, str):
        text = value.strip()
        pieces = text.split("-")
        if not all(p.isdigit() for p in pieces) or len(pieces) not in (1, 3):
            raise ValueError(f"not a mag: {value!r}")
        parts = [int(p) for p in pieces] * (3 if len(pieces) == 1 else 1)
    elif isinstance(value, (list, tuple)) and len(value) == 3:
        parts = list(value)
    else:
        raise ValueError(f"not a mag: {value!r}")
    out = []
    for p in parts:
        if isinstance(p, bool) or not isinstance(p, (int, float, np.integer)):
            raise ValueError(f"not a mag: {value!r}")
        if isinstance(p, float) and not p.is_integer():  # also NaN and infinities
            raise ValueError(f"not a mag: {value!r}")
        if int(p) < 1:
            raise ValueError(f"mag factors must be at least 1: {value!r}")
        if int(p) > MAX_FACTOR:
            raise ValueError(f"mag factor {int(p)} is beyond {MAX_FACTOR}: {value!r}")
        out.append(int(p))
    return (out[0], out[1], out[2])


def mag_name(mag: Sequence[int], short: bool = True) -> str:
    """The folder name of a mag: ``2-2-1``; ``2`` when all factors are equal and ``short``."""
    x, y, z = (int(m) for m in mag)
    if short and x == y == z:
        return str(x)
    return f"{x}-{y}-{z}"


def mag_folder_names(mag: Sequence[int]) -> list[str]:
    """Folder names under which a mag may be stored, preferred first."""
    names = [mag_name(mag, short=True)]
    long = mag_name(mag, short=False)
    if long not in names:
        names.append(long)
    return names


def is_mag_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a WKW dataset folder (holds ``header.wkw``)."""
    return os.path.isfile(os.path.join(os.fspath(path), HEADER_FILE))


class Mag:
    """One mag of a layer: ``mag`` (x, y, z factors), its folder ``path``, and its WKW dataset.

    ``rel_path`` is the path as a webKnossos properties file writes it (``./color/2-2-1``) when
    the folder lies inside the dataset, else the absolute path.  Opening the WKW dataset is lazy
    and thread-safe; every method may be called from any thread.
    """

    def __init__(self, mag: Sequence[int], path: str | os.PathLike[str], *, layer: str,
                 dtype: np.dtype[Any], num_channels: int, rel_path: str | None = None,
                 cube_length: int | None = None) -> None:
        self.mag: Vec3 = parse_mag(list(mag))
        self.path = os.fspath(path)
        self.layer = layer
        self.dtype = dtype
        self.num_channels = num_channels
        self.rel_path = rel_path if rel_path is not None else self.path
        self.cube_length = cube_length
        self._dataset: Dataset | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The mag's short name, as the status bar shows it (``1``, ``2-2-1``, ``4``)."""
        return mag_name(self.mag)

    @property
    def is_open(self) -> bool:
        return self._dataset is not None

    @property
    def dataset(self) -> Dataset:
        """The mag's WKW dataset, opened on first use.

        Raises ``MissingMagError`` when the folder or its header.wkw is gone, ``MagMismatchError``
        when header.wkw disagrees with the layer's element class, and the WKW ``FormatError`` of
        a damaged header.wkw."""
        with self._lock:
            if self._dataset is None:
                self._dataset = self._open()
            return self._dataset

    def _open(self) -> Dataset:
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
        if h.dtype != self.dtype or h.num_channels != self.num_channels:
            ds.close()
            raise MagMismatchError(
                f"{HEADER_FILE} holds {h.num_channels} x {h.dtype.name}, the layer declares "
                f"{self.num_channels} x {self.dtype.name}",
                os.path.join(self.path, HEADER_FILE), offset=6, layer=self.layer, mag=self.mag)
        return ds

    def check(self) -> FormatError | None:
        """Open the mag now; the problem, if any, instead of raising it."""
        try:
            self.dataset
        except FormatError as exc:
            return exc
        return None

    def read(self, offset: Sequence[int], shape: Sequence[int]) -> npt.NDArray[Any]:
        """The box ``[offset, offset + shape)`` in this mag's voxel coordinates, as
        ``(C, X, Y, Z)`` Fortran order (uint24 layers: C = 3 uint8 channels R, G, B)."""
        return self.dataset.read(offset, shape)

    def write(self, offset: Sequence[int], data: npt.NDArray[Any]) -> None:
        """Write ``(X, Y, Z)`` or ``(C, X, Y, Z)`` data at ``offset`` (this mag's coordinates)."""
        self.dataset.write(offset, data)

    def close(self) -> None:
        with self._lock:
            ds, self._dataset = self._dataset, None
        if ds is not None:
            ds.close()

    def __repr__(self) -> str:
        return f"<Mag {self.name} of {self.layer!r} at {self.path!r}>"


__all__ = ["Mag", "parse_mag", "mag_name", "mag_folder_names", "is_mag_folder"]
