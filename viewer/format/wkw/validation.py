"""Validation: every problem of a WKW file or dataset, not just the first.

``validate(path)`` takes a data file or a dataset directory (or its header.wkw) and returns a
list of ``FormatError``s (empty when valid).  ``check_file`` returns a ``FileReport`` with what
``wkw-viewer info`` shows besides (block type, size, compressed block sizes).  A dataset is
walked lazily, file by file (``iter_reports``), so a caller can stream progress.

What is checked, per data file: the header (magic, version, block type, voxel type, voxelSize,
absurd geometry), dataOffset (0, inside the header, inconsistent with the jump table), the jump
table (truncated, every block's range: before the data, decreasing, past the end of the file,
zero length, longer than LZ4 can encode; bytes after the last block), that every block decodes
to exactly its size (raw: that the file holds every block), and, in a dataset, that the file's
geometry, voxel type and block type agree with header.wkw.  Checks on the table are vectorised;
only flagged blocks cost Python work.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from viewer.format.errors import (
    DatasetLayoutError,
    FormatError,
    HeaderError,
)
from viewer.format.wkw import filecheck
from viewer.format.wkw.file import File, check_limits
from viewer.format.wkw.header import HEADER_SIZE, Header

HEADER_FILE = "header.wkw"


@dataclass
class FileReport:
    """What validation learnt about one data file."""

    path: str
    header: Header | None = None
    file_size: int | None = None
    #: On-disk bytes of every block (Morton order) of a compressed file; None for raw files
    #: and when the table could not be read.
    block_sizes: npt.NDArray[np.int64] | None = None
    #: ``{min, median, max, total}`` of the on-disk block sizes (values None when unknown).
    block_stats: dict[str, Any] = field(default_factory=lambda: summary(None))
    problems: list[FormatError] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems


def validate(path: str | os.PathLike[str], decode: bool = True) -> list[FormatError]:
    """Every problem of a data file or a dataset directory (empty list: valid).

    ``decode=False`` skips decoding the blocks (table and layout checks only: fast)."""
    problems: list[FormatError] = []
    for report in iter_reports(path, decode=decode):
        problems.extend(report.problems)
    return problems


def iter_reports(path: str | os.PathLike[str], decode: bool = True) -> Iterator[FileReport]:
    """Reports one by one: for a dataset, first one for header.wkw (``header`` set, no block
    sizes), then one per data file, in directory order (never listed up front)."""
    path = os.fspath(path)
    if os.path.isdir(path) or os.path.basename(path) == HEADER_FILE:
        root = path if os.path.isdir(path) else (os.path.dirname(path) or ".")
        yield from _dataset_reports(root, decode)
    else:
        yield check_file(path, decode=decode)


def _dataset_reports(root: str, decode: bool) -> Iterator[FileReport]:
    from viewer.format.wkw.dataset import Dataset

    header_path = os.path.join(root, HEADER_FILE)
    head = FileReport(header_path)
    expected: Header | None = None
    try:
        with open(header_path, "rb") as fh:
            raw = fh.read(HEADER_SIZE + 1)
        head.file_size = os.path.getsize(header_path)
        expected = Header.from_bytes(raw, header_path)
        check_limits(expected, header_path)
        head.header = expected
        if expected.data_offset != 0:
            head.problems.append(HeaderError(
                f"dataOffset is {expected.data_offset} in {HEADER_FILE} (expected 0)",
                header_path, offset=8))
    except FileNotFoundError:
        head.problems.append(DatasetLayoutError(f"not a WKW dataset: no {HEADER_FILE}", root))
    except FormatError as exc:
        head.problems.append(exc)
    except OSError as exc:
        head.problems.append(DatasetLayoutError(f"cannot read: {exc.strerror or exc}",
                                                header_path))
    yield head
    layout = Dataset(root, expected if expected is not None else Header(np.uint8))
    for file_path in layout.list_files():
        yield check_file(file_path, expected, decode=decode)


def check_file(path: str | os.PathLike[str], expected: Header | None = None,
               decode: bool = True) -> FileReport:
    """Validate one data file; ``expected``: its dataset's header.wkw, if any."""
    path = os.fspath(path)
    report = FileReport(path)
    try:
        report.file_size = os.path.getsize(path)
        f = File.open(path)
    except FormatError as exc:
        report.problems.append(exc)
        report.header = _header_anyway(path)
        return report
    except OSError as exc:
        report.problems.append(FormatError(f"cannot read: {exc.strerror or exc}", path))
        return report
    with f:
        report.header = f.header
        if expected is not None:
            report.problems.extend(_layout_problems(f, expected))
        if f.header.is_compressed:
            sizes, problems = filecheck.file_problems(f, decode=decode)
            report.block_sizes = sizes
            # Statistics of the blocks whose byte range is sound: a damaged table entry makes
            # a "size" (negative, or the rest of the file) that is no block's size.
            sound = None if sizes is None else sizes[~f.bad_ranges(*f.block_ranges())]
            report.block_stats = summary(sound)
        else:
            problems = filecheck.raw_problems(f)
            held = filecheck.raw_blocks_held(f)
            bb = f.header.block_bytes
            report.block_stats = summary(None) if not held else {
                "min": bb, "median": float(bb), "max": bb, "total": bb * held}
        report.problems.extend(problems)
    return report


def _header_anyway(path: str) -> Header | None:
    """The header of a file that failed to open for another reason (its table, say)."""
    try:
        with open(path, "rb") as fh:
            return Header.from_bytes(fh.read(HEADER_SIZE), path)
    except (OSError, FormatError):
        return None


def _layout_problems(f: File, expected: Header) -> list[FormatError]:
    problems: list[FormatError] = []
    if not f.header.same_geometry(expected):
        diffs = "; ".join(d for d in expected.differences(f.header)
                          if not d.startswith("block_type"))
        problems.append(DatasetLayoutError(
            f"file header differs from {HEADER_FILE} ({HEADER_FILE} vs file: {diffs})",
            f.path, offset=0))
    if f.header.block_type != expected.block_type:
        problems.append(DatasetLayoutError(
            f"block type {f.header.block_type_name} differs from {HEADER_FILE}'s "
            f"{expected.block_type_name} (webKnossos reads every file by {HEADER_FILE}'s)",
            f.path, offset=5))
    return problems


def summary(sizes: npt.NDArray[np.int64] | None) -> dict[str, Any]:
    """min / median / max / total of block sizes (None values when unknown)."""
    if sizes is None or not len(sizes):
        return {"min": None, "median": None, "max": None, "total": None}
    return {"min": int(sizes.min()), "median": float(np.median(sizes)),
            "max": int(sizes.max()), "total": int(sizes.sum())}
