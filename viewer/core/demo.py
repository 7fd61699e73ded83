"""The built-in demo dataset: synthetic EM-like data generated on first use.

256 x 256 x 256 uint8 voxels of ``EMVolume`` (cells, membranes, vesicles), LZ4HC, 32^3 blocks,
4^3 blocks per file: eight 128^3 files, so a person browsing it crosses file boundaries.  (A
512 x 512 x 256 demo took 16 s of CPU to generate, too long for a first start; this one takes
about a quarter of that, on two threads.)  It is
generated file by file on the file grid (the volume's noise is seeded by the box offset, so the
result is the same whoever builds it), into a temporary folder that is renamed into place when
complete: an interrupted generation leaves no half dataset behind and is redone next time.

Qt-free; ``build_demo`` may run on any thread (it touches no shared state but its folder).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from pathlib import Path

from viewer.core.synthetic import EMVolume
from viewer.format import wkw
from viewer.format.wkw import writer

#: Bumped whenever the demo's content changes, so an old cached copy is not reused.
DEMO_NAME = "demo-em-v1"
DEMO_SHAPE = (256, 256, 256)
DEMO_BLOCK_LEN = 32
DEMO_FILE_LEN = 4
DEMO_SEED = 3

Progress = Callable[[int, int], None]


def default_demo_path() -> Path:
    """Where the demo lives: the user's cache folder (``WKW_VIEWER_CACHE`` overrides it)."""
    base = os.environ.get("WKW_VIEWER_CACHE")
    if not base:
        import platformdirs

        base = platformdirs.user_cache_dir("wkw-viewer", appauthor=False)
    return Path(base) / DEMO_NAME


def demo_header() -> wkw.Header:
    return wkw.Header(wkw.VOXEL_TYPES[1], block_len=DEMO_BLOCK_LEN, file_len=DEMO_FILE_LEN,
                      block_type=wkw.BLOCK_TYPE_LZ4HC)


def is_complete(path: Path) -> bool:
    return (path / wkw.dataset.HEADER_FILE).is_file() and (path / ".complete").is_file()


def build_demo(path: str | os.PathLike[str], progress: Progress | None = None,
               shape: tuple[int, int, int] | None = None) -> Path:
    """Write the demo dataset to ``path`` (a new or existing folder that must not hold a
    dataset yet) and return it.  ``progress(done, total)`` is called after each file."""
    target = Path(path)
    shape = shape if shape is not None else DEMO_SHAPE
    header = demo_header()
    side = header.file_len_vx
    grid = [max(1, -(-s // side)) for s in shape]
    positions = [(fx, fy, fz) for fz in range(grid[2]) for fy in range(grid[1])
                 for fx in range(grid[0])]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        ds = wkw.Dataset.create(str(tmp), header)
        volume = EMVolume(DEMO_SEED)
        if progress is not None:
            progress(0, len(positions))

        def one_file(pos: tuple[int, int, int]) -> None:
            fx, fy, fz = pos
            data = volume.em((fx * side, fy * side, fz * side), (side, side, side))
            writer.write_file(ds.file_path(fx, fy, fz), header, data[None])

        # numpy and LZ4 release the GIL: two threads generate about 1.6x faster than one.
        with ThreadPoolExecutor(max_workers=2) as pool:
            for n, _ in enumerate(pool.map(one_file, positions), 1):
                if progress is not None:
                    progress(n, len(positions))
        (tmp / ".complete").write_text("ok\n")
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


def ensure_demo(progress: Progress | None = None) -> Path:
    """The demo dataset's folder, generating it first when it is not there yet."""
    path = default_demo_path()
    if is_complete(path):
        return path
    return build_demo(path, progress)
