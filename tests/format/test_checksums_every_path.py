"""Every checksum a format carries is checked on every path its voxels take.

Datasets written by the real writers (tensorstore for N5, zarr-python for Zarr, the Java N5
writer for lz4-java frames) get one chunk damaged the way a disk or a copy damages it: bytes
deleted inside the stream, bytes of the trailer (gzip's CRC32 and length, zlib's Adler-32, a
zstd frame's checksum, zarr's crc32c) flipped.  Each damaged chunk must be a named
``FormatError`` of that chunk on ``Volume.read`` of a thin box (a plane near the chunk's
start, which a decoder that stops early never checks), on the synchronous plane read, through
the loader (the window's planes) and in ``info``; never a wrong voxel.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.core.slicing import XY, PlaneRequest, Status, read_plane
from viewer.format import FormatError, open_volume

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "n5"))
from n5_writers import source, write_tensorstore  # noqa: E402

SHAPE = (24, 16, 16)
BLOCK = (8, 8, 8)
#: The damaged chunk (grid position) and its first voxel.
BAD = (1, 1, 0)
LO = (8, 8, 0)

Damage = Callable[[bytes], bytes]


def _delete14(raw: bytes) -> bytes:
    mid = 16 + (len(raw) - 16) // 2
    return raw[:mid] + raw[mid + 14:]


def _flip(back: int) -> Damage:
    def damage(raw: bytes) -> bytes:
        i = len(raw) - back
        return raw[:i] + bytes([raw[i] ^ 0x5A]) + raw[i + 1:]
    return damage


#: gzip's trailer: CRC32 (8..5 bytes from the end), ISIZE (4..1); zlib's: Adler-32 (4..1).
N5_DAMAGES: dict[str, Damage] = {"deleted-14": _delete14, "crc": _flip(7), "isize": _flip(2)}


@pytest.fixture(scope="module")
def n5_pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    pytest.importorskip("tensorstore")
    root = tmp_path_factory.mktemp("n5sum")
    arr = source(SHAPE, "uint16", seed=27, empty_corner=False)
    for comp, spec in (("gzip", {"type": "gzip"}), ("zlib", {"type": "gzip", "useZlib": True}),
                       ("bzip2", {"type": "bzip2"}), ("xz", {"type": "xz"})):
        write_tensorstore(root / comp, arr, BLOCK, spec)
    return root, arr


def _check_every_path(path: Path, truth: Any, lo: tuple[int, int, int],
                      bad: tuple[int, ...], target: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    """Every way out: a named error of ``bad`` (file ``target``), never a wrong voxel."""
    from viewer.cli.info import main as info_main
    from viewer.core.loader import Loader

    v = open_volume(path)
    # Volume.read: thin boxes at the chunk's first and a middle z (a decoder that stopped at
    # the planes it needs would return voxels unchecked), and the whole chunk
    for z, depth in ((0, 1), (3, 1), (0, 8)):
        with pytest.raises(FormatError) as err:
            v.read((lo[0], lo[1], lo[2] + z), (8, 8, depth))
        assert err.value.chunk == bad and err.value.path == str(target)
    # the rest reads right
    np.testing.assert_array_equal(v.read((0, 0, 0), (8, 8, 8))[0], truth[:8, :8, :8])
    # the synchronous plane read and the loader's: the chunk's pixels fail, the rest is data
    req = PlaneRequest(XY, lo[2] + 1, (0, 0), (SHAPE[0], SHAPE[1]))
    failed = np.zeros((SHAPE[0], SHAPE[1]), bool)
    failed[lo[0]:lo[0] + 8, lo[1]:lo[1] + 8] = True
    loader = Loader(open_volume(path), prefetch_enabled=False)
    try:
        loader.set_wanted([req], 0, (0, 0, lo[2] + 1))
        assert loader.wait_idle(60)
        planes = [read_plane(v, req), loader.plane(req)]
    finally:
        loader.close()
    for plane in planes:
        assert (plane.status[failed] == Status.FAILED).all()
        assert (plane.status[~failed] == Status.DATA).all()
        np.testing.assert_array_equal(plane.data[0][~failed], truth[:, :, lo[2] + 1][~failed])
        assert any(e.chunk == bad and e.path == str(target) for e in plane.errors.values())
    # info names the chunk and says invalid
    capsys.readouterr()
    rc = info_main([str(path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["valid"] is False and rc == 1
    assert any(p["path"] == str(target) and p["chunk"] == list(bad) for p in doc["problems"])


@pytest.mark.parametrize("damage", sorted(N5_DAMAGES))
@pytest.mark.parametrize("comp", ["gzip", "zlib", "bzip2", "xz"])
def test_damaged_n5_chunk_is_named_on_every_path(
        tmp_path: Path, n5_pristine: tuple[Path, Any], comp: str, damage: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    root, arr = n5_pristine
    path = tmp_path / comp
    shutil.copytree(root / comp, path)
    target = path / "1" / "1" / "0"
    target.write_bytes(N5_DAMAGES[damage](target.read_bytes()))
    _check_every_path(path, arr, LO, BAD, target, capsys)


def test_gzip_trailer_is_a_checksum_error(tmp_path: Path, n5_pristine: tuple[Path, Any]) -> None:
    """A gzip member whose CRC32 disagrees with its data is a ``ChecksumError``."""
    from viewer.format.errors import ChecksumError

    root, _ = n5_pristine
    shutil.copytree(root / "gzip", tmp_path / "g")
    target = tmp_path / "g" / "1" / "1" / "0"
    target.write_bytes(_flip(7)(target.read_bytes()))
    with pytest.raises(ChecksumError):
        open_volume(tmp_path / "g").read(LO, (8, 8, 1))


def test_lz4java_frame_checksum_on_a_thin_read(java_lz4: tuple[Path, Any], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A byte of a raw lz4-java frame flipped (only xxhash can see it) fails on a thin read."""
    from viewer.format.n5 import lz4java

    if not lz4java.checksums_available:
        pytest.skip("xxhash is not installed")
    src, arr = java_lz4
    path = tmp_path / "lz4"
    shutil.copytree(src, path)
    target = path / "1" / "1" / "0"
    raw = bytearray(target.read_bytes())
    raw[16 + lz4java.HEADER_LENGTH + 3] ^= 0x01  # inside the first frame's payload
    target.write_bytes(bytes(raw))
    _check_every_path(path, arr, LO, BAD, target, capsys)


@pytest.fixture(scope="module")
def java_lz4(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """An lz4 dataset written by N5's Java writer with raw frames (level 0 on noise keeps
    lz4-java from compressing, so a flipped byte decodes and only the checksum sees it)."""
    from n5_writers import java_missing, write_java

    reason = java_missing()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("lz4sum")
    rng = np.random.default_rng(5)
    arr = rng.integers(0, 65535, SHAPE, dtype=np.uint16)
    out = root / "c.n5" / "lz4"
    write_java(root, [{"array": arr, "out": out, "block": BLOCK, "compression": "lz4",
                       "param": 1024}])
    (root / "c.n5" / "attributes.json").write_text('{"n5": "4.0.0"}')
    return out, arr


ZARR_CASES = ["v3-gzip", "v3-zstd-checksum", "v3-crc32c", "v2-zlib", "v2-zstd-checksum"]


@pytest.fixture(scope="module")
def zarr_pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    zarr = pytest.importorskip("zarr")
    import numcodecs
    from zarr.codecs import Crc32cCodec, GzipCodec, ZstdCodec

    root = tmp_path_factory.mktemp("zarrsum")
    arr = source(SHAPE, "uint16", seed=28, empty_corner=False)
    kinds: dict[str, dict[str, Any]] = {
        "v3-gzip": {"zarr_format": 3, "compressors": [GzipCodec()]},
        "v3-zstd-checksum": {"zarr_format": 3, "compressors": [ZstdCodec(checksum=True)]},
        "v3-crc32c": {"zarr_format": 3, "compressors": [ZstdCodec(), Crc32cCodec()]},
        "v2-zlib": {"zarr_format": 2, "compressors": numcodecs.Zlib()},
        "v2-zstd-checksum": {"zarr_format": 2, "compressors": numcodecs.Zstd(checksum=True)},
    }
    for name, kw in kinds.items():
        # zarr-python is handed (Z, Y, X) in C order: the volume's (X, Y, Z)
        z = zarr.create_array(str(root / name), shape=arr.shape[::-1], chunks=BLOCK,
                              dtype=arr.dtype, **kw)
        z[...] = np.ascontiguousarray(arr.T)
    return root, arr


@pytest.mark.parametrize("damage", ["deleted-14", "last"])
@pytest.mark.parametrize("case", ZARR_CASES)
def test_damaged_zarr_chunk_is_named_on_every_path(
        tmp_path: Path, zarr_pristine: tuple[Path, Any], case: str, damage: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    root, arr = zarr_pristine
    path = tmp_path / case
    shutil.copytree(root / case, path)
    # the chunk at volume (x, y, z) = BAD is zarr's (z, y, x) key
    key = [str(BAD[2]), str(BAD[1]), str(BAD[0])]
    target = path.joinpath("c", *key) if case.startswith("v3") else path / ".".join(key)
    raw = target.read_bytes()
    target.write_bytes(_delete14(raw) if damage == "deleted-14" else _flip(2)(raw))
    _check_every_path(path, arr, LO, BAD, target, capsys)
