"""Zarr v2 and v3 (with ``sharding_indexed``), OME-Zarr 0.4/0.5 multiscales, and webKnossos'
zarr3 / zarr layers, under the chunked-volume interface.

Modules, one per structure: ``jsondoc`` (reading and type-checking metadata documents),
``meta`` (``.zarray`` and ``zarr.json`` array metadata as one ``ArrayMeta``), ``codecs``
(transpose, bytes, zstd, gzip/zlib, blosc, lz4, crc32c), ``sharding`` (the shard index),
``axes`` (which axes are x, y, z, c), ``node`` (what a folder holds), ``ome`` (multiscales),
``volume`` (``ZarrVolume``: shards or chunk objects as storage units), ``dataset`` (arrays,
multiscale images and groups as a ``Dataset``), ``entry`` (the registry entry).
"""

from viewer.format.zarr.dataset import open_array_volume, open_dataset
from viewer.format.zarr.volume import Zarr2Volume, Zarr3Volume, ZarrVolume

__all__ = ["open_dataset", "open_array_volume", "ZarrVolume", "Zarr2Volume", "Zarr3Volume"]
