"""Typed problems of a webKnossos dataset.

Opening a dataset does not stop at the first problem: a layer with no mags, a missing mag folder
or a layer in a format this program does not read yet is *reported* (``WkDataset.problems``) and
the rest of the dataset opens.  Each problem is a :class:`~viewer.format.errors.FormatError`
subclass carrying the path it is about and, where it applies, the layer (and mag) name, so that a
report can say exactly where to look.  Only a properties file that cannot be read at all (no JSON,
no ``dataLayers``) is raised instead of reported.
"""

from __future__ import annotations

import os
from typing import Any

from viewer.format.dataset import NoMagsError as BaseNoMagsError
from viewer.format.errors import DatasetLayoutError, FormatError


class WebknossosError(FormatError):
    """Root of the webKnossos dataset problems.  ``layer`` and ``mag`` name what it is about."""

    def __init__(
        self,
        message: str,
        path: str | os.PathLike[str] | None = None,
        block: int | None = None,
        offset: int | None = None,
        layer: str | None = None,
        mag: tuple[int, int, int] | None = None,
    ) -> None:
        self.layer = layer
        self.mag = mag
        super().__init__(message, path, block, offset)

    def _compose(self) -> str:
        base = super()._compose()
        if self.layer is None:
            return base
        what = f"layer {self.layer!r}"
        if self.mag is not None:
            what += " mag " + "-".join(str(m) for m in self.mag)
        return f"{what}: {base}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.reason, self.path, self.block, self.offset,
                           self.layer, self.mag))

    @property
    def kind(self) -> str:
        """A short machine name of the problem (the class name), for JSON reports."""
        return type(self).__name__


def _rebuild(cls: type[WebknossosError], reason: str, path: str | None, block: int | None,
             offset: int | None, layer: str | None,
             mag: tuple[int, int, int] | None) -> WebknossosError:
    return cls(reason, path, block, offset, layer=layer, mag=mag)


class PropertiesError(WebknossosError):
    """``datasource-properties.json`` (or one layer entry in it) is not valid JSON or lacks, or
    holds a wrong value for, a key the dataset needs."""


class NoMagsError(WebknossosError, BaseNoMagsError):
    """A layer lists no mags at all (a half-written dataset), or none of them could be opened."""


class MissingMagError(WebknossosError, DatasetLayoutError):
    """A mag the properties file lists has no folder (or the folder has no ``header.wkw``)."""


class UnsupportedLayerError(WebknossosError):
    """A layer in a data format this program does not read yet (``zarr3``, ``zarr``, ``n5``,
    ``neuroglancerPrecomputed``, ...) or at a location it cannot reach (a URL scheme other than
    http, https, s3 and gs)."""


class MagMismatchError(WebknossosError, DatasetLayoutError):
    """A mag's ``header.wkw`` disagrees with the layer's ``elementClass``/``numChannels``."""


__all__ = [
    "WebknossosError",
    "PropertiesError",
    "NoMagsError",
    "MissingMagError",
    "UnsupportedLayerError",
    "MagMismatchError",
]
