"""A file rewritten in place by "another program" at a chosen moment of a read: between the
reader's recording of the file's identity (its ``fstat``) and its read, where
``viewer.format.store.read_file_whole`` waits for writes in progress
(``handles.wait_for_writers``).  The tests of the one-chunk-per-file formats (N5, Zarr) use it
to check that such a chunk is read again whole or reported, never torn."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import viewer.format.store as store_module
from viewer.format import handles, open_volume
from viewer.format.errors import FileChangedError


def rewrite_during_reads(monkeypatch: pytest.MonkeyPatch, target: Path, versions: list[bytes],
                         times: int) -> list[int]:
    """Make the next ``times`` reads of ``target`` meet a rewrite in place (truncate, then
    write the next of ``versions``) after the identity was recorded and before the bytes are
    read.  Returns the list that gets one entry per rewrite done."""
    real = handles.wait_for_writers
    done: list[int] = []

    def rewrite_then_wait(fd: int) -> None:
        if len(done) < times and os.readlink(f"/proc/self/fd/{fd}") == str(target):
            with open(target, "r+b") as fh:
                fh.truncate(0)
                fh.write(versions[len(done) % len(versions)])
            done.append(1)
        real(fd)

    monkeypatch.setattr(store_module, "wait_for_writers", rewrite_then_wait)
    return done


def check_a_file_that_keeps_changing(monkeypatch: pytest.MonkeyPatch, root: Path,
                                     pos: tuple[int, int, int], target: Path) -> None:
    """The chunk file ``target`` of the dataset at ``root`` (unit ``pos``) changes at every
    read: ``read_units`` and a kept unit's ``read_chunks`` both give the chunk's
    ``FileChangedError``, naming the file and the chunk."""
    old = target.read_bytes()
    rewrite_during_reads(monkeypatch, target, [old + b"\0" * 11, old], times=10)
    with open_volume(root) as v:
        [got] = v.read_units([(pos, [0])])
        unit = v.open_unit(pos)
        assert unit is not None
        [plain] = unit.read_chunks([0])  # the kept-unit way: the same error
    assert isinstance(got, list)
    for err in (got[0], plain):
        assert isinstance(err, FileChangedError)
        assert err.path == str(target) and err.chunk == pos
