"""``.vds`` files written by the real OpenVDS (the ``openvds`` package) read through the volume
interface: None, Zip and RLE bricks (decoded here), Wavelet lossy and lossless (through the
optional extra), two LODs, a constant region, margins, 8-bit samples; voxel for voxel against
the writer's input (lossless) and OpenVDS's own reading (all).  Then the inspector's facts, the
file without the extra, and bad input.

The writer is the ``openvds`` package (CC BY-ND wheel, in the test extra; CI installs it):
without it these tests are skipped, with the reason printed."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

openvds = pytest.importorskip(
    "openvds", reason="the openvds package (the VDS writer and wavelet decoder) is not "
    "installed: pip install 'wkw-viewer[openvds]'")

from vdswriter import brick_facts, read_vds, write_vds  # noqa: E402
from volume_contract import VolumeContract  # noqa: E402

from viewer.format import FormatError, open_dataset, open_volume  # noqa: E402
from viewer.format.errors import ChunkDecodeError, HeaderError, MetadataError  # noqa: E402
from viewer.format.registry import format_names  # noqa: E402
from viewer.format.vds import VdsFile  # noqa: E402
from viewer.format.vds.wavelet import NeedsOpenVDSError  # noqa: E402

SHAPE_ZYX = (40, 50, 70)
LOSSLESS = ["None", "Zip", "RLE", "WaveletLossless"]
ALL = LOSSLESS + ["Wavelet"]


def _data() -> Any:
    rng = np.random.default_rng(1)
    d = np.cumsum(rng.standard_normal(SHAPE_ZYX), axis=2).astype(np.float32)
    d[:32, :32, 32:64] = 2.5            # one whole brick (x 32-64, y 0-32, z 0-32): constant
    return d


@pytest.fixture(scope="module")
def files(tmp_path_factory: Any) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vds")
    out = {}
    for method in ALL:
        p = root / f"{method}.vds"
        write_vds(str(p), _data(), method, 0.05 if method == "Wavelet" else 0.0, lods=1)
        out[method] = p
    out["margins"] = root / "margins.vds"
    write_vds(str(out["margins"]), _data(), "Zip", lods=2, margin=4)
    out["u8"] = root / "u8.vds"
    u8 = (np.arange(np.prod(SHAPE_ZYX)) % 251).reshape(SHAPE_ZYX).astype(np.uint8)
    write_vds(str(out["u8"]), u8, "RLE", fmt="U8", value_range=(0.0, 255.0))
    return out


def _truth() -> Any:
    return _data().transpose(2, 1, 0)


@pytest.mark.parametrize("method", ALL)
def test_every_method_two_lods(files: dict[str, Path], method: str) -> None:
    path = str(files[method])
    with open_volume(path) as vol:
        assert vol.format == "vds" and vol.dtype == np.float32 and vol.num_channels == 1
        assert vol.shape == (70, 50, 40) and vol.chunk_shape == (32, 32, 32)
        got = vol.read((0, 0, 0), vol.shape)[0]
        np.testing.assert_array_equal(got, read_vds(path, 0))
        if method in LOSSLESS:
            np.testing.assert_array_equal(got, _truth())
        else:
            assert not np.array_equal(got, _truth())
            assert np.abs(got - _truth()).max() < 1.0
        # the chunk level: every chunk the loader asks for, one by one
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        chunks = unit.read_chunks(list(range(unit.num_chunks)))
        for n, chunk in enumerate(chunks):
            assert isinstance(chunk, np.ndarray), chunk
            (x0, x1), (y0, y1), (z0, z1) = vol.chunk_region(n)
            np.testing.assert_array_equal(chunk[0, :x1 - x0, :y1 - y0, :z1 - z0],
                                          got[x0:x1, y0:y1, z0:z1])
    with open_volume(path, mag=(2, 2, 2)) as lod1:
        assert lod1.shape == (35, 25, 20)
        np.testing.assert_array_equal(lod1.read((0, 0, 0), lod1.shape)[0], read_vds(path, 1))
        np.testing.assert_array_equal(lod1.read((3, 4, 5), (30, 9, 2))[0],
                                      read_vds(path, 1)[3:33, 4:13, 5:7])


def test_margins_and_three_lods(files: dict[str, Path]) -> None:
    path = str(files["margins"])
    for lod in range(3):
        with open_volume(path, mag=2 ** lod) as vol:
            assert vol.chunk_shape == (24, 24, 24)            # brick 32 less margins 4 + 4
            want = read_vds(path, lod)
            np.testing.assert_array_equal(vol.read((0, 0, 0), vol.shape)[0], want)
            if lod == 0:
                np.testing.assert_array_equal(want, _truth())
            unit = vol.open_unit((0, 0, 0))
            assert unit is not None
            for n, chunk in enumerate(unit.read_chunks(list(range(unit.num_chunks)))):
                assert isinstance(chunk, np.ndarray), chunk
                (x0, x1), (y0, y1), (z0, z1) = vol.chunk_region(n)
                np.testing.assert_array_equal(chunk[0, :x1 - x0, :y1 - y0, :z1 - z0],
                                              want[x0:x1, y0:y1, z0:z1])


def test_eight_bit_samples(files: dict[str, Path]) -> None:
    with open_volume(files["u8"]) as vol:
        assert vol.dtype == np.uint8
        np.testing.assert_array_equal(vol.read((0, 0, 0), vol.shape)[0],
                                      read_vds(str(files["u8"]), 0, "U8"))


def test_constant_brick(files: dict[str, Path]) -> None:
    with open_volume(files["Zip"]) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        table = unit.chunk_table()
        assert table.constant is not None
        facts = brick_facts(str(files["Zip"]))
        assert [c for c, _ in facts] == table.constant.tolist()
        assert table.constant.tolist().count(True) == 1
        n = int(np.flatnonzero(table.constant)[0])
        assert vol.chunk_local(np.asarray([n]))[0].tolist() == [1, 0, 0]
        assert table.nbytes[n] == 0 and table.present[n]
        [chunk] = unit.read_chunks([n])
        assert isinstance(chunk, np.ndarray) and (chunk == 2.5).all()
        info = unit.describe_chunk(n)
        assert info["state"] == "constant" and info["constant_value"] == 2.5
        assert info["stored_bytes"] == 0


def test_description(files: dict[str, Path]) -> None:
    assert "vds" in format_names()
    ds = open_dataset(files["Wavelet"])
    try:
        assert ds.format == "vds"
        [layer] = ds.layers
        assert layer.name == "Amplitude" and layer.data_format == "vds"
        assert [m.mag for m in layer.mags] == [(1, 1, 1), (2, 2, 2)]
        assert layer.bounding_box.size == (70, 50, 40)
        vol = layer.mags[0].volume
        assert vol.axis_names == ("Sample", "Crossline", "Inline")
        assert vol.axis_units == ("ms", "unitless", "unitless")
        assert vol.value_range == (-1.0, 1.0)
        info = vol.info()
        assert info.format == "vds" and info.compression.startswith("Wavelet")
        assert info.header["layer"] == "Dimensions_012LOD0"
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        head = unit.describe().fields
        assert head["compression"] == "Wavelet" and head["chunks"] == 12
        assert len(head["adaptive_level_totals"]) == 17
        facts = unit.describe_chunk(0)
        sizes = facts["adaptive_level_sizes"]
        assert sizes and sizes == sorted(sizes, reverse=True) and sizes[0] <= facts["stored_bytes"]
    finally:
        ds.close()


def test_chunk_table_is_the_index(files: dict[str, Path]) -> None:
    """Offsets and lengths as the index pages hold them, read here with struct alone."""
    path = files["RLE"]
    blob = path.read_bytes()
    _, _, table_at, count, name_len = struct.unpack_from("<12siqii", blob, 0)
    rec = 32 + name_len
    entries = {}
    for i in range(count):
        hp, chunks, _, per_page, _, cml, fml = struct.unpack_from("<qiii4sii", blob,
                                                                  table_at + i * rec)
        name = blob[table_at + i * rec + 32:table_at + (i + 1) * rec].rstrip(b"\0").decode()
        page = struct.unpack_from("<q", blob, hp + 16 + fml)[0]
        entries[name] = [struct.unpack_from("<qi", blob, page + k * (16 + cml))
                         for k in range(chunks)]
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        table = unit.chunk_table()
        got = list(zip(table.offsets.tolist(), table.nbytes.tolist(), strict=True))
        assert got == [e if e[1] else (0, 0) for e in entries["Dimensions_012LOD0"]]


def test_without_the_extra_wavelet_chunks_say_so(files: dict[str, Path],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openvds", None)      # as if it were not installed
    vol = open_volume(files["Wavelet"])
    try:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        table = unit.chunk_table()                          # the inspector still works
        assert table.present.all() and int(table.nbytes.sum()) > 0
        assert unit.describe_chunk(0)["adaptive_level_sizes"]
        results = unit.read_chunks([0, 1])
        assert isinstance(results[0], NeedsOpenVDSError)
        assert "openvds extra" in str(results[0])
        assert isinstance(results[1], np.ndarray) and (results[1] == 2.5).all()   # constant
        with pytest.raises(NeedsOpenVDSError):
            vol.read((0, 0, 0), (10, 10, 10))
    finally:
        vol.close()
    with open_volume(files["Zip"]) as plain:                # the others need no extra
        np.testing.assert_array_equal(plain.read((0, 0, 0), plain.shape)[0], _truth())


# -- bad input ---------------------------------------------------------------------------------
def _copy(files: dict[str, Path], tmp_path: Path, method: str = "Zip") -> tuple[Path, bytearray]:
    blob = bytearray(files[method].read_bytes())
    return tmp_path / "bad.vds", blob


def test_wrong_magic(files: dict[str, Path], tmp_path: Path) -> None:
    path, blob = _copy(files, tmp_path)
    blob[:3] = b"Hux"
    path.write_bytes(bytes(blob))
    with pytest.raises(HeaderError, match="magic"):
        VdsFile(path)
    with pytest.raises(FormatError):
        open_volume(path)


def test_truncated_file(files: dict[str, Path], tmp_path: Path) -> None:
    path, blob = _copy(files, tmp_path)
    with open_volume(files["Zip"]) as whole:
        unit = whole.open_unit((0, 0, 0))
        assert unit is not None
        t = unit.chunk_table()
        last = int(np.argmax(t.offsets + t.nbytes))
        cut = int(t.offsets[last] + t.nbytes[last] // 2)
    path.write_bytes(bytes(blob[:cut]))
    # the layout, the file table and the LOD0 index lie before the cut
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        results = unit.read_chunks(list(range(unit.num_chunks)))
        bad = [r for r in results if isinstance(r, FormatError)]
        assert len(bad) == 1 and isinstance(bad[0], ChunkDecodeError)
        assert "past the end" in str(bad[0]) and bad[0].offset == int(t.offsets[last])
        assert sum(isinstance(r, np.ndarray) for r in results) == unit.num_chunks - 1


def test_file_table_past_the_end(files: dict[str, Path], tmp_path: Path) -> None:
    path, blob = _copy(files, tmp_path)
    struct.pack_into("<i", blob, 24, 1 << 20)               # a million files
    path.write_bytes(bytes(blob))
    with pytest.raises(HeaderError):
        VdsFile(path)


def test_index_entry_past_the_end(files: dict[str, Path], tmp_path: Path) -> None:
    path, blob = _copy(files, tmp_path)
    f = VdsFile(files["Zip"])
    page = f.index(0).pages[0]
    struct.pack_into("<qi", blob, page, len(blob) - 10, 1 << 30)   # brick 0: 1 GiB at the end
    path.write_bytes(bytes(blob))
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        r0, r2 = unit.read_chunks([0, 2])
        assert isinstance(r0, ChunkDecodeError) and "past the end" in str(r0)
        assert isinstance(r2, np.ndarray)


def test_layout_json_that_does_not_parse(files: dict[str, Path], tmp_path: Path) -> None:
    path, blob = _copy(files, tmp_path)
    at = blob.index(b'"axisDescriptors"')
    blob[at] = ord("#")
    path.write_bytes(bytes(blob))
    with pytest.raises(MetadataError, match="does not parse"):
        open_volume(path)


def test_layout_json_without_axes(files: dict[str, Path], tmp_path: Path) -> None:
    path, blob = _copy(files, tmp_path)
    at = blob.index(b'"axisDescriptors"')
    blob[at:at + 17] = b'"axisDescriptorZ"'
    path.write_bytes(bytes(blob))
    with pytest.raises(MetadataError, match="axisDescriptors"):
        open_volume(path)


@pytest.mark.parametrize("method", ["Zip", "RLE", "None"])
def test_damaged_brick_is_its_error(files: dict[str, Path], tmp_path: Path,
                                    method: str) -> None:
    path, blob = _copy(files, tmp_path, method)
    with open_volume(files[method]) as whole:
        unit = whole.open_unit((0, 0, 0))
        assert unit is not None
        off, _n = int(unit.chunk_table().offsets[0]), int(unit.chunk_table().nbytes[0])
    if method == "None":
        struct.pack_into("<i", blob, off + 4, 31)            # descriptor: 31 samples along x
    else:
        blob[off + 30:off + 60] = b"\x7f" * 30               # inside the payload
    path.write_bytes(bytes(blob))
    with open_volume(path) as vol:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        r0, r2 = unit.read_chunks([0, 2])
        assert isinstance(r0, ChunkDecodeError), r0
        assert r0.chunk == (0, 0, 0) and r0.offset == off
        assert isinstance(r2, np.ndarray)


# -- the volume contract -----------------------------------------------------------------------
class TestVdsContract(VolumeContract):
    """An RLE file whose truth reaches past its extent (fill value there)."""

    @pytest.fixture
    def contract_truth(self) -> Any:
        truth = np.zeros((1, 72, 52, 42), np.float32)
        truth[0, :70, :50, :40] = _truth()
        return truth

    @pytest.fixture
    def contract_volume(self, files: dict[str, Path]) -> Any:
        vol = open_volume(files["RLE"])
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, files: dict[str, Path], tmp_path: Path) -> Any:
        blob = bytearray(files["RLE"].read_bytes())
        with open_volume(files["RLE"]) as whole:
            unit = whole.open_unit((0, 0, 0))
            assert unit is not None
            off = int(unit.chunk_table().offsets[2])
        struct.pack_into("<i", blob, off + 24, 7)             # RLE payload claims 7 bytes
        path = tmp_path / "d.vds"
        path.write_bytes(bytes(blob))
        vol = open_volume(path)
        yield vol, (2, 0, 0)
        vol.close()


def test_layout_json_is_what_openvds_wrote(files: dict[str, Path]) -> None:
    f = VdsFile(files["margins"])
    lay = f.layout
    assert (lay.brick_size, lay.negative_margin, lay.positive_margin, lay.lod_levels) == \
        (32, 4, 4, 2)
    assert [a.samples for a in lay.axes] == [70, 50, 40]
    assert f.lods() == [0, 1, 2]
    assert json.dumps(lay.metadata) == "[]"


def test_chunk_count_beyond_the_file_is_an_error(files: dict[str, Path], tmp_path: Path) -> None:
    path, blob = _copy(files, tmp_path)
    _, _, table_at, count, name_len = struct.unpack_from("<12siqii", blob, 0)
    [at] = [table_at + i * (32 + name_len) for i in range(count)
            if blob[table_at + i * (32 + name_len) + 32:][:18] == b"Dimensions_012LOD0"]
    struct.pack_into("<i", blob, at + 8, 1 << 30)              # chunks
    struct.pack_into("<i", blob, at + 16, 1 << 30)             # entries per page: one page
    path.write_bytes(bytes(blob))
    with pytest.raises(HeaderError, match="cannot be in a file"):
        open_volume(path)
    struct.pack_into("<i", blob, at + 16, 1024)                # 2^20 pages: no directory
    path.write_bytes(bytes(blob))
    with pytest.raises(HeaderError, match="past the end"):
        open_volume(path)


def test_two_dimensional_vds(tmp_path: Path) -> None:
    """Two axes: tiles of brick x 4 on the Dimensions_01 layer, shown as one Z slice."""
    path = str(tmp_path / "t2d.vds")
    L = openvds.VolumeDataLayoutDescriptor
    layout = L(L.BrickSize.BrickSize_32, 0, 0, 4, L.LODLevels.LODLevels_None,
               L.Options.Options_None)
    axes = [openvds.VolumeDataAxisDescriptor(200, "Sample", "ms", 0.0, 1.0),
            openvds.VolumeDataAxisDescriptor(150, "Trace", "", 0.0, 1.0)]
    C = openvds.VolumeDataChannelDescriptor
    ch = [C(C.Format.Format_R32, C.Components.Components_1, "A", "", -1.0, 1.0)]
    vds = openvds.create(path, "", layout, axes, ch, openvds.MetadataContainer(),
                         openvds.CompressionMethod.Zip, 0.0)
    am = openvds.getAccessManager(vds)
    acc = am.createVolumeDataPageAccessor(openvds.DimensionsND.Dimensions_01, 0, 0, 8,
                                          am.AccessMode.AccessMode_Create)
    d = np.random.default_rng(0).random((150, 200)).astype(np.float32)
    for c in range(acc.getChunkCount()):
        page = acc.createPage(c)
        buf = np.array(page.getWritableBuffer(), copy=False)
        lo, hi = page.getMinMax()
        buf[...] = d[lo[1]:hi[1], lo[0]:hi[0]].reshape(buf.shape)
        page.release()
    acc.commit()
    openvds.close(vds)
    with open_volume(path) as vol:
        assert vol.shape == (200, 150, 1) and vol.chunk_shape == (128, 128, 1)
        np.testing.assert_array_equal(vol.read((0, 0, 0), vol.shape)[0, :, :, 0], d.T)


def test_info_json(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from viewer.cli import main

    assert main(["info", str(files["RLE"]), "--json", "--chunks"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "vds" and doc["valid"] is True
    assert doc["dtype"] == "float32" and doc["num_channels"] == 1
    assert doc["shape"] == [70, 50, 40] and doc["chunk_shape"] == [32, 32, 32]
    f = VdsFile(files["RLE"])
    idx = f.index(0)
    assert doc["chunks"]["count"] == 12
    stored = {tuple(c["grid"]): c["stored_bytes"] for c in doc["chunk_list"]}
    for n in range(12):
        x, y, z = n % 3, (n // 3) % 2, n // 6
        assert stored.get((x, y, z), 0) == int(idx.lengths[n])
    assert doc["chunks"]["stored_bytes"]["max"] == int(idx.lengths.max())


@pytest.mark.parametrize(("shape_zyx", "brick", "margin", "lods", "full"), [
    ((30, 40, 50), 32, 4, 1, None),  # 50x40x30: OpenVDS makes 2x2x1 bricks (refused before)
    ((20, 33, 57), 32, 2, 2, None),  # sizes next to a brick's stored span, two LODs
    ((9, 31, 70), 64, 8, 1, None),
    ((30, 41, 57), 32, (2, 6), 2, None),  # margins of two sizes (halved per LOD)
    ((30, 41, 57), 32, (1, 3), 2, None),
    ((30, 41, 57), 32, 4, 1, 2),  # the LODs keep Z whole (forceFullResolutionDimension)
], ids=["50x40x30", "two-lods", "brick64", "margins-2-6", "margins-1-3", "full-z"])
def test_margins_read_as_openvds_reads_them(
        tmp_path: Path, shape_zyx: tuple[int, int, int], brick: int,
        margin: int | tuple[int, int], lods: int, full: int | None) -> None:
    """A file OpenVDS writes with margins (and the other 3-D layout options) opens and reads
    voxel for voxel as OpenVDS reads it, every LOD, through ``read`` and chunk by chunk."""
    rng = np.random.default_rng(sum(shape_zyx))
    data = np.cumsum(rng.standard_normal(shape_zyx), axis=0).astype(np.float32)
    path = str(tmp_path / "m.vds")
    write_vds(path, data, "Zip", brick=brick, lods=lods, margin=margin,
              full_resolution_dimension=full)
    with open_dataset(path) as ds:
        mags = [m.mag for m in ds.layers[0].mags]
    assert mags[1] == ((2, 2, 1) if full == 2 else (2, 2, 2))
    for lod in range(lods + 1):
        want = read_vds(path, lod)
        with open_volume(path, mag=mags[lod]) as vol:
            assert vol.shape == want.shape
            np.testing.assert_array_equal(vol.read((0, 0, 0), vol.shape)[0], want)
            unit = vol.open_unit((0, 0, 0))
            assert unit is not None
            for n, chunk in enumerate(unit.read_chunks(list(range(unit.num_chunks)))):
                assert isinstance(chunk, np.ndarray), chunk
                (x0, x1), (y0, y1), (z0, z1) = vol.chunk_region(n)
                np.testing.assert_array_equal(chunk[0, :x1 - x0, :y1 - y0, :z1 - z0],
                                              want[x0:x1, y0:y1, z0:z1])
    np.testing.assert_array_equal(read_vds(path, 0), data.transpose(2, 1, 0))
