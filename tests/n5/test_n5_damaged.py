"""Damaged N5 input: each problem is a named FormatError of that chunk or file, never a crash,
a hang or zeros, and the rest of the dataset stays readable.  Bounds against hostile headers."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from n5_writers import source, write_tensorstore

from viewer.format import (
    ChunkDecodeError,
    FormatError,
    HeaderError,
    MetadataError,
    UnsupportedFormatError,
    open_dataset,
    open_volume,
)

pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")

SHAPE = (24, 16, 16)
BLOCK = (8, 8, 8)


@pytest.fixture(scope="module")
def _pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("damaged")
    arr = source(SHAPE, "uint16", seed=21, empty_corner=False)
    for comp in ("raw", "gzip", "zlib", "bzip2", "xz"):
        spec = {"type": "gzip", "useZlib": True} if comp == "zlib" else {"type": comp}
        write_tensorstore(root / comp, arr, BLOCK, spec)
    return root, arr


@pytest.fixture
def data(tmp_path: Path, _pristine: tuple[Path, Any]) -> tuple[Path, Any]:
    shutil.copytree(_pristine[0], tmp_path / "c")
    return tmp_path / "c", _pristine[1]


def _assert_rest_reads(path: Path, arr: Any, bad: tuple[int, int, int]) -> None:
    """Every chunk but ``bad`` still reads right; ``bad`` raises a FormatError naming it."""
    v = open_volume(path)
    for i in range(3):
        for j in range(2):
            for k in range(2):
                lo = (i * 8, j * 8, k * 8)
                if (i, j, k) == bad:
                    with pytest.raises(FormatError) as err:
                        v.read(lo, BLOCK)
                    assert err.value.chunk == bad
                    assert err.value.path and err.value.path.endswith("/".join(map(str, bad)))
                    facts = v.describe_chunk(bad)  # type: ignore[attr-defined]
                    assert "problem" in facts
                    continue
                np.testing.assert_array_equal(v.read(lo, BLOCK)[0],
                                              arr[lo[0]:lo[0] + 8, lo[1]:lo[1] + 8,
                                                  lo[2]:lo[2] + 8])


@pytest.mark.parametrize("comp", ["raw", "gzip", "zlib", "bzip2", "xz"])
def test_truncated_chunk(data: tuple[Path, Any], comp: str) -> None:
    path, arr = data
    f = path / comp / "1" / "1" / "0"
    raw = f.read_bytes()
    f.write_bytes(raw[: 16 + (len(raw) - 16) // 2])
    with pytest.raises(ChunkDecodeError):
        open_volume(path / comp).read((8, 8, 0), BLOCK)
    _assert_rest_reads(path / comp, arr, (1, 1, 0))


@pytest.mark.parametrize("comp", ["gzip", "zlib", "bzip2", "xz"])
def test_corrupt_payload(data: tuple[Path, Any], comp: str) -> None:
    path, arr = data
    f = path / comp / "2" / "0" / "1"
    raw = bytearray(f.read_bytes())
    for n in range(16 + 10, min(len(raw), 16 + 60)):
        raw[n] ^= 0x5A
    f.write_bytes(bytes(raw))
    with pytest.raises(ChunkDecodeError):
        open_volume(path / comp).read((16, 0, 8), BLOCK)
    _assert_rest_reads(path / comp, arr, (2, 0, 1))


def test_header_dims_disagree(data: tuple[Path, Any]) -> None:
    path, arr = data
    f = path / "raw" / "0" / "1" / "1"
    raw = bytearray(f.read_bytes())
    raw[4:16] = struct.pack(">3I", 8, 4, 16)  # same element count, wrong shape
    f.write_bytes(bytes(raw))
    with pytest.raises(HeaderError, match="disagrees"):
        open_volume(path / "raw").read((0, 8, 8), BLOCK)
    _assert_rest_reads(path / "raw", arr, (0, 1, 1))


def test_header_ndim_disagrees(data: tuple[Path, Any]) -> None:
    path, arr = data
    f = path / "gzip" / "0" / "0" / "0"
    raw = bytearray(f.read_bytes())
    raw[2:4] = struct.pack(">H", 2)
    f.write_bytes(bytes(raw))
    with pytest.raises(HeaderError, match="dimensions"):
        open_volume(path / "gzip").read((0, 0, 0), BLOCK)
    _assert_rest_reads(path / "gzip", arr, (0, 0, 0))


def test_decodes_to_the_wrong_size(data: tuple[Path, Any]) -> None:
    """A raw chunk with bytes missing, and a gzip chunk whose stream holds too few bytes."""
    path, arr = data
    import zlib

    f = path / "gzip" / "1" / "0" / "0"
    raw = f.read_bytes()
    short = zlib.compress(b"\x00" * 100)  # a whole, valid zlib stream of 100 bytes
    f.write_bytes(raw[:16] + short)
    with pytest.raises(ChunkDecodeError, match="truncated|decodes"):
        open_volume(path / "gzip").read((8, 0, 0), BLOCK)
    g = path / "raw" / "1" / "0" / "0"
    g.write_bytes(g.read_bytes() + b"\x00\x01")
    with pytest.raises(ChunkDecodeError, match="holds"):
        open_volume(path / "raw").read((8, 0, 0), BLOCK)
    _assert_rest_reads(path / "raw", arr, (1, 0, 0))


def test_varlength_count_disagrees(data: tuple[Path, Any]) -> None:
    path, _ = data
    f = path / "raw" / "0" / "0" / "1"
    raw = f.read_bytes()
    f.write_bytes(struct.pack(">HH3II", 1, 3, 8, 8, 8, 100) + raw[16:])
    with pytest.raises(ChunkDecodeError, match="varlength"):
        open_volume(path / "raw").read((0, 0, 8), BLOCK)


def test_hostile_header_claims_allocate_nothing(data: tuple[Path, Any]) -> None:
    """Headers claiming 2^31-element blocks, 65535 dimensions or an unknown mode are errors
    before any allocation; so is a gzip bomb (the decoder stops one byte past the chunk)."""
    path, _ = data
    v = open_volume(path / "gzip")
    cases = [
        struct.pack(">HH3I", 0, 3, 1 << 31, 1 << 31, 8),
        struct.pack(">HH3II", 1, 3, 8, 8, 8, (1 << 32) - 1),
        struct.pack(">HH", 0, 65535) + b"\x00" * 64,
        struct.pack(">HH", 7, 3),
        b"\x00",
        b"",
    ]
    for head in cases:
        with pytest.raises(FormatError):
            v.decode_chunk((0, 0, 0), head + b"\x00" * 32)  # type: ignore[attr-defined]
    import zlib

    bomb = zlib.compress(b"\x00" * (64 << 20), 9)
    with pytest.raises(ChunkDecodeError, match="more than"):
        v.decode_chunk((0, 0, 0),  # type: ignore[attr-defined]
                       struct.pack(">HH3I", 0, 3, 8, 8, 8) + bomb)


def test_lz4_hostile_frames(tmp_path: Path) -> None:
    """lz4-java frames claiming lengths past their level's limit or past the chunk."""
    from viewer.format.n5 import lz4java

    frame = b"LZ4Block" + bytes([0x20 | 0]) + struct.pack("<III", 10, 1 << 20, 0)
    with pytest.raises(ChunkDecodeError, match="impossible"):
        lz4java.decode(frame + b"\x00" * 10, "x")
    ok = b"LZ4Block" + bytes([0x10 | 6]) + struct.pack("<III", 8, 8, 0) + b"12345678"
    end = b"LZ4Block" + bytes([0x10 | 6]) + struct.pack("<III", 0, 0, 0)
    with pytest.raises(ChunkDecodeError, match="more than"):
        lz4java.decode(ok * 3 + end, "x", limit=16)
    with pytest.raises(ChunkDecodeError, match="magic"):
        lz4java.decode(b"LZ4Blox" + ok[7:] + end, "x")


def test_attributes_not_json(tmp_path: Path, _pristine: tuple[Path, Any]) -> None:
    shutil.copytree(_pristine[0], tmp_path / "c")
    (tmp_path / "c" / "xz" / "attributes.json").write_text('{"dimensions": [24, 16')
    with pytest.raises(MetadataError, match="not JSON") as err:
        open_volume(tmp_path / "c" / "xz")
    assert err.value.path and err.value.path.endswith("xz/attributes.json")
    # the container still opens: the others are layers, the broken one a problem
    ds = open_dataset(tmp_path / "c")
    assert sorted(layer.name for layer in ds.layers) == ["bzip2", "gzip", "raw", "zlib"]
    assert any(isinstance(p, MetadataError) and "xz" in (p.path or "") for p in ds.problems)


@pytest.mark.parametrize("drop", ["blockSize", "dataType"])
def test_attributes_missing_key(tmp_path: Path, _pristine: tuple[Path, Any], drop: str) -> None:
    shutil.copytree(_pristine[0] / "raw", tmp_path / "raw")
    attrs_path = tmp_path / "raw" / "attributes.json"
    attrs = json.loads(attrs_path.read_text())
    del attrs[drop]
    attrs_path.write_text(json.dumps(attrs))
    with pytest.raises(FormatError) as err:
        open_volume(tmp_path / "raw")
    assert isinstance(err.value, (MetadataError, UnsupportedFormatError))


@pytest.mark.parametrize("bad", [
    {"dimensions": [10, "a", 3]},
    {"dimensions": [10, 10]},
    {"blockSize": [0, 8, 8]},
    {"blockSize": [4096, 4096, 4096]},
    {"dataType": "complex64"},
    {"compression": {"type": "snappy"}},
    {"compression": "gzip"},
    {"dimensions": [10, 10, 10, 3]},
])
def test_attributes_bad_values(tmp_path: Path, _pristine: tuple[Path, Any],
                               bad: dict[str, Any]) -> None:
    shutil.copytree(_pristine[0] / "raw", tmp_path / "raw")
    attrs_path = tmp_path / "raw" / "attributes.json"
    attrs = json.loads(attrs_path.read_text())
    attrs.update(bad)
    if "dimensions" in bad and len(bad["dimensions"]) == 4:
        attrs["blockSize"] = [8, 8, 8, 1]
    attrs_path.write_text(json.dumps(attrs))
    with pytest.raises((MetadataError, UnsupportedFormatError)):
        open_volume(tmp_path / "raw")


def test_legacy_compression_type(tmp_path: Path, _pristine: tuple[Path, Any]) -> None:
    shutil.copytree(_pristine[0] / "gzip", tmp_path / "gzip")
    attrs_path = tmp_path / "gzip" / "attributes.json"
    attrs = json.loads(attrs_path.read_text())
    del attrs["compression"]
    attrs["compressionType"] = "gzip"
    attrs_path.write_text(json.dumps(attrs))
    v = open_volume(tmp_path / "gzip")
    assert v.info().compression == "gzip"
    np.testing.assert_array_equal(v.read((0, 0, 0), SHAPE)[0], _pristine[1])


def test_zstd_and_blosc_sizes_are_checked() -> None:
    """numcodecs fills the start of a larger buffer without a word: the frame's declared
    size (zstd) and the blosc header's are checked first; a streaming zstd frame (no content
    size, as zstd-jni's stream writes) is checked by the decoder."""
    from viewer.format.n5 import codecs
    from viewer.format.n5.attributes import Compression

    if not codecs.numcodecs_available():
        pytest.skip("numcodecs (the n5 extra) is not installed")
    from numcodecs import blosc, zstd

    data = bytes(range(256)) * 4
    frame = zstd.compress(data, 3)
    assert codecs.zstd_content_size(frame) == 1024
    with pytest.raises(ChunkDecodeError, match="declares 1024"):
        codecs.decompress(Compression("zstd"), frame, 2048, "x")
    # the same frame without its content size: single-segment off, a 1 KiB window
    fhd = frame[4]
    fcs_bytes = (1 if fhd & 0x20 else 0, 2, 4, 8)[fhd >> 6]
    stream = frame[:4] + bytes([fhd & 0x1F & ~0x20, 0]) + frame[5 + (0 if fhd & 0x20 else 1)
                                                             + fcs_bytes:]
    assert codecs.zstd_content_size(stream) is None
    assert bytes(codecs.decompress(Compression("zstd"), stream, 1024, "x")) == data
    with pytest.raises(ChunkDecodeError):
        codecs.decompress(Compression("zstd"), stream, 2048, "x")
    packed = blosc.compress(data, b"lz4", 5, 1)
    with pytest.raises(ChunkDecodeError, match="blosc header says 1024"):
        codecs.decompress(Compression("blosc"), packed, 2048, "x")
    assert bytes(codecs.decompress(Compression("blosc"), packed, 1024, "x")) == data


def test_short_output_is_an_error() -> None:
    """A payload that decodes to fewer bytes than the chunk holds is an error, whatever the
    codec (the whole payload is always decoded: no decoder stops at a prefix)."""
    import zlib

    import lz4.block

    from viewer.format.n5 import codecs
    from viewer.format.n5.attributes import Compression

    short = lz4.block.compress(b"a" * 100, store_size=False)
    with pytest.raises(ChunkDecodeError):
        codecs.decompress(Compression("lz4"), short, 1000, "x")
    with pytest.raises(ChunkDecodeError):
        codecs.decompress(Compression("raw"), b"a" * 100, 1000, "x")
    assert len(codecs.decompress(Compression("gzip"), zlib.compress(b"a" * 1000), 1000,
                                 "x")) == 1000
    with pytest.raises(ChunkDecodeError):
        codecs.decompress(Compression("gzip"), zlib.compress(b"a" * 40), 1000, "x")
