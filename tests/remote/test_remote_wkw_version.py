"""Over HTTP and S3, a WKW file's blocks come from the version of the file its jump table was
read from: a file replaced on the server between the two reads is told by its ETag, its
header and table fetched again and every block of the read taken through them (never cut out
of the new file at the old table's offsets, never some blocks of each version)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from range_server import RangeServer

from viewer.format import open_volume
from viewer.format.remote import configure

SHAPE = (32, 32, 32)  # one file of 4^3 blocks of 8^3 voxels
FILE = "z0/y0/x0.wkw"


def _data(version: int) -> np.ndarray:
    """Version 1 is noise (LZ4 blocks near their raw size), version 2 mostly smooth (small
    LZ4 blocks): the blocks of the two files lie at other offsets."""
    rng = np.random.default_rng(version)
    if version == 1:
        return rng.integers(0, 60000, SHAPE, dtype=np.uint16)
    vol = np.zeros(SHAPE, np.uint16) + 7
    vol[::5, ::3, ::2] = rng.integers(0, 60000, vol[::5, ::3, ::2].shape, dtype=np.uint16)
    return vol


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Per block type (LZ4HC, raw) the same dataset written twice by the reference ``wkw``
    with other values."""
    reference = pytest.importorskip("wkw")
    root = tmp_path_factory.mktemp("wkw-versions")
    out = {}
    types = {"lz4hc": reference.Header.BLOCK_TYPE_LZ4HC, "raw": reference.Header.BLOCK_TYPE_RAW}
    for kind, block_type in types.items():
        for v in (1, 2):
            header = reference.Header(np.uint16, block_len=8, file_len=4, block_type=block_type)
            with reference.Dataset.create(str(root / kind / str(v)), header) as ds:
                ds.write((0, 0, 0), _data(v))
        out[kind] = (root / kind / "1", root / kind / "2")
    return out


def _replace_on_disk(new: Path, dst: Path) -> None:
    tmp = dst.parent / "incoming"
    shutil.copy(new, tmp)
    tmp.replace(dst)


@pytest.mark.parametrize("kind", ["lz4hc", "raw"])
def test_file_replaced_on_an_http_server_between_table_and_blocks(
        versions: dict[str, tuple[Path, Path]], tmp_path: Path, kind: str) -> None:
    a, b = versions[kind]
    shutil.copytree(a, tmp_path / "ds")
    configure(retries=0, timeout_s=5)
    with RangeServer(str(tmp_path)) as srv:
        vol = open_volume(f"{srv.url}/ds")
        try:
            # the table of version 1, and a corner's blocks of it (fetched, cached)
            np.testing.assert_array_equal(vol.read((0, 0, 0), (8, 8, 8))[0],
                                          _data(1)[:8, :8, :8])
            _replace_on_disk(b / FILE, tmp_path / "ds" / FILE)
            got = vol.read((0, 0, 0), SHAPE)[0]
        finally:
            vol.close()
    np.testing.assert_array_equal(got, _data(2))


@pytest.mark.parametrize("kind", ["lz4hc", "raw"])
def test_file_replaced_in_s3_between_table_and_blocks(
        versions: dict[str, tuple[Path, Path]], s3: dict[str, Any], kind: str) -> None:
    a, b = versions[kind]
    client = s3["client"]
    prefix = f"wkw-versions/{kind}"
    for path in a.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), "bkt", f"{prefix}/{path.relative_to(a).as_posix()}")
    configure(retries=0, timeout_s=5)
    vol = open_volume(f"s3://bkt/{prefix}")
    try:
        np.testing.assert_array_equal(vol.read((0, 0, 0), (8, 8, 8))[0],
                                      _data(1)[:8, :8, :8])
        client.upload_file(str(b / FILE), "bkt", f"{prefix}/{FILE}")
        got = vol.read((0, 0, 0), SHAPE)[0]
    finally:
        vol.close()
    np.testing.assert_array_equal(got, _data(2))


def _flipper(versions: dict[str, tuple[Path, Path]], tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch, flips: int) -> list[int]:
    """An LZ4 dataset whose file is replaced by the other version as each request for it
    but the first goes out, ``flips`` times: it changes between every two reads until
    then.  The settle wait is cut short so that the tests stay cheap."""
    from viewer.format import handles
    from viewer.format.remote.store import RemoteStore

    a, b = versions["lz4hc"]
    shutil.copytree(a, tmp_path / "ds")
    turn = [-1]

    def note(store: RemoteStore, key: str, start: int, end: int | None) -> None:
        if key == FILE:
            turn[0] += 1
            if 0 < turn[0] <= flips:
                _replace_on_disk((b if turn[0] % 2 else a) / FILE, tmp_path / "ds" / FILE)

    monkeypatch.setattr(RemoteStore, "_note_request", note)
    monkeypatch.setattr(handles, "SETTLE_NS", 300_000_000)
    configure(retries=0, timeout_s=5)
    return turn


@pytest.fixture
def flipping(versions: dict[str, tuple[Path, Path]], tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> Any:
    """A file on a range server that changes between every two reads (see ``_flipper``)."""
    turn = _flipper(versions, tmp_path, monkeypatch, 10**9)
    with RangeServer(str(tmp_path)) as srv:
        yield srv, turn


def test_a_file_that_keeps_changing_gives_file_changing_errors(flipping: Any) -> None:
    """Read again from its new table as long as the settle wait lasts, then every block of
    the read is a ``FileChangingError`` naming the file and the block (the window hatches
    them as changing and reads them again later)."""
    from viewer.format.errors import FileChangingError

    srv, turn = flipping
    vol = open_volume(f"{srv.url}/ds")
    try:
        unit = vol.open_unit((0, 0, 0))
        assert unit is not None
        got = unit.read_stored(list(range(unit.num_chunks)))
    finally:
        vol.close()
    assert turn[0] > 3  # the table and blocks read anew more than once
    assert all(isinstance(g, FileChangingError) and g.block == i and
               g.path == f"{srv.url}/ds/{FILE}" for i, g in enumerate(got))


def test_a_file_that_changes_a_few_times_then_settles_reads_whole(
        versions: dict[str, tuple[Path, Path]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Four changes between table and blocks, then none: the read waits them out and gives
    the version it ends on, whole (before: the second change made the blocks
    ``FileChangedError``)."""
    turn = _flipper(versions, tmp_path, monkeypatch, 4)
    with RangeServer(str(tmp_path)) as srv:
        vol = open_volume(f"{srv.url}/ds")
        try:
            got = vol.read((0, 0, 0), SHAPE)[0]
        finally:
            vol.close()
    assert turn[0] > 4
    np.testing.assert_array_equal(got, _data(1))  # the 4th change put version 1 back


def test_info_of_a_file_that_keeps_changing_is_not_checked(
        flipping: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from viewer.cli import info as info_cli

    srv, _ = flipping
    status = info_cli.main([f"{srv.url}/ds", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1 and not report["valid"] and report["not_checked"] >= 1
    assert report["verdict"].startswith("not checked")
