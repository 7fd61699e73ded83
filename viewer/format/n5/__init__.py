"""N5: a folder of groups with ``attributes.json``, a file per chunk at its grid path.

One module per on-disk structure: ``attributes`` (the JSON metadata of groups and datasets),
``header`` (the big-endian chunk header), ``lz4java`` (lz4-java's block framing, N5's
``lz4``), ``codecs`` (the compressions), ``volume`` (a dataset as a ``Volume``, its chunk
files as storage units), ``multiscale`` (``s0, s1, ...`` groups and voxel sizes) and
``entry`` (the registry entry and the container walk).
"""

from viewer.format.n5.volume import N5ChannelStack, N5Chunk, N5Volume, make_volume

__all__ = ["N5Volume", "N5Chunk", "N5ChannelStack", "make_volume"]
