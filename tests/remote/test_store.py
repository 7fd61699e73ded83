"""The remote store against real servers on 127.0.0.1: range reads merged, a revisit served by
the on-disk cache (in this run and the next), 404 as missing, retries of 500s, a hanging server
bounded by the timeout, a server that ignores Range named, S3 through moto, counters."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from range_server import RangeServer

from viewer.environment import variables
from viewer.format.remote import RangeNotSupportedError, RemoteIOError, configure, current, stats
from viewer.format.remote.diskcache import RangeCache
from viewer.format.remote.store import RemoteStore, aws_config, range_cache
from viewer.format.store import is_url, open_store

KEY = "ds/color/1/z0/y0/x0.wkw"


def _bytes(data_root: Path, key: str = KEY) -> bytes:
    return (data_root / key).read_bytes()


def test_urls_are_urls() -> None:
    assert is_url("s3://bucket/x") and is_url("https://h/x") and is_url("gs://b")
    assert not is_url("/tmp/x") and not is_url("C://x") and not is_url("relative/path")


def test_neighbouring_ranges_are_one_request_and_a_revisit_none(
        http: RangeServer, data_root: Path) -> None:
    configure(merge_gap=4096)
    whole = _bytes(data_root)
    store = open_store(http.url)
    ranges = [(100, 50), (150, 70), (220, 10), (9000, 100)]
    got = store.read_ranges(KEY, ranges)
    assert got == [whole[o:o + n] for o, n in ranges]
    gets = [r for r in http.log if r[0] == "GET"]
    assert sorted(r[2] for r in gets) == ["bytes=100-229", "bytes=9000-9099"]
    assert all(r[2] is not None for r in http.log)  # never a whole-file GET
    http.reset_counts()
    assert store.read_ranges(KEY, [(160, 20), (9010, 5)]) == [whole[160:180], whole[9010:9015]]
    assert http.requests == 0
    # A later run (a new store, the same cache folder) does not ask again either.
    again = RemoteStore(http.url)
    assert again.read(KEY, 100, 130) == whole[100:230]
    assert http.requests == 0


def test_read_past_the_end_is_short_as_pread(http: RangeServer, data_root: Path) -> None:
    whole = _bytes(data_root)
    store = open_store(http.url)
    assert store.read(KEY, len(whole) - 10, 100) == whole[-10:]
    assert store.read(KEY, len(whole) + 10, 5) == b""
    assert store.size(KEY) == len(whole)


def test_missing_object_is_file_not_found_and_remembered(http: RangeServer) -> None:
    store = open_store(http.url)
    with pytest.raises(FileNotFoundError):
        store.read("ds/nope.wkw", 0, 10)
    assert store.size("ds/nope.wkw") is None and not store.exists("ds/nope.wkw")
    before = http.requests
    with pytest.raises(FileNotFoundError):
        store.read("ds/nope.wkw", 0, 10)
    assert http.requests == before


def test_two_500s_then_success_is_retried(http: RangeServer, data_root: Path) -> None:
    http.fail_next = 2
    store = open_store(http.url)
    assert store.read(KEY, 0, 16) == _bytes(data_root)[:16]
    assert http.requests == 3


def test_a_server_that_keeps_failing_is_a_named_error_with_its_status(
        http: RangeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(retries=1)
    http.fail_next = 100
    http.fail_status = 503
    store = open_store(http.url)
    errors_before = stats().errors
    with pytest.raises(RemoteIOError) as info:
        store.read(KEY, 0, 16)
    assert info.value.status == 503
    assert "HTTP 503" in str(info.value) and http.url in str(info.value)
    assert http.requests == 2  # one retry
    assert stats().errors == errors_before + 1
    assert "503" in (stats().last_error or "")


def test_a_hanging_server_times_out(http: RangeServer) -> None:
    configure(timeout_s=0.5, retries=1)
    http.hang = True
    store = open_store(http.url)
    started = time.monotonic()
    with pytest.raises(RemoteIOError) as info:
        store.read(KEY, 0, 16)
    assert time.monotonic() - started < 30  # bounded (not a speed assertion: hangs are 30 s)
    assert info.value.status is None
    assert "timed out" in str(info.value)


def test_a_server_that_ignores_range_is_named(http: RangeServer) -> None:
    http.ignore_range = True
    store = open_store(http.url)
    with pytest.raises(RangeNotSupportedError) as info:
        store.read(KEY, 100, 16)
    assert "ignores Range" in str(info.value)
    assert info.value.path == f"{http.url}/{KEY}"


def test_prefetch_fetches_ahead_and_reads_then_cost_nothing(
        http: RangeServer, data_root: Path) -> None:
    whole = _bytes(data_root)
    store = open_store(http.url)
    store.prefetch(KEY, [(0, 100), (1000, 100)])  # type: ignore[attr-defined]
    cache = range_cache()
    assert cache is not None
    url = f"{http.url}/{KEY}"
    deadline = time.monotonic() + 30
    while not (cache.covers(url, 0, 100) and cache.covers(url, 1000, 1100)) \
            and time.monotonic() < deadline:
        time.sleep(0.01)
    n = http.requests
    assert n == 1  # the two ranges, 900 bytes apart, in one request
    assert store.read_ranges(KEY, [(10, 50), (1000, 100)]) == [whole[10:60], whole[1000:1100]]
    assert http.requests == n


def test_no_cache_when_its_size_is_zero(http: RangeServer) -> None:
    configure(cache_bytes=0)
    store = open_store(http.url)
    store.read(KEY, 0, 16)
    store.read(KEY, 0, 16)
    assert http.requests == 2


def test_cache_is_bounded_and_drops_least_recently_used(tmp_path: Path) -> None:
    cache = RangeCache(str(tmp_path / "c"), budget_bytes=250)
    for k in range(4):
        cache.put("http://h/o", 100 * k, bytes([k]) * 100)
    assert cache.used_bytes <= 250
    assert cache.get("http://h/o", 0, 100) is None  # the oldest went
    assert cache.get("http://h/o", 300, 400) == bytes([3]) * 100
    assert sum(len(f) for _, _, f in os.walk(tmp_path / "c")) <= 2 + 2  # ranges + meta
    # A second cache on the same folder (the next run) finds what is there, pieces joined.
    cache.put("http://h/o", 400, bytes([4]) * 50)
    later = RangeCache(str(tmp_path / "c"), budget_bytes=1000)
    assert later.get("http://h/o", 350, 420) == bytes([3]) * 50 + bytes([4]) * 20


def test_a_smaller_cache_size_drops_the_least_recently_used_at_once(tmp_path: Path) -> None:
    from viewer.format.remote import clear_cache, set_cache_mb
    from viewer.format.remote.store import cache_info

    cache = RangeCache(str(tmp_path / "c"), budget_bytes=1000)
    for k in range(4):
        cache.put("http://h/o", 100 * k, bytes([k]) * 100)
    cache.get("http://h/o", 0, 100)  # used again: the newest
    cache.set_budget(200)
    assert cache.used_bytes <= 200
    assert cache.get("http://h/o", 0, 100) == bytes([0]) * 100
    assert cache.get("http://h/o", 100, 200) is None
    # The process's cache: sized by the setting, emptied on demand.
    set_cache_mb(1)
    shared = range_cache()
    assert shared is not None and shared.budget == 1 << 20
    shared.put("http://h/p", 0, b"x" * 1000)
    assert cache_info().used_bytes == 1000 and cache_info().budget_bytes == 1 << 20
    clear_cache()
    assert cache_info().used_bytes == 0 and shared.get("http://h/p", 0, 1000) is None


def test_cache_drops_an_object_that_changed(tmp_path: Path) -> None:
    cache = RangeCache(str(tmp_path / "c"), budget_bytes=10_000)
    cache.put("http://h/o", 0, b"a" * 10, size=100, etag="v1")
    assert cache.get("http://h/o", 0, 10) == b"a" * 10
    cache.put("http://h/o", 50, b"b" * 10, size=100, etag="v2")
    assert cache.get("http://h/o", 0, 10) is None
    assert cache.get("http://h/o", 50, 60) == b"b" * 10


def test_s3_range_reads_through_moto(s3: dict, data_root: Path) -> None:
    whole = _bytes(data_root)
    store = open_store("s3://bkt/data")
    assert store.read_ranges(KEY, [(0, 16), (500, 100)]) == [whole[:16], whole[500:600]]
    assert store.size(KEY) == len(whole)
    assert store.list_dir("ds") == ["color", "datasource-properties.json"]
    assert store.is_dir("ds/color") and not store.is_dir("ds/nothing")
    with pytest.raises(FileNotFoundError):
        store.read("ds/nope", 0, 1)


def test_s3_credentials_from_the_shared_files(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "credentials").write_text(
        "[default]\naws_access_key_id = A\naws_secret_access_key = B\n"
        "[other]\naws_access_key_id = C\naws_secret_access_key = D\n")
    (tmp_path / "config").write_text("[profile other]\nregion = eu-west-1\n"
                                     "endpoint_url = http://127.0.0.1:9\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    env = dict(os.environ)
    assert aws_config(False, env) == {"aws_access_key_id": "A", "aws_secret_access_key": "B"}
    env["AWS_PROFILE"] = "other"
    assert aws_config(False, env) == {"aws_access_key_id": "C", "aws_secret_access_key": "D",
                                 "aws_region": "eu-west-1",
                                 "aws_endpoint": "http://127.0.0.1:9"}
    anon = aws_config(True, env)
    assert anon["skip_signature"] is True and "aws_access_key_id" not in anon


def test_anon_reads_a_public_bucket(s3: dict, data_root: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    configure(anon=True)
    assert current().anon and variables(current())["WKW_VIEWER_ANON"] == "1"
    store = open_store("s3://bkt/data")
    assert store.read(KEY, 0, 16) == _bytes(data_root)[:16]


def test_anon_flag_of_any_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from viewer.cli import main
    from viewer.format.remote import current

    assert main(["--anon", "info", str(tmp_path / "nothing")]) == 2
    assert current().anon  # handed to child processes with the rest of the settings
    assert "--anon" not in capsys.readouterr().err


def test_queued_read_ahead_is_dropped_when_cancelled(http: RangeServer, data_root: Path) -> None:
    from viewer.format.remote.store import COUNTERS

    configure(merge_gap=0, timeout_s=30)
    whole = _bytes(data_root)
    store = open_store(http.url)
    http.fault_match = "x0.wkw"
    http.hang = True
    ranges = [(200 * k, 50) for k in range(100)]  # more than the 64 requests in flight
    store.prefetch(KEY, ranges)  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while http.hanging < 64 and time.monotonic() < deadline:  # 64 on the wire, 36 queued
        time.sleep(0.01)
    store.cancel_prefetch()  # type: ignore[attr-defined]
    http.release()
    while (stats().in_flight or stats().queued) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert 64 <= http.requests < 100
    assert COUNTERS.in_flight == 0
    # What was dropped is fetched again when read.
    assert store.read_ranges(KEY, ranges[-3:]) == [whole[o:o + n] for o, n in ranges[-3:]]


def _until(cond: object, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.005)
    return bool(cond())  # type: ignore[operator]


def test_read_ahead_on_the_wire_is_stopped_and_keeps_nothing(
        http: RangeServer, data_root: Path) -> None:
    configure(merge_gap=0, timeout_s=30)
    whole = _bytes(data_root)
    store = open_store(http.url)
    cache = range_cache()
    assert cache is not None
    http.fault_match = "x0.wkw"
    http.hang = True
    before = stats()
    store.prefetch(KEY, [(1000, 500)])  # type: ignore[attr-defined]
    assert _until(lambda: http.hanging == 1)  # on the wire, the server not answering
    assert store.cancel_prefetch() == 1  # type: ignore[attr-defined]
    # Stopped while the server still hangs: the request is over at the client, counted as
    # cancelled and not as an error, and nothing of it is in the cache.
    assert _until(lambda: stats().in_flight == 0)
    after = stats()
    assert after.cancelled == before.cancelled + 1 and after.errors == before.errors
    assert not cache.covers(store.location(KEY), 1000, 1500)
    http.release()
    http.reset_counts()
    assert store.read(KEY, 1000, 500) == whole[1000:1500]  # asked for again, whole and right
    assert http.requests == 1
    assert cache.get(store.location(KEY), 1000, 1500) == whole[1000:1500]


def test_a_read_waiting_on_read_ahead_is_never_stopped(
        http: RangeServer, data_root: Path) -> None:
    import threading

    configure(merge_gap=0, timeout_s=30)
    whole = _bytes(data_root)
    store = open_store(http.url)
    http.fault_match = "x0.wkw"
    http.hang = True
    store.prefetch(KEY, [(2000, 400)])  # type: ignore[attr-defined]
    assert _until(lambda: http.hanging == 1)
    got: list[bytes | BaseException] = []

    def read() -> None:
        try:
            got.append(store.read(KEY, 2100, 100))
        except BaseException as exc:  # noqa: BLE001 - checked below
            got.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    flying = store._flying  # type: ignore[attr-defined]
    assert _until(lambda: any(job.wanted for job in flying.get(KEY, [])))  # joined it
    assert store.cancel_prefetch() == 0  # type: ignore[attr-defined]
    http.release()
    reader.join(30)
    assert got == [whole[2100:2200]]
    assert http.requests == 1  # the read-ahead's request served the read


def test_read_ahead_of_units_kept_survives_a_move(http: RangeServer, data_root: Path) -> None:
    from viewer.format.wkw.remote import StoreWkwVolume

    configure(merge_gap=0, timeout_s=30)
    store = open_store(http.url + "/ds/color/1")
    volume = StoreWkwVolume.open(store)
    http.fault_match = ".wkw"
    http.hang = True  # before the reads start: one answered first would never hang
    here, there = (0, 0, 0), (1, 0, 0)
    for unit in (here, there):
        assert volume.open_unit(unit) is not None  # their header reads start: on the wire
    assert _until(lambda: http.hanging == 2)
    before = stats().cancelled
    volume.drop_read_ahead([here])  # the cursor moved on from ``there``
    assert _until(lambda: stats().cancelled == before + 1)
    assert [key for key in store._flying] == [volume.unit_key(here)]  # type: ignore[attr-defined]
    http.release()
    volume.close()


def test_a_far_jump_stops_the_read_ahead_of_the_units_left(tmp_path: Path) -> None:
    """The loader on a volume at a URL: after a jump to units far away, the read-ahead of
    the units left behind is stopped (what a worker waits for is not), and what was stopped
    is read whole when the place is shown again."""
    import numpy as np
    import wkw as reference

    from viewer.core.loader import Loader
    from viewer.core.slicing import XY, PlaneRequest
    from viewer.format import open_volume

    # (No jump tables ahead: the header reads on the wire are the loader's own.)
    configure(merge_gap=0, timeout_s=30, tables_ahead_bytes=0)
    truth = np.arange(64 * 64 * 8, dtype=np.uint8).reshape(64, 64, 8, order="F") * 7
    header = reference.Header(np.uint8, block_len=8, file_len=1,
                              block_type=reference.Header.BLOCK_TYPE_LZ4HC)
    with reference.Dataset.create(str(tmp_path / "tiny"), header) as ds:  # 8 x 8 x 1 units
        ds.write((0, 0, 0), truth)
    with RangeServer(str(tmp_path)) as srv:
        volume = open_volume(f"{srv.url}/tiny")
        assert volume.shape == (64, 64, 8)  # probed before the server hangs
        store = volume.store  # type: ignore[attr-defined]
        loader = Loader(volume, budget_bytes=16 << 20, prefetch_enabled=False)
        try:
            srv.hang = True
            here = PlaneRequest(XY, 0, (0, 0), (32, 32))  # units (0..3, 0..3, 0)
            loader.set_wanted([here], 0, (0, 0, 0))
            assert _until(lambda: srv.hanging >= 8)  # header reads and read-ahead, held
            left = {volume.unit_key((x, y, 0)) for x in range(4) for y in range(4)}
            flying = store._flying

            def left_read_ahead() -> list[Any]:  # queued or on the wire, nobody waiting
                return [job for key in left for job in list(flying.get(key, ()))
                        if not job.wanted]

            assert _until(lambda: len(left_read_ahead()) > 0)
            ahead, errors = left_read_ahead(), stats().errors
            far = PlaneRequest(XY, 0, (48, 48), (64, 64))  # units (6..7, 6..7, 0)
            loader.set_wanted([far], 0, (56, 56, 0))
            # Every read-ahead of the units left is stopped (the request loop stops those on
            # the wire one by one); what a worker waits for is not.
            assert _until(lambda: all(job.dropped for job in ahead)), \
                [(job.key, job.start, job.end, job.started) for job in ahead if not job.dropped]
            srv.release()
            assert loader.wait_idle(30)
            loader.set_wanted([here], 0, (0, 0, 0))
            assert _until(lambda: loader.plane(here).complete)
            np.testing.assert_array_equal(loader.plane(here).data[0], truth[:32, :32, 0])
            assert stats().errors == errors  # stopping is never a failure
        finally:
            srv.release()
            loader.close()


def test_read_ahead_asked_in_pieces_joins_a_queued_request(
        http: RangeServer, data_root: Path) -> None:
    """Ranges of one object asked for one after another while a request of it near them is
    still queued (every slot busy) go out as that one request; a range far off as its own."""
    configure(merge_gap=1000, timeout_s=30)
    whole = _bytes(data_root)
    store = open_store(http.url)
    slots = store._pool.limit  # type: ignore[attr-defined]
    other = "ds/color/1/z0/y1/x0.wkw"
    http.fault_match = other
    http.hang = True
    for k in range(slots):  # every slot held by a request the server does not answer yet
        store.prefetch(other, [(k * 2000, 10)])  # type: ignore[attr-defined]
    assert _until(lambda: http.hanging == slots)
    store.prefetch(KEY, [(100, 50)])  # type: ignore[attr-defined]
    store.prefetch(KEY, [(900, 50)])  # type: ignore[attr-defined]
    store.prefetch(KEY, [(9000, 50)])  # type: ignore[attr-defined]
    http.release()
    ranges = [(100, 50), (900, 50), (9000, 50)]
    assert store.read_ranges(KEY, ranges) == [whole[o:o + n] for o, n in ranges]
    gets = sorted(r for m, p, r in http.log if m == "GET" and p.endswith(KEY))
    assert gets == ["bytes=100-949", "bytes=9000-9049"]


def test_a_write_behind_cache_serves_at_once_and_writes_for_the_next_run(
        tmp_path: Path) -> None:
    cache = RangeCache(str(tmp_path / "c"), budget_bytes=10_000, write_behind=True)
    for k in range(4):
        cache.put("http://h/o", 100 * k, bytes([k]) * 100, size=1000)
    assert cache.get("http://h/o", 150, 250) == bytes([1]) * 50 + bytes([2]) * 50
    assert cache.flush(30)
    names = sorted(os.listdir(cache._folder("http://h/o")))
    assert names == ["0-100.c32", "100-200.c32", "200-300.c32", "300-400.c32", "meta.json"]
    later = RangeCache(str(tmp_path / "c"), budget_bytes=10_000)
    assert later.get("http://h/o", 0, 400) == b"".join(bytes([k]) * 100 for k in range(4))
    assert later.meta("http://h/o")["size"] == 1000
    # Dropped before or while it was written: not left on disk.
    cache.put("http://h/o", 500, b"x" * 100, size=1000)
    cache.clear()
    assert cache.flush(30)
    assert not os.path.exists(os.path.join(cache._folder("http://h/o"), "500-600.c32"))


def test_a_refused_connection_is_named_refused_with_its_url(data_root: Path) -> None:
    configure(retries=0, timeout_s=5)
    with RangeServer(str(data_root)) as gone:
        url = gone.url
    store = open_store(url)  # nobody listens there any more
    with pytest.raises(RemoteIOError) as info:
        store.read(KEY, 0, 16)
    message = str(info.value)
    assert "connection refused" in message and "timed out" not in message
    assert f"{url}/{KEY}" in message


def test_the_timeline_records_each_request_queued_sent_and_done(
        http: RangeServer, data_root: Path) -> None:
    from viewer.format.remote import timeline

    configure(merge_gap=0)
    whole = _bytes(data_root)
    store = open_store(http.url)
    assert not timeline.recording()
    timeline.start()
    assert store.read_ranges(KEY, [(0, 10), (5000, 20)]) == [whole[:10], whole[5000:5020]]
    events = timeline.stop()
    assert not timeline.recording()
    reqs = sorted(timeline.requests(events), key=lambda r: r.start)
    assert [(r.start, r.end, r.priority, r.outcome, r.nbytes) for r in reqs] == [
        (0, 10, "read", "done", 10), (5000, 5020, "read", "done", 20)]
    assert all(r.queued <= r.sent <= r.done for r in reqs)  # type: ignore[operator]
    assert "wait" in timeline.format_events(events)
