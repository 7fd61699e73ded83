"""Checks shared by the tests of the one-chunk-per-file formats (N5, unsharded Zarr), whose
local volumes are read as small units (``Volume.read_units``):

- ``rewrite_during_reads``: a file rewritten in place by "another program" at a chosen moment of
  a read: between the reader's recording of the file's identity (its ``fstat``) and its read,
  where ``viewer.format.store.read_file_whole`` waits for writes in progress
  (``handles.wait_for_writers``); such a chunk is read again whole or reported, never torn;
- ``read_rewritten_once``: a chunk rewritten during its read is read again, whole;
- ``check_a_file_that_keeps_changing``, ``check_damaged_chunk``: both ways of reading a chunk
  (``read_units``, a kept unit's ``read_chunks``) give the same typed error;
- ``check_loader_looks``: through the loader, every chunk's voxels, an absent chunk's look and a
  damaged chunk's look;
- ``info_output``: ``wkw-viewer info`` run in this process, its exit status and what it printed.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import numpy as np
import pytest

import viewer.format.store as store_module
from viewer.format import handles, open_volume
from viewer.format.errors import ChunkDecodeError, FileChangingError, FormatError
from viewer.format.n5 import nativeread as n5_nativeread


def rewrite_during_reads(monkeypatch: pytest.MonkeyPatch, target: Path, versions: list[bytes],
                         times: int) -> list[int]:
    """Make the next ``times`` reads of ``target`` meet a rewrite in place (truncate, then
    write the next of ``versions``) after the identity was recorded and before the bytes are
    read.  Returns the list that gets one entry per rewrite done."""
    real = handles.wait_for_writers
    done: list[int] = []
    # the rewrite hooks the Python read: the native kernel's own reads of N5 chunk files
    # (which leave a file whose identity changed during the read to that path) are off here
    monkeypatch.setattr(n5_nativeread, "reads_files", lambda: False)

    def rewrite_then_wait(fd: int) -> None:
        if len(done) < times and os.readlink(f"/proc/self/fd/{fd}") == str(target):
            with open(target, "r+b") as fh:
                fh.truncate(0)
                fh.write(versions[len(done) % len(versions)])
            done.append(1)
        real(fd)

    monkeypatch.setattr(store_module, "wait_for_writers", rewrite_then_wait)
    return done


def read_rewritten_once(monkeypatch: pytest.MonkeyPatch, root: Path,
                        pos: tuple[int, int, int], target: Path, new: bytes) -> object:
    """The chunk file ``target`` (unit ``pos``) is rewritten to ``new`` (longer than it is:
    a read of the old length would cut it short) during its first read: ``read_units`` reads
    it again and returns the new version's chunk, whole."""
    assert len(new) > target.stat().st_size
    done = rewrite_during_reads(monkeypatch, target, [new], times=1)
    with open_volume(root) as v:
        [got] = v.read_units([(pos, [0])])
    assert done == [1]
    assert isinstance(got, list)
    return got[0]


def check_a_file_that_keeps_changing(monkeypatch: pytest.MonkeyPatch, root: Path,
                                     pos: tuple[int, int, int], target: Path) -> None:
    """The chunk file ``target`` of the dataset at ``root`` (unit ``pos``) changes at every
    read: ``read_units`` and a kept unit's ``read_chunks`` both give the chunk's
    ``FileChangingError`` (after waiting ``handles.SETTLE_NS`` for it to settle), naming the
    file and the chunk."""
    old = target.read_bytes()
    # The file changes at every read whatever the wait: a shorter one than the program's
    # gives the same errors sooner.
    monkeypatch.setattr(handles, "SETTLE_NS", 300_000_000)
    rewrite_during_reads(monkeypatch, target, [old + b"\0" * 11, old], times=10_000)
    with open_volume(root) as v:
        [got] = v.read_units([(pos, [0])])
        unit = v.open_unit(pos)
        assert unit is not None
        [plain] = unit.read_chunks([0])  # the kept-unit way: the same error
    assert isinstance(got, list)
    for err in (got[0], plain):
        assert isinstance(err, FileChangingError)
        assert err.path == str(target) and err.chunk == pos


def check_damaged_chunk(root: Path, pos: tuple[int, int, int], target: Path) -> None:
    """The chunk file ``target`` (unit ``pos``) is damaged: ``read_units`` gives the same
    ``ChunkDecodeError`` as a kept unit's ``read_chunks``, naming the file and the chunk."""
    with open_volume(root) as v:
        unit = v.open_unit(pos)
        assert unit is not None
        [kept] = unit.read_chunks([0])
        [got] = v.read_units([(pos, [0])])
    assert isinstance(got, list)
    [err] = got
    assert isinstance(err, ChunkDecodeError) and type(err) is type(kept)
    assert str(err) == str(kept)
    assert err.path == str(target) and err.chunk == pos


def check_loader_looks(root: Path, z: int, size: tuple[int, int], truth: np.ndarray,
                       absent: tuple[slice, slice], damaged: tuple[slice, slice],
                       target: Path, damaged_pos: tuple[int, int, int],
                       absent_pos: tuple[int, int, int]) -> None:
    """The XY plane ``z`` (``size`` voxels from the origin) through the loader: the pixels of
    ``absent`` look absent, those of ``damaged`` failed with an error naming ``target`` and
    chunk ``damaged_pos``, every other pixel equals ``truth`` (the plane, (x, y)); the absent
    unit is remembered, and a unit read is not kept open."""
    from viewer.core.chunkio import UNKNOWN
    from viewer.core.loader import Loader
    from viewer.core.slicing import XY, PlaneRequest, Status

    loader = Loader(open_volume(root), prefetch_enabled=False)
    try:
        req = PlaneRequest(XY, z, (0, 0), size)
        loader.set_wanted([req], 0, (0, 0, z))
        assert loader.wait_idle(60)
        plane = loader.plane(req)
        status = plane.status
        assert (status[absent] == Status.ABSENT).all()
        assert (status[damaged] == Status.FAILED).all()
        ok = np.ones(status.shape, bool)
        ok[absent] = ok[damaged] = False
        assert (status[ok] == Status.DATA).all()
        np.testing.assert_array_equal(plane.data[0][ok], truth[ok])
        errors = list(plane.errors.values())
        assert errors and all(isinstance(e, FormatError) for e in errors)
        assert any(e.path == str(target) and e.chunk == damaged_pos for e in errors)
        assert loader._io.state(absent_pos) is None  # remembered: not asked for again
        assert loader._io.state((0, 0, 1)) is UNKNOWN  # read, not kept open
    finally:
        loader.close()


def info_output(*args: str) -> tuple[int, str]:
    """``wkw-viewer info ARGS`` run in this process: its exit status and its standard output."""
    from viewer.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["info", *args])
    return code, out.getvalue()
