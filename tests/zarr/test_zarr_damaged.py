"""Bad input is a named ``FormatError``: a shard index cut short or failing its crc32c, a chunk
whose zstd bytes are corrupt, metadata with wrong types, an unknown codec, an axis that cannot
be shown.  Never a crash, a hang, or fill values where stored bytes are damaged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr_test_fixtures import sample, write_tensorstore_zarr3

from viewer.format import (
    ChecksumError,
    ChunkDecodeError,
    FormatError,
    MetadataError,
    UnsupportedFormatError,
    open_volume,
)
from viewer.format.errors import JumpTableError

pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")

SHARD = 32
CHUNK = 8
N = (SHARD // CHUNK) ** 3


@pytest.fixture
def sharded(tmp_path: Path) -> tuple[Path, np.ndarray]:
    data = sample((1, 64, 32, 32), "uint8", seed=11)
    path = write_tensorstore_zarr3(tmp_path / "a", data, shard_len=SHARD, chunk_len=CHUNK)
    return Path(path), data


def _shard(path: Path, x: int = 0) -> Path:
    return path / "c" / "0" / str(x) / "0" / "0"


def test_index_cut_short(sharded: tuple[Path, np.ndarray]) -> None:
    path, data = sharded
    f = _shard(path)
    raw = f.read_bytes()
    f.write_bytes(raw[:100])  # shorter than the index itself
    with open_volume(path) as v:
        with pytest.raises(JumpTableError, match="shorter than its index") as info:
            v.read((0, 0, 0), (8, 8, 8))
        assert info.value.path == str(f)
        # the other shard still reads
        np.testing.assert_array_equal(v.read((32, 0, 0), (32, 32, 32)), data[:, 32:64])


def test_index_cut_at_the_end_fails_its_checksum(sharded: tuple[Path, np.ndarray]) -> None:
    path, _ = sharded
    f = _shard(path)
    f.write_bytes(f.read_bytes()[:-7])
    with open_volume(path) as v, pytest.raises(ChecksumError, match="crc32c"):
        v.open_unit((0, 0, 0))


def test_index_checksum_mismatch(sharded: tuple[Path, np.ndarray]) -> None:
    path, _ = sharded
    f = _shard(path)
    raw = bytearray(f.read_bytes())
    at = len(raw) - (16 * N + 4) + 16 * 5 + 2  # inside entry 5
    raw[at] ^= 0x01
    f.write_bytes(bytes(raw))
    with open_volume(path) as v:
        with pytest.raises(ChecksumError) as info:
            v.read((0, 0, 0), (4, 4, 4))
        err = info.value
        assert err.path == str(f) and "crc32c" in str(err)
        assert err.offset == len(raw) - 4  # where the stored checksum sits


def test_corrupt_zstd_chunk_is_its_error(sharded: tuple[Path, np.ndarray]) -> None:
    path, data = sharded
    f = _shard(path)
    raw = bytearray(f.read_bytes())
    index = np.frombuffer(bytes(raw[-(16 * N + 4):-4]), "<u8").reshape(N, 2)
    # inner chunk 1 of shard (0,0,0): C order of (c, x, y, z) -> chunk (x=0, y=0, z=1)
    off, nb = int(index[1, 0]), int(index[1, 1])
    for k in range(off + 6, off + nb - 4, 5):
        raw[k] ^= 0x5A
    f.write_bytes(bytes(raw))
    with open_volume(path) as v:
        unit = v.open_unit((0, 0, 0))
        assert unit is not None
        r0, r1 = unit.read_chunks([0, 1])
        assert isinstance(r1, ChunkDecodeError)
        assert r1.chunk == (0, 0, 1) and r1.path == str(f) and r1.offset == off
        assert not isinstance(r0, FormatError)
        np.testing.assert_array_equal(r0[0], data[0, 0:8, 0:8, 0:8])
        with pytest.raises(ChunkDecodeError):
            v.read((0, 0, 4), (8, 8, 8))
        assert any(isinstance(p, ChunkDecodeError) for p in unit.problems())


def test_index_entry_outside_the_shard(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    from zarr.codecs import BytesCodec, ShardingCodec, ZstdCodec

    arr = zarr.create(shape=(16, 16, 16), chunks=(16, 16, 16), dtype="uint16", zarr_format=3,
                      store=str(tmp_path / "a"), dimension_names=["z", "y", "x"],
                      codecs=[ShardingCodec(chunk_shape=(8, 8, 8),
                                            codecs=[BytesCodec(), ZstdCodec()],
                                            index_codecs=[BytesCodec()])])
    data = sample((16, 16, 16), "uint16")
    arr[...] = data
    f = tmp_path / "a" / "c" / "0" / "0" / "0"
    raw = bytearray(f.read_bytes())
    entry = len(raw) - 16 * 8 + 16 * 3  # entry 3: (z=0, y=1, x=1)
    raw[entry:entry + 8] = (len(raw) * 4).to_bytes(8, "little")
    f.write_bytes(bytes(raw))
    with open_volume(tmp_path / "a") as v:
        unit = v.open_unit((0, 0, 0))
        assert unit is not None and unit.describe().fields["bad_entries"] == 1
        results = unit.read_chunks([2, 3])
        assert isinstance(results[1], JumpTableError) and results[1].chunk == (1, 1, 0)
        assert not isinstance(results[0], FormatError)
        with pytest.raises(JumpTableError, match="outside"):
            v.read((8, 8, 0), (2, 2, 2))
        np.testing.assert_array_equal(v.read((0, 8, 0), (8, 8, 8))[0],
                                      data[0:8, 8:16, 0:8].transpose(2, 1, 0))


def test_truncated_v2_chunk(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    import numcodecs

    arr = zarr.create_array(store=str(tmp_path / "a"), shape=(16, 16), chunks=(8, 8),
                            dtype="<i4", zarr_format=2, compressors=numcodecs.Zstd())
    arr[...] = sample((16, 16), "int32")
    f = tmp_path / "a" / "1.0"
    f.write_bytes(f.read_bytes()[:-9])
    with open_volume(tmp_path / "a") as v:
        with pytest.raises(ChunkDecodeError) as info:
            v.read((0, 8, 0), (8, 8, 1))
        assert info.value.path == str(f) and info.value.chunk == (0, 1, 0)


GOOD_V3: dict[str, Any] = {
    "zarr_format": 3, "node_type": "array", "shape": [8, 8, 8], "data_type": "uint8",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4, 4]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
    "codecs": [{"name": "bytes"}],
}


@pytest.mark.parametrize("key,value,error,words", [
    ("shape", "big", MetadataError, "shape"),
    ("shape", [8, -1, 8], MetadataError, "shape"),
    ("data_type", 5, MetadataError, "data_type"),
    ("data_type", "complex64", UnsupportedFormatError, "complex64"),
    ("chunk_grid", {"name": "regular", "configuration": {"chunk_shape": [4, "x", 4]}},
     MetadataError, "chunk_shape"),
    ("chunk_grid", {"name": "rectilinear"}, UnsupportedFormatError, "rectilinear"),
    ("codecs", {"name": "bytes"}, MetadataError, "codecs"),
    ("codecs", [{"name": "bytes"}, {"name": "lzma9000"}], UnsupportedFormatError, "lzma9000"),
    ("codecs", [{"name": "zstd"}], MetadataError, "before"),
    ("fill_value", "lots", MetadataError, "fill_value"),
    ("fill_value", 300, MetadataError, "fill_value"),
    ("dimension_names", ["x", "y"], MetadataError, "dimension_names"),
    ("zarr_format", "3", UnsupportedFormatError, "zarr_format"),
])
def test_bad_zarr_json(tmp_path: Path, key: str, value: Any, error: type[FormatError],
                       words: str) -> None:
    doc = dict(GOOD_V3, **{key: value})
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(error, match=words) as info:
        open_volume(tmp_path / "a")
    assert str(tmp_path / "a" / "zarr.json") in str(info.value)


def test_good_zarr_json_of_the_bad_ones_opens(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(GOOD_V3))
    with open_volume(tmp_path / "a") as v:
        assert v.shape == (8, 8, 8)
        assert (v.read((0, 0, 0), (8, 8, 8)) == 0).all()  # every chunk absent: fill value


def test_unknown_shard_inner_codec_is_named(tmp_path: Path) -> None:
    doc = dict(GOOD_V3, codecs=[{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2, 2], "codecs": [{"name": "bytes"}, {"name": "snappy"}]}}])
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(UnsupportedFormatError, match="snappy"):
        open_volume(tmp_path / "a")


def test_extra_axis_is_kept_and_an_index_past_it_is_named(tmp_path: Path) -> None:
    doc = dict(GOOD_V3, shape=[3, 8, 8, 8], dimension_names=["t", "z", "y", "x"],
               chunk_grid={"name": "regular", "configuration": {"chunk_shape": [1, 4, 4, 4]}})
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "zarr.json").write_text(json.dumps(doc))
    with open_volume(tmp_path / "a") as v:
        assert v.extra_axes == {"t": 3} and v.shape == (8, 8, 8)
    with pytest.raises(IndexError, match="index 3 of axis 't'"):
        open_volume(tmp_path / "a", index={"t": 3})


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "[" * 100000 + "]" * 100000])
def test_unreadable_zarray(tmp_path: Path, text: str) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".zarray").write_text(text)
    with pytest.raises(MetadataError):
        open_volume(tmp_path / "a")


def test_v2_unknown_compressor_is_named(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [4, 4], "chunks": [2, 2], "dtype": "<u2",
        "compressor": {"id": "wavelet-magic"}, "fill_value": 0, "order": "C",
        "filters": None}))
    with pytest.raises(UnsupportedFormatError, match="wavelet-magic"):
        open_volume(tmp_path / "a")
