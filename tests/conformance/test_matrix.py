"""The conformance matrix: every format x every store x every fault x every way data or a
verdict leaves the program, each cell's outcome written down in ``TABLE``.

Data written by other tools (``writers.py``: tensorstore N5 and Zarr v3 sharded, z5py N5, zarr-
python v2 and v3, the reference ``wkw``, zfpc, OpenVDS), each served locally, over HTTP
(``tests/remote/range_server.py`` on 127.0.0.1) and S3 (moto on 127.0.0.1, behind
``fault_proxy.FaultProxy``), with faults: a damaged chunk (its file cut to half), a body cut
short, HTTP 500, a reset connection (each on every request for the chunks' bytes, after the
store's retries), a corrupted cache entry (a byte flipped in every cached range of an earlier
run), a file rewritten while read (``rewrite``: another process rewrites a chunk file, shard or
one-file container in place, over and over, each version in two ``write`` calls, alternating
with the same dataset written with other values; the range server then also sends
``Last-Modified``, as web servers do, by which the client's racy-timestamp rule knows not to
trust the answers; in S3 the object is replaced by a ``PUT`` of each version in turn, an object
store having no writes in place); over S3 also throttling (``slowdown``: 503 SlowDown for the
first requests, which the retries ride out) and a wrong ETag (``etag``: every answer for the
chunks' bytes names another version of the object, as replicas that disagree would: a format
that finds chunks through an index read from the same object (a Zarr shard, a zfpc or OpenVDS
file, a WKW file's jump table) cannot read one version of it and says the file changed or keeps
changing; the others read whole objects). Taken out through ``Volume.read``, the loader's plane
(what the window shows), ``info --json``, ``compare --json`` (against the healthy local copy)
and ``digest --check`` (against the healthy local copy's list).

Outcomes: ``voxels`` (exactly the array written), a ``FormatError`` subclass's name (the read
or the open raised it), ``failed:<names>`` (the plane's failed pixels and their errors),
``changing:<names>`` (the plane's pixels of a file that kept changing), a
verdict and the exit status (``valid/0``, ``INVALID/1``, ``not checked/1``, ``equal/0``,
``different/1``, ``match/0``, ``unreadable/1``, ``differ/1``; ``error/2``: the path could not
be opened).  Never wrong voxels, never an untyped error.  Where a cell says something other
than what one would wish, the row's comment says why.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import matrix
import pytest

pytest.importorskip("tensorstore")
pytest.importorskip("z5py")
pytest.importorskip("openvds")
pytest.importorskip("zfpc")
pytest.importorskip("moto.server")

#: (dataset, store, fault) -> outcome of (read, plane, info, compare, digest).
#: Notes: the damaged OpenVDS file (cut to half) still holds every brick of this small array,
#: so it reads right.  A fault on OpenVDS's one file hits its header too: it does not open.  A
#: plain WKW dataset over HTTP has its extent probed with HEAD requests; where they fail the
#: extent is unknown (``not checked``) and digest finds the regions missing (``differ``).
TABLE: dict[tuple[str, str, str], tuple[str, str, str, str, str]] = {
    ('tensorstore-n5', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-n5', 'local', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-n5', 'http', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 'http', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 'http', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 'http', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-n5', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-n5', 's3', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 's3', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-n5', 's3', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 's3', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-n5', 's3', 'etag'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-zarr3', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-zarr3', 'local', 'damaged'):
        ('ChecksumError', 'failed:ChecksumError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-zarr3', 'http', 'damaged'):
        ('ChecksumError', 'failed:ChecksumError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 'http', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 'http', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 'http', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-zarr3', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-zarr3', 's3', 'damaged'):
        ('ChecksumError', 'failed:ChecksumError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 's3', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-zarr3', 's3', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 's3', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('tensorstore-zarr3', 's3', 'etag'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('z5py-n5', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('z5py-n5', 'local', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('z5py-n5', 'http', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 'http', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 'http', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 'http', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('z5py-n5', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('z5py-n5', 's3', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 's3', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('z5py-n5', 's3', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 's3', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('z5py-n5', 's3', 'etag'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v2', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v2', 'local', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v2', 'http', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 'http', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 'http', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 'http', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v2', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v2', 's3', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 's3', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v2', 's3', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 's3', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v2', 's3', 'etag'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v3', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v3', 'local', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v3', 'http', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 'http', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 'http', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 'http', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v3', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v3', 's3', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 's3', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v3', 's3', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 's3', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zarr-python-v3', 's3', 'etag'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('wkw', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('wkw', 'local', 'damaged'):
        ('JumpTableError', 'failed:JumpTableError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('wkw', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('wkw', 'http', 'damaged'):
        ('JumpTableError', 'failed:JumpTableError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('wkw', 'http', 'cut'):
        ('RemoteError', 'failed:RemoteError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('wkw', 'http', 'http500'):
        ('RemoteError', 'failed:RemoteError', 'not checked/1', 'different/1', 'differ/1'),
    ('wkw', 'http', 'reset'):
        ('RemoteError', 'failed:RemoteError', 'not checked/1', 'different/1', 'differ/1'),
    ('wkw', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('wkw', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('wkw', 's3', 'damaged'):
        ('JumpTableError', 'failed:JumpTableError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('wkw', 's3', 'http500'):
        ('RemoteError', 'failed:RemoteError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('wkw', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('wkw', 's3', 'cut'):
        ('RemoteError', 'failed:RemoteError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('wkw', 's3', 'reset'):
        ('RemoteError', 'failed:RemoteError', 'not checked/1', 'different/1', 'unreadable/1'),
    # The jump table is read again while a block's answer names another version, for as
    # long as the settle wait lasts (as a shard's index is), then FileChangingError.
    ('wkw', 's3', 'etag'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('zfpc', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zfpc', 'local', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zfpc', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zfpc', 'http', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zfpc', 'http', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zfpc', 'http', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zfpc', 'http', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zfpc', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zfpc', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zfpc', 's3', 'damaged'):
        ('ChunkDecodeError', 'failed:ChunkDecodeError', 'INVALID/1', 'different/1', 'unreadable/1'),
    ('zfpc', 's3', 'http500'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zfpc', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zfpc', 's3', 'cut'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zfpc', 's3', 'reset'):
        ('RemoteIOError', 'failed:RemoteIOError', 'not checked/1', 'different/1', 'unreadable/1'),
    ('zfpc', 's3', 'etag'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('openvds', 'local', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 'local', 'damaged'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 'http', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 'http', 'damaged'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 'http', 'cut'):
        ('RemoteIOError', 'RemoteIOError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 'http', 'http500'):
        ('RemoteIOError', 'RemoteIOError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 'http', 'reset'):
        ('RemoteIOError', 'RemoteIOError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 'http', 'cache'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 's3', 'none'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 's3', 'damaged'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 's3', 'http500'):
        ('RemoteIOError', 'RemoteIOError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 's3', 'slowdown'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 's3', 'cut'):
        ('RemoteIOError', 'RemoteIOError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 's3', 'reset'):
        ('RemoteIOError', 'RemoteIOError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 's3', 'etag'):
        ('FileChangingError', 'FileChangingError', 'error/2', 'error/2', 'error/2'),
    # A file rewritten in place by another process while it is read (``rewrite``): it
    # never settles, so every path says so; a one-file format's header keeps changing
    # too, so it does not open (exit 2, as for a wrong ETag).
    ('tensorstore-n5', 'local', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('tensorstore-n5', 'http', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('tensorstore-zarr3', 'local', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('tensorstore-zarr3', 'http', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('z5py-n5', 'local', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('z5py-n5', 'http', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('zarr-python-v2', 'local', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('zarr-python-v2', 'http', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('zarr-python-v3', 'local', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('zarr-python-v3', 'http', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('wkw', 'local', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('wkw', 'http', 'rewrite'):
        ('FileChangingError', 'changing:FileChangingError', 'not checked/1', 'different/1',
         'unreadable/1'),
    ('zfpc', 'local', 'rewrite'):
        ('FileChangingError', 'FileChangingError', 'error/2', 'error/2', 'error/2'),
    ('zfpc', 'http', 'rewrite'):
        ('FileChangingError', 'FileChangingError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 'local', 'rewrite'):
        ('FileChangingError', 'FileChangingError', 'error/2', 'error/2', 'error/2'),
    ('openvds', 'http', 'rewrite'):
        ('FileChangingError', 'FileChangingError', 'error/2', 'error/2', 'error/2'),
    # In S3 the object is replaced whole by each PUT: a read gets one version whole (the
    # first or the other: ``WHOLE_OR_CHANGING``), or, when an index and its chunks come
    # from two versions, the change is named; OpenVDS reads its layout at open.
    ('tensorstore-n5', 's3', 'rewrite'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('tensorstore-zarr3', 's3', 'rewrite'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('z5py-n5', 's3', 'rewrite'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v2', 's3', 'rewrite'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zarr-python-v3', 's3', 'rewrite'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('wkw', 's3', 'rewrite'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('zfpc', 's3', 'rewrite'):
        ('voxels', 'voxels', 'valid/0', 'equal/0', 'match/0'),
    ('openvds', 's3', 'rewrite'):
        ('FileChangedError', 'FileChangedError', 'error/2', 'error/2', 'error/2'),
}


#: What a path of a ``rewrite`` cell may give instead of its row, as timing decides: an
#: outcome of one whole version (``voxels``: the first, ``new``: some chunks of the other;
#: a file the machine's load let settle for a moment, an S3 object read between two
#: replacements) or of a file that changed or kept changing.  Never a mixed block
#: (``WRONG``), never INVALID, never an untyped error.
WHOLE_OR_CHANGING: dict[str, set[str]] = {
    "read": {"voxels", "new", "FileChangingError", "FileChangedError"},
    "plane": {"voxels", "new", "changing:FileChangingError", "changing:FileChangedError",
              "FileChangingError", "FileChangedError"},
    "info": {"valid/0", "not checked/1"},
    "compare": {"equal/0", "different/1"},
    "digest": {"match/0", "differ/1", "unreadable/1"},
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[matrix.Servers]:
    with matrix.serving(tmp_path_factory.mktemp("conformance")) as servers:
        yield servers


def test_the_table_covers_every_cell() -> None:
    combos = [("local", f) for f in matrix.LOCAL_FAULTS] + \
        [("http", f) for f in matrix.HTTP_FAULTS] + [("s3", f) for f in matrix.S3_FAULTS]
    import writers

    assert set(TABLE) == {(n, s, f) for n in writers.WRITERS for s, f in combos}
    bad = {"WRONG", "INCOMPLETE", "TIMEOUT"}
    assert not any(set(row) & bad for row in TABLE.values())


@pytest.mark.parametrize(("name", "store", "fault"), list(TABLE))
def test_cell(servers: matrix.Servers, tmp_path: Path, name: str, store: str,
              fault: str) -> None:
    got = matrix.run_cell(servers, name, store, fault, tmp_path)
    want = TABLE[(name, store, fault)]
    if fault == "rewrite":
        want = tuple(got[p] if got[p] in WHOLE_OR_CHANGING[p] else w
                     for p, w in zip(matrix.PATHS, want, strict=True))
    assert tuple(got[p] for p in matrix.PATHS) == want, got
