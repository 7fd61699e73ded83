"""The racy-timestamp rule over HTTP: a web server serving a file that another program
writes in place answers, between two of its ``write`` calls, with bytes of two versions under
a version tag (ETag of time and size) that is right for them.  Only the answer's
``Last-Modified`` tells that it may be such a moment: an answer of a file modified within the
coarse racy window is not trusted nor cached; it is asked for again once the window has
passed, and a file still that fresh after the settle wait is a ``FileChangingError`` naming
it.  (S3 and GCS replace objects whole: their answers are not held to the rule.)"""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pytest
from range_server import RangeServer

from viewer.format import FileChangingError, handles
from viewer.format.remote import configure
from viewer.format.remote.store import RemoteStore, racy_answer_ns


def test_racy_answer_window() -> None:
    now = 1_000_000 * 1_000_000_000 + 300_000_000  # 0.3 s into a second
    at = datetime.datetime.fromtimestamp(now // 1_000_000_000, datetime.UTC)
    assert racy_answer_ns(at, now) == handles.COARSE_WINDOW_NS - 300_000_000
    old = at - datetime.timedelta(seconds=3)
    assert racy_answer_ns(old, now) == 0
    assert racy_answer_ns(datetime.datetime.fromtimestamp(0, datetime.UTC), now) == 0  # none sent
    ahead = at + datetime.timedelta(seconds=10)  # a server clock far ahead: cannot tell
    assert racy_answer_ns(ahead, now) == 0
    assert racy_answer_ns(None, now) == 0


def _serve(tmp_path: Path, mtime: float) -> tuple[Path, RangeServer]:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 4)
    os.utime(path, (mtime, mtime))
    srv = RangeServer(str(tmp_path))
    srv.last_modified = True
    return path, srv


@pytest.mark.parametrize("whole", [True, False])
def test_a_file_modified_this_moment_is_not_trusted(tmp_path: Path, whole: bool) -> None:
    """Modified now (its Last-Modified within the window for longer than the settle wait):
    ``FileChangingError`` naming the URL, for a whole read and a range read; the same file
    dated a minute ago reads."""
    configure(retries=0, timeout_s=5)
    _, srv = _serve(tmp_path, time.time() + 1)  # its window outlasts the wait, however slow
    with srv:
        store = RemoteStore(srv.url)
        read = (lambda: store.read("f.bin")) if whole else \
            (lambda: store.read_ranges("f.bin", [(0, 16)])[0])
        with pytest.raises(FileChangingError) as err:
            read()
        assert err.value.path == f"{srv.url}/f.bin"
        os.utime(tmp_path / "f.bin", (time.time() - 60,) * 2)
        assert read()[:4] == bytes([0, 1, 2, 3])


def test_a_file_that_settles_within_the_wait_is_read_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Modified so long ago that its window ends within the settle wait: the read waits it
    out and gives the bytes (asked for again: the untrusted first answer was not cached)."""
    import math

    monkeypatch.setattr(handles, "SETTLE_NS", 2_000_000_000)
    configure(retries=0, timeout_s=5)
    _, srv = _serve(tmp_path, math.ceil(time.time() - 1.8))  # its window ends in 0.2..1.2 s
    with srv:
        store = RemoteStore(srv.url)
        assert store.read_ranges("f.bin", [(4, 4)])[0] == bytes([4, 5, 6, 7])
        asked = sum(1 for m, p, _ in srv.log if m == "GET" and p.endswith("f.bin"))
    assert asked == 2  # the racy answer, then the trusted one


def test_changing_blocks_over_http_look_changing_then_read_when_settled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's loader over HTTP: the blocks of a file the server says was modified this
    moment get the ``CHANGING`` look with the URL's ``FileChangingError`` (the other file's
    blocks read), and are read again, from the server, once it has settled."""
    import numpy as np

    from viewer.core.loader import Loader
    from viewer.core.slicing import XY, PlaneRequest, Status
    from viewer.format import open_volume, wkw

    monkeypatch.setattr(handles, "SETTLE_NS", 300_000_000)
    configure(retries=0, timeout_s=5, cache_bytes=0)
    header = wkw.Header(np.uint8, block_len=8, file_len=1, block_type=wkw.BLOCK_TYPE_RAW)
    root = tmp_path / "ds"
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), np.full((16, 8, 8), 5, np.uint8))
    old = time.time() - 60
    for path in root.rglob("*.wkw"):
        os.utime(path, (old, old))
    changing = root / "z0" / "y0" / "x0.wkw"
    os.utime(changing, (time.time() + 1,) * 2)  # racy for longer than the wait
    req = PlaneRequest(XY, 0, (0, 0), (16, 8))
    with RangeServer(str(tmp_path)) as srv:
        srv.last_modified = True
        loader = Loader(open_volume(f"{srv.url}/ds"), prefetch_enabled=False)
        try:
            loader.set_wanted([req], 0, (0, 0, 0))
            assert loader.wait_idle(60)
            plane = loader.plane(req)
            assert (plane.status[:8] == Status.CHANGING).all()
            assert (plane.status[8:] == Status.DATA).all()
            assert any(isinstance(e, FileChangingError) and
                       e.path == f"{srv.url}/ds/z0/y0/x0.wkw" for e in plane.errors.values())
            os.utime(changing, (old, old))  # settled
            for _ in range(300):  # the loader reads the blocks again (bounded)
                plane = loader.plane(req)
                if (plane.status == Status.DATA).all():
                    break
                loader.wait_idle(5)
                time.sleep(0.05)
            assert (plane.status == Status.DATA).all()
            assert np.unique(plane.data).tolist() == [5] and not plane.errors
        finally:
            loader.close()
