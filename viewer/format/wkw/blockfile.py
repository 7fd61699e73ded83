"""``BlockFile``: what the box reads (``boxread``) and the checks of every block
(``filecheck``) need of the data file they work on.  ``wkw.File`` is one; the two modules name
this protocol instead of the class, so that ``file.py`` can use them without their importing
it back."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from viewer.format.errors import BlockDecodeError, FormatError
from viewer.format.wkw.header import Header

#: Stored bytes of blocks closer than this in a file are read by one ``pread`` (every reader
#: of blocks: ``File``, ``boxread``, ``shareddecode``, ``nativebox``).
MERGE_GAP = 4096


class BlockFile(Protocol):
    """What reading and checking blocks needs of their file (``wkw.File`` is one): its
    header, size and jump table, the checks that word a damaged block's error, and its
    descriptor."""

    path: str
    header: Header
    file_size: int
    _ranges_i64: npt.NDArray[np.int64] | None
    #: The native kernel's description of the file (``nativebox``), made on first use.
    kernel_box: Any

    def block_ranges(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...

    def bad_ranges(self, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
                   ) -> npt.NDArray[np.bool_]: ...

    def _ranges_of(self, indices: npt.NDArray[np.int64]
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...

    def _first_problem(self, indices: npt.NDArray[np.int64], starts: npt.NDArray[np.int64],
                       ends: npt.NDArray[np.int64]) -> FormatError | None: ...

    def _range_problem(self, index: int, start: int, end: int) -> FormatError | None: ...

    def _sources(self, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64],
                 indices: npt.NDArray[np.int64] | None = None) -> tuple[list[int], list[Any]]: ...

    def _decode_error(self, index: int, start: int, got: int, wanted: int,
                      partial: bool) -> BlockDecodeError: ...

    def _short(self, index: int, start: int, end: int) -> BlockDecodeError: ...

    def _reading(self, check: bool = True) -> Any: ...


__all__ = ["BlockFile"]
