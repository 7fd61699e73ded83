"""WKW and webKnossos datasets at a URL, against real servers on 127.0.0.1: the volume contract
over HTTP and S3, voxel for voxel equal to the local reads of the same files (written by the
reference ``wkw`` library), range reads only (header and jump table in one), a missing file as
absent, damaged and failing blocks as their own named errors, the extent probed over HTTP and
listed over S3, and the registry's answers for URLs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ABSENT_FILE, SHAPE
from range_server import RangeServer
from volume_contract import VolumeContract

from viewer.format import FormatError, open_dataset, open_volume, registry
from viewer.format.errors import BlockDecodeError, UnsupportedFormatError
from viewer.format.remote import RangeNotSupportedError, RemoteError, configure
from viewer.format.wkw.remote import StoreWkwVolume


def _damaged_copy(data_root: Path, tmp_path: Path) -> Path:
    """A copy of ``ds/color/1`` with block 0 of file (0, 0, 0) overwritten."""
    import wkw as reference

    dst = tmp_path / "damaged"
    shutil.copytree(data_root / "ds" / "color" / "1", dst)
    path = dst / "z0" / "y0" / "x0.wkw"
    with reference.Dataset.open(str(dst)):
        pass
    raw = bytearray(path.read_bytes())
    start = int(np.frombuffer(bytes(raw[8:16]), "<u8")[0])
    raw[start:start + 24] = b"\xff" * 24
    path.write_bytes(bytes(raw))
    return dst


class TestHttpContract(VolumeContract):
    @pytest.fixture
    def contract_truth(self, truth: np.ndarray) -> Any:
        return truth[None]

    @pytest.fixture
    def contract_volume(self, http: RangeServer) -> Any:
        vol = open_volume(f"{http.url}/ds/color/1")
        yield vol
        vol.close()

    @pytest.fixture
    def contract_damaged(self, data_root: Path, tmp_path: Path) -> Any:
        dst = _damaged_copy(data_root, tmp_path)
        with RangeServer(str(dst.parent)) as srv:
            yield open_volume(f"{srv.url}/{dst.name}"), (0, 0, 0)


class TestS3Contract(TestHttpContract):
    @pytest.fixture
    def contract_volume(self, s3: dict) -> Any:
        vol = open_volume("s3://bkt/data/ds/color/1")
        yield vol
        vol.close()


def test_equal_to_local_reads_voxel_for_voxel(http: RangeServer, data_root: Path) -> None:
    local = open_volume(data_root / "ds" / "color" / "1")
    remote = open_volume(f"{http.url}/ds/color/1")
    assert isinstance(remote, StoreWkwVolume) and remote.format == "wkw"
    assert remote.bounds == local.bounds == ((0, 0, 0), SHAPE)
    for off, size in (((0, 0, 0), SHAPE), ((5, 7, 3), (50, 40, 20)), ((30, 30, 0), (9, 9, 32))):
        np.testing.assert_array_equal(remote.read(off, size), local.read(off, size))
    raw = open_volume(f"{http.url}/raw")
    np.testing.assert_array_equal(raw.read((0, 0, 0), SHAPE), local.read((0, 0, 0), SHAPE))
    assert raw.info().compression == "raw" and remote.info().compression == "LZ4HC"


def test_only_range_reads_and_one_for_header_and_jump_table(
        http: RangeServer, data_root: Path, truth: np.ndarray) -> None:
    vol = open_volume(f"{http.url}/ds")  # webKnossos: properties + header.wkw
    http.reset_counts()
    unit = vol.open_unit((0, 0, 0))
    assert unit is not None
    table = unit.chunk_table()
    assert len(table) == 64
    assert [(m, p) for m, p, _ in http.log] == [("GET", "/ds/color/1/z0/y0/x0.wkw")]
    assert http.log[0][2] == f"bytes=0-{16 + 8 * 64 - 1}"  # header and the whole jump table
    http.reset_counts()
    got = unit.read_chunks([0, 1, 2, 3])  # Morton 0-3: neighbours on disk, one request
    assert len(http.log) == 1 and http.log[0][2] is not None
    start, end = int(table.offsets[0]), int(table.offsets[3] + table.nbytes[3])
    assert http.log[0][2] == f"bytes={start}-{end - 1}"
    for index, block in zip(range(4), got, strict=True):
        x, y, z = (int(c) * 8 for c in vol.chunk_local(np.asarray([index]))[0])
        np.testing.assert_array_equal(block[0], truth[x:x + 8, y:y + 8, z:z + 8])
    assert all(rng is not None for _, _, rng in http.log)


def _until(cond: Any, seconds: float = 30.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.005)
    return bool(cond())


def test_jump_tables_of_a_small_dataset_are_fetched_ahead(http: RangeServer) -> None:
    """Once a view browses a dataset (the loader's ``drop_read_ahead``) and its files are
    known (plain HTTP: probed), every file's header and jump table is fetched (one range read
    each), so reading a unit's table later asks for nothing; with a box given (webKnossos),
    the files of the box."""
    from viewer.format.remote.store import range_cache

    head = 16 + 8 * 64
    present = [(0, 0, 0), (0, 1, 0), (1, 0, 0)]
    vol = open_volume(f"{http.url}/ds/color/1")
    assert vol.bounds == ((0, 0, 0), SHAPE)
    vol.drop_read_ahead([(0, 0, 0)])  # a view shows the first file
    cache = range_cache()
    assert cache is not None
    assert _until(lambda: all(cache.covers(vol.unit_path(u), 0, head) for u in present))
    assert sorted(r for m, p, r in http.log if m == "GET" and p.endswith(".wkw")
                  and not p.endswith("header.wkw")) == [f"bytes=0-{head - 1}"] * 3
    http.reset_counts()
    for u in present:
        unit = vol.open_unit(u)
        assert unit is not None and len(unit.chunk_table()) == 64
    assert http.requests == 0

    ds = open_dataset(f"{http.url}/ds")  # a box given: no probe (the same store: the
    box_vol = ds.layers[0].finest.volume  # absent file is known missing)
    cache.clear()
    http.reset_counts()
    box_vol.drop_read_ahead([(0, 0, 0)])
    assert _until(lambda: all(cache.covers(box_vol.unit_path(u), 0, head) for u in present))
    http.reset_counts()
    for u in present:
        unit = box_vol.open_unit(u)
        assert unit is not None and len(unit.chunk_table()) == 64
    gone = box_vol.open_unit(ABSENT_FILE)
    assert gone is None or all(r is None for r in gone.read_chunks([0, 1]))
    assert http.requests == 0


def test_missing_file_reads_as_absent(http: RangeServer) -> None:
    vol = open_volume(f"{http.url}/ds/color/1")
    lo = [c * 32 for c in ABSENT_FILE]
    assert not vol.read(lo, (32, 32, 32)).any()
    unit = vol.open_unit(ABSENT_FILE)
    if unit is not None:  # known absent only once the probe or a 404 said so
        assert unit.read_chunks([0, 5]) == [None, None]
        assert not unit.chunk_table().present.any()


def test_webknossos_dataset_at_a_url(http: RangeServer, data_root: Path) -> None:
    ds = open_dataset(f"{http.url}/ds/datasource-properties.json")
    assert ds.format == "webknossos" and ds.path == f"{http.url}/ds"
    [layer] = ds.layers
    assert layer.name == "color" and layer.extent_declared
    assert layer.bounding_box.top_left == (3, 2, 1)
    vol = layer.finest.volume
    assert vol.bounds == ((3, 2, 1), (63, 63, 31))
    local = open_volume(data_root / "ds")
    np.testing.assert_array_equal(vol.read((3, 2, 1), (60, 61, 30)),
                                  local.read((3, 2, 1), (60, 61, 30)))
    assert ds.voxel_size == (11.2, 11.2, 25.0)


def test_plain_wkw_over_http_extent_is_probed_not_downloaded(http: RangeServer) -> None:
    vol = open_volume(f"{http.url}/ds/color/1")
    http.reset_counts()
    units = sorted(vol.iter_units())
    assert units == [(0, 0, 0), (0, 1, 0), (1, 0, 0)]
    assert {m for m, _, _ in http.log} == {"HEAD"}
    assert vol.open_unit(ABSENT_FILE) is None  # the probe found it missing


def test_plain_wkw_over_s3_extent_is_listed(s3: dict) -> None:
    vol = open_volume("s3://bkt/data/ds/color/1")
    assert sorted(vol.iter_units()) == [(0, 0, 0), (0, 1, 0), (1, 0, 0)]
    assert vol.bounds == ((0, 0, 0), (64, 64, 32))


def test_single_wkw_file_at_a_url(http: RangeServer, data_root: Path, truth: np.ndarray) -> None:
    ds = open_dataset(f"{http.url}/ds/color/1/z0/y1/x0.wkw")
    assert ds.format == "wkw" and ds.kind == "file"
    vol = ds.layers[0].finest.volume
    np.testing.assert_array_equal(vol.read((0, 0, 0), (32, 32, 32))[0],
                                  truth[0:32, 32:64, 0:32])


def test_failing_blocks_are_named_errors_with_the_status(http: RangeServer) -> None:
    configure(retries=1)
    vol = open_volume(f"{http.url}/ds/color/1")
    unit = vol.open_unit((1, 0, 0))
    assert unit is not None
    unit.chunk_table()
    http.fail_next = 10
    http.fail_status = 502
    results = unit.read_chunks([7, 8])
    for r in results:
        assert isinstance(r, RemoteError) and r.status == 502
        assert "HTTP 502" in str(r) and "x1.wkw" in str(r) and r.block in (7, 8)
    http.fail_next = 0
    assert all(isinstance(r, np.ndarray) for r in unit.read_chunks([7, 8]))  # not remembered


def test_damaged_block_over_http(data_root: Path, tmp_path: Path) -> None:
    dst = _damaged_copy(data_root, tmp_path)
    with RangeServer(str(dst.parent)) as srv:
        vol = open_volume(f"{srv.url}/{dst.name}")
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        [bad, good] = unit.read_chunks([0, 1])
        assert isinstance(bad, BlockDecodeError) and bad.block == 0
        assert bad.path == f"{srv.url}/{dst.name}/z0/y0/x0.wkw" and bad.offset == 16 + 8 * 64
        assert isinstance(good, np.ndarray)


def test_a_server_ignoring_range_is_named_when_opening(http: RangeServer) -> None:
    http.ignore_range = True
    with pytest.raises(RangeNotSupportedError):
        open_volume(f"{http.url}/ds/color/1")


def test_registry_answers_for_urls(http: RangeServer) -> None:
    with pytest.raises(UnsupportedFormatError):
        open_dataset(f"{http.url}/nothing-here")
    assert "webknossos" in registry.format_names() and "wkw" in registry.format_names()
    with RangeServer(str(http.root)) as gone:
        url = gone.url
    configure(retries=0, timeout_s=2)
    with pytest.raises(RemoteError) as info:  # the network, not the data
        open_dataset(f"{url}/ds")  # nobody listens there any more
    assert "connection refused" in str(info.value)
    with pytest.raises(FormatError):
        open_dataset("ftp://example.invalid/ds")


def _local_properties_with_url_mags(folder: Path, mag_url: str) -> Path:
    """A local webKnossos dataset whose one layer's mag 1 is at ``mag_url`` and whose mag 2
    is a local folder that is missing (a problem of its own, not of the URL mag)."""
    import json

    folder.mkdir()
    doc = {"id": {"name": "mixed", "team": ""},
           "scale": {"factor": [11.2, 11.2, 25.0], "unit": "nanometer"},
           "dataLayers": [{"name": "color", "category": "color", "dataFormat": "wkw",
                           "elementClass": "uint16",
                           "boundingBox": {"topLeft": [0, 0, 0], "width": 64, "height": 64,
                                           "depth": 32},
                           "mags": [{"mag": [1, 1, 1], "path": mag_url},
                                    {"mag": [2, 2, 2], "path": "./color/2"}]}]}
    (folder / "datasource-properties.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("where", ["http", "s3"])
def test_local_properties_with_mags_at_urls(where: str, request: pytest.FixtureRequest,
                                            tmp_path: Path, truth: np.ndarray) -> None:
    if where == "http":
        url = f"{request.getfixturevalue('http').url}/ds/color/1"
    else:
        request.getfixturevalue("s3")
        url = "s3://bkt/data/ds/color/1/"
    root = _local_properties_with_url_mags(tmp_path / "mixed", url)
    ds = open_dataset(str(root))
    try:
        layer = ds.layer("color")
        assert [m.mag for m in layer.mags] == [(1, 1, 1)]  # mag 2's folder is missing
        assert any("color/2" in str(p) for p in ds.problems)
        mag = layer.mags[0]
        assert mag.path == url.rstrip("/") and mag.rel_path == url
        assert mag.check() is None
        volume = mag.volume
        assert isinstance(volume, StoreWkwVolume) and volume.path == url.rstrip("/")
        got = volume.read((0, 0, 0), SHAPE)[0]
        np.testing.assert_array_equal(got, truth)  # the absent file reads as zeros there too
    finally:
        ds.close()


def test_local_properties_with_a_mag_at_an_unread_scheme(tmp_path: Path) -> None:
    root = _local_properties_with_url_mags(tmp_path / "ftp", "ftp://example.invalid/color/1")
    try:  # no mag of the layer opens: an error, or a dataset listing the problems
        ds = open_dataset(str(root))
    except FormatError as exc:
        said = str(exc)
    else:
        said = "; ".join(str(p) for p in ds.problems)
        ds.close()
    assert "only http, https, s3 and gs URLs are read" in said
