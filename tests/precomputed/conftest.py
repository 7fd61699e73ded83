"""The precomputed tests' data, written once per session by tensorstore (and gzip chunk
files as CloudVolume writes them): ``pc`` maps a name to ``(path, [truth per scale])``, the
truth being tensorstore's own read of each scale.  ``precomputed_writers`` (writers.py) and
``range_server`` (tests/remote) are importable under those names."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

for _name, _file in (("precomputed_writers", Path(__file__).with_name("writers.py")),
                     ("range_server", Path(__file__).parent.parent / "remote"
                      / "range_server.py")):
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(_name, _file)
        assert _spec is not None and _spec.loader is not None
        _module = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _module
        _spec.loader.exec_module(_module)

import precomputed_writers as w  # noqa: E402
from precomputed_writers import OFFSET, SIZE  # noqa: E402


def _build(root: Path) -> dict[str, tuple[Path, list[np.ndarray]]]:
    out: dict[str, tuple[Path, list[np.ndarray]]] = {}
    absent = (slice(0, 34), slice(0, 40), slice(0, 20))  # chunk column x=48.. stays absent

    # uint16 image, sharded (identity hash, raw indexes), voxel_offset, two scales
    img = w.sample((1, *SIZE), "uint16", 1)
    p = root / "sharded_identity"
    w.write_scale(p, img, dtype="uint16", offset=OFFSET, sharding=w.IDENTITY, region=absent)
    w.write_scale(p, w.downsample(img, (2, 2, 1)), dtype="uint16", resolution=(8, 8, 40),
                  offset=(16, 8, 8), sharding=w.IDENTITY)
    out["sharded_identity"] = (p, [w.read_scale(p, 0), w.read_scale(p, 1)])

    # uint64 segmentation, compressed_segmentation, sharded (murmurhash3, gzip), two scales
    seg = w.segments(SIZE, "uint64", 2)
    p = root / "sharded_murmur"
    w.write_scale(p, seg, dtype="uint64", kind="segmentation",
                  encoding="compressed_segmentation", sharding=w.MURMUR_GZIP, region=absent)
    w.write_scale(p, w.downsample(seg, (2, 2, 2)), dtype="uint64", kind="segmentation",
                  encoding="compressed_segmentation", resolution=(8, 8, 80),
                  sharding=w.MURMUR_GZIP)
    out["sharded_murmur"] = (p, [w.read_scale(p, 0), w.read_scale(p, 1)])

    # uint32 segmentation, compressed_segmentation, unsharded
    seg32 = w.segments(SIZE, "uint32", 3)
    p = root / "cseg32"
    w.write_scale(p, seg32, dtype="uint32", kind="segmentation",
                  encoding="compressed_segmentation", region=absent)
    out["cseg32"] = (p, [w.read_scale(p, 0)])

    # uint8 jpeg (one channel) and png (three channels), unsharded
    u8 = w.sample((1, *SIZE), "uint8", 4)
    p = root / "jpeg"
    w.write_scale(p, u8, dtype="uint8", encoding="jpeg", region=absent)
    out["jpeg"] = (p, [w.read_scale(p, 0)])
    rgb = w.sample((3, *SIZE), "uint8", 5)
    p = root / "png"
    w.write_scale(p, rgb, dtype="uint8", encoding="png", region=absent)
    out["png"] = (p, [w.read_scale(p, 0)])

    # float32 raw with two channels, unsharded; then its chunks gzip-compressed (CloudVolume)
    f32 = w.sample((2, *SIZE), "uint16", 6).astype(np.float32) / 7
    for name in ("raw", "gzip"):
        p = root / name
        w.write_scale(p, f32, dtype="float32", region=absent)
        out[name] = (p, [w.read_scale(p, 0)])
    w.gzip_chunks(root / "gzip" / "4_4_40")
    return out


@pytest.fixture(scope="session")
def pc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[np.ndarray]]]:
    pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
    return _build(tmp_path_factory.mktemp("precomputed"))


@pytest.fixture
def pc_copy(pc: dict[str, tuple[Path, list[np.ndarray]]], tmp_path: Path) -> Any:
    """A copy of one dataset a test may damage: ``pc_copy(name) -> path``."""
    def copy(name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(pc[name][0], dst)
        return dst
    return copy
