"""Storage units that are one chunk file each, on a local disk (N5, unsharded Zarr): read in
batches, none kept open.

``read_chunk_files(jobs, files)`` is ``Volume.read_units`` for such a volume (its
``small_units``): each chunk file is read whole once with no ``stat`` before
(``store.read_file_whole``: a file changed while it was read is read once more, a second change
is the chunk's ``FileChangedError``), and the batch's chunks are decoded together
(``ChunkFiles.decode_files``: where a format's native kernel takes the codec, one call for the
batch).  A format supplies where a unit's file is, the errors in its own words, and the decode
(``ChunkFiles``); the batching, the absent files and the order of the answers live here once.

Threads: any (nothing is kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy.typing as npt

from viewer.format.errors import FileChangedError, FormatError
from viewer.format.store import read_file_whole
from viewer.format.volume import ChunkResult, UnitRead

Vec3 = tuple[int, int, int]
#: A chunk file read and waiting for its decode: its unit, path and bytes.
Stored = tuple[Vec3, str, bytes]


class ChunkFiles(Protocol):
    """What a volume of one chunk file per unit supplies to ``read_chunk_files``."""

    def chunk_file(self, unit: Vec3) -> str | None:
        """The path of the chunk file of the unit at ``unit`` on the local disk; None when
        the unit is outside the array (read as absent)."""
        ...

    def chunk_file_error(self, unit: Vec3, path: str, exc: OSError | FileChangedError
                         ) -> FormatError:
        """The chunk's error when reading its file at ``path`` failed with ``exc`` (a
        ``FileChangedError`` stays of its class)."""
        ...

    def not_in_file(self, unit: Vec3, path: str, index: int) -> FormatError:
        """The error of chunk ``index`` (not 0) asked of a file that holds chunk 0 only."""
        ...

    def decode_files(self, items: Sequence[Stored]) -> list[npt.NDArray[Any] | FormatError]:
        """The chunks of the files read, decoded, in order: each as ``read_chunks`` gives it
        (``(C, cx, cy, cz)`` Fortran order, an edge chunk padded with the fill value) or its
        ``FormatError``."""
        ...


def read_chunk_files(jobs: Sequence[tuple[Vec3, Sequence[int]]], files: ChunkFiles
                     ) -> list[UnitRead]:
    """``Volume.read_units`` of a volume of one chunk file per unit on a local disk (see the
    module docstring): per job the chunk (index 0) decoded, ``None`` for a file that is absent
    (or outside the array), the chunk's error otherwise."""
    out: list[UnitRead] = []
    pending: list[tuple[list[ChunkResult], int]] = []
    stored: list[Stored] = []
    chunk_file = files.chunk_file
    for pos, indices in jobs:
        path = chunk_file(pos)
        if path is None:
            out.append(None)
            continue
        data: bytes | None = None
        failed: FormatError | None = None
        try:
            data = read_file_whole(path)
        except (FileNotFoundError, NotADirectoryError):
            out.append(None)
            continue
        except FileChangedError as exc:
            failed = files.chunk_file_error(pos, path, exc)
        except OSError as exc:
            failed = files.chunk_file_error(pos, path, exc)
        chunks: list[ChunkResult] = []
        for index in indices:
            if index != 0:
                chunks.append(files.not_in_file(pos, path, int(index)))
            elif data is None:
                chunks.append(failed)
            else:
                chunks.append(None)  # decoded below, the batch together
                pending.append((chunks, len(chunks) - 1))
                stored.append((pos, path, data))
        out.append(chunks)
    if stored:
        for (chunks, k), result in zip(pending, files.decode_files(stored), strict=True):
            chunks[k] = result
    return out


__all__ = ["ChunkFiles", "Stored", "read_chunk_files"]
