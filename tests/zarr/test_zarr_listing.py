"""The listing of a Zarr array's chunk objects (``ZarrVolume.iter_units``, what the extent
scan and the inspector's file table walk) names exactly the chunk files zarr-python wrote:
flat (``.``) and nested (``/``) keys, v2 and v3, a channel axis whose later chunks are not
units, and stray files beside the chunks.  ``LocalStore.walk`` (``os.scandir``) walks as the
generic ``Store.walk`` does."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")

from viewer.format import open_volume  # noqa: E402
from viewer.format.store import LocalStore, Store  # noqa: E402


def _chunk_files(root: Path, prefix: str, separator: str) -> set[tuple[int, ...]]:
    """The grid positions of the chunk files on disk, found without the reader."""
    found = set()
    for dirpath, _, files in os.walk(root):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if prefix:
                if not rel.startswith(prefix + separator):
                    continue
                rel = rel[len(prefix) + 1:]
            parts = rel.split(separator)
            if all(p.isascii() and p.isdigit() for p in parts):
                found.add(tuple(int(p) for p in parts))
    return found


@pytest.mark.parametrize("fmt,separator", [(2, "."), (2, "/"), (3, "/"), (3, ".")])
def test_the_listing_names_every_chunk_file_and_nothing_else(
        tmp_path: Path, fmt: int, separator: str) -> None:
    root = tmp_path / "a.zarr"
    shape, chunks = (40, 24, 56), (8, 8, 16)  # z, y, x
    encoding = {"name": "v2" if fmt == 2 else "default", "separator": separator}
    arr = zarr.create_array(store=str(root), shape=shape, chunks=chunks, dtype="u2",
                            zarr_format=fmt, fill_value=0, chunk_key_encoding=encoding)
    data = np.arange(np.prod(shape), dtype=np.uint16).reshape(shape) % 1000 + 1
    data[16:, 8:, 32:] = 0  # chunks all fill value: not written
    arr[...] = data
    prefix = "c" if fmt == 3 else ""
    on_disk = _chunk_files(root, prefix, separator)
    assert 0 < len(on_disk) < 5 * 3 * 4
    # Stray files: not numbers, a Unicode digit, too few and too many parts, a number that
    # is not ASCII; an empty folder.
    stray = ["notes.txt", "\u0663", "7", "1/x/2", "0/0/5/1", "0/0/\u0663"]
    if separator == ".":
        stray = [name.replace("/", ".") for name in stray]
    else:
        (root / prefix / "9" / "9" if prefix else root / "9" / "9").mkdir(parents=True)
    for name in stray:
        path = root / prefix / name if prefix else root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_bytes(b"x")
    with open_volume(str(root)) as volume:
        listed = list(volume.iter_units())
    assert len(listed) == len(set(listed))
    assert set(listed) == {(x, y, z) for z, y, x in on_disk}


def test_keys_of_a_channel_axis_are_listed_by_their_spatial_part(tmp_path: Path) -> None:
    root = tmp_path / "c.zarr"
    arr = zarr.create_array(store=str(root), shape=(4, 16, 16, 16), chunks=(4, 8, 8, 8),
                            dtype="u1", zarr_format=3, fill_value=0,
                            dimension_names=["c", "z", "y", "x"])
    arr[...] = 7
    with open_volume(str(root)) as volume:
        listed = sorted(volume.iter_units())
    assert listed == sorted((x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1))


def test_local_walk_is_the_generic_walk(tmp_path: Path) -> None:
    for rel in ("a/1/2", "a/1/10", "a/3", "b", "a/2/x/y/z"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    (tmp_path / "a" / "empty").mkdir()
    os.symlink(tmp_path / "a" / "1", tmp_path / "link")  # a link to a folder is a folder
    store = LocalStore(str(tmp_path))
    for key in ("", "a", "a/2", "missing", "b"):
        assert list(store.walk(key)) == list(Store.walk(store, key))
    assert list(store.walk("")) == ["a/1/10", "a/1/2", "a/2/x/y/z", "a/3", "b",
                                    "link/10", "link/2"]
