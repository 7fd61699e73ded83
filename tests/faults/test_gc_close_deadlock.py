"""Regression: a ``wkw.File`` collected by the garbage collector called
``close()``, which submitted work (the unmapping) to the library's helper thread; when the
collector ran while that same thread was inside ``submit`` (holding the executor's lock, or the
module's lock around creating the helper), the thread waited for itself forever.  Measured: a
loop reading a damaged dataset, forgetting failed files and reopening the dataset now and then
hung in 10 of 10 runs.

Here the collector is made to run, deterministically, while the thread holds each lock that
the format layer's helper and descriptor pool take; the child process must finish."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from viewer.format import wkw

CHILD = textwrap.dedent("""
    import gc, sys
    from viewer.format import wkw
    from viewer.format import executor as service_mod
    from viewer.format import pool

    service = service_mod.Executor()
    with service_mod.using(service):
        executor = pool.decode_pool()
    locks = [("executor service", service._lock), ("executor", executor._shutdown_lock)]
    try:
        from viewer.format import handles
        locks.append(("descriptor pool", handles._POOL.lock))
    except ImportError:
        pass
    for name, lock in locks:
        f = wkw.File.open(sys.argv[1])
        f.read((0, 0, 0), (16, 16, 16))
        f.self_reference = f  # a cycle: only the collector frees it
        del f
        gc.disable()
        with lock:  # as if the collector ran in the middle of submit()
            print("collecting while holding the", name, "lock", flush=True)
            gc.collect()
        gc.enable()
    print("done", flush=True)
""")


@pytest.mark.parametrize("block_type", [wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4HC],
                         ids=["raw", "lz4hc"])
def test_gc_close_while_holding_the_helpers_lock_does_not_deadlock(
        tmp_path: Path, block_type: int) -> None:
    header = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=block_type)
    data = np.random.default_rng(0).integers(0, 255, (16, 16, 16), dtype=np.uint8)
    with wkw.Dataset.create(str(tmp_path), header) as ds:
        ds.write((0, 0, 0), data)
    path = str(tmp_path / "z0" / "y0" / "x0.wkw")
    try:
        run = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True,
                             text=True, timeout=60)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        pytest.fail(f"deadlock: the collector's close() waited for a lock its own thread "
                    f"held ({out.strip().splitlines()[-1:]})")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith("done")
