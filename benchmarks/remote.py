"""Remote benchmark: the browse benchmark's far jumps on its WKW LZ4HC dataset, read over
loopback HTTP through a proxy that adds 20 ms of latency to every request.

(Over 600 lines: the servers, the zarr3 copy, the three readers' child processes and the
request log, the timeline and the CPU figures of our reader live here together; the
instrumentation of ``run_ours`` is the seam to split along.)

``python -m benchmarks.remote [--json] [--rounds N] [--delay-ms 20] [--quick] [--only-ours]
[--timeline K]``

Set-up: the dataset of ``benchmarks.browse`` (1024 x 1024 x 512 uint8, 32^3 blocks, 256^3-voxel
files) is served by the tests' range-capable HTTP server (``tests/remote/range_server.py``, its
own process) behind ``benchmarks.latency_proxy`` (asyncio, its own process).  Each round runs
one child process per reader, interleaved:

* **ours**: the real window (offscreen, 1280 x 860, zoom 1, the loader) opens the dataset's URL
  with an empty on-disk range cache, then jumps to the browse benchmark's far positions; a jump
  is timed from setting the cursor to all three views complete; after each jump the loader is
  let finish its prefetch.  Then the dataset is opened again (fresh loaders, their prefetch
  off: nothing in memory but the on-disk cache and the store's knowledge of sizes) and the
  first jumps are revisited, counting the requests made until the views are complete.
* **tensorstore** (context, when it is installed): a zarr3 copy of the dataset (shards of the
  same 256^3 voxels, 32^3 inner chunks, blosc-lz4), read over the same proxy with no cache:
  per jump, the three 448 x 448 planes around the position (as ``browse``'s loader-only jumps),
  read concurrently; our ``Loader`` alone (no window) is timed on the same planes.

Figures (``--json``): ``jump_complete_ms_p50``/``_p95`` (ours, window, all rounds),
``bytes_fetched_over_needed`` (bytes fetched, every header, jump table and merged gap included,
over the stored bytes of the blocks the loader asked for — shown and prefetched),
``revisit_requests`` (requests made while the revisited jumps completed, summed; the revisit
runs with prefetch off, so that it counts what the views show, not a fresh loader's prefetch
around the place).  Targets: p95 <= 250 ms, <= 1.3, 0.  ``context`` (also on stderr with
``--json``): tensorstore's and our loader-only times for the same planes.  Detail: per-round
figures; for each revisit request, its unit, byte range, priority, caller, and whether the first
pass fetched it and the range cache held it; the views' planes where a revisit's differ from the
first pass's; the CPU seconds of the reader's threads over the jumps
(``thread_cpu_s_of_jumps``) and of the server and the proxy meanwhile
(``servers_cpu_s_during_ours``: they share the cores).  The machine's other load makes the
figures noisy: run it a few times.

``--timeline K``: the request timeline of the K-th jump (0-based) of the first round on
stderr (``viewer.format.remote.timeline``): every event (requests queued, sent, done; units'
table waits, block reads and hints; the loader's batches; each view complete) and then every
request's queued -> sent -> done.  ``--only-ours``: skip tensorstore and the loader alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import load_average, with_load
from benchmarks.browse import JUMPS, SHAPE, percentile
from benchmarks.browse import dataset as browse_dataset
from benchmarks.datasets import CACHE

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent / "tests" / "remote" / "range_server.py"
START = (512, 512, 256)
REVISITS = 6
JUMP_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 10.0
ZARR_NAME = "browse-f8-zarr3"


# -- the servers ---------------------------------------------------------------------------------
class Servers:
    """The file server and the latency proxy in front of it, each in its own process."""

    def __init__(self, root: Path, delay_ms: float) -> None:
        self.server = subprocess.Popen([sys.executable, str(SERVER), str(root)],
                                       stdout=subprocess.PIPE, text=True)
        upstream = self._url(self.server)
        self.proxy = subprocess.Popen([sys.executable, "-m", "benchmarks.latency_proxy", upstream,
                                       "--delay-ms", str(delay_ms)], stdout=subprocess.PIPE,
                                      text=True, cwd=HERE.parent)
        self.url = self._url(self.proxy)

    @staticmethod
    def _url(proc: subprocess.Popen[str]) -> str:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("http://"):
            raise SystemExit(f"a server did not start: {line!r}")
        return line

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds the server and the proxy used so far (Linux: ``/proc``; else empty):
        they share the machine's cores with the reader measured."""
        out: dict[str, float] = {}
        for name, proc in (("server", self.server), ("proxy", self.proxy)):
            try:
                fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                return {}
            out[name] = round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"),
                              2)
        return out

    def close(self) -> None:
        for proc in (self.proxy, self.server):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()


# -- the zarr3 copy --------------------------------------------------------------------------------
def zarr3_copy(root: Path) -> Path | None:
    """A zarr3 copy of the dataset (written once with tensorstore), or None without it."""
    try:
        import tensorstore as ts
    except ImportError:
        return None
    out = CACHE / ZARR_NAME
    if (out / ".complete").exists():
        return out
    from viewer.format import open_volume

    vol = open_volume(root)
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(out)},
            "metadata": {"shape": list(SHAPE), "data_type": "uint8",
                         "chunk_grid": {"name": "regular",
                                        "configuration": {"chunk_shape": [256, 256, 256]}},
                         "codecs": [{"name": "sharding_indexed", "configuration": {
                             "chunk_shape": [32, 32, 32],
                             "codecs": [{"name": "bytes"},
                                        {"name": "blosc", "configuration": {
                                            "cname": "lz4", "clevel": 9, "shuffle": "noshuffle",
                                            "typesize": 1, "blocksize": 0}}],
                             "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}]},
            "create": True, "delete_existing": True}
    arr = ts.open(spec).result()
    side = 256
    for z in range(0, SHAPE[2], side):
        for y in range(0, SHAPE[1], side):
            for x in range(0, SHAPE[0], side):
                block = vol.read((x, y, z), (side, side, side))[0]
                arr[x:x + side, y:y + side, z:z + side].write(block).result()
    vol.close()
    (out / ".complete").write_text("ok\n")
    return out


# -- our reader, in a child process ----------------------------------------------------------------
def plane_boxes(pos: tuple[int, int, int]
                ) -> list[tuple[int, int, tuple[int, int], tuple[int, int]]]:
    """(axis, index, lo, hi) of the three 448 x 448 planes around ``pos`` (browse's)."""
    def span(c: int, n: int) -> tuple[int, int]:
        return max(0, c - 224) // 64 * 64, min(n, (c + 224 + 63) // 64 * 64)
    (x0, x1), (y0, y1), (z0, z1) = (span(c, n) for c, n in zip(pos, SHAPE, strict=True))
    x, y, z = pos
    return [(2, z, (x0, y0), (x1, y1)), (1, y, (x0, z0), (x1, z1)), (0, x, (y0, z0), (y1, z1))]


def run_ours(url: str, quick: bool, trace: int | None = None) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from viewer.core.slicing import XY, XZ, YZ
    from viewer.core.state import ViewerState
    from viewer.format.remote import stats, timeline
    from viewer.format.wkw.remote import StoreWkwUnit
    from viewer.ui.main_window import QtMainWindow

    # Which blocks the loader asked for (read or read ahead): the bytes it needed.
    asked: dict[int, tuple[StoreWkwUnit, set[int]]] = {}
    read_stored, will_need = StoreWkwUnit.read_stored, StoreWkwUnit.will_need

    def note(unit: StoreWkwUnit, indices: Any) -> None:
        asked.setdefault(id(unit), (unit, set()))[1].update(int(i) for i in indices)

    def counting_read(self: StoreWkwUnit, indices: Any) -> Any:
        note(self, indices)
        return read_stored(self, indices)

    def counting_need(self: StoreWkwUnit, indices: Any) -> None:
        note(self, indices)
        will_need(self, indices)

    # Every request of the first pass (key -> ranges), and what a revisit asks for: which
    # unit, which bytes, at which priority, from where, whether the first pass fetched them and
    # whether the range cache held them when they were scheduled.
    import traceback

    from viewer.format.remote.store import READ, RemoteStore

    phase: dict[str, Any] = {"revisit": False, "at": "start"}
    fetched: dict[str, list[tuple[int, int | None]]] = {}
    requested: list[dict[str, Any]] = []
    real_note, real_schedule = RemoteStore._note_request, RemoteStore._schedule

    def logged_request(self: RemoteStore, key: str, start: int, end: int | None) -> None:
        if phase["revisit"]:
            before = fetched.get(key, [])
            covered = any(s <= start and (e is None or (end is not None and end <= e))
                          for s, e in before)
            touched = any((e is None or start < e) and (end is None or s < end)
                          for s, e in before)
            requested.append({"at": phase["at"], "key": key, "range": [start, end],
                              "fetched_before":
                              "whole" if covered else "part" if touched else "no",
                              "ranges_of_key_before": len(before)})
        else:
            fetched.setdefault(key, []).append((start, end))
        real_note(self, key, start, end)

    def logged_schedule(self: RemoteStore, key: str, ranges: Any, priority: int,
                        keep: bool = False) -> Any:
        if phase["revisit"]:
            cache = self._cache
            url = self.location(key)
            where = [f"{f.name}:{f.lineno}" for f in traceback.extract_stack(limit=8)[:-1]]
            requested.append({"at": phase["at"], "scheduled": key,
                              "ranges": [list(r) for r in ranges][:8],
                              "priority": "read" if priority == READ else "prefetch",
                              "cached": [cache is not None and cache.covers(url, s, e)
                                         for s, e in ranges][:8], "from": where[-5:]})
        return real_schedule(self, key, ranges, priority, keep)

    RemoteStore._note_request = logged_request  # type: ignore[method-assign]
    RemoteStore._schedule = logged_schedule  # type: ignore[method-assign]
    StoreWkwUnit.read_stored = counting_read  # type: ignore[method-assign]
    StoreWkwUnit.will_need = counting_need  # type: ignore[method-assign]

    app = QApplication.instance() or QApplication(["remote-benchmark"])
    jumps = JUMPS[:4] if quick else JUMPS

    start_cursors: list[Any] = []

    def session() -> tuple[Any, Any, list[Any]]:
        window = QtMainWindow(ViewerState())
        loading = window.add_background_loading(budget_bytes=256 << 20)
        window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
        window.resize(1280, 860)
        window.show()
        if not window.open_path(url, pos=START, zoom=1.0):
            raise SystemExit(f"cannot open {url}: {window.errors}")
        # The extent (probed over HTTP, files cannot be listed) before any jump: a jump made
        # while it is provisional is clamped to it.
        deadline = time.perf_counter() + JUMP_TIMEOUT_S
        while window.opening.scan is not None \
                and time.perf_counter() < deadline:
            app.processEvents()
            time.sleep(0.002)
        app.processEvents()
        start_cursors.append([list(window.state.cursor), [list(b) for b in window.state.bounds],
                              getattr(loading.loader, "prefetch", None)])
        return window, loading, [window.views[a] for a in (XY, XZ, YZ)]

    def wait(cond: Any, timeout: float, began: float | None = None) -> float:
        began = time.perf_counter() if began is None else began
        while not cond():
            app.processEvents()
            if time.perf_counter() - began > timeout:
                return float("inf")
            time.sleep(0.0005)
        return time.perf_counter() - began

    def idle(loading: Any) -> None:
        deadline = time.perf_counter() + IDLE_TIMEOUT_S
        while time.perf_counter() < deadline:
            app.processEvents()
            if loading.loader is not None and not loading.loader.stats().busy \
                    and not stats().in_flight and not stats().queued:
                return
            time.sleep(0.005)

    window, loading, views = session()
    views_done: set[int] = set()

    def complete() -> bool:
        done = [v.plane is not None and v.plane.complete for v in views]
        if timeline.recording():
            for axis, ok in enumerate(done):
                if ok and axis not in views_done:
                    views_done.add(axis)
                    timeline.mark("view-done", note=f"view {axis}")
        return all(done)

    wait(complete, JUMP_TIMEOUT_S)
    idle(loading)
    first = stats()
    jump_ms: list[float] = []
    jump_requests: list[int] = []
    from viewer.core.slicing import Status

    def looks() -> list[int]:
        """Pixels of the views failed, absent (for a dataset with every file present)."""
        out = [0, 0]
        for v in views:
            if v.plane is not None:
                out[0] += int((v.plane.status == Status.FAILED).sum())
                out[1] += int((v.plane.status == Status.ABSENT).sum())
        return out

    first_looks: list[list[int]] = []
    first_planes: list[list[str]] = []
    revisit_planes: list[list[str]] = []

    def planes() -> list[str]:
        """The planes the views show (their requests), to compare a revisit with its first."""
        return [f"{v.width()}x{v.height()} "
                + (repr(v.plane.request) if v.plane is not None else "") for v in views]

    traced = ""
    cpu0, wall0, threads0 = time.process_time(), time.perf_counter(), _thread_cpu()
    for k, pos in enumerate(jumps):
        before = stats().requests
        if k == trace:
            views_done.clear()
            _trace_begin()
        began = time.perf_counter()
        window.state.jump_to(pos)
        jump_ms.append(wait(complete, JUMP_TIMEOUT_S, began) * 1e3)
        if k == trace:
            traced = _trace_end(pos, jump_ms[-1])
        jump_requests.append(stats().requests - before)
        first_looks.append(looks())
        first_planes.append(planes())
        idle(loading)
    after = stats()
    cpu_jumps = [round(time.process_time() - cpu0, 2), round(time.perf_counter() - wall0, 2)]
    threads1 = _thread_cpu()
    thread_cpu = {name: round(t - threads0.get(name, 0.0), 2) for name, t in threads1.items()
                  if t - threads0.get(name, 0.0) >= 0.01}
    window.close()
    app.processEvents()
    needed = 0
    for unit, indices in list(asked.values()):
        table = unit.chunk_table()
        needed += int(sum(int(table.nbytes[i]) for i in list(indices) if table.present[i]))
    # Requests of the first pass still on the wire finish before the revisit is counted.
    deadline = time.perf_counter() + JUMP_TIMEOUT_S
    while (stats().in_flight or stats().queued) and time.perf_counter() < deadline:
        time.sleep(0.01)
    # Revisit with fresh loaders: only the on-disk cache (and the store's sizes) remain.  Their
    # prefetch is off, so the requests counted are those for what the views show: a fresh
    # loader's prefetch reaches blocks around the place that the first pass never fetched (its
    # block cache held others then, or the next jump cut it short), which is no revisit.  Off
    # in the layered source: it sets each loader's ``prefetch_enabled`` on every change of the
    # screen (turning it off in the loaders alone did not hold, and the requests counted on
    # revisit, 0 in most rounds and up to ~100 in some, were that prefetch's, for blocks next
    # to the screen: the benchmark's detail lists them, with whether the first pass fetched
    # them).
    import functools

    import viewer.ui.loading as loading_module

    loading_module.LayeredSource = functools.partial(  # type: ignore[misc]
        loading_module.LayeredSource, prefetch=False)
    window, loading, views = session()
    reopen_requests = stats().requests - after.requests
    phase["revisit"] = True
    wait(complete, JUMP_TIMEOUT_S)
    idle(loading)
    revisit_requests = 0
    revisit_after_idle = 0
    revisit_ms: list[float] = []
    revisit_looks: list[list[int]] = []
    for k, pos in enumerate(jumps[:REVISITS]):
        phase["at"] = k
        before = stats().requests
        began = time.perf_counter()
        window.state.jump_to(pos)
        revisit_ms.append(wait(complete, JUMP_TIMEOUT_S, began) * 1e3)
        revisit_requests += stats().requests - before
        revisit_looks.append(looks())
        revisit_planes.append(planes())
        idle(loading)
        revisit_after_idle += stats().requests - before
    window.close()
    app.processEvents()
    end = stats()
    return {
        "timeline": traced,
        "jump_ms": [round(j, 1) for j in jump_ms],
        "jump_requests": jump_requests,
        "bytes_fetched": after.bytes_fetched,
        "bytes_needed": needed,
        "bytes_at_first_screen": first.bytes_fetched,
        "requests": after.requests,
        "cpu_wall_s_of_jumps": cpu_jumps,
        "thread_cpu_s_of_jumps": dict(sorted(thread_cpu.items(), key=lambda kv: -kv[1])),
        "errors": end.errors,
        "reopen_requests": reopen_requests,
        "revisit_requests": revisit_requests,
        "revisit_requests_until_idle": revisit_after_idle,
        "revisit_ms": [round(j, 1) for j in revisit_ms],
        "revisit_requested": [r for r in requested if r["at"] != "start"][:40],
        "revisit_start_requested": [r for r in requested if r["at"] == "start"][:6],
        "start_cursors": start_cursors,
        "revisit_planes_differ": [[k, a, b] for k, (a, b) in enumerate(
            zip(first_planes, revisit_planes, strict=False)) if a != b],
        "failed_absent_pixels": first_looks,
        "revisit_failed_absent_pixels": revisit_looks,
    }


def _thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads by name (Python's name where it has one, else
    the system's; Linux ``/proc``, else empty)."""
    import threading

    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            raw = Path(f"/proc/self/task/{tid}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        name = names.get(int(tid), comm)
        name = name.rstrip("0123456789_-") or name
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def _trace_begin() -> None:
    """Record a timeline of the next jump: the requests (``viewer.format.remote.timeline``)
    and the loader's batches (its workers' reads and read-ahead hints, wrapped here)."""
    from viewer.core.chunkio import ChunkReader
    from viewer.format.remote import timeline

    if not hasattr(ChunkReader, "_traced"):
        read_, hint_ = ChunkReader.read, ChunkReader.hint

        def traced_read(self: ChunkReader, keys: Any, hint: bool) -> int:
            units = sorted({k[2] for k in keys})
            timeline.mark("batch", note=f"{len(keys)} blocks of {len(units)} units {units[:3]}")
            try:
                return read_(self, keys, hint)
            finally:
                timeline.mark("batch-done", note=f"{len(keys)} blocks")

        def traced_hint(self: ChunkReader, ahead: Any, stopping: Any) -> None:
            timeline.mark("lookahead", note=f"{sum(len(i) for _, i in ahead)} blocks of "
                          f"{len(ahead)} units")
            hint_(self, ahead, stopping)

        ChunkReader.read = traced_read  # type: ignore[method-assign]
        ChunkReader.hint = traced_hint  # type: ignore[method-assign]
        ChunkReader._traced = True  # type: ignore[attr-defined]
    timeline.start()
    timeline.mark("jump")


def _trace_end(pos: Any, ms: float) -> str:
    """The recorded timeline as text: every event, then every request's queued -> sent ->
    done."""
    from viewer.format.remote import timeline

    timeline.mark("complete")
    time.sleep(0.3)  # what was on the wire at the end still lands in the record
    events = timeline.stop()
    reqs = timeline.requests(events)
    lines = [f"jump to {pos}: complete after {ms:.1f} ms", timeline.format_events(events), "",
             f"{'queued':>8} {'sent':>8} {'done':>8} {'prio':<8} {'key':<14} {'bytes':>8} end"]
    for r in reqs:
        lines.append(f"{r.queued * 1e3:8.1f} "
                     + (f"{r.sent * 1e3:8.1f} " if r.sent is not None else f"{'-':>8} ")
                     + (f"{r.done * 1e3:8.1f} " if r.done is not None else f"{'-':>8} ")
                     + f"{r.priority:<8} {r.key[-14:]:<14} {r.nbytes:>8} {r.outcome}")
    return "\n".join(lines)


def run_loader_only(url: str, quick: bool) -> list[float]:
    """Our ``Loader`` alone on the three 448 x 448 planes of each jump (empty caches)."""
    from viewer.core.loader import Loader
    from viewer.core.slicing import PlaneRequest
    from viewer.format import open_volume

    volume = open_volume(url)
    _ = volume.bounds  # the extent (probed over HTTP) before the clock starts
    loader = Loader(volume, budget_bytes=256 << 20)
    out: list[float] = []
    try:
        for pos in JUMPS[:4] if quick else JUMPS:
            loader.wait_idle(JUMP_TIMEOUT_S)
            reqs = [PlaneRequest(a, i, lo, hi) for a, i, lo, hi in plane_boxes(pos)]
            began = time.perf_counter()
            loader.set_wanted(reqs, 0, pos)
            while not all(loader.plane(r).complete for r in reqs):
                if time.perf_counter() - began > JUMP_TIMEOUT_S:
                    break
                time.sleep(0.0005)
            out.append(round((time.perf_counter() - began) * 1e3, 1))
    finally:
        loader.close()
    return out


def run_tensorstore(url: str, quick: bool) -> list[float]:
    import tensorstore as ts

    arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "http", "base_url": url,
                                                  "path": f"/{ZARR_NAME}/"},
                   "context": {"cache_pool": {"total_bytes_limit": 0}}}).result()
    out: list[float] = []
    for pos in JUMPS[:4] if quick else JUMPS:
        began = time.perf_counter()
        futures = []
        for axis, index, lo, hi in plane_boxes(pos):
            sl: list[Any] = [slice(None)] * 3
            sl[axis] = index
            other = [a for a in range(3) if a != axis]
            sl[other[0]] = slice(lo[0], hi[0])
            sl[other[1]] = slice(lo[1], hi[1])
            futures.append(arr[tuple(sl)].read())
        for f in futures:
            f.result()
        out.append(round((time.perf_counter() - began) * 1e3, 1))
    return out


def child(mode: str, url: str, quick: bool, trace: int | None = None) -> Any:
    with tempfile.TemporaryDirectory(prefix="wkw-remote-bench-") as cache:
        env = dict(os.environ, WKW_VIEWER_REMOTE_CACHE_DIR=cache, WKW_VIEWER_NO_SETTINGS="1")
        cmd = [sys.executable, "-m", "benchmarks.remote", "--child", mode, "--url", url] + \
            (["--quick"] if quick else []) + ([] if trace is None else ["--timeline", str(trace)])
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=env,
                             cwd=HERE.parent).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    p = argparse.ArgumentParser(prog="python -m benchmarks.remote")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--delay-ms", type=float, default=20.0)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--child", choices=["ours", "loader", "tensorstore"])
    p.add_argument("--url")
    p.add_argument("--timeline", type=int, metavar="K",
                   help="print the request timeline of the K-th jump (0-based) of the first "
                        "round to stderr")
    p.add_argument("--only-ours", action="store_true", help="skip tensorstore and the loader")
    args = p.parse_args(argv)
    if args.child:  # a program of its own: its settings of reading from its environment
        from viewer.environment import read_config
        from viewer.format import set_default_read_config

        set_default_read_config(read_config(os.environ))
    if args.child == "ours":
        print(json.dumps(run_ours(args.url, args.quick, args.timeline)))
        return 0
    if args.child:
        fn = {"loader": run_loader_only, "tensorstore": run_tensorstore}
        print(json.dumps(fn[args.child](args.url, args.quick)))
        return 0
    root = browse_dataset()
    zarr = zarr3_copy(root)
    servers = Servers(CACHE, args.delay_ms)
    rounds: list[dict[str, Any]] = []
    try:
        for _ in range(args.rounds):
            cpu_before = servers.cpu_s()
            one: dict[str, Any] = {"ours": child("ours", f"{servers.url}/{root.name}",
                                                 args.quick, args.timeline if not rounds
                                                 else None)}
            cpu_after = servers.cpu_s()
            one["servers_cpu_s_during_ours"] = {k: round(cpu_after[k] - cpu_before[k], 2)
                                                for k in cpu_after}
            traced = one["ours"].pop("timeline", "")
            if traced:
                print(traced, file=sys.stderr)
            if zarr is not None and not args.only_ours:
                one["tensorstore_ms"] = child("tensorstore", servers.url, args.quick)
            if not args.only_ours:
                one["loader_only_ms"] = child("loader", f"{servers.url}/{root.name}",
                                              args.quick)
            rounds.append(one)
    finally:
        servers.close()
    jumps = [j for r in rounds for j in r["ours"]["jump_ms"]]
    fetched = sum(r["ours"]["bytes_fetched"] for r in rounds)
    needed = sum(r["ours"]["bytes_needed"] for r in rounds)
    ts_ms = [j for r in rounds for j in r.get("tensorstore_ms", [])]
    lo_ms = [j for r in rounds for j in r.get("loader_only_ms", [])]
    result = {
        "jump_complete_ms_p50": percentile(jumps, 50),
        "jump_complete_ms_p95": percentile(jumps, 95),
        "bytes_fetched_over_needed": round(fetched / needed, 4) if needed else float("nan"),
        "revisit_requests": max(r["ours"]["revisit_requests"] for r in rounds),
        "detail": {
            "delay_ms": args.delay_ms,
            "rounds": rounds,
            "loader_only_ms_p50_p95": [percentile(lo_ms, 50), percentile(lo_ms, 95)],
            "tensorstore_ms_p50_p95": [percentile(ts_ms, 50), percentile(ts_ms, 95)]
            if ts_ms else None,
        },
    }
    context = (f"three 448^2 planes per jump p50/p95: ours (loader alone) "
               f"{percentile(lo_ms, 50):.0f}/{percentile(lo_ms, 95):.0f} ms"
               + (f", tensorstore zarr3 {percentile(ts_ms, 50):.0f}/"
                  f"{percentile(ts_ms, 95):.0f} ms" if ts_ms else ", tensorstore not installed"))
    result["context"] = context
    if args.json:
        print(json.dumps(with_load(result, load_before)))
        print(context, file=sys.stderr)
        return 0
    print(f"remote browse jumps over loopback + {args.delay_ms:.0f} ms per request, "
          f"{args.rounds} rounds")
    print(f"  jump to complete (window) p50/p95: {result['jump_complete_ms_p50']:.0f}/"
          f"{result['jump_complete_ms_p95']:.0f} ms   (target p95 <= 250)")
    print(f"  bytes fetched / needed: {result['bytes_fetched_over_needed']:.3f}   "
          "(target <= 1.3)")
    print(f"  requests on revisit: {result['revisit_requests']}   (target 0)")
    print(f"  {context}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
