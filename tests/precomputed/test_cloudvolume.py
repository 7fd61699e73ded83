"""Neuroglancer precomputed written by CloudVolume itself (unsharded, chunk files
gzip-compressed and named ``….gz``, a ``voxel_offset`` off zero): a raw uint8 image and a
compressed_segmentation uint64 segmentation read voxel for voxel, and a chunk file cut short
is an error naming it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.format import FormatError, open_volume

# Whether it is installed, without importing it at collection (a worker that runs none of these
# tests would pay for the import): it is imported where it writes.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("cloudvolume") is None,
                                reason="cloud-volume (test extra) is missing")

SHAPE = (70, 50, 28)


def _write(path: Path, data: np.ndarray, kind: str, encoding: str,
           offset: tuple[int, int, int], **extra: Any) -> None:
    import cloudvolume

    info = cloudvolume.CloudVolume.create_new_info(
        num_channels=1, layer_type=kind, data_type=str(data.dtype), encoding=encoding,
        resolution=[4, 4, 40], voxel_offset=list(offset), chunk_size=[32, 32, 16],
        volume_size=list(SHAPE), **extra)
    cv = cloudvolume.CloudVolume(f"file://{path}", info=info, compress="gzip", progress=False)
    cv.commit_info()
    cv[:, :, :] = data[..., None]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, np.ndarray]]:
    root = tmp_path_factory.mktemp("cloudvolume")
    rng = np.random.default_rng(3)
    image = rng.integers(0, 255, size=SHAPE, dtype=np.uint8)
    segments = (rng.integers(0, 5, size=SHAPE) * 1000003).astype(np.uint64)
    _write(root / "image", image, "image", "raw", (10, 20, 3))
    _write(root / "segments", segments, "segmentation", "compressed_segmentation", (0, 0, 0),
           compressed_segmentation_block_size=[8, 8, 8])
    return {"image": (root / "image", image), "segments": (root / "segments", segments)}


@pytest.mark.parametrize("name", ["image", "segments"])
def test_cloudvolume_layers_read_voxel_for_voxel(written: dict[str, Any], name: str) -> None:
    path, truth = written[name]
    assert any(p.suffix == ".gz" for p in path.rglob("*"))  # gzip chunk files, as written
    volume = open_volume(path)
    try:
        assert volume.shape == SHAPE
        np.testing.assert_array_equal(volume.read(volume.origin, volume.shape)[0], truth)
        lo = tuple(o + 5 for o in volume.origin)
        np.testing.assert_array_equal(volume.read(lo, (40, 30, 15))[0], truth[5:45, 5:35, 5:20])
    finally:
        volume.close()


def test_a_cloudvolume_chunk_cut_short_is_named(written: dict[str, Any], tmp_path: Path) -> None:
    import shutil

    src, _ = written["image"]
    path = tmp_path / "image"
    shutil.copytree(src, path)
    chunk = sorted(path.rglob("*.gz"))[0]
    chunk.write_bytes(chunk.read_bytes()[:-9])
    volume = open_volume(path)
    try:
        with pytest.raises(FormatError) as caught:
            volume.read(volume.origin, volume.shape)
        assert chunk.name in str(caught.value)
    finally:
        volume.close()
