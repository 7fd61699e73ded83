"""zfpc files written by the real ``zfpc`` package (with ``zfpy``), read through the volume
interface: every dtype and mode, 1-D to 4-D, the streams split along every kind of
uncorrelated dimension; lossless files voxel for voxel against the writer's input, lossy ones
against the writer's own stream decoder (``zfpy`` on each stream, in its true type -- the
``zfpc`` package's ``decompress`` turns everything into float32).  Then the inspector's facts
and bad input."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

zfpc = pytest.importorskip("zfpc", reason="the zfpc writer is in the test extra")
zfpy = pytest.importorskip("zfpy", reason="zfpy is a dependency of wkw-viewer")

from volume_contract import VolumeContract  # noqa: E402

from viewer.format import FormatError, open_dataset, open_volume  # noqa: E402
from viewer.format.errors import ChunkDecodeError, HeaderError  # noqa: E402
from viewer.format.registry import format_names  # noqa: E402
from viewer.format.zfpc import ZfpcVolume  # noqa: E402

DTYPES = ["float32", "float64", "int32", "int64"]
MODES: dict[str, dict[str, float]] = {
    "lossless": {},
    "rate": {"rate": 12.0},
    "precision": {"precision": 14},
    "tolerance": {"tolerance": 0.05},
}


def _field(shape: tuple[int, ...], dtype: str, seed: int = 0) -> Any:
    """A smooth field (what zfp is for) with some noise, in ``dtype``."""
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*(np.linspace(0, 3, n) for n in shape), indexing="ij")
    base = sum(np.sin(g * (k + 1)) for k, g in enumerate(grids))
    data = base * 1000 + rng.normal(0, 5, size=shape)
    return data.astype(dtype)


def _write(path: Path, data: Any, correlated: list[bool], **mode: float) -> bytes:
    blob = zfpc.compress(data, correlated_dims=correlated, **mode)
    path.write_bytes(blob)
    return bytes(blob)


def _writer_decoded(blob: bytes, data: Any) -> Any:
    """What the writer's own decoder makes of each stream, in the stream's true type, put
    where the writer's own slicing says it came from."""
    header = zfpc.ZfpcHeader.frombytes(blob)
    streams = zfpc.disassemble_container(header, blob)
    out = np.zeros(data.shape, dtype=data.dtype)
    for slc, stream in zip(zfpc.compute_slices(header), streams, strict=True):
        out[slc] = zfpy.decompress_numpy(bytes(stream))
    return out


def _as_volume_array(data: Any) -> Any:
    """``arr[x, y, z, w]`` of 1-4 dimensions as the volume's ``(C, X, Y, Z)``."""
    a = data.reshape(data.shape + (1,) * (4 - data.ndim))
    return np.transpose(a, (3, 0, 1, 2))


# The two parametrized tests below read files written in a module fixture, all of them before
# any is read: a file written less than the racy window ago is waited for by every local read
# (``viewer.format.handles``), so a case that wrote its file and read it at once paid that wait.
# A write that fails is raised by its own case.
@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, tuple[Path, bytes] | Exception]:
    """Per case (``(dtype, mode)``, or ``("layout", index in LAYOUTS)``): the file the writer
    wrote and its bytes."""
    folder = tmp_path_factory.mktemp("zfpc-written")
    out: dict[Any, tuple[Path, bytes] | Exception] = {}

    def write(key: Any, name: str, data: Any, correlated: list[bool], **mode: float) -> None:
        path = folder / name
        try:
            out[key] = (path, _write(path, data, correlated, **mode))
        except Exception as exc:  # noqa: BLE001 - raised by the case's own test
            out[key] = exc

    for dtype in DTYPES:
        for mode in MODES:
            write((dtype, mode), f"{dtype}-{mode}.zfpc", _field((21, 14, 6, 2), dtype),
                  [True, True, False, False], **MODES[mode])
    for k, (shape, correlated) in enumerate(LAYOUTS):
        write(("layout", k), f"layout-{k}.zfpc", _field(shape, "float64", seed=len(shape)),
              correlated)
    return out


def _written(written: dict[Any, tuple[Path, bytes] | Exception], key: Any) -> tuple[Path, bytes]:
    got = written[key]
    if isinstance(got, Exception):
        raise got
    return got


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", list(MODES))
def test_every_dtype_and_mode(written: dict[Any, Any], dtype: str, mode: str) -> None:
    data = _field((21, 14, 6, 2), dtype)
    path, blob = _written(written, (dtype, mode))
    want = data if mode == "lossless" else _writer_decoded(blob, data)
    if mode != "lossless":
        assert not np.array_equal(want, data), "lossy mode expected to change the data"
    with open_volume(path) as vol:
        assert vol.format == "zfpc"
        assert vol.dtype == np.dtype(dtype)
        assert vol.num_channels == 2 and vol.shape == (21, 14, 6)
        assert vol.chunk_shape == (21, 14, 1) and vol.unit_shape == (1, 1, 6)
        got = vol.read((0, 0, 0), vol.shape)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, _as_volume_array(want))


LAYOUTS = [
    ((37,), [True, False, False, False]),
    ((19, 11), [True, True, False, False]),
    ((19, 11), [True, False, False, False]),
    ((9, 7, 5), [True, True, True, False]),
    ((9, 7, 5), [False, True, True, False]),
    ((9, 7, 5), [True, False, True, False]),
    ((9, 7, 5), [True, True, False, False]),
    ((9, 7, 5, 3), [True, True, True, True]),
    ((9, 7, 5, 3), [True, True, True, False]),
    ((9, 7, 5, 3), [True, True, False, True]),
    ((9, 7, 5, 3), [False, True, True, False]),
    ((9, 1, 5, 3), [True, False, True, False]),
]


@pytest.mark.parametrize("shape,correlated", LAYOUTS)
def test_one_to_four_dimensions_every_split(written: dict[Any, Any], shape: tuple[int, ...],
                                            correlated: list[bool]) -> None:
    data = _field(shape, "float64", seed=len(shape))
    path, _ = _written(written, ("layout", LAYOUTS.index((shape, correlated))))
    truth = _as_volume_array(data)
    with open_volume(path) as vol:
        assert (vol.num_channels, *vol.shape) == truth.shape
        for d in range(3):
            split = d < len(shape) and not correlated[d] and shape[d] > 1
            assert vol.chunk_shape[d] == (1 if split else truth.shape[1 + d])
        np.testing.assert_array_equal(vol.read((0, 0, 0), vol.shape), truth)
        # a box inside, and the chunk level
        lo = [s // 3 for s in vol.shape]
        size = [max(1, s - low - 1) for s, low in zip(vol.shape, lo, strict=True)]
        np.testing.assert_array_equal(
            vol.read(lo, size),
            truth[:, lo[0]:lo[0] + size[0], lo[1]:lo[1] + size[1], lo[2]:lo[2] + size[2]])
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        n = unit.num_chunks
        for index, chunk in zip(range(n), unit.read_chunks(list(range(n))), strict=True):
            assert not isinstance(chunk, FormatError) and chunk is not None
            g = vol.chunk_local(np.asarray([index]))[0] * np.asarray(vol.chunk_shape)
            c = vol.chunk_shape
            np.testing.assert_array_equal(
                chunk, truth[:, g[0]:g[0] + c[0], g[1]:g[1] + c[1], g[2]:g[2] + c[2]])


def test_dataset_and_registry(tmp_path: Path) -> None:
    path = tmp_path / "field.zfpc"
    _write(path, _field((8, 8, 3, 2), "float32"), [True, True, False, False])
    assert "zfpc" in format_names()
    ds = open_dataset(path)
    try:
        assert ds.format == "zfpc"
        [layer] = ds.layers
        assert layer.name == "field" and layer.num_channels == 2
        assert layer.bounding_box.size == (8, 8, 3)
        assert [m.mag for m in layer.mags] == [(1, 1, 1)]
    finally:
        ds.close()


def test_chunk_table_is_the_stream_index(tmp_path: Path) -> None:
    data = _field((16, 12, 5, 2), "float32")
    path = tmp_path / "f.zfpc"
    blob = _write(path, data, [True, True, False, False], tolerance=0.5)
    n = 5 * 2
    first, *sizes = struct.unpack_from(f"<{n + 1}Q", blob, 23)
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        table = unit.chunk_table()
        assert len(table) == 5 and table.present.all()
        # chunk z carries the streams (z, w=0) and (z, w=1): w is the slowest
        for z in range(5):
            assert table.nbytes[z] == sizes[z] + sizes[z + 5]
            assert table.offsets[z] == first + sum(sizes[:z])
        assert int(table.nbytes.sum()) == len(blob) - first
        facts = unit.describe_chunk(3)
        streams = facts["streams"]
        assert [s["slice"] for s in streams] == ["z=3, w=0", "z=3, w=1"]
        assert [s["size"] for s in streams] == [sizes[3], sizes[8]]
        assert streams[1]["offset"] == first + sum(sizes[:8])
        assert streams[0]["zfp_mode"] == "fixed-accuracy"
        assert streams[0]["tolerance"] <= 0.5
        assert streams[0]["zfp_sizes"] == [12, 16]          # zfp's x is numpy's last axis
        assert streams[0]["ratio"] == pytest.approx(16 * 12 * 4 / sizes[3], rel=1e-3)
        head = unit.describe().fields
        assert head["magic"] == "zfpc" and head["streams"] == 10
        assert head["correlated"] == "xy" and head["zfp_type"] == "float32"
        assert vol.info().format == "zfpc"


@pytest.mark.parametrize("mode,key,value", [("rate", "rate_bits_per_value", 12.0),
                                             ("precision", "precision_bits", 14),
                                             ("lossless", "zfp_mode", "reversible")])
def test_zfp_stream_header_facts(tmp_path: Path, mode: str, key: str, value: Any) -> None:
    path = tmp_path / "f.zfpc"
    _write(path, _field((8, 8, 8), "float64"), [True, True, True, True], **MODES[mode])
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        [stream] = unit.describe_chunk(0)["streams"]
        assert stream["slice"] == "all"
        assert stream[key] == value


# -- bad input ---------------------------------------------------------------------------------
def _single(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "f.zfpc"
    blob = _write(path, _field((16, 16, 4, 2), "float32"), [True, True, False, False])
    return path, blob


def test_wrong_magic(tmp_path: Path) -> None:
    path, blob = _single(tmp_path)
    path.write_bytes(b"zfpx" + blob[4:])
    with pytest.raises(HeaderError, match="magic"):
        ZfpcVolume(path)
    with pytest.raises(FormatError):
        open_volume(path)


@pytest.mark.parametrize("cut", [10, 30])
def test_truncated_header_or_index(tmp_path: Path, cut: int) -> None:
    path, blob = _single(tmp_path)
    path.write_bytes(blob[:cut])
    with pytest.raises(HeaderError) as err:
        ZfpcVolume(path)
    assert str(path) in str(err.value)


def test_truncated_file_fails_its_chunks_only(tmp_path: Path) -> None:
    path, blob = _single(tmp_path)
    first, *sizes = struct.unpack_from("<9Q", blob, 23)
    path.write_bytes(blob[:len(blob) - sizes[-1] // 2])     # into the last stream (z=3, w=1)
    with open_volume(path) as vol:
        assert vol.problems(), "the index's overrun is a problem of the volume"
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        results = unit.read_chunks([0, 1, 2, 3])
        assert all(isinstance(r, np.ndarray) for r in results[:3])
        assert isinstance(results[3], ChunkDecodeError)
        assert "past the end" in str(results[3]) and results[3].chunk == (0, 0, 3)
        with pytest.raises(ChunkDecodeError):
            vol.read((0, 0, 0), vol.shape)


def test_index_sizes_past_the_end(tmp_path: Path) -> None:
    path = tmp_path / "f.zfpc"
    blob = _write(path, _field((16, 16, 4, 2), "float32"), [True, True, False, True])
    bad = bytearray(blob)
    struct.pack_into("<Q", bad, 23 + 8 * 2, 1 << 62)           # stream 1 claims 4 EiB
    path.write_bytes(bytes(bad))
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        r0, r1 = unit.read_chunks([0, 1])
        assert isinstance(r0, np.ndarray)
        assert isinstance(r1, ChunkDecodeError)
        assert unit.describe_chunk(1)["streams"][0]["size"] == 1 << 62


def test_shortened_stream_is_truncation_not_zeros(tmp_path: Path) -> None:
    """A stream whose index size is cut (the file itself consistent) must fail: zfp would read
    past its end."""
    path = tmp_path / "f.zfpc"
    data = _field((24, 24, 24), "float64")
    blob = _write(path, data, [True, True, True, True])
    first, size = struct.unpack_from("<2Q", blob, 23)
    bad = bytearray(blob[:first + size // 2])
    struct.pack_into("<Q", bad, 31, size // 2)
    path.write_bytes(bytes(bad))
    with open_volume(path) as vol, pytest.raises(ChunkDecodeError, match="truncated"):
        vol.read((0, 0, 0), vol.shape)


def test_damaged_stream_header(tmp_path: Path) -> None:
    path, blob = _single(tmp_path)
    first = struct.unpack_from("<Q", blob, 23)[0]
    bad = bytearray(blob)
    bad[first:first + 3] = b"xyz"
    path.write_bytes(bytes(bad))
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        [r] = unit.read_chunks([0])
        assert isinstance(r, ChunkDecodeError) and "magic" in str(r)
        assert r.offset == first
        assert "zfp_header_error" in unit.describe_chunk(0)["streams"][0]


def test_garbage_stream_never_crashes(tmp_path: Path) -> None:
    """Random bytes behind a valid zfp header: an error or some values, never a crash or a
    read past the buffer (the decoder's input is padded to what the mode can read)."""
    path, blob = _single(tmp_path)
    first, *sizes = struct.unpack_from("<9Q", blob, 23)
    rng = np.random.default_rng(5)
    bad = bytearray(blob)
    start = first + 16
    bad[start:start + sizes[0] - 16] = rng.integers(0, 256, sizes[0] - 16, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(bad))
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        [r] = unit.read_chunks([0])
        assert isinstance(r, (np.ndarray, FormatError))


# -- the volume contract -----------------------------------------------------------------------
SHAPE = (23, 17, 9, 2)


class TestZfpcContract(VolumeContract):
    """Chunks span whole correlated dimensions, so the truth reaches past the volume (fill
    value there) for the reads across the chunk corner."""

    @pytest.fixture
    def contract_truth(self) -> Any:
        truth = np.zeros((2, 26, 20, 12), dtype="int32")
        truth[:, :23, :17, :9] = _as_volume_array(_field(SHAPE, "int32"))
        return truth

    @pytest.fixture
    def contract_volume(self, tmp_path: Path) -> Any:
        _write(tmp_path / "c.zfpc", _field(SHAPE, "int32"), [True, False, True, False])
        vol = open_volume(tmp_path / "c.zfpc")
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, tmp_path: Path) -> Any:
        path = tmp_path / "d.zfpc"
        blob = _write(path, _field(SHAPE, "int32"), [True, False, True, False])
        n = 17 * 2
        first, *sizes = struct.unpack_from(f"<{n + 1}Q", blob, 23)
        bad = bytearray(blob)
        at = first + sum(sizes[:5])                      # stream 5: y=5, w=0
        bad[at:at + 4] = b"\0\0\0\0"
        path.write_bytes(bytes(bad))
        vol = open_volume(path)
        yield vol, (0, 5, 0)
        vol.close()


def test_header_claiming_a_huge_array_is_an_error_not_an_allocation(tmp_path: Path) -> None:
    path = tmp_path / "f.zfpc"
    blob = bytearray(_write(path, _field((8, 8, 8), "float32"), [True, True, True, True]))
    struct.pack_into("<3I", blob, 6, 60000, 60000, 60000)
    path.write_bytes(bytes(blob))
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        [r] = unit.read_chunks([0])
        assert isinstance(r, ChunkDecodeError) and "cannot hold" in str(r)


def test_fortran_order_input(tmp_path: Path) -> None:
    """The writer keeps a Fortran-ordered array's order (C-order bit 0); the values read the
    same."""
    data = np.asfortranarray(_field((13, 9, 4, 2), "int64"))
    path = tmp_path / "f.zfpc"
    blob = _write(path, data, [True, True, False, False])
    assert blob[5] >> 7 == 0
    with open_volume(path) as vol:
        np.testing.assert_array_equal(vol.read((0, 0, 0), vol.shape), _as_volume_array(data))
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None and unit.describe().fields["c_order"] is False


def test_info_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from viewer.cli import main

    path = tmp_path / "f.zfpc"
    blob = _write(path, _field((16, 12, 5, 2), "float32"), [True, True, False, False],
                  rate=8.0)
    first, *sizes = struct.unpack_from("<11Q", blob, 23)
    assert main(["info", str(path), "--json", "--chunks"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "zfpc" and doc["valid"] is True
    assert doc["dtype"] == "float32" and doc["num_channels"] == 2
    assert doc["shape"] == [16, 12, 5] and doc["chunk_shape"] == [16, 12, 1]
    per_chunk = [sizes[z] + sizes[z + 5] for z in range(5)]
    assert doc["chunks"]["count"] == 5 and doc["chunks"]["present"] == 5
    assert doc["chunks"]["stored_bytes"]["total"] == sum(per_chunk)
    assert [c["grid"] for c in doc["chunk_list"]] == [[0, 0, z] for z in range(5)]
    assert [c["stored_bytes"] for c in doc["chunk_list"]] == per_chunk
