"""Neuroglancer precomputed volumes (``info`` + one folder per scale; unsharded chunk files
or ``neuroglancer_uint64_sharded_v1`` shard files), read as ``Volume``s: ``info`` (the
metadata), ``sharding`` (chunk ids, hashes, shard and minishard indexes), ``codecs`` (chunk
encodings), ``units`` and ``volume``; ``entry`` joins the registry."""

from viewer.format.precomputed.info import InfoFile, ScaleInfo, ShardingSpec, parse_info
from viewer.format.precomputed.volume import PrecomputedVolume

__all__ = ["InfoFile", "ScaleInfo", "ShardingSpec", "parse_info", "PrecomputedVolume"]
