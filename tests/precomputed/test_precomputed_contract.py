"""The volume contract (tests/volume_contract.py) on precomputed scales written by
tensorstore: sharded with an identity hash and a voxel_offset (absent chunks), a second scale
whose voxel_offset is off the chunk grid (chunks of the absolute grid straddle stored ones),
a murmurhash3-sharded compressed_segmentation with gzip data, and unsharded gzip chunk files
(CloudVolume's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from volume_contract import VolumeContract

from viewer.format import Volume, open_dataset


def padded(volume: Volume, truth: np.ndarray) -> np.ndarray:
    """``truth`` (over the extent) placed in an array over ``[0, origin + shape)``."""
    lo, hi = volume.bounds
    out = np.zeros((truth.shape[0], *hi), truth.dtype, order="F")
    out[:, lo[0]:, lo[1]:, lo[2]:] = truth
    return out


def damage(volume: Any, chunk: tuple[int, int, int]) -> None:
    """Damage one stored chunk: flip bytes in its middle (a compressed chunk), or (raw, in a
    shard with a raw minishard index) make its minishard index entry one byte short."""
    unit = volume.open_unit(chunk)
    part = unit.parts[0] if hasattr(unit, "parts") else unit
    path = Path(part.path)
    if volume.info().header["encoding"] == "raw" and part.chunk_id is not None:
        shorten_entry(path, part.chunk_id, minishard_bits=2)
        return
    raw = bytearray(path.read_bytes())
    for k in range(part.offset + part.nbytes // 4, part.offset + part.nbytes - 4, 5):
        raw[k] ^= 0x5A
    path.write_bytes(bytes(raw))


def shorten_entry(path: Path, chunk_id: int, minishard_bits: int) -> None:
    """In a shard with raw minishard indexes, list ``chunk_id`` one byte shorter (the next
    chunk's offset delta one larger, so that the others stay where they are)."""
    raw = bytearray(path.read_bytes())
    n = 1 << minishard_bits
    index = np.frombuffer(bytes(raw[:16 * n]), "<u8").reshape(n, 2)
    for start, end in index.tolist():
        lo, hi = 16 * n + start, 16 * n + end
        arr = np.frombuffer(bytes(raw[lo:hi]), "<u8").reshape(3, -1).copy()
        ids = np.cumsum(arr[0])
        hit = np.flatnonzero(ids == chunk_id)
        if len(hit):
            k = int(hit[0])
            arr[2, k] -= 1
            if k + 1 < arr.shape[1]:
                arr[1, k + 1] += 1
            raw[lo:hi] = arr.astype("<u8").tobytes()
            path.write_bytes(bytes(raw))
            return
    raise AssertionError(f"chunk id {chunk_id} not in {path}")


class _Case(VolumeContract):
    name = ""
    scale = 0
    chunk: tuple[int, int, int] = (0, 0, 0)

    @pytest.fixture
    def contract_volume(self, pc_copy: Any) -> Any:
        ds = open_dataset(pc_copy(self.name))
        v = ds.layers[0].mags[self.scale].volume
        yield v
        ds.close()

    @pytest.fixture
    def contract_truth(self, pc: dict[str, Any], contract_volume: Volume) -> Any:
        return padded(contract_volume, pc[self.name][1][self.scale])

    @pytest.fixture
    def contract_damaged(self, contract_volume: Any) -> Any:
        g0 = [o // c for o, c in zip(contract_volume.origin, contract_volume.chunk_shape,
                                     strict=True)]
        chunk = (g0[0] + self.chunk[0], g0[1] + self.chunk[1], g0[2] + self.chunk[2])
        damage(contract_volume, chunk)
        again = open_dataset(Path(contract_volume.path).parent).layers[0].mags[self.scale]
        return again.volume, chunk


class TestShardedIdentity(_Case):
    name = "sharded_identity"
    chunk = (1, 1, 0)


class TestOffGrid(_Case):
    name, scale = "sharded_identity", 1
    chunk = (0, 1, 0)


class TestMurmurCseg(_Case):
    name = "sharded_murmur"
    chunk = (1, 0, 1)


class TestGzipFiles(_Case):
    name = "gzip"
    chunk = (0, 1, 1)


def test_off_grid_scale_is_in_absolute_coordinates(pc: dict[str, Any]) -> None:
    ds = open_dataset(pc["sharded_identity"][0])
    v = ds.layers[0].mags[1].volume
    assert v.origin == (16, 8, 8) and v.shape == (25, 20, 20)
    truth = pc["sharded_identity"][1][1]
    # the absolute grid's chunk (1, 0, 1) holds voxels [16, 32) x [0, 16) x [8, 16): the
    # extent starts at y = 8, inside it
    unit = v.open_unit((1, 0, 1))
    assert unit is not None
    [chunk] = unit.read_chunks([0])
    assert isinstance(chunk, np.ndarray)
    assert (chunk[:, :, :8] == 0).all()
    np.testing.assert_array_equal(chunk[:, :, 8:16, :], truth[:, 0:16, 0:8, 0:8])
