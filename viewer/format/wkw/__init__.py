"""The webKNOSSOS wrapper (WKW) format: ``Header``, ``File`` (one data file), ``Dataset``
(a directory of files), Morton order, writing, and ``validate`` (every problem of a file or
dataset).  Mirrors the reference binding's API."""

from viewer.format.wkw import morton
from viewer.format.wkw.dataset import Dataset
from viewer.format.wkw.file import File
from viewer.format.wkw.header import (
    BLOCK_TYPE_LZ4,
    BLOCK_TYPE_LZ4HC,
    BLOCK_TYPE_RAW,
    VOXEL_TYPES,
    Header,
)
from viewer.format.wkw.validation import FileReport, check_file, iter_reports, validate

__all__ = [
    "validate",
    "check_file",
    "iter_reports",
    "FileReport",
    "Dataset",
    "File",
    "Header",
    "morton",
    "VOXEL_TYPES",
    "BLOCK_TYPE_RAW",
    "BLOCK_TYPE_LZ4",
    "BLOCK_TYPE_LZ4HC",
]
