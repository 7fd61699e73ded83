"""Ranges of a local file read by the native kernel in one call
(``LocalStore.read_ranges_packed``, what a shard's chunks are read with) against
``read_file_ranges``: the same bytes (a range running past the end shorter, an empty range),
the same error for a file of another version than the caller's index and for a missing file,
and a file modified within the racy window left to the Python path, which waits for it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from viewer.format import handles, native
from viewer.format.errors import FileChangedError
from viewer.format.native import chunks
from viewer.format.store import LocalStore, file_version, read_file_ranges

RANGES = [(0, 10), (4096, 300), (100, 0), (9000, 5000), (20_000, 10)]


@pytest.fixture
def shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(handles, "RACY_WINDOW_NS", 0)
    monkeypatch.setattr(handles, "COARSE_WINDOW_NS", 0)
    path = tmp_path / "shard"
    path.write_bytes(bytes(range(256)) * 40)  # 10,240 bytes
    return path


def test_the_same_bytes_as_the_python_path(shard: Path) -> None:
    store = LocalStore(str(shard.parent))
    want = read_file_ranges(str(shard), RANGES)
    packed = store.read_ranges_packed("shard", RANGES, file_version(os.stat(shard)))
    got = [packed.view(i) for i in range(len(RANGES))]
    assert [bytes(g) for g in got] == want
    assert [len(g) for g in got] == [10, 300, 0, 1240, 0]
    assert packed.length.tolist() == [10, 300, 0, 1240, 0]
    if native.available():
        assert chunks.read_ranges(str(shard), RANGES, 0, 0) is not None  # the kernel read it


def test_another_version_is_the_same_error(shard: Path) -> None:
    store = LocalStore(str(shard.parent))
    old = file_version(os.stat(shard))
    shard.write_bytes(shard.read_bytes()[::-1])
    with pytest.raises(FileChangedError) as python:
        read_file_ranges(str(shard), RANGES, old)
    with pytest.raises(FileChangedError) as packed:
        store.read_ranges_packed("shard", RANGES, old)
    assert str(packed.value) == str(python.value)


def test_a_missing_file_is_the_same_error(shard: Path) -> None:
    store = LocalStore(str(shard.parent))
    with pytest.raises(FileNotFoundError):
        store.read_ranges_packed("gone", RANGES, None)
    assert chunks.read_ranges(str(shard.parent / "gone"), RANGES, 0, 0) is None


def test_a_file_just_written_is_left_to_the_python_path(
        shard: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handles, "RACY_WINDOW_NS", 50_000_000)
    shard.write_bytes(shard.read_bytes())
    assert chunks.read_ranges(str(shard), RANGES, handles.RACY_WINDOW_NS,
                              handles.COARSE_WINDOW_NS) is None
    store = LocalStore(str(shard.parent))
    packed = store.read_ranges_packed("shard", RANGES, None)
    got = [packed.view(i) for i in range(len(RANGES))]
    assert [bytes(g) for g in got] == read_file_ranges(str(shard), RANGES)
