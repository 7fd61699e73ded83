"""Every remote failure reaches the caller as a ``RemoteError`` (a ``FormatError``) naming the
URL, the byte range and the chunk: HTTP 500 after the retries, a reset connection, a body cut
short, an answer for other bytes (wrong ``Content-Range``), over HTTP and through an S3 client;
for N5 and Zarr v3 (tensorstore), Zarr v2 (zarr-python) and WKW (the reference ``wkw``).  A
webKnossos dataset none of whose layers opens is a ``FormatError`` naming why each failed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import foreign_data
from range_server import RangeServer

from viewer import environment
from viewer.format import FormatError, Volume, open_dataset, open_volume
from viewer.format.errors import DatasetLayoutError
from viewer.format.remote import RemoteError, configure

#: dataset -> a piece of the URL of some of its chunk files only (not of its metadata)
CHUNK_MATCH = {"n5": "/n5/1/", "zarr3": "/zarr3/c/1/", "zarr2": "/zarr2/1.", "wkw": "x1.wkw"}
META_MATCH = {"n5": "attributes.json", "zarr3": "zarr.json", "zarr2": ".zarray",
              "wkw": "header.wkw"}
#: fault -> (server attribute, what the message says)
FAULTS = {"http500": ("fail_next", "HTTP 500"), "reset": ("reset_next", "connection reset"),
          "cut": ("cut_next", "cut short"), "shift": ("shift_next", "Content-Range")}


@pytest.fixture
def server(foreign: Path) -> Iterator[RangeServer]:
    configure(retries=1, timeout_s=5)
    with RangeServer(str(foreign)) as srv:
        yield srv


def _url(srv: RangeServer, name: str) -> str:
    return f"{srv.url}/{name}"


def _equal_to_local(vol: Volume, srv: RangeServer, name: str) -> bool:
    local = open_volume(Path(srv.root) / name)
    return bool(np.array_equal(vol.read((0, 0, 0), vol.shape),
                               local.read((0, 0, 0), local.shape)))


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("name", sorted(CHUNK_MATCH))
def test_a_failed_chunk_request_is_a_remote_error_naming_url_range_and_chunk(
        server: RangeServer, name: str, fault: str) -> None:
    attr, says = FAULTS[fault]
    vol = open_volume(_url(server, name))
    assert vol.shape  # a WKW dataset's extent is probed (HEAD) now, before the faults
    server.fault_match = CHUNK_MATCH[name]
    setattr(server, attr, 1000)
    if fault == "shift" and name == "n5":
        # N5 chunk files are read whole, with no Range: a shifting server serves them right
        assert _equal_to_local(vol, server, name)
        return
    with pytest.raises(FormatError) as info:
        vol.read((0, 0, 0), vol.shape)
    err = info.value
    assert isinstance(err, RemoteError), repr(err)
    text = str(err)
    assert says in text and server.url in text and CHUNK_MATCH[name] in (err.path or "")
    if err.byte_range is None:  # a chunk file read whole, or its size asked for
        assert "reading the whole object" in text or "asking for its size" in text
    else:
        assert f"bytes {err.byte_range[0]}-{err.byte_range[1] - 1}" in text
    # a chunk's (or block's) bytes, or the size or table of the unit that holds it (a WKW
    # file's header and jump table, a shard's index): then the unit's URL names it
    assert err.chunk is not None or err.block is not None or err.offset is not None \
        or "asking for its size" in text, text
    setattr(server, attr, 0)
    vol.close()


@pytest.mark.parametrize("name", sorted(META_MATCH))
def test_failing_metadata_is_a_remote_error_from_open_volume(server: RangeServer,
                                                             name: str) -> None:
    server.fault_match = META_MATCH[name]
    server.fail_next = 1000
    with pytest.raises(FormatError) as info:
        open_volume(_url(server, name))
    assert isinstance(info.value, RemoteError), repr(info.value)
    assert "HTTP 500" in str(info.value) and server.url in str(info.value)


def test_a_failed_request_through_an_s3_client_is_a_remote_error(
        server: RangeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The range server answers as an S3 endpoint (path-style ``/bucket/key``): the S3
    client's failures are ``RemoteError`` as well."""
    from viewer.format.remote import config as remote_config

    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": server.url,
                 "AWS_CONFIG_FILE": "/dev/null",
                 "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}.items():
        monkeypatch.setenv(k, v)
    remote_config.reset(environment.read_config(os.environ))
    configure(retries=1, timeout_s=5)
    (Path(server.root) / "bkt").mkdir(exist_ok=True)
    link = Path(server.root) / "bkt" / "n5"
    if not link.exists():
        link.symlink_to(Path(server.root) / "n5")
    vol = open_volume("s3://bkt/n5")
    server.fault_match = "/bkt/n5/1/"
    server.fail_next = 1000
    with pytest.raises(RemoteError) as info:
        vol.read((0, 0, 0), vol.shape)
    assert "HTTP 500" in str(info.value) and info.value.chunk is not None
    server.fail_next = 0  # the failure was not kept: read again, the server's voxels
    np.testing.assert_array_equal(vol.read((0, 0, 0), vol.shape)[0], foreign_data())


def test_a_webknossos_dataset_with_no_layer_that_opens_is_a_format_error(
        tmp_path: Path) -> None:
    doc = {"id": {"name": "broken", "team": ""},
           "scale": {"factor": [1, 1, 1], "unit": "nanometer"},
           "dataLayers": [{"name": name, "category": "color", "dataFormat": "wkw",
                           "elementClass": "uint8",
                           "boundingBox": {"topLeft": [0, 0, 0], "width": 8, "height": 8,
                                           "depth": 8},
                           "mags": [{"mag": [1, 1, 1], "path": f"./{name}/1"}]}
                          for name in ("color", "other")]}
    doc["dataLayers"][1]["elementClass"] = "no such type"  # type: ignore[index]
    doc["dataLayers"][0]["boundingBox"] = "not a box"  # type: ignore[index]
    (tmp_path / "datasource-properties.json").write_text(json.dumps(doc))
    with RangeServer(str(tmp_path)) as srv:
        for where in (str(tmp_path), srv.url):
            ds = open_dataset(where)
            if ds.layers:  # a layer may open and fail at its mag: not this test's case
                pytest.skip("the layers opened")
            with pytest.raises(DatasetLayoutError) as info:
                open_volume(where)
            text = str(info.value)
            assert "no layer opened" in text and "color" in text and "other" in text
