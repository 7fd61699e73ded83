"""``wkw-viewer info``: text and JSON output, exit codes, streaming progress, on real files
(WKW here; the toy format in ``test_info_any_format`` proves the command knows no format)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from viewer.cli import info as info_cli
from viewer.cli import main
from viewer.format import BlockDecodeError, ChecksumError, wkw

HEADER_KEYS = {"version", "block_len", "file_len", "block_type", "voxel_type", "num_channels",
               "voxel_size"}
FILE_KEYS = {"path", "block_type", "file_size", "block_sizes", "problems"}


def _dataset(root: Path, block_type: int = 3, files: int = 2) -> wkw.Dataset:
    header = wkw.Header(np.uint16, num_channels=3, block_len=8, file_len=2,
                        block_type=block_type)
    ds = wkw.Dataset.create(root, header)
    rng = np.random.default_rng(1)
    ds.write((0, 0, 0), rng.integers(0, 9, size=(3, 16 * files, 16, 16), dtype=np.uint16))
    return ds


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["info", *args, "--json"])
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one JSON document
    return code, json.loads(out)


def test_info_json_valid_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path).close()
    code, doc = _run_json(capsys, str(tmp_path))
    assert code == 0
    assert doc["kind"] == "dataset" and doc["valid"] is True and doc["problems"] == []
    assert set(doc["header"]) >= HEADER_KEYS
    h = doc["header"]
    assert (h["version"], h["block_len"], h["file_len"], h["block_type"]) == (1, 8, 2, 3)
    assert (h["voxel_type"], h["num_channels"], h["voxel_size"]) == ("uint16", 3, 6)
    assert len(doc["files"]) == 2
    # The format-neutral keys: the array, its chunk grid and stored bytes.
    assert doc["format"] == "wkw" and doc["dtype"] == "uint16" and doc["num_channels"] == 3
    assert doc["shape"] == [32, 16, 16] and doc["chunk_shape"] == [8, 8, 8]
    every = []
    for f in doc["files"]:
        with wkw.File.open(f["path"]) as wf:
            every.extend(wf.block_sizes().tolist())
    assert doc["chunks"]["count"] == doc["chunks"]["present"] == 16 == len(every)
    assert doc["chunks"]["stored_bytes"] == {"min": min(every), "median": float(np.median(every)),
                                             "max": max(every), "total": sum(every)}
    for f in doc["files"]:
        assert set(f) >= FILE_KEYS
        assert f["block_type"] == 3 and f["problems"] == []
        assert f["file_size"] == os.path.getsize(f["path"])
        with wkw.File.open(f["path"]) as wf:
            sizes = wf.block_sizes()
        assert f["block_sizes"] == {"min": int(sizes.min()), "median": float(np.median(sizes)),
                                    "max": int(sizes.max()), "total": int(sizes.sum())}
        assert f["ratio"] == pytest.approx(8 * 3072 / sizes.sum(), rel=1e-3)


def test_info_json_single_raw_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _dataset(tmp_path, block_type=1, files=1)
    path = ds.file_path(0, 0, 0)
    ds.close()
    code, doc = _run_json(capsys, path)
    assert code == 0 and doc["kind"] == "file"
    assert doc["header"]["block_type"] == 1 and doc["header"]["data_offset"] == 16
    [f] = doc["files"]
    assert f["block_sizes"] == {"min": 3072, "median": 3072.0, "max": 3072, "total": 8 * 3072}
    assert f["ratio"] == 1.0


def test_info_reports_problems_with_exit_1(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path).close()
    bad = tmp_path / "z0" / "y0" / "x1.wkw"
    with open(bad, "r+b") as fh:  # garbage over the middle of the blocks
        fh.seek(16 + 8 * 8 + 200)
        fh.write(b"\xff" * 3000)
    code, doc = _run_json(capsys, str(tmp_path))
    assert code == 1 and doc["valid"] is False
    by_path = {f["path"]: f for f in doc["files"]}
    assert by_path[str(tmp_path / "z0" / "y0" / "x0.wkw")]["problems"] == []
    problems = by_path[str(bad)]["problems"]
    assert problems and all(p["type"] == "BlockDecodeError" for p in problems)
    assert all(p["path"] == str(bad) and p["block"] is not None and p["offset"] is not None
               for p in problems)
    assert len(doc["problems"]) == len(problems)
    # Text output lists them under the file.
    assert main(["info", str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "BlockDecodeError" in text and "x1.wkw" in text


def test_info_damaged_header_is_a_problem_not_a_crash(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A lone file whose header is damaged cannot be opened: exit 2 naming the file and the
    header's fault (a damaged file inside a dataset is a problem of that unit: exit 1)."""
    _dataset(tmp_path).close()
    path = tmp_path / "z0" / "y0" / "x0.wkw"
    with open(path, "r+b") as fh:
        fh.write(b"PNG")
    assert main(["info", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and str(path) in captured.err and "magic" in captured.err
    code, doc = _run_json(capsys, str(tmp_path))
    assert code == 1
    bad = next(f for f in doc["files"] if f["path"] == str(path))
    assert bad["problems"][0]["type"] == "HeaderError" and bad["problems"][0]["offset"] == 0


def test_info_on_header_wkw_shows_the_dataset(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path).close()
    code, doc = _run_json(capsys, str(tmp_path / "header.wkw"))
    assert code == 0 and doc["kind"] == "dataset" and len(doc["files"]) == 2


def test_info_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path).close()
    assert main(["info", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "wkw mag" in text and "array: wkw uint16 x3" in text
    assert "block_len 8" in text and "file_len 2" in text
    assert "block_type 3" in text and "LZ4HC" in text and "voxel_type uint16" in text
    assert "z0/y0/x0.wkw" in text and "z0/y0/x1.wkw" in text
    assert "2 storage units" in text and "0 problems" in text
    assert "valid (structure only: this format has no checksums)" in text


def test_info_text_names_problems_and_checksum_failures() -> None:
    checksum = info_cli.problem_fields(ChecksumError("crc32c mismatch", "a/c/0", offset=8))
    other = info_cli.problem_fields(BlockDecodeError("does not decode", "a/c/1", block=1))
    assert info_cli._verdict([checksum, other], True, True) == (
        "INVALID (2 problems, 1 checksum failure)")
    assert info_cli._verdict([], True, True) == "valid (every chunk decoded, checksums verified)"
    assert info_cli._verdict([], True, False) == (
        "valid (structure only: this format has no checksums)")
    assert info_cli._verdict([], False, None).startswith("valid (structure only")


def test_info_chunk_list_in_grid_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path).close()
    code, doc = _run_json(capsys, str(tmp_path), "--chunks")
    assert code == 0
    grids = [c["grid"] for c in doc["chunk_list"]]
    assert grids == sorted(grids) and len(grids) == 16
    assert grids[0] == [0, 0, 0] and grids[-1] == [3, 1, 1]
    for c in doc["chunk_list"]:  # each chunk's stored bytes as the file's jump table says
        unit = c["unit"]
        with wkw.File.open(tmp_path / "z0" / "y0" / f"x{unit[0]}.wkw") as wf:
            assert c["stored_bytes"] == int(wf.block_sizes()[c["index"]])
            local = [g - 2 * u for g, u in zip(c["grid"], unit, strict=True)]
            assert c["index"] == int(wkw.morton.encode(*local))
    sizes = [c["stored_bytes"] for c in doc["chunk_list"]]
    assert doc["chunks"]["stored_bytes"]["total"] == sum(sizes)


def test_info_sparse_counts_present_chunks(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    ds = _dataset(tmp_path, files=1)
    ds.write((32, 0, 0), np.ones((3, 16, 16, 16), dtype=np.uint16))  # file x2: x1 absent
    ds.close()
    code, doc = _run_json(capsys, str(tmp_path))
    assert code == 0 and len(doc["files"]) == 2
    assert doc["shape"] == [48, 16, 16]  # the box of the files present
    assert (doc["chunks"]["count"], doc["chunks"]["present"]) == (6 * 2 * 2, 2 * 8)


@pytest.mark.parametrize("what", ["missing", "not_a_dataset"])
def test_info_cannot_open_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  what: str) -> None:
    path = tmp_path / "nothing" if what == "missing" else tmp_path
    assert main(["info", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert str(path) in captured.err


def test_info_quick_skips_decoding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path).close()
    bad = tmp_path / "z0" / "y0" / "x0.wkw"
    with open(bad, "r+b") as fh:
        fh.seek(16 + 8 * 8 + 10)
        fh.write(b"\xff" * 500)
    assert main(["info", str(tmp_path), "--quick", "--json"]) == 0  # the table is sound
    capsys.readouterr()
    assert main(["info", str(tmp_path), "--json"]) == 1


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_info_progress_on_a_terminal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path, files=3).close()
    monkeypatch.setattr(info_cli, "PROGRESS_EVERY", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["info", str(tmp_path), "--json"]) == 0
    assert "checked 3 units" in terminal.getvalue()
    capsys.readouterr()
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    assert main(["info", str(tmp_path), "--json"]) == 0
    assert pipe.getvalue() == ""


def test_info_streams_files_lazily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Each batch of units is reported before the next one is checked (no listing up
    front): with batches of one unit on one thread, each unit before the next."""
    from viewer.cli import units

    _dataset(tmp_path, files=3).close()
    seen: list[str] = []
    original = info_cli._text_file

    def spy(fields: dict, root: str, out: io.TextIOBase) -> None:
        seen.append(fields["path"])
        original(fields, root, out)

    checked: list[str] = []
    real_check = units.check_unit

    def check(volume, position, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert len(checked) == len(seen), "a unit was checked before the last one was shown"
        report = real_check(volume, position, *args, **kwargs)
        checked.append(report.fields["path"])
        return report

    monkeypatch.setattr(info_cli, "_text_file", spy)
    monkeypatch.setattr(units, "check_unit", check)
    monkeypatch.setattr(info_cli, "BATCH_UNITS", 1)
    assert main(["info", str(tmp_path), "--threads", "1"]) == 0
    assert len(seen) == 3 and checked == seen


def test_info_via_python_m_viewer(tmp_path: Path) -> None:
    _dataset(tmp_path).close()
    proc = subprocess.run([sys.executable, "-m", "viewer", "info", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["header"]["voxel_type"] == "uint16" and len(doc["files"]) == 2


def _without_root_powers() -> list[str]:
    """A command prefix under which file permissions hold even for root (who reads anything):
    ``setpriv`` drops the capabilities that override them."""
    if os.geteuid() != 0:
        return []
    import shutil

    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root without setpriv (util-linux): cannot test permissions")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_unreadable_folder_says_permission_denied(tmp_path):
    """A dataset folder without read permission: "permission denied", not "not a WKW
    dataset (no header.wkw)" (the window already said it right)."""
    ds = _dataset(tmp_path / "ds")
    ds.close()
    (tmp_path / "ds").chmod(0)
    try:
        run = subprocess.run([*_without_root_powers(), sys.executable, "-m", "viewer", "info",
                              str(tmp_path / "ds")], capture_output=True, text=True, timeout=60)
    finally:
        (tmp_path / "ds").chmod(0o755)
    assert run.returncode == 2
    assert "permission denied" in run.stderr and "no header.wkw" not in run.stderr
