"""``ordered_map``: whole-unit passes on every core, results in the listing's order."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from viewer.core.parallel import can_fork, ordered_map, ordered_map_forked


def test_results_in_order_on_several_threads() -> None:
    names: set[str] = set()

    def work(n: int) -> int:
        names.add(threading.current_thread().name)
        time.sleep(0.001 * (n % 3))  # finish out of order
        return n * n

    assert list(ordered_map(work, range(50), threads=3)) == [n * n for n in range(50)]
    assert all(name.startswith("unit-pass") for name in names)


def test_bounded_look_ahead_and_lazy_listing() -> None:
    taken: list[int] = []

    def listing():  # type: ignore[no-untyped-def]
        for n in range(1000):
            taken.append(n)
            yield n

    it = ordered_map(lambda n: n, listing(), threads=2, ahead=5)
    assert next(it) == 0
    assert len(taken) <= 6  # not the whole listing up front
    it.close()


def test_an_error_comes_at_its_items_turn() -> None:
    def work(n: int) -> int:
        if n == 7:
            raise ValueError("seven")
        return n

    got: list[int] = []
    with pytest.raises(ValueError, match="seven"):
        for v in ordered_map(work, range(20), threads=2):
            got.append(v)
    assert got == list(range(7))


def test_one_thread_is_plain_map() -> None:
    names: set[str] = set()

    def work(n: int) -> int:
        names.add(threading.current_thread().name)
        return n

    assert list(ordered_map(work, range(5), threads=1)) == list(range(5))
    assert names == {threading.current_thread().name}


# -- forked worker processes --------------------------------------------------------------------
needs_fork = pytest.mark.skipif(not can_fork(), reason="no fork here")


@needs_fork
def test_forked_results_in_order_from_other_processes() -> None:
    import os

    parent = os.getpid()

    def work(n: int) -> tuple[int, int]:
        time.sleep(0.001 * (n % 3))
        return n * n, os.getpid()

    got = list(ordered_map_forked(work, range(40), processes=2, ahead=4))
    assert [square for square, _ in got] == [n * n for n in range(40)]
    assert parent not in {pid for _, pid in got}


@needs_fork
def test_forked_error_and_early_close_end_the_workers() -> None:
    import multiprocessing

    def work(n: int) -> int:
        if n == 7:
            raise ValueError("seven")
        return n

    with pytest.raises(ValueError, match="seven"):
        list(ordered_map_forked(work, range(20), processes=2))
    it = ordered_map_forked(lambda n: n, range(1000), processes=2, ahead=4)
    assert next(it) == 0
    it.close()
    assert not multiprocessing.active_children()


_SCRIPT = """
import multiprocessing, sys, time
from viewer.cli import interrupt
from viewer.core.parallel import ordered_map_forked
interrupt.install("forked")

def work(n):
    time.sleep(0.05)
    return n

try:
    for n in ordered_map_forked(work, range(10_000), processes=2, ahead=4):
        if n == 0:
            print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
except KeyboardInterrupt:
    sys.exit(interrupt.status())
"""


@needs_fork
def test_ctrl_c_during_a_forked_map_ends_everything_with_130(tmp_path: Any) -> None:
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None
    children = [int(p) for p in proc.stdout.readline().split()]
    assert len(children) == 2
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err.decode() and err.decode().strip() == "forked: interrupted"
    for pid in children:  # ended, not left running
        for _ in range(500):  # bounded: 5 s
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)
        else:
            pytest.fail(f"worker {pid} still runs")


@needs_fork
def test_forked_results_of_a_batch_report_fit_in_the_result_pipe() -> None:
    """Each worker's result pipe holds a batch's report text (hundreds of kB), so a worker
    writes its result at once instead of 64 kB at a time."""
    import fcntl

    from viewer.core.parallel import RESULT_PIPE_BYTES, ForkedWorkers

    workers = ForkedWorkers(lambda n: b"x" * n, 2)
    try:
        for reader in workers._results:  # noqa: SLF001 - the pipes it sized
            assert fcntl.fcntl(reader.fileno(), fcntl.F_GETPIPE_SZ) >= RESULT_PIPE_BYTES
        assert [len(r) for r in workers.map([300_000, 5, 600_000])] == [300_000, 5, 600_000]
    finally:
        workers.close()


@needs_fork
def test_forked_map_runs_no_helper_thread_in_the_parent() -> None:
    """The parent's calling thread hands out the items and takes the results itself: no
    thread of the parent competes with it for the interpreter lock."""
    from viewer.core.parallel import ForkedWorkers

    before = threading.active_count()
    counts: list[int] = []
    workers = ForkedWorkers(lambda n: n + 1, 2)
    try:
        for value in workers.map(range(30), ahead=6):
            counts.append(threading.active_count())
            assert value == len(counts)
    finally:
        workers.close()
    assert set(counts) == {before}


@needs_fork
def test_a_forked_worker_that_dies_is_an_error_not_a_hang() -> None:
    import multiprocessing
    import os

    def work(n: int) -> int:
        if n == 5:
            os._exit(3)
        return n

    got: list[int] = []
    with pytest.raises(RuntimeError, match="ended"):
        for n in ordered_map_forked(work, range(40), processes=2, ahead=4):
            got.append(n)
    assert got == list(range(len(got))) and len(got) <= 5
    assert not multiprocessing.active_children()
