"""A verdict over a store that cannot list (plain HTTP) counts every chunk of the grid:
``info``, ``compare`` and ``digest`` of a dataset at a URL give what they give for the same
files on disk, and chunks that could not be fetched are "not checked" (exit 1), never valid."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from range_server import RangeServer

from viewer.cli import compare as compare_cli
from viewer.cli import digest as digest_cli
from viewer.cli import info as info_cli
from viewer.format.remote import configure


@pytest.fixture(scope="module")
def damaged(foreign: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the N5 and Zarr v3 datasets, one chunk of each damaged (14 bytes cut out
    of an N5 gzip chunk and out of a shard's first chunk)."""
    root = tmp_path_factory.mktemp("damaged")
    for name in ("n5", "zarr3"):
        shutil.copytree(foreign / name, root / name)
    chunk = root / "n5" / "1" / "1" / "0"
    raw = bytearray(chunk.read_bytes())
    del raw[100:114]
    chunk.write_bytes(bytes(raw))
    shard = root / "zarr3" / "c" / "0" / "0" / "0"
    raw = bytearray(shard.read_bytes())
    del raw[40:54]
    shard.write_bytes(bytes(raw))
    return root


@pytest.fixture
def served(foreign: Path) -> Iterator[RangeServer]:
    configure(retries=1, timeout_s=5)
    with RangeServer(str(foreign)) as srv:
        yield srv


def _info(where: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    status = info_cli.main([where, "--json"])
    return status, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["n5", "zarr3", "zarr2"])
def test_info_over_http_counts_every_chunk_as_on_disk(
        served: RangeServer, foreign: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    local_status, local = _info(str(foreign / name), capsys)
    status, remote = _info(f"{served.url}/{name}", capsys)
    assert local_status == status == 0 and remote["valid"] and remote["not_checked"] == 0
    assert remote["chunks"]["present"] == local["chunks"]["present"] > 0
    assert remote["chunks"]["count"] == local["chunks"]["count"]


@pytest.mark.parametrize("name", ["n5", "zarr3"])
def test_info_of_a_damaged_dataset_over_http_is_invalid_as_on_disk(
        damaged: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    configure(retries=1, timeout_s=5)
    local_status, local = _info(str(damaged / name), capsys)
    with RangeServer(str(damaged)) as srv:
        status, remote = _info(f"{srv.url}/{name}", capsys)
    assert local_status == status == 1
    assert remote["verdict"].startswith("INVALID") and not remote["valid"]
    assert remote["chunks"]["present"] == local["chunks"]["present"]
    assert len(remote["problems"]) == len(local["problems"]) >= 1


@pytest.mark.parametrize("name", ["zarr3", "n5"])
def test_info_when_every_chunk_request_fails_is_not_checked(
        served: RangeServer, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    served.fault_match = "/zarr3/c/" if name == "zarr3" else "/n5/"
    served.fail_next = 10**6
    configure(retries=0, timeout_s=5)
    if name == "n5":  # the metadata is read first, then every chunk file fails
        served.fault_match = "/n5/0"
    status, doc = _info(f"{served.url}/{name}", capsys)
    assert status == 1 and not doc["valid"]
    assert doc["verdict"].startswith("not checked"), doc["verdict"]
    assert doc["not_checked"] == len(doc["problems"]) >= 1
    assert all(p["not_checked"] and "HTTP 500" in p["message"] for p in doc["problems"])
    text_status = info_cli.main([f"{served.url}/{name}"])
    assert text_status == 1 and "not checked" in capsys.readouterr().out


def test_compare_over_http_counts_every_chunk(served: RangeServer, foreign: Path,
                                              damaged: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    served.fault_match = "/zarr3/c/"  # first, while nothing is in the range cache
    served.fail_next = 10**6
    configure(retries=0, timeout_s=5)
    assert compare_cli.main([str(foreign / "zarr3"), f"{served.url}/zarr3", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert not doc["equal"]
    assert any(f.get("not_checked") for f in doc["structure"]), doc
    served.fail_next = 0  # the failures were not kept
    assert compare_cli.main([str(foreign / "zarr3"), f"{served.url}/zarr3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["equal"] and doc["blocks_compared"] == doc["blocks_total"] > 0
    with RangeServer(str(damaged)) as srv:
        assert compare_cli.main([str(foreign / "n5"), f"{srv.url}/n5", "--json"]) == 1
    assert not json.loads(capsys.readouterr().out)["equal"]


def test_digest_over_http_with_failing_chunks_is_not_ok(
        served: RangeServer, capsys: pytest.CaptureFixture[str]) -> None:
    served.fault_match = "/n5/1/"  # first, while nothing is in the range cache
    served.fail_next = 10**6
    configure(retries=0, timeout_s=5)
    assert digest_cli.main([f"{served.url}/n5", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["unreadable"] and "HTTP 500" in doc["unreadable"][0]["error"]
    served.fail_next = 0
    assert digest_cli.main([f"{served.url}/n5", "--json"]) == 0
    good = json.loads(capsys.readouterr().out)
    assert good["regions"] and not good["unreadable"]
