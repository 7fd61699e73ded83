"""Files another process rewrites in place while they are read (the racy-timestamp rule,
``viewer.format.handles.settle``): never a block of two versions; a file that keeps changing
is a ``FileChangingError`` naming it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from viewer.format import FileChangingError, handles, open_volume, wkw
from viewer.format.store import read_file_ranges, read_file_whole

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
from rewrite import run_trial  # noqa: E402


def test_two_part_rewrites_by_another_process_never_give_a_mixed_block(tmp_path: Path) -> None:
    """A real other process rewrites a raw WKW file in place in two ``write`` calls (30 ms
    apart) while four read paths run: every block is whole (old or new) or a named
    ``FileChangedError``; none mixed, nothing untyped.  (Before the rule: about one read in
    seven returned a torn block.)"""
    counts = run_trial(tmp_path, reads=40)
    assert counts["mixed"] == 0, counts
    assert counts["untyped"] == 0 and counts["other_errors"] == 0, counts
    assert counts["blocks_ok"] + counts["changed"] > 0, counts


KEEPS_CHANGING = textwrap.dedent("""
    import os, sys, time
    path, stop = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    end = time.monotonic() + 60
    while not os.path.exists(stop) and time.monotonic() < end:
        fd = os.open(path, os.O_WRONLY)
        os.pwrite(fd, data, 0)
        os.close(fd)
        # dated a little ahead (a file server's clock 90 ms fast, within the racy window): the
        # file stays unsettled ~190 ms after each write, so a writer held up by a busy machine
        # between its writes still never lets it settle
        ahead = time.time_ns() + 90_000_000
        os.utime(path, ns=(ahead, ahead))
        time.sleep(0.02)
""")


def test_a_file_that_keeps_changing_is_named(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A file rewritten every 20 ms by another process never settles: every local read path
    gives ``FileChangingError`` naming the file (after a bounded wait), not bytes."""
    # A shorter wait than the program's (still longer than the racy window, so a file that
    # paused could settle within it): the outcome is the same, each read path waits less.
    monkeypatch.setattr(handles, "SETTLE_NS", 300_000_000)
    header = wkw.Header(np.uint8, block_len=8, file_len=1, block_type=wkw.BLOCK_TYPE_RAW)
    root = tmp_path / "ds"
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), np.full((8, 8, 8), 3, np.uint8))
    path = root / "z0" / "y0" / "x0.wkw"
    stop = tmp_path / "stop"
    first = path.stat().st_mtime_ns
    writer = subprocess.Popen([sys.executable, "-c", KEEPS_CHANGING, str(path), str(stop)])
    try:
        for _ in range(600):  # until the writer has begun (bounded)
            if path.stat().st_mtime_ns != first:
                break
            time.sleep(0.05)
        for read in (lambda: read_file_whole(str(path)),
                     lambda: read_file_ranges(str(path), [(0, 16)]),
                     lambda: wkw.File.read_whole(str(path), [0]),
                     lambda: open_volume(root).read((0, 0, 0), (8, 8, 8))):
            with pytest.raises(FileChangingError) as err:
                read()
            assert err.value.path == str(path)
        with open_volume(root) as v:  # the loader's way: the unit's blocks are the error
            [got] = v.read_units([((0, 0, 0), [0])])
        assert isinstance(got, list) and isinstance(got[0], FileChangingError)
    finally:
        stop.write_text("")
        writer.wait(timeout=60)
    # settled: read as usual
    assert np.unique(open_volume(root).read((0, 0, 0), (8, 8, 8))).tolist() == [3]


def test_a_file_dated_in_the_future_reads(tmp_path: Path) -> None:
    """A file whose times lie ahead of this machine's clock (a file server whose clock runs
    ahead): no wait can settle it, so it reads, guarded by the identity checks, rather than
    being taken for a file that keeps changing."""
    import os

    header = wkw.Header(np.uint8, block_len=8, file_len=1, block_type=wkw.BLOCK_TYPE_RAW)
    root = tmp_path / "ds"
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), np.full((8, 8, 8), 5, np.uint8))
    path = root / "z0" / "y0" / "x0.wkw"
    ahead = time.time_ns() + 3_600 * 10**9 + 123_456_789  # an hour ahead, with nanoseconds
    os.utime(path, ns=(ahead, ahead))
    assert np.unique(open_volume(root).read((0, 0, 0), (8, 8, 8))).tolist() == [5]
    assert len(read_file_whole(str(path))) == path.stat().st_size
