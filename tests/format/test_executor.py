"""One executor service: who owns the background threads, and that none is left after
``close()`` of a dataset, a volume or the loaders of a window."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import wkw

from viewer.core.loader import Loader
from viewer.core.workers import shared_workers
from viewer.format import executor as executor_mod
from viewer.format import open_dataset, open_volume, pool
from viewer.format.executor import Executor

SHAPE = (64, 64, 32)


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("executor") / "ds"
    header = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=wkw.Header.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(root), header)
    ds.write((0, 0, 0), np.random.default_rng(3).integers(0, 255, SHAPE, dtype=np.uint8))
    ds.close()
    return root



def test_a_dataset_owns_its_executor_and_closes_its_threads(path: Path) -> None:
    before = set(threading.enumerate())
    ds = open_dataset(path)
    service = ds.executor
    assert service is not None and service in executor_mod.live()
    volume = ds.layers[0].finest.volume
    assert volume.executor is service
    data = volume.read((0, 0, 0), SHAPE)  # 256 chunks: shared with the helpers
    assert data.shape == (1, *SHAPE)
    with executor_mod.using(service):  # what a format's parallel decode does
        pool.share(8, lambda k: None, 3)
    assert service.threads_running()
    ds.close()
    assert service.closed and service not in executor_mod.live()
    assert set(threading.enumerate()) <= before


def test_open_volume_closes_the_executor_it_made(path: Path) -> None:
    before = set(threading.enumerate())
    volume = open_volume(path)
    service = volume.executor
    volume.read((0, 0, 0), SHAPE)
    volume.close()
    assert service.closed
    assert set(threading.enumerate()) <= before


def test_a_given_executor_is_the_owners(path: Path) -> None:
    with Executor(max_threads=3) as service:
        ds = open_dataset(path, executor=service)
        volume = ds.layers[0].finest.volume
        assert volume.executor is service
        volume.read((0, 0, 0), SHAPE)
        ds.close()
        assert not service.closed  # the dataset does not close what it was given
        assert len(service.threads_running()) <= service.max_threads
    assert service.closed and service.threads_running() == []


def test_loaders_share_the_threads_of_their_executor(path: Path) -> None:
    before = set(threading.enumerate())
    ds = open_dataset(path)
    service = ds.executor
    assert service is not None
    group = shared_workers(service, 2)
    volume = ds.layers[0].finest.volume
    loaders = [Loader(volume, layer=name, workers=group, close_dataset=False,
                      prefetch_enabled=False) for name in ("a", "b", "c")]
    assert all(loader.threads == group.threads for loader in loaders)
    assert len(group.threads) == 2
    for loader in loaders:
        loader.close()
    ds.close()  # closes the group with the executor
    assert set(threading.enumerate()) <= before


def test_a_closed_executor_starts_nothing() -> None:
    service = Executor()
    service.close()
    with pytest.raises(RuntimeError):
        service.pool("read", 2)
    service.close()  # twice is fine


def test_the_wkw_api_reads_on_an_executor_it_owns(path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``wkw.Dataset`` (the reference binding's API, no ``Volume``) has an executor in effect
    while it reads, and closes the one it made."""
    from viewer.format import wkw as our_wkw

    before = set(threading.enumerate())
    seen: list[Executor | None] = []
    real = pool.share

    def spy(items: int, run: Callable[[int], None], threads: int) -> None:
        seen.append(executor_mod.current())
        real(items, run, threads)

    monkeypatch.setattr(pool, "share", spy)
    ds = our_wkw.Dataset.open(str(path))
    ds.read((0, 0, 0), SHAPE)
    own = ds._threads._own
    assert own is not None and all(s is own for s in seen)
    ds.close()
    assert own.closed
    assert set(threading.enumerate()) <= before
