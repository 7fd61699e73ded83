"""The window's loader and a file another process keeps changing: its blocks get the
``CHANGING`` look (not failed, not absent, not pending, not zeros) with the file's
``FileChangingError``, and are read again once the file settles."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from viewer.core.loader import Loader
from viewer.core.slicing import XY, PlaneRequest, Status
from viewer.format import FileChangingError, handles, open_volume, wkw

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_racy_rewrite import KEEPS_CHANGING  # noqa: E402


@pytest.mark.parametrize("file_len", [1, 2], ids=["small-units", "kept-units"])
def test_changing_blocks_look_changing_then_read_when_settled(
        tmp_path: Path, file_len: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # A shorter wait for the file to settle than the program's (longer than the racy window
    # still): the blocks look the same, sooner.
    monkeypatch.setattr(handles, "SETTLE_NS", 300_000_000)
    side = 8 * file_len
    header = wkw.Header(np.uint8, block_len=8, file_len=file_len,
                        block_type=wkw.BLOCK_TYPE_RAW)
    root = tmp_path / "ds"
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), np.full((2 * side, side, side), 5, np.uint8))
    path = root / "z0" / "y0" / "x0.wkw"  # the first file changes; the second does not
    first = path.stat().st_mtime_ns
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", KEEPS_CHANGING, str(path), str(stop)])
    loader = Loader(open_volume(root), prefetch_enabled=False)
    req = PlaneRequest(XY, 0, (0, 0), (2 * side, side))
    try:
        for _ in range(600):  # until the writer has begun (bounded)
            if path.stat().st_mtime_ns != first:
                break
            time.sleep(0.05)
        loader.set_wanted([req], 0, (0, 0, 0))
        assert loader.wait_idle(60)
        plane = loader.plane(req)
        assert (plane.status[:side] == Status.CHANGING).all()
        assert (plane.status[side:] == Status.DATA).all()
        assert any(isinstance(e, FileChangingError) and e.path == str(path)
                   for e in plane.errors.values())
    finally:
        stop.write_text("")
        writer.wait(timeout=60)
    try:
        for _ in range(300):  # the loader reads the blocks again once the file settled
            plane = loader.plane(req)
            if (plane.status == Status.DATA).all():
                break
            loader.wait_idle(5)
            time.sleep(0.05)
        assert (plane.status == Status.DATA).all()
        assert np.unique(plane.data).tolist() == [5]
        assert not plane.errors
    finally:
        loader.close()
