"""``wkw-viewer compare``: exit codes, JSON, messages."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
from compare_fixtures import copy_dataset, file_of, volume

from viewer.cli import main as dispatch
from viewer.cli.compare import main
from viewer.format import wkw

RAW, LZ4HC = wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4HC


def run_json(capsys, *argv):
    code = main([*map(str, argv), "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def test_equal_pair_exits_0(make, capsys):
    data = volume()
    a = make("a", data, RAW)
    b = make("b", data, LZ4HC, writer="reference")
    code, report, err = run_json(capsys, a, b)
    assert code == 0 and report["equal"] is True
    assert report["blocks_compared"] == 4 * 64 and report["mismatching_blocks"] == []
    assert [s["kind"] for s in report["structure"]] == ["block_type"]
    assert err == ""  # stderr is not a terminal here: no progress
    assert dispatch(["compare", str(a), str(b)]) == 0
    assert "EQUAL" in capsys.readouterr().out


def test_changed_voxel_exits_1_with_its_block(make, capsys):
    data = volume()
    a = make("a", data, LZ4HC)
    changed = data.copy()
    changed[10, 40, 3] = 0
    b = make("b", changed, LZ4HC)
    code, report, _ = run_json(capsys, a, b)
    assert code == 1 and report["equal"] is False
    assert report["mismatching_blocks"] == [{
        "file": "z0/y1/x0.wkw", "morton_index": int(wkw.morton.encode(1, 1, 0)),
        "position": [8, 40, 0], "voxels_different": 1, "max_abs_diff": int(data[10, 40, 3])}]
    assert report["first_mismatch"] == report["mismatching_blocks"][0]
    assert report["block_len"] == 8
    # The human report names the block too.
    assert main([str(a), str(b)]) == 1
    assert "z0/y1/x0.wkw block" in capsys.readouterr().out


def test_box_and_tolerance_options(make, capsys):
    data = volume()
    a = make("a", data, RAW)
    changed = data.copy()
    changed[10, 40, 3] = data[10, 40, 3] ^ 1  # differs by exactly 1
    b = make("b", changed, LZ4HC)
    code, report, _ = run_json(capsys, a, b, "--box", "0,0,0,8,8,8")
    assert code == 0 and report["blocks_compared"] == 1 and report["box"] == [0, 0, 0, 8, 8, 8]
    code, report, _ = run_json(capsys, a, b, "--tolerance", "1")
    assert code == 0 and report["max_abs_diff"] == 1
    code, _, _ = run_json(capsys, a, b, "--tolerance", "0.5")
    assert code == 1


def test_deleted_file_and_transposed_in_json(make, capsys, tmp_path):
    data = volume((64, 64, 64), seed=1)
    a = make("a", data, LZ4HC)
    b = copy_dataset(a, tmp_path / "b")
    file_of(b, 1, 1, 1).unlink()
    code, report, _ = run_json(capsys, a, b)
    assert code == 1
    missing = [s for s in report["structure"] if s["kind"] == "file_missing"]
    assert missing == [{"kind": "file_missing", "severity": "difference",
                        "message": missing[0]["message"], "file": "z1/y1/x1.wkw",
                        "missing_in": "B", "present_all_zeros": False}]
    t = make("t", np.ascontiguousarray(data.transpose(2, 1, 0)), RAW)
    code, report, _ = run_json(capsys, a, t)
    assert code == 1
    assert [s["kind"] for s in report["structure"] if s["severity"] == "diagnosis"] == [
        "transposed"]


def test_dtype_mismatch_exits_1_with_structure(make, capsys):
    data = volume((32, 32, 32))
    a = make("a", data, RAW)
    b = make("b", data.astype(np.int8), RAW)
    code, report, _ = run_json(capsys, a, b)
    assert code == 1 and report["comparable"] is False
    assert report["structure"][0]["kind"] == "voxel_type"
    assert report["structure"][0]["a"] == "uint8" and report["structure"][0]["b"] == "int8"


def test_missing_path_exits_2_without_traceback(make, tmp_path, capsys):
    a = make("a", volume((32, 32, 32)), RAW)
    assert main([str(a), str(tmp_path / "does-not-exist")]) == 2
    err = capsys.readouterr().err
    assert "does-not-exist" in err and "Traceback" not in err
    proc = subprocess.run([sys.executable, "-m", "viewer", "compare", str(tmp_path / "nope"),
                           str(a), "--json"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "nope" in proc.stderr and "Traceback" not in proc.stderr


def test_damaged_header_exits_2(make, tmp_path, capsys):
    a = make("a", volume((32, 32, 32)), RAW)
    b = copy_dataset(a, tmp_path / "b")
    (b / "header.wkw").write_bytes(b"WKX" + bytes(13))
    assert main([str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "magic" in err and "header.wkw" in err and "Traceback" not in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([str(a), str(empty)]) == 2
    assert "header.wkw" in capsys.readouterr().err


def test_damaged_data_file_header_is_a_finding(make, tmp_path, capsys):
    a = make("a", volume(), LZ4HC)
    b = copy_dataset(a, tmp_path / "b")
    file_of(b, 1, 0, 0).write_bytes(b"garbage")
    code, report, _ = run_json(capsys, a, b)
    assert code == 1
    bad = [s for s in report["structure"] if s["kind"] == "file_unreadable"]
    assert len(bad) == 1 and bad[0]["file"] == "z0/y0/x1.wkw" and bad[0]["side"] == "B"
    assert report["blocks_compared"] == 3 * 64


def test_bad_arguments_exit_2(make, capsys):
    a = make("a", volume((32, 32, 32)), RAW)
    assert main([str(a), str(a), "--box", "1,2,3"]) == 2
    assert main([str(a), str(a), "--tolerance", "-1"]) == 2
    assert main([str(a)]) == 2
    capsys.readouterr()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_a_terminal_stderr(make, capsys, monkeypatch):
    data = volume()
    a = make("a", data, RAW)
    b = make("b", data, LZ4HC)
    fake = _Terminal()
    monkeypatch.setattr(sys, "stderr", fake)
    assert main([str(a), str(b), "--json"]) == 0
    assert "comparing: 256/256 blocks (100%)" in fake.getvalue()
    assert json.loads(capsys.readouterr().out)["equal"] is True
