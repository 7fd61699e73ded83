"""The volume contract (tests/volume_contract.py) on zarr: a webKnossos-style sharded zarr3
array written by tensorstore (absent shard and absent inner chunks, two channels), an
unsharded zarr3 array and a zarr v2 array written by zarr-python (absent chunks, fill
values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from volume_contract import VolumeContract
from zarr_test_fixtures import sample, write_tensorstore_zarr3

from viewer.format import open_volume


def _damage(volume: Any, unit: tuple[int, int, int], index: int) -> None:
    """Overwrite the middle of one chunk's stored bytes."""
    su = volume.open_unit(unit)
    table = su.chunk_table()
    off, nb = int(table.offsets[index]), int(table.nbytes[index])
    path = Path(su.path)
    raw = bytearray(path.read_bytes())
    for k in range(off + 4, off + nb - 4, 3):
        raw[k] ^= 0xA5
    path.write_bytes(bytes(raw))


class TestZarr3Sharded(VolumeContract):
    @pytest.fixture
    def contract_truth(self) -> Any:
        t = np.zeros((2, 64, 64, 32), np.uint16)
        t[:, 0:40, 0:30, 4:32] = sample((2, 40, 30, 28), "uint16", seed=1)
        return t

    @pytest.fixture
    def contract_volume(self, tmp_path: Path, contract_truth: Any) -> Any:
        pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
        write_tensorstore_zarr3(tmp_path / "a", contract_truth[:, 0:40, 0:30, 4:32],
                                shard_len=32, chunk_len=8, offset=(0, 0, 4),
                                shape_xyz=(64, 64, 32))
        vol = open_volume(tmp_path / "a")
        assert vol.open_unit((1, 1, 0)) is None  # an absent shard
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, contract_volume: Any) -> Any:
        _damage(contract_volume, (0, 0, 0), 1)
        return open_volume(contract_volume.path), (0, 0, 1)


class TestZarr3Unsharded(VolumeContract):
    @pytest.fixture
    def contract_truth(self) -> Any:
        zyx = np.full((20, 24, 28), 7, np.int32)
        zyx[:12] = sample((12, 24, 28), "int32", seed=2)
        return np.asfortranarray(zyx.transpose(2, 1, 0)[None])

    @pytest.fixture
    def contract_volume(self, tmp_path: Path, contract_truth: Any) -> Any:
        zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")
        from zarr.codecs import GzipCodec

        arr = zarr.create_array(store=str(tmp_path / "a"), shape=(20, 24, 28),
                                chunks=(8, 8, 8), dtype="int32", compressors=[GzipCodec()],
                                dimension_names=["z", "y", "x"], fill_value=7)
        arr[...] = contract_truth[0].transpose(2, 1, 0)
        vol = open_volume(tmp_path / "a")
        assert vol.open_unit((0, 0, 2)) is None  # all fill value: not stored
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, contract_volume: Any) -> Any:
        _damage(contract_volume, (1, 0, 0), 0)
        return open_volume(contract_volume.path), (1, 0, 0)


class TestZarr2(VolumeContract):
    @pytest.fixture
    def contract_truth(self) -> Any:
        zyx = np.zeros((16, 30, 36), np.float32)
        zyx[:, :20] = sample((16, 20, 36), "float32", seed=3)
        return np.asfortranarray(zyx.transpose(2, 1, 0)[None])

    @pytest.fixture
    def contract_volume(self, tmp_path: Path, contract_truth: Any) -> Any:
        zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")
        import numcodecs

        arr = zarr.create_array(store=str(tmp_path / "a"), shape=(16, 30, 36),
                                chunks=(8, 8, 8), dtype="<f4", zarr_format=2, order="F",
                                compressors=numcodecs.Blosc(cname="lz4"), fill_value=0)
        arr[...] = contract_truth[0].transpose(2, 1, 0)
        vol = open_volume(tmp_path / "a")
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, contract_volume: Any) -> Any:
        _damage(contract_volume, (0, 0, 0), 0)
        return open_volume(contract_volume.path), (0, 0, 0)
