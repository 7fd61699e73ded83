"""The remote store when the object under a read changes (another program rewrites or replaces
the file on the server), and when its executor is closed: the bytes asked for are of the
version asked for, or the read names the change; a closed store's requests end with a named
error and start no thread; a store dropped unclosed ends its thread."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
from range_server import RangeServer

from viewer.format.errors import FileChangedError
from viewer.format.executor import Executor, using
from viewer.format.remote import RemoteIOError, configure
from viewer.format.remote.store import RemoteStore

KEY = "object.bin"
LONG = bytes(range(256)) * 40  # 10,240 bytes
SHORT = bytes(reversed(range(256))) * 20  # 5,120 bytes


@pytest.fixture
def served(tmp_path: Path) -> tuple[Path, RangeServer]:
    (tmp_path / KEY).write_bytes(LONG)
    configure(merge_gap=0, timeout_s=10, cache_bytes=0)
    with RangeServer(str(tmp_path)) as srv:
        yield tmp_path / KEY, srv


def _store(srv: RangeServer, executor: Executor) -> RemoteStore:
    with using(executor):
        return RemoteStore(srv.url)


def test_a_range_past_the_end_of_an_object_that_shrank_is_named_changed(
        served: tuple[Path, RangeServer]) -> None:
    path, srv = served
    with Executor() as executor:
        store = _store(srv, executor)
        stat = store.stat(KEY)
        assert stat is not None and stat.size == len(LONG)
        path.write_bytes(SHORT)  # truncated and rewritten in place
        with pytest.raises(FileChangedError):
            store.read_ranges(KEY, [(len(SHORT) + 100, 50)])


def test_a_range_of_one_version_is_not_cut_at_the_size_of_another(
        served: tuple[Path, RangeServer]) -> None:
    """Version A is known, then B (shorter) answers a read, then A is back: a read of A's
    version gets all of the range A holds, not the part that B's size would leave."""
    path, srv = served
    first = path.stat()
    with Executor() as executor:
        store = _store(srv, executor)
        stat = store.stat(KEY)
        assert stat is not None and stat.version is not None
        path.write_bytes(SHORT)
        assert store.read_ranges(KEY, [(0, 16)]) == [SHORT[:16]]  # B answered last
        path.write_bytes(LONG)
        os.utime(path, ns=(first.st_atime_ns, first.st_mtime_ns))  # A's ETag again
        got = store.read_ranges_of(KEY, [(len(SHORT) - 8, 2048)], stat.version)
        assert got == [LONG[len(SHORT) - 8:len(SHORT) + 2040]]


def test_a_closed_executors_store_names_the_stop_and_starts_no_thread(
        served: tuple[Path, RangeServer]) -> None:
    _, srv = served
    executor = Executor()
    store = _store(srv, executor)
    assert store.read_ranges(KEY, [(0, 8)]) == [LONG[:8]]
    executor.close()
    with pytest.raises(RemoteIOError, match="executor was closed"):
        store.read_ranges(KEY, [(100, 8)])
    assert not store._pool._thread.is_alive()  # noqa: SLF001 - no request loop again


def test_a_store_dropped_unclosed_ends_its_request_thread(
        served: tuple[Path, RangeServer]) -> None:
    """A library user's store that was never closed: its own executor and request loop go
    when it is collected, and so does the loop's thread."""
    _, srv = served
    store = RemoteStore(srv.url)  # no executor in effect: it makes its own
    assert store.read_ranges(KEY, [(0, 8)]) == [LONG[:8]]
    thread = store._pool._thread  # noqa: SLF001
    del store
    gc.collect()
    thread.join(10.0)
    assert not thread.is_alive()


def test_closing_an_executor_whose_request_loop_ended_first_is_quiet(
        served: tuple[Path, RangeServer], caplog: pytest.LogCaptureFixture) -> None:
    """At the interpreter's exit a request loop may end before its executor is closed: the
    close then has nothing to stop and says nothing (it logged a traceback of a closed
    event loop)."""
    _, srv = served
    executor = Executor()
    store = _store(srv, executor)
    assert store.read_ranges(KEY, [(0, 8)]) == [LONG[:8]]
    pool = store._pool  # noqa: SLF001
    pool._loop.call_soon_threadsafe(pool._loop.stop)  # noqa: SLF001 - as at exit
    pool._thread.join(10.0)  # noqa: SLF001
    assert pool._loop.is_closed()  # noqa: SLF001
    executor.close()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
