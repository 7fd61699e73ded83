"""Big reads reuse the memory of the last big array dropped (``viewer.format.bigmemory``), and
never the memory of an array still in use: checked on its own and through ``wkw.Dataset.read``
and a Zarr volume's ``read`` (the generic ``Volume.read``), voxel for voxel against files the
reference ``wkw`` library and zarr-python wrote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from viewer.format import bigmemory, open_volume, wkw

BIG = (1, 256, 256, 128)  # 8 MiB of uint8: just big enough


@pytest.fixture(autouse=True)
def _nothing_waiting() -> Iterator[None]:
    bigmemory.release()
    yield
    bigmemory.release()


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def test_an_array_is_what_np_empty_gives() -> None:
    for shape, dtype in [(BIG, np.uint8), ((2, 300, 200, 50), np.float32),
                         ((1, 4, 4, 4), np.int16)]:
        a = bigmemory.empty(shape, dtype)
        assert a.shape == shape and a.dtype == np.dtype(dtype)
        assert a.flags.f_contiguous and a.flags.writeable
        a[...] = 7
        assert int(a.min()) == int(a.max()) == 7
    c = bigmemory.empty(BIG, np.uint8, order="C")
    assert c.flags.c_contiguous


def test_the_memory_of_a_dropped_array_serves_the_next_read() -> None:
    a = bigmemory.empty(BIG, np.uint8)
    where = _address(a)
    view = a[:, 10:20]
    del a
    assert bigmemory.waiting_bytes() == 0  # a view still uses it
    del view
    assert bigmemory.waiting_bytes() == int(np.prod(BIG))
    b = bigmemory.empty(BIG, np.uint8)
    assert _address(b) == where
    assert bigmemory.waiting_bytes() == 0
    del b
    d = bigmemory.empty((1, 256, 256, 32), np.uint8)  # 2 MiB: ordinary memory
    assert d.nbytes < bigmemory.MIN_BYTES
    assert bigmemory.waiting_bytes() == int(np.prod(BIG))  # still waiting for a big one


def test_too_small_or_too_big_buffers_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    a = bigmemory.empty((1, 512, 256, 128), np.uint8)  # 16 MiB
    where = _address(a)
    del a
    b = bigmemory.empty(BIG, np.uint8)  # 8 MiB: half of what waits, so it is used
    assert _address(b) == where
    del b
    c = bigmemory.empty((1, 256, 256, 200), np.uint8)  # 12.5 MiB: the 16 MiB one fits
    assert _address(c) == where
    del c
    monkeypatch.setattr(bigmemory, "KEEP_BYTES", 8 << 20)
    big = bigmemory.empty((1, 512, 256, 128), np.uint8)
    del big  # 16 MiB, over KEEP_BYTES: given back at once
    assert bigmemory.waiting_bytes() == 0
    bigmemory.release()
    f = bigmemory.empty(BIG, np.uint8)
    del f
    assert bigmemory.waiting_bytes() == int(np.prod(BIG))
    bigmemory.release()
    assert bigmemory.waiting_bytes() == 0


@pytest.mark.parametrize("block_type", [wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4HC],
                         ids=["raw", "lz4hc"])
def test_wkw_reads_in_a_row_are_right_while_the_memory_is_reused(
        tmp_path: Path, block_type: int) -> None:
    wkw_ref = pytest.importorskip("wkw")
    rng = np.random.default_rng(4)
    data = np.asfortranarray(rng.integers(0, 255, size=(1, 256, 256, 256), dtype=np.uint8))
    header = wkw_ref.Header(np.uint8, block_len=32, file_len=8, block_type=block_type)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), data)
    with wkw.Dataset.open(tmp_path) as ds:
        first = ds.read((0, 0, 0), (256, 256, 128))
        kept = ds.read((0, 0, 128), (256, 256, 128))  # kept alive: not reused by the next
        where = _address(first)
        del first
        third = ds.read((0, 0, 0), (256, 256, 128))
        assert _address(third) == where  # the dropped one's memory, written anew
        np.testing.assert_array_equal(third, data[:, :, :, :128])
        np.testing.assert_array_equal(kept, data[:, :, :, 128:])
        assert _address(kept) != where


def test_the_generic_volume_read_reuses_memory_too(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    data = np.random.default_rng(5).integers(0, 9, size=(256, 256, 128), dtype=np.uint8)
    z = zarr.open_array(str(tmp_path / "a.zarr"), mode="w", shape=data.shape,
                        chunks=(64, 64, 64), dtype=np.uint8, zarr_format=2)
    z[...] = data
    xyz = data.transpose(2, 1, 0)  # zarr's last axis is x
    with open_volume(str(tmp_path / "a.zarr")) as volume:
        assert volume.shape == xyz.shape
        first = volume.read((0, 0, 0), xyz.shape)
        where = _address(first)
        np.testing.assert_array_equal(first[0], xyz)
        del first
        again = volume.read((0, 0, 0), xyz.shape)
        assert _address(again) == where
        np.testing.assert_array_equal(again[0], xyz)
