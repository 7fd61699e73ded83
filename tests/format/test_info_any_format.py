"""``wkw-viewer info`` on the test-only toy format (one ``.npy`` file per chunk, non-cubic
chunks): the command opens it through the registry and reports it through the volume
interface alone, the proof that ``info`` knows no format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from toyformat import write_toy

from viewer.cli import main

CHUNK = (16, 8, 4)


@pytest.fixture()
def toy(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 1000, size=(1, 40, 16, 10), dtype=np.uint16)
    return Path(write_toy(tmp_path / "toy", data, CHUNK, skip=[(1, 0, 0), (2, 1, 2)]))


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["info", *args, "--json"])
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return code, json.loads(out)


def test_info_json_of_the_toy_format(toy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, str(toy), "--chunks")
    assert code == 0 and doc["valid"] is True and doc["problems"] == []
    assert doc["format"] == "toy" and doc["kind"] == "dataset"
    assert (doc["dtype"], doc["num_channels"]) == ("uint16", 1)
    assert doc["shape"] == [40, 16, 10] and doc["chunk_shape"] == list(CHUNK)
    grid = (3, 2, 3)  # ceil(40/16), ceil(16/8), ceil(10/4)
    files = sorted((toy / "c").iterdir())
    sizes = [os.path.getsize(f) for f in files]
    assert doc["chunks"]["count"] == grid[0] * grid[1] * grid[2]
    assert doc["chunks"]["present"] == len(files) == grid[0] * grid[1] * grid[2] - 2
    assert doc["chunks"]["stored_bytes"] == {"min": min(sizes), "median": float(np.median(sizes)),
                                             "max": max(sizes), "total": sum(sizes)}
    listed = [c["grid"] for c in doc["chunk_list"]]
    assert listed == sorted(listed) and [1, 0, 0] not in listed and [2, 1, 2] not in listed
    by_grid = {tuple(c["grid"]): c["stored_bytes"] for c in doc["chunk_list"]}
    assert by_grid[(0, 1, 2)] == os.path.getsize(toy / "c" / "0.1.2.npy")
    assert len(doc["files"]) == len(files)
    assert all(f["chunks"] == {"count": 1, "present": 1} for f in doc["files"])


def test_info_names_a_damaged_toy_chunk(toy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = toy / "c" / "0.1.2.npy"
    bad.write_bytes(b"not an npy file at all")
    assert main(["info", str(toy), "--quick", "--json"]) == 0  # structure only: no decoding
    capsys.readouterr()
    code, doc = _json(capsys, str(toy))
    assert code == 1 and doc["valid"] is False
    [problem] = doc["problems"]
    assert problem["type"] == "ChunkDecodeError" and problem["path"] == str(bad)
    assert problem["chunk"] == [0, 1, 2]
    assert main(["info", str(toy)]) == 1
    text = capsys.readouterr().out
    assert "ChunkDecodeError" in text and "0.1.2.npy" in text and "INVALID" in text


def test_info_of_the_toy_format_in_a_child_process(toy: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "viewer", "info", str(toy), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["format"] == "toy"
