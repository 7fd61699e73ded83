"""The built-in demo dataset: a synthetic EM webKnossos dataset generated on first use.

A webKnossos dataset (``datasource-properties.json``, a folder per layer, a WKW dataset per
mag) of 256 x 256 x 128 mag-1 voxels of ``EMVolume`` at an anisotropic voxel size of
11.24 x 11.24 x 28 nm (about 2.9 x 2.9 x 3.6 um: a roughly cubic piece of tissue), with

- layer ``color``: uint8 EM-like grey values (cells, membranes, vesicles), LZ4HC;
- layer ``segmentation``: uint32 cell ids of the same cells (0 on membranes), LZ4HC, with
  ``largestSegmentId`` set;
- mags 1, 2-2-1 and 4-4-2 in both, the coarser ones downsampled from the finer (the mean for
  color, the most frequent id for segmentation, exactly as ``downsample.downsample_layer``).

32^3 blocks, 4^3 blocks per file: four 128^3 files per layer at mag 1, so a person browsing it
crosses file boundaries.  The build (``writer.write_synthetic_dataset``) generates each 128^3
chunk once for both layers on two threads and derives the coarse mags from the chunks in memory;
LZ4HC is encoded at level ``DEMO_LZ4HC_LEVEL`` rather than the reference's 9 (level 9 spent
about half the build's CPU; the blocks are the same format and the segmentation still
compresses well: docs/performance.md).  It is written into a temporary folder that is
renamed into place when complete (with a ``.complete`` marker): an interrupted build leaves no
half dataset behind and is redone next time.  The noise is seeded by the box offset on a fixed
grid, so the result is the same whoever builds it.

Qt-free; ``build_demo`` may run on any thread (it touches no shared state but its folder) and
calls ``progress`` on that thread.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from viewer.core.synthetic import EMVolume
from viewer.format import DEMO_MAGS, PROPERTIES_FILE, atomic, write_synthetic_dataset

#: Bumped whenever the demo's content changes, so an old cached copy is not reused.
DEMO_NAME = "demo-wk-v2"
#: Mag-1 size in voxels (x, y, z).
DEMO_SHAPE = (256, 256, 128)
#: Nanometres per mag-1 voxel: EM style, z about 2.5 times coarser than x and y.
DEMO_VOXEL_SIZE = (11.24, 11.24, 28.0)
DEMO_BLOCK_LEN = 32
DEMO_FILE_LEN = 4
DEMO_SEED = 3
DEMO_LZ4HC_LEVEL = 6
#: Written last into a finished build.
COMPLETE_MARKER = ".complete"

__all__ = ["DEMO_NAME", "DEMO_SHAPE", "DEMO_VOXEL_SIZE", "DEMO_MAGS", "DEMO_SEED",
           "build_demo", "ensure_demo", "default_demo_path", "is_complete", "CACHE_ENV"]

Progress = Callable[[int, int], None]


#: The environment variable the program's edge reads for ``cache_folder`` (tests, a sandbox).
CACHE_ENV = "WKW_VIEWER_CACHE"


def default_demo_path(cache_folder: str | None = None) -> Path:
    """Where the demo lives: in ``cache_folder`` (the program's edge passes the value of
    ``WKW_VIEWER_CACHE``), else the user's cache folder."""
    base = cache_folder
    if not base:
        import platformdirs

        base = platformdirs.user_cache_dir("wkw-viewer", appauthor=False)
    return Path(base) / DEMO_NAME


def is_complete(path: Path) -> bool:
    """Whether ``path`` holds a finished demo build."""
    return (path / PROPERTIES_FILE).is_file() and (path / COMPLETE_MARKER).is_file()


def build_demo(path: str | os.PathLike[str], progress: Progress | None = None,
               shape: tuple[int, int, int] | None = None) -> Path:
    """Write the demo dataset to ``path`` (a new or existing folder that must not hold a
    dataset yet) and return it.  ``progress(done, total)`` counts written files (both layers,
    all mags), first with ``done`` 0; an exception it raises stops the build and leaves
    nothing behind.  ``shape`` (mag-1 voxels) defaults to ``DEMO_SHAPE``."""
    target = Path(path)
    shape = shape if shape is not None else DEMO_SHAPE
    target.parent.mkdir(parents=True, exist_ok=True)
    # Built beside the target under a temporary name (mode from the umask; the temporaries
    # of a killed build are removed first) and renamed into place when complete.
    tmp = Path(atomic.make_temp_folder(target))
    try:
        write_synthetic_dataset(
            tmp, EMVolume(DEMO_SEED), shape=shape, voxel_size=DEMO_VOXEL_SIZE, mags=DEMO_MAGS,
            block_len=DEMO_BLOCK_LEN, file_len=DEMO_FILE_LEN, progress=progress, workers=2,
            name=target.name, lz4hc_level=DEMO_LZ4HC_LEVEL).close()
        (tmp / COMPLETE_MARKER).write_text("ok\n")
        if target.exists():
            if is_complete(target):
                shutil.rmtree(tmp)  # someone else finished first: keep theirs
                return target
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def ensure_demo(progress: Progress | None = None, cache_folder: str | None = None) -> Path:
    """The demo dataset's folder (``default_demo_path(cache_folder)``), generating it first
    when it is not there yet."""
    path = default_demo_path(cache_folder)
    if is_complete(path):
        return path
    return build_demo(path, progress)
