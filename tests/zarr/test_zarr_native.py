"""Zarr reads through the native chunk kernel against the Python path: the same voxels for
arrays written by tensorstore (webKnossos' sharded zstd layout) and zarr-python (v3 gzip with
a transpose, v2 zlib in Fortran order, big-endian types, several channels), and the same
error, word for word, for a damaged chunk (a flipped zstd content checksum, bytes deleted).
The kernel's cases skip where it was not built or its library is absent."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr_test_fixtures import sample, write_tensorstore_zarr3

from viewer.format import FormatError, open_volume
from viewer.format.native import chunks
from viewer.format.zarr import nativeread

zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")
pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")

BOXES = [((0, 0, 0), (40, 36, 20)), ((3, 5, 7), (30, 1, 9)), ((0, 0, 13), (40, 36, 1)),
         ((31, 17, 12), (10, 10, 10))]


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, lo: Any, size: Any) -> tuple[Any, Any]:
    got: list[Any] = []
    for enabled in (True, False):
        monkeypatch.setattr(nativeread, "ENABLED", enabled)
        try:
            got.append(open_volume(path).read(lo, size))
        except FormatError as exc:
            got.append(exc)
    return got[0], got[1]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    from zarr.codecs import BytesCodec, GzipCodec, TransposeCodec

    root = tmp_path_factory.mktemp("zarrnative")
    out: dict[str, tuple[Path, Any]] = {}
    data = sample((2, 40, 36, 20), "uint16", seed=7)
    write_tensorstore_zarr3(root / "wk", data, shard_len=32, chunk_len=8)
    out["wk-zstd-sharded"] = (root / "wk", data)
    zyx = sample((20, 36, 40), "int32", seed=8)
    a = zarr.create_array(str(root / "v3gzip"), shape=zyx.shape, chunks=(8, 8, 16),
                          dtype=">i4", serializer=BytesCodec(endian="big"),
                          filters=[TransposeCodec(order=(2, 0, 1))],
                          compressors=[GzipCodec(level=3)], dimension_names=["z", "y", "x"])
    a[...] = zyx
    out["v3-gzip-transpose-big"] = (root / "v3gzip", zyx.transpose(2, 1, 0)[None])
    import numcodecs

    b = zarr.create_array(str(root / "v2zlib"), shape=zyx.shape, chunks=(8, 8, 16),
                          dtype="<i4", order="F", zarr_format=2,
                          compressors=numcodecs.Zlib(level=2))
    b[...] = zyx
    out["v2-zlib-fortran"] = (root / "v2zlib", zyx.transpose(2, 1, 0)[None])
    return out


@pytest.mark.parametrize("name", ["wk-zstd-sharded", "v3-gzip-transpose-big",
                                  "v2-zlib-fortran"])
def test_kernel_reads_the_voxels_the_python_path_reads(
        written: dict[str, tuple[Path, Any]], name: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path, want = written[name]
    with open_volume(path) as v:
        lay = v.native_layout()  # type: ignore[attr-defined]
    if lay is None:
        pytest.skip("native kernel or the codec's library absent")
    for lo, size in BOXES:
        native, python = _both(path, monkeypatch, lo, size)
        np.testing.assert_array_equal(native, python)
        hi = [min(a + b, s) for a, b, s in zip(lo, size, want.shape[1:], strict=True)]
        np.testing.assert_array_equal(
            native[:, :hi[0] - lo[0], :hi[1] - lo[1], :hi[2] - lo[2]],
            want[:, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]])


def _shard_chunk(path: Path) -> tuple[Path, int, int]:
    """The shard file of ``path``'s first shard and the first stored chunk's byte range."""
    shard = path / "c" / "0" / "0" / "0" / "0"
    raw = shard.read_bytes()
    index = np.frombuffer(raw[-(4 * 4 * 4 * 16 + 4):-4], dtype="<u8").reshape(-1, 2)
    present = index[index[:, 0] != 2**64 - 1]
    start, size = (int(v) for v in present[np.argmin(present[:, 0])])
    return shard, start, size


@pytest.mark.skipif(not chunks.usable(chunks.ZSTD), reason="native kernel or libzstd absent")
@pytest.mark.parametrize("damage", ["checksum", "deleted"])
def test_a_damaged_zstd_chunk_is_the_same_error_on_both_paths(
        written: dict[str, tuple[Path, Any]], tmp_path: Path, damage: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    src, _ = written["wk-zstd-sharded"]
    path = tmp_path / "wk"
    shutil.copytree(src, path)
    shard, start, size = _shard_chunk(path)
    raw = bytearray(shard.read_bytes())
    if damage == "checksum":  # the frame's last 4 bytes: its content checksum
        raw[start + size - 2] ^= 0x5A
    else:  # 6 bytes inside the frame replaced by the 6 after them, the size kept
        mid = start + size // 2
        raw[mid:start + size - 6] = raw[mid + 6:start + size]
    shard.write_bytes(bytes(raw))
    native, python = _both(path, monkeypatch, (0, 0, 0), (40, 36, 20))
    assert isinstance(native, FormatError), "the kernel returned voxels of a damaged chunk"
    assert type(native) is type(python)
    assert (str(native), native.chunk, native.path, native.offset) == \
        (str(python), python.chunk, python.path, python.offset)


@pytest.mark.skipif(not chunks.usable(chunks.ZSTD), reason="native kernel or libzstd absent")
def test_a_shards_chunks_for_the_loader_are_the_python_paths(
        written: dict[str, tuple[Path, Any]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_chunks`` of a shard (the loader's path): whole chunks, the same arrays and the
    same error for a damaged one."""
    src, _ = written["wk-zstd-sharded"]
    path = tmp_path / "wk"
    shutil.copytree(src, path)
    shard, start, size = _shard_chunk(path)
    raw = bytearray(shard.read_bytes())
    raw[start + size - 2] ^= 0x5A
    shard.write_bytes(bytes(raw))
    got: list[Any] = []
    for enabled in (True, False):
        monkeypatch.setattr(nativeread, "ENABLED", enabled)
        with open_volume(path) as v:
            unit = v.open_unit((0, 0, 0))
            assert unit is not None
            got.append(unit.read_chunks(list(range(unit.num_chunks))))
    errors = 0
    for a, b in zip(*got, strict=True):
        if isinstance(b, FormatError):
            errors += 1
            assert type(a) is type(b) and str(a) == str(b)
        elif b is None:
            assert a is None
        else:
            assert isinstance(a, np.ndarray) and a.flags.f_contiguous and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    assert errors == 1


@pytest.mark.skipif(not chunks.usable(chunks.ZLIB), reason="native kernel or libdeflate absent")
def test_chunk_objects_for_the_loader_are_the_python_paths(
        written: dict[str, tuple[Path, Any]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_units`` of an unsharded array (the loader's path for one chunk per object):
    whole chunks, the same arrays, the same error for a damaged one (zlib's Adler-32)."""
    src, _ = written["v2-zlib-fortran"]
    path = tmp_path / "v2"
    shutil.copytree(src, path)
    f = path / "1.1.0"
    raw = f.read_bytes()
    f.write_bytes(raw[:-1] + bytes([raw[-1] ^ 0x5A]))
    got: list[Any] = []
    for enabled in (True, False):
        monkeypatch.setattr(nativeread, "ENABLED", enabled)
        with open_volume(path) as v:
            assert v.small_units
            grid = [-(-s // c) for s, c in zip(v.shape, v.chunk_shape, strict=True)]
            jobs = [((i, j, k), [0]) for i in range(grid[0]) for j in range(grid[1])
                    for k in range(grid[2])]
            got.append(v.read_units(jobs))
    errors = 0
    for a, b in zip(*got, strict=True):
        assert (a is None) == (b is None)
        if b is None:
            continue
        ((x,), (y,)) = (a, b)
        if isinstance(y, FormatError):
            errors += 1
            assert type(x) is type(y) and str(x) == str(y)
        else:
            assert isinstance(x, np.ndarray) and x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
    assert errors == 1


def test_an_element_inside_a_chunk_of_time_points_and_channels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Time points and channels two to a chunk: time point 1 (and the second channel chunk)
    start inside a chunk, which the kernel, placing a chunk from its start, must not decode:
    every index equals the writer's array with and without it."""
    from zarr.codecs import ZstdCodec

    tczyx = sample((4, 3, 20, 24, 28), "uint16", seed=11)
    a = zarr.create_array(str(tmp_path / "tc"), shape=tczyx.shape, chunks=(2, 2, 10, 12, 14),
                          dtype="uint16", compressors=[ZstdCodec(level=3)],
                          dimension_names=["t", "c", "z", "y", "x"])
    a[...] = tczyx
    for enabled in (True, False):
        monkeypatch.setattr(nativeread, "ENABLED", enabled)
        for t in range(4):
            volume = open_volume(tmp_path / "tc", index={"t": t})
            got = volume.read((0, 0, 0), volume.shape)
            np.testing.assert_array_equal(got, tczyx[t].transpose(0, 3, 2, 1))
