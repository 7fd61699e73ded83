"""The volume contract (tests/contract.py) on WKW (raw and LZ4HC, several files, a missing
file), a webKnossos mag, and the test-only toy format (non-cubic chunks, absent chunks)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from toyformat import write_toy
from volume_contract import VolumeContract

from viewer.format import open_volume, wkw


def _data(shape: tuple[int, ...], dtype: str = "uint16") -> Any:
    rng = np.random.default_rng(3)
    return rng.integers(0, 5000, size=shape).astype(dtype)


def _wkw_dataset(path: Any, block_type: int, truth: Any, skip_file: tuple[int, int, int] | None
                 ) -> None:
    header = wkw.Header(voxel_type=truth.dtype, block_len=8, file_len=4, block_type=block_type,
                        num_channels=truth.shape[0])
    with wkw.Dataset.create(str(path), header) as ds:
        side = 32
        for fz in range(0, truth.shape[3], side):
            for fy in range(0, truth.shape[2], side):
                for fx in range(0, truth.shape[1], side):
                    if skip_file == (fx // side, fy // side, fz // side):
                        continue
                    ds.write((fx, fy, fz), truth[:, fx:fx + side, fy:fy + side, fz:fz + side])


def _damage_first_block(path: str) -> None:
    with open(path, "r+b") as fh:
        f = wkw.File.open(path)
        start = int(f.block_ranges()[0][0])
        f.close()
        fh.seek(start)
        fh.write(b"\xff" * 24)


class TestWkwLz4(VolumeContract):
    @pytest.fixture
    def contract_truth(self) -> Any:
        t = _data((1, 64, 64, 32))
        t[:, 32:64, 0:32, 0:32] = 0  # the absent file
        return t

    @pytest.fixture
    def contract_volume(self, tmp_path: Any, contract_truth: Any) -> Any:
        _wkw_dataset(tmp_path / "ds", wkw.BLOCK_TYPE_LZ4HC, contract_truth, (1, 0, 0))
        vol = open_volume(tmp_path / "ds")
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, contract_volume: Any) -> Any:
        _damage_first_block(contract_volume.unit_path((0, 0, 0)))
        return open_volume(contract_volume.path), (0, 0, 0)


class TestWkwRaw(TestWkwLz4):
    @pytest.fixture
    def contract_truth(self) -> Any:
        return _data((2, 64, 32, 32), "uint8")

    @pytest.fixture
    def contract_volume(self, tmp_path: Any, contract_truth: Any) -> Any:
        _wkw_dataset(tmp_path / "ds", wkw.BLOCK_TYPE_RAW, contract_truth, None)
        vol = open_volume(tmp_path / "ds")
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, contract_volume: Any) -> Any:
        path = contract_volume.unit_path((1, 0, 0))
        os.truncate(path, 16 + 100)  # every block of that file is cut off
        return open_volume(contract_volume.path), (4, 0, 0)


class TestToy(VolumeContract):
    @pytest.fixture
    def contract_truth(self) -> Any:
        t = _data((1, 40, 24, 12), "int16")
        t[:, 16:32, 0:8, 0:4] = 0  # chunk (1, 0, 0) is absent
        return t

    @pytest.fixture
    def contract_volume(self, tmp_path: Any, contract_truth: Any) -> Any:
        write_toy(tmp_path / "toy", contract_truth, (16, 8, 4), skip=[(1, 0, 0)])
        return open_volume(tmp_path / "toy")

    @pytest.fixture
    def contract_damaged(self, contract_volume: Any) -> Any:
        with open(contract_volume.unit_path((0, 1, 2)), "r+b") as fh:
            fh.truncate(40)
        return contract_volume, (0, 1, 2)


def test_open_volume_agrees_with_reference_wkw(tmp_path: Any) -> None:
    """open_volume on a WKW dataset written by the reference library, voxel for voxel."""
    import wkw as reference  # the reference binding: a test dependency, required in CI

    truth = _data((1, 64, 32, 32), "uint32")
    with reference.Dataset.create(str(tmp_path / "ref"), reference.Header(
            np.uint32, block_len=8, file_len=4, block_type=reference.Header.BLOCK_TYPE_LZ4HC)) \
            as ds:
        ds.write((0, 0, 0), truth[0])
    vol = open_volume(tmp_path / "ref")
    assert vol.format == "wkw"
    with reference.Dataset.open(str(tmp_path / "ref")) as ref:
        np.testing.assert_array_equal(vol.read((3, 5, 7), (60, 30, 25)),
                                      ref.read((3, 5, 7), (60, 30, 25)))
