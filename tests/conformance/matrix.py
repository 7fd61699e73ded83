"""Running one cell of the conformance matrix: a dataset (``writers.WRITERS``), served from a
store (local, HTTP through ``tests/remote/range_server.py``, S3 through moto), with a fault,
taken out through every path (``Volume.read``, the loader's plane, ``info --json``,
``compare --json`` against the healthy local copy, ``digest --check`` against the healthy
local copy's list).  Each path's outcome is a short word (see ``test_matrix.TABLE``)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import writers

PATHS = ("read", "plane", "info", "compare", "digest")
STORES = ("local", "http", "s3")
FAULTS = ("none", "damaged", "cut", "http500", "reset", "cache", "slowdown", "etag", "rewrite")
#: The faults a server injects: (its attribute, aimed at chunk files only).
SERVER_FAULTS = {"cut": "cut_next", "http500": "fail_next", "reset": "reset_next",
                 "slowdown": "fail_next", "etag": "etag_next"}
#: Faults that last (every request for the chunks' bytes, no retries); the others pass:
#: ``slowdown`` is S3 throttling (503 SlowDown) of the first ``THROTTLED`` requests, which
#: the store's retries ride out.
THROTTLED = 2
#: The S3 faults (through ``fault_proxy.FaultProxy`` in front of moto).
S3_FAULTS = ("none", "damaged", "http500", "slowdown", "cut", "reset", "etag", "rewrite")
#: The HTTP faults (``range_server.RangeServer``).
HTTP_FAULTS = ("none", "damaged", "cut", "http500", "reset", "cache", "rewrite")
#: The local faults.
LOCAL_FAULTS = ("none", "damaged", "rewrite")
#: How long a read waits for a changing file to settle in the cells that meet one (the
#: program's wait, shortened so that the cells stay cheap, still longer than the racy window
#: ``handles.RACY_WINDOW_NS`` a file must be quiet for: the outcome is the same).
SETTLE_NS = 150_000_000
#: Another process rewriting a file in place, again and again until told to stop: each
#: version in two ``write`` calls (the file holds a torn block between them) and a
#: truncation, versions alternating, never a pause long enough for the file to settle; at
#: the end the first version is put back (in one write).
REWRITER = """
import os, sys, time
path, old, new, stop = sys.argv[1:5]
versions = [open(old, "rb").read(), open(new, "rb").read()]
end = time.monotonic() + 300  # a bound in case the cell never says stop
k = 0
while not os.path.exists(stop) and time.monotonic() < end:
    k += 1
    data = versions[k % 2]
    split = len(data) // 2
    fd = os.open(path, os.O_WRONLY)
    os.pwrite(fd, data[:split], 0)
    time.sleep(0.01)
    os.pwrite(fd, data[split:], split)
    os.ftruncate(fd, len(data))
    os.close(fd)
    time.sleep(0.01)
fd = os.open(path, os.O_WRONLY)
os.pwrite(fd, versions[0], 0)
os.ftruncate(fd, len(versions[0]))
os.close(fd)
"""


def range_server_module() -> Any:
    path = Path(__file__).resolve().parents[1] / "remote" / "range_server.py"
    spec = importlib.util.spec_from_file_location("range_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("range_server", module)
    spec.loader.exec_module(module)
    return module


@dataclass
class Servers:
    root: Path
    http: Any  #: a RangeServer over ``root``
    s3_env: dict[str, str]  #: the environment that points the S3 client at moto (its proxy)
    s3_proxy: Any  #: the FaultProxy in front of moto
    digests: Path  #: folder of the healthy local copies' digest lists
    s3: Any = None  #: a boto3 client of moto (bucket ``conf``)


def location(servers: Servers, store: str, kind: str, name: str) -> str:
    sub = writers.WRITERS[name][1]
    rel = f"{kind}/{name}" + (f"/{sub}" if sub else "")
    if store == "local":
        return str(servers.root / rel)
    if store == "http":
        return f"{servers.http.url}/{rel}"
    return f"s3://conf/{rel}"


@contextlib.contextmanager
def settings(env: dict[str, str]) -> Iterator[None]:
    """The environment for one cell (a fresh range cache, the S3 endpoint), restored after."""
    from viewer.environment import read_config
    from viewer.format.remote import config as remote_config

    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    remote_config.reset(read_config(os.environ))
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        remote_config.reset(read_config(os.environ))


def _quiet(main: Any, argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = int(main(argv))
    return status, out.getvalue()


def _want(name: str) -> np.ndarray:
    return writers.truth_float() if writers.WRITERS[name][4] else writers.truth()


def _want_new(name: str) -> np.ndarray:
    new = writers.truth_new()
    return new.astype(np.float32) if writers.WRITERS[name][4] else new


def _judge(got: np.ndarray, name: str, z: int | None = None) -> str:
    """``voxels`` (the array written), ``new`` (every chunk whole, of the array written or
    of the other version ``rewrite/<name>`` is rewritten with, some of the latter) or
    ``WRONG`` (a chunk of neither, or of both: a mixed block)."""
    old, new = _want(name), _want_new(name)
    if z is not None:
        old, new = old[:, :, z], new[:, :, z]
    if np.array_equal(got, old):
        return "voxels"
    c = writers.CHUNK
    for corner in np.ndindex(*(-(-n // c) for n in got.shape)):
        box = tuple(slice(i * c, (i + 1) * c) for i in corner)
        if not (np.array_equal(got[box], old[box]) or np.array_equal(got[box], new[box])):
            return "WRONG"
    return "new"


def path_read(loc: str, name: str) -> str:
    from viewer.format import FormatError, open_volume

    try:
        vol = open_volume(loc)
        try:
            got = vol.read((0, 0, 0), writers.SHAPE)
        finally:
            vol.close()
    except FormatError as exc:
        return type(exc).__name__
    return _judge(got[0], name)


def path_plane(loc: str, name: str) -> str:
    """The window's way: the core loader reads the blocks of an XY plane through the chunk
    level (``Loader.plane``); failed pixels name their blocks' errors."""
    from viewer.core.loader import Loader
    from viewer.core.slicing import XY, PlaneRequest, Status
    from viewer.format import FormatError, open_volume

    try:
        vol = open_volume(loc)
    except FormatError as exc:
        return type(exc).__name__
    z = 3
    req = PlaneRequest(XY, z, (0, 0), (writers.SHAPE[0], writers.SHAPE[1]))
    loader = Loader(vol, workers=1, prefetch_enabled=False)
    try:
        loader.set_wanted([req], 0, (0, 0, z))
        if not loader.wait_idle(60):
            return "TIMEOUT"
        plane = loader.plane(req)
    finally:
        loader.close()
    failed = plane.status == Status.FAILED
    if failed.any():
        return "failed:" + "+".join(sorted({type(e).__name__ for e in plane.errors.values()}))
    if (plane.status == Status.CHANGING).any():
        return "changing:" + "+".join(sorted({type(e).__name__
                                              for e in plane.errors.values()}))
    if not (plane.status == Status.DATA).all():
        return "INCOMPLETE"
    return _judge(plane.data[0], name, z)


def path_info(loc: str) -> str:
    from viewer.cli import info

    status, out = _quiet(info.main, [loc, "--json"])
    if status == 2:
        return "error/2"
    verdict = json.loads(out)["verdict"]
    word = "not checked" if verdict.startswith("not checked") else verdict.split(" ")[0]
    return f"{word}/{status}"


def path_compare(loc: str, healthy: str) -> str:
    from viewer.cli import compare

    status, out = _quiet(compare.main, [healthy, loc, "--json"])
    if status == 2:
        return "error/2"
    return f"{'equal' if json.loads(out)['equal'] else 'different'}/{status}"


def path_digest(loc: str, listing: Path) -> str:
    from viewer.cli import digest

    status, out = _quiet(digest.main, [loc, "--check", str(listing), "--json"])
    if status == 2:
        return "error/2"
    doc = json.loads(out)
    word = "match" if doc["equal"] else ("unreadable" if doc["unreadable"] else "differ")
    return f"{word}/{status}"


def digest_list(servers: Servers, name: str) -> Path:
    from viewer.cli import digest

    out = servers.digests / f"{name}.txt"
    if not out.exists():
        status, _ = _quiet(digest.main, [location(servers, "local", "good", name),
                                         "-o", str(out)])
        assert status == 0
    return out


def _corrupt_cache(cache: Path) -> int:
    """Flip one byte of every cached range's data; how many."""
    n = 0
    for path in cache.rglob("*.c32"):
        raw = bytearray(path.read_bytes())
        if len(raw) > 4:
            raw[(len(raw) - 4) // 2] ^= 0x5A
            path.write_bytes(bytes(raw))
            n += 1
    return n


def run_cell(servers: Servers, name: str, store: str, fault: str, work: Path) -> dict[str, str]:
    """Every path's outcome for one (dataset, store, fault)."""
    from viewer import environment

    kind = "damaged" if fault == "damaged" else "good"
    loc = location(servers, store, kind, name)
    healthy = location(servers, "local", "good", name)
    retries = "3" if fault == "slowdown" else "0" if fault in SERVER_FAULTS else "1"
    env = {environment.CACHE_DIR_ENV: str(work / "cache"), environment.TIMEOUT_ENV: "5",
           environment.RETRIES_ENV: retries}
    if store == "s3":
        env.update(servers.s3_env)
    srv = servers.s3_proxy if store == "s3" else servers.http
    if fault == "cache":
        with settings({**env, environment.CACHE_DIR_ENV: str(work / "first")}):
            assert path_read(loc, name) == "voxels"
            from viewer.format import shutdown

            shutdown()  # the cache written out
        shutil.copytree(work / "first", work / "cache")
        assert _corrupt_cache(work / "cache") > 0
    out: dict[str, str] = {}
    if fault == "rewrite":
        loc = location(servers, store, "rewrite", name)
    with settings(env), _settle_wait(fault), _rewriting(servers, name, store, fault, work):
        if fault in SERVER_FAULTS:
            srv.fault_match = writers.WRITERS[name][3]
            srv.fault_from = writers.FAULT_FROM.get(name, 0)
            setattr(srv, SERVER_FAULTS[fault], THROTTLED if fault == "slowdown" else 10**9)
            if fault == "slowdown":
                srv.fail_status, srv.fail_code = 503, "SlowDown"
        try:
            out["read"] = path_read(loc, name)
            out["plane"] = path_plane(loc, name)
            out["info"] = path_info(loc)
            out["compare"] = path_compare(loc, healthy)
            out["digest"] = path_digest(loc, digest_list(servers, name))
        finally:
            for attr in set(SERVER_FAULTS.values()):
                setattr(srv, attr, 0)
            srv.fail_status = 500
            if store == "s3":
                srv.fail_code = "InternalError"
            srv.fault_match = None
            srv.fault_from = 0
    return out


@contextlib.contextmanager
def _settle_wait(fault: str) -> Iterator[None]:
    """The shorter settle wait (``SETTLE_NS``) in the cells that meet a changing file."""
    from viewer.format import handles

    if fault not in ("etag", "rewrite"):
        yield
        return
    old, handles.SETTLE_NS = handles.SETTLE_NS, SETTLE_NS
    try:
        yield
    finally:
        handles.SETTLE_NS = old


@contextlib.contextmanager
def _rewriting(servers: Servers, name: str, store: str, fault: str, work: Path
               ) -> Iterator[None]:
    """For the ``rewrite`` fault: another process (``REWRITER``) rewrites the victim file of
    ``rewrite/<name>`` in place, alternating with ``new/<name>``'s, while the paths run; in
    S3 the object is replaced (a ``PUT`` of each version in turn: an object store has no
    writes in place)."""
    import subprocess
    import time

    if fault != "rewrite":
        yield
        return
    victim = writers.WRITERS[name][2]
    if store == "s3":
        with _replacing(servers, name, victim):
            yield
        return
    target = servers.root / "rewrite" / name / victim
    stop = work / "stop-rewriting"
    first = target.stat().st_mtime_ns
    proc = subprocess.Popen([sys.executable, "-c", REWRITER, str(target),
                             str(servers.root / "good" / name / victim),
                             str(servers.root / "new" / name / victim), str(stop)])
    servers.http.last_modified = True  # what tells a client that the file is racy
    try:
        for _ in range(400):  # until it has begun (bounded)
            if target.stat().st_mtime_ns != first or proc.poll() is not None:
                break
            time.sleep(0.025)
        yield
    finally:
        servers.http.last_modified = False
        stop.write_text("")
        proc.wait(timeout=60)


@contextlib.contextmanager
def _replacing(servers: Servers, name: str, victim: str) -> Iterator[None]:
    """A thread that puts the two versions of ``rewrite/<name>/<victim>`` in S3 in turn,
    until the cell ends (then the first one back)."""
    import threading

    key = f"rewrite/{name}/{victim}"
    versions = [(servers.root / kind / name / victim).read_bytes() for kind in ("good", "new")]
    stop = threading.Event()

    def replace() -> None:
        k = 0
        while not stop.wait(0.02):
            k += 1
            servers.s3.put_object(Bucket="conf", Key=key, Body=versions[k % 2])

    thread = threading.Thread(target=replace, daemon=True, name="conformance-replace")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)
        servers.s3.put_object(Bucket="conf", Key=key, Body=versions[0])


@contextlib.contextmanager
def serving(root: Path) -> Iterator[Servers]:
    """Write every dataset below ``root``, serve it over HTTP (a range server) and S3 (moto,
    bucket ``conf``, through the fault proxy), both on 127.0.0.1; stopped on leaving."""
    import boto3
    from fault_proxy import FaultProxy
    from moto_s3 import MotoS3, s3_application

    for kind in ("good", "damaged", "rewrite", "new"):
        (root / kind).mkdir(parents=True, exist_ok=True)
    writers.write_all(root)
    (root / "digests").mkdir()
    server_cls = range_server_module().RangeServer
    # The bucket is filled (and objects replaced: ``_replacing``) through a moto server of its
    # own; the program reads it through the proxy, which holds moto's S3 application.
    with MotoS3() as moto, FaultProxy(s3_application()) as proxy, \
            server_cls(str(root)) as http:
        s3 = boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
        s3.create_bucket(Bucket="conf")
        for kind in ("good", "damaged", "rewrite"):
            for dirpath, _, files in os.walk(root / kind):
                for fname in files:
                    full = os.path.join(dirpath, fname)
                    s3.put_object(Bucket="conf", Body=Path(full).read_bytes(),
                                  Key=os.path.relpath(full, root).replace(os.sep, "/"))
        s3_env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                  "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": proxy.url,
                  "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
        yield Servers(root, http, s3_env, proxy, root / "digests", s3)
