"""The command line ends its background threads in order before it returns (requests on the
wire, the range cache's writer, the pools): ``info URL`` on a damaged remote N5 dataset gives
the same exit status every run, and ``viewer.format.shutdown`` leaves no such thread."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
from range_server import RangeServer

from viewer import environment
from viewer.format import open_volume, shutdown

ROOT = Path(__file__).resolve().parents[2]
#: Runs of the same command (bounded: each is a new interpreter).
RUNS = 4
#: Threads the format layer starts and ``shutdown`` ends.
OWNED = ("wkw-remote-io", "wkw-remote-cache-writer", "wkw-read", "wkw-remote-open",
         "wkw-loader")


def test_info_of_a_damaged_remote_n5_exits_the_same_every_run(foreign: Path,
                                                              tmp_path: Path) -> None:
    shutil.copytree(foreign / "n5", tmp_path / "n5")
    chunk = tmp_path / "n5" / "1" / "1" / "0"
    raw = bytearray(chunk.read_bytes())
    del raw[100:114]
    chunk.write_bytes(bytes(raw))
    statuses = []
    with RangeServer(str(tmp_path)) as srv:
        for run in range(RUNS):
            env = {**os.environ, environment.CACHE_DIR_ENV: str(tmp_path / f"cache{run}"),
                   environment.TIMEOUT_ENV: "30"}  # a loaded host: no time-out decides
            done = subprocess.run([sys.executable, "-m", "viewer", "info", f"{srv.url}/n5"],
                                  cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=120)
            assert "INVALID" in done.stdout, done.stderr
            statuses.append(done.returncode)
    assert statuses == [1] * RUNS, statuses


def test_shutdown_ends_the_format_layers_threads_and_they_start_again(
        foreign: Path) -> None:
    with RangeServer(str(foreign)) as srv:
        vol = open_volume(f"{srv.url}/zarr3")
        first = vol.read((0, 0, 0), vol.shape)
        running = {t.name for t in threading.enumerate() if t.name.startswith(OWNED)}
        assert "wkw-remote-io" in running, running
        shutdown()
        left = [t.name for t in threading.enumerate() if t.name.startswith(OWNED)]
        assert not left, left
        again = open_volume(f"{srv.url}/zarr2")  # everything starts again when needed
        np.testing.assert_array_equal(again.read((0, 0, 0), again.shape), first)
    shutdown()
