"""A large ``Volume.read`` decodes on every core: the result is the serial read's,
voxel for voxel, and a damaged chunk raises the error the serial read raises."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from toyformat import ToyVolume, write_toy

from viewer.format import FormatError
from viewer.format import executor as executor_mod
from viewer.format import volume as volume_mod
from viewer.format.executor import Executor


@pytest.fixture
def toy(tmp_path: Path) -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(7)
    data = rng.integers(0, 60000, (2, 70, 45, 38), dtype=np.uint16)
    return write_toy(tmp_path / "toy", data, (8, 8, 8), skip=[(1, 1, 1), (3, 0, 2)],
                     fill_value=7), data


def _serial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(volume_mod, "PARALLEL_CHUNKS", 1 << 60)


@pytest.mark.parametrize("box", [((0, 0, 0), (70, 45, 38)), ((5, 3, 9), (60, 40, 21)),
                                 ((-4, 10, 30), (20, 50, 20))])
def test_parallel_read_equals_serial(toy: tuple[str, np.ndarray], box: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path, data = toy
    vol = ToyVolume(path)
    threads: set[str] = set()
    inner = vol.open_unit

    def spy(unit: Any) -> Any:
        threads.add(threading.current_thread().name)
        return inner(unit)

    monkeypatch.setattr(vol, "open_unit", spy)
    monkeypatch.setattr(volume_mod, "read_threads", lambda: 3)
    parallel = vol.read(*box)
    _serial(monkeypatch)
    serial = vol.read(*box)
    assert parallel.dtype == serial.dtype and parallel.shape == serial.shape
    assert np.array_equal(parallel, serial)
    # and both are the data (absent chunks the fill value, outside the array too)
    expected = np.full((2, *box[1]), 7, dtype=np.uint16)
    lo = [max(o, 0) for o in box[0]]
    hi = [min(o + s, d) for o, s, d in zip(box[0], box[1], data.shape[1:], strict=True)]
    dst = tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, box[0], strict=True))
    src = tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
    expected[(slice(None), *dst)] = data[(slice(None), *src)]
    for i, j, k in [(1, 1, 1), (3, 0, 2)]:
        cube = tuple(slice(max(n * 8 - o, 0), max((n + 1) * 8 - o, 0))
                     for n, o in zip((i, j, k), box[0], strict=True))
        expected[(slice(None), *cube)] = 7
    assert np.array_equal(parallel, expected)


def test_parallel_read_raises_the_serial_reads_error(toy: tuple[str, np.ndarray],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = toy
    for name in ("2.1.0.npy", "6.4.3.npy"):  # two damaged chunks: the first one is named
        Path(path, "c", name).write_bytes(b"not a chunk")
    vol = ToyVolume(path)
    monkeypatch.setattr(volume_mod, "read_threads", lambda: 3)
    with pytest.raises(FormatError) as parallel:
        vol.read((0, 0, 0), (70, 45, 38))
    _serial(monkeypatch)
    with pytest.raises(FormatError) as serial:
        vol.read((0, 0, 0), (70, 45, 38))
    assert type(parallel.value) is type(serial.value)
    assert str(parallel.value) == str(serial.value)
    assert "2.1.0.npy" in str(serial.value)


def test_a_large_read_runs_on_the_caller_and_a_helper_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two jobs that each wait for the other to start: they finish only when run at once."""
    monkeypatch.setattr(volume_mod, "read_threads", lambda: 2)
    barrier = threading.Barrier(2, timeout=30)
    names: list[str] = []

    def job(n: int) -> None:
        names.append(threading.current_thread().name)
        barrier.wait()

    with Executor(name="test") as service, executor_mod.using(service):
        volume_mod._run_jobs(job, [(0,), (1,)])
    assert len(names) == 2 and any(n.startswith("test-read") for n in names), names
