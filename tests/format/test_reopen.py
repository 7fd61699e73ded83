"""A data file opened again: ``wkw.File`` remembers each file's parsed header and jump table
by path and identity (``file._PARSED``), so a file reopened unchanged is not read again.
Checked on files the reference (PyPI ``wkw``) wrote, voxel for voxel: the remembered table
reads what the reference reads, any change to the file (rewritten in place, replaced by a
rename, damaged) is read afresh, and a file changed a moment before it was opened is not
remembered at all (a coarse file-system clock could hide a second change)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

wkw_ref = pytest.importorskip("wkw")

from viewer.format import JumpTableError, wkw  # noqa: E402
from viewer.format.handles import identity  # noqa: E402
from viewer.format.wkw import file as wkw_file  # noqa: E402

BLOCK_LEN, FILE_LEN = 8, 4
SIDE = BLOCK_LEN * FILE_LEN


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wkw_file, "RACY_NS", 0)  # files written just now are remembered
    wkw_file.forget_parsed()


def _write(root: Path, seed: int, block_type: int = 3) -> np.ndarray:
    data = np.random.default_rng(seed).integers(0, 9, (1, SIDE, SIDE, SIDE), dtype=np.uint8)
    header = wkw_ref.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN,
                            block_type=block_type)
    with wkw_ref.Dataset.create(str(root), header) as ref:
        ref.write((0, 0, 0), np.asfortranarray(data))
    return data


def _path(root: Path) -> str:
    return str(root / "z0" / "y0" / "x0.wkw")


@pytest.mark.parametrize("block_type", [1, 3], ids=["raw", "lz4hc"])
def test_a_file_opened_again_reads_what_the_reference_reads(
        tmp_path: Path, block_type: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _write(tmp_path, 1, block_type)
    path = _path(tmp_path)
    boxes = [((0, 0, 0), (SIDE, SIDE, SIDE)), ((3, 9, 17), (20, 11, 13)), ((5, 0, 0), (1, 32, 32))]
    with wkw.File.open(path) as first:
        table = first._extended
    assert path in wkw_file._PARSED
    assert wkw_file._PARSED[path][0] == identity(os.stat(path))
    with wkw_ref.Dataset.open(str(tmp_path)) as ref:
        for offset, shape in boxes:
            with wkw.Dataset.open(tmp_path) as ours:  # a fresh open each time
                got = ours.read(offset, shape)
                f = ours.get_file(0, 0, 0)
                assert f is not None and f._extended is table  # not read again
            assert np.array_equal(got, ref.read(offset, shape)), f"box {offset} {shape}"
            sl = tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))
            assert np.array_equal(got, data[(slice(None), *sl)])
    # Blocks read as the file is opened (the loader's way; a small file is read whole
    # instead, so pretend this one is large): the remembered table, and the same blocks.
    monkeypatch.setattr(wkw_file, "SMALL_FILE_BYTES", 0)
    f2, blocks = wkw.File.open_read(path, [0, 5, 63])
    with f2:
        assert f2._extended is table
        for got, k in zip(blocks, [0, 5, 63], strict=True):
            assert isinstance(got, np.ndarray)
            assert np.array_equal(got, f2.read_block(k))


def test_a_file_rewritten_in_place_is_read_afresh(tmp_path: Path) -> None:
    """Another program rewrites the file in place (same inode) with what the reference
    wrote for other voxels (other block sizes, another jump table): the next open sees
    another identity and reads the new table."""
    _write(tmp_path / "a", 2)
    data = _write(tmp_path / "b", 3)
    path = _path(tmp_path / "a")
    wkw.File.open(path).close()
    remembered = wkw_file._PARSED[path]
    inode = os.stat(path).st_ino
    with open(_path(tmp_path / "b"), "rb") as src, open(path, "r+b") as dst:
        dst.write(src.read())
        dst.truncate()
    assert os.stat(path).st_ino == inode
    with wkw.Dataset.open(tmp_path / "a") as ours:
        got = ours.read((0, 0, 0), (SIDE, SIDE, SIDE))
    assert np.array_equal(got, data)
    now = wkw_file._PARSED[path]
    assert now is not remembered and now[3] is not None and remembered[3] is not None
    assert not np.array_equal(now[3], remembered[3])


def test_a_file_replaced_by_a_rename_is_read_afresh(tmp_path: Path) -> None:
    _write(tmp_path / "a", 4)
    data = _write(tmp_path / "b", 5)
    wkw.File.open(_path(tmp_path / "a")).close()
    os.replace(_path(tmp_path / "b"), _path(tmp_path / "a"))
    with wkw.Dataset.open(tmp_path / "a") as ours:
        assert np.array_equal(ours.read((0, 0, 0), (SIDE, SIDE, SIDE)), data)


def test_a_jump_table_damaged_after_an_open_is_still_reported(tmp_path: Path) -> None:
    """Block 3's end entry overwritten in place after the file was opened (and remembered):
    the next open reads the damaged table and the read names the block and the entry."""
    _write(tmp_path, 6)
    path = _path(tmp_path)
    with wkw.File.open(path) as f:
        start3 = int(f.block_ranges()[0][3])
    with open(path, "r+b") as fh:
        fh.seek(16 + 8 * 3)
        fh.write((start3 - 1).to_bytes(8, "little"))  # ends before it starts
    with wkw.Dataset.open(tmp_path) as ours, pytest.raises(JumpTableError) as info:
        ours.read((0, 0, 0), (16, 16, 16))
    assert info.value.block == 3 and info.value.offset == 16 + 8 * 3
    assert path in str(info.value)


def test_a_file_changed_a_moment_ago_is_not_remembered(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wkw_file, "RACY_NS", 10 ** 9 * 3600)
    _write(tmp_path, 7)
    wkw.File.open(_path(tmp_path)).close()
    assert _path(tmp_path) not in wkw_file._PARSED
    monkeypatch.setattr(wkw_file, "RACY_NS", 0)
    wkw.File.open(_path(tmp_path)).close()
    assert _path(tmp_path) in wkw_file._PARSED


def test_what_is_remembered_stays_within_its_bounds(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for k in range(5):
        _write(tmp_path / f"d{k}", k)
    monkeypatch.setattr(wkw_file, "PARSED_KEEP_FILES", 3)
    for k in range(5):
        wkw.File.open(_path(tmp_path / f"d{k}")).close()
    assert list(wkw_file._PARSED) == [_path(tmp_path / f"d{k}") for k in (2, 3, 4)]
    table_bytes = 8 * (FILE_LEN ** 3 + 1)
    monkeypatch.setattr(wkw_file, "PARSED_KEEP_BYTES", 2 * table_bytes)
    wkw.File.open(_path(tmp_path / "d0")).close()
    assert list(wkw_file._PARSED) == [_path(tmp_path / f"d{k}") for k in (4, 0)]
    assert wkw_file._parsed_bytes == 2 * table_bytes
