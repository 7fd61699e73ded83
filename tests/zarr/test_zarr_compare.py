"""``wkw-viewer compare`` on a WKW webKnossos dataset (written by the ``webknossos`` package)
and its zarr3 conversion (tensorstore, webKnossos' sharded layout: chunks of 32^3 in shards of
64^3 against WKW blocks of 32^3 in files of 32^3 blocks): layer by layer and mag by mag, equal;
one voxel changed in the zarr3 copy is found in its pair and placed.  Compare knows neither
format: the registry opens both."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from zarr_test_fixtures import wkw_to_zarr3

from viewer.cli.compare import main
from viewer.core.compare import compare

pytest.importorskip("tensorstore", reason="tensorstore (test extra) is not installed")
# Whether it is installed, without importing it at collection (a worker that runs none of these
# tests would pay for the import; the dataset fixture imports it).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("webknossos") is None,
                                reason="webknossos (test extra) is not installed")


def run_json(capsys, *argv):
    code = main([*map(str, argv), "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out.strip() else None, out.err


def test_wkw_dataset_equals_its_zarr3_conversion_pair_by_pair(converted, capsys):
    src, dst = converted
    code, report, err = run_json(capsys, src, dst)
    assert code == 0, (err, report and report["structure"])
    assert report["equal"] is True and report["kind"] == "webknossos"
    pairs = {(p["layer"], tuple(p["mag"])) for p in report["pairs"]}
    assert len(pairs) == 6 and all(p["equal"] for p in report["pairs"])
    assert all(p["blocks_compared"] == p["blocks_total"] > 0 for p in report["pairs"])
    kinds = {s["kind"] for s in report["structure"]}
    assert "format" in kinds and all(s["severity"] == "info" for s in report["structure"])


def test_a_voxel_changed_in_the_zarr3_copy_is_found_and_placed(converted, tmp_path, capsys):
    import tensorstore as ts

    src, dst = converted
    copy = tmp_path / "zarr3"
    shutil.copytree(dst, copy)
    arr = ts.open({"driver": "zarr3",
                   "kvstore": {"driver": "file", "path": str(copy / "color" / "2")}}).result()
    old = int(arr[0, 17, 9, 5].read().result())
    arr[0, 17, 9, 5].write(np.uint8((old + 1) % 256)).result()
    code, report, _ = run_json(capsys, src, copy)
    assert code == 1
    differing = [(p["layer"], p["mag"]) for p in report["pairs"] if not p["equal"]]
    assert differing == [("color", [2, 2, 2])]
    [block] = report["mismatching_blocks"]
    assert block["position"] == [0, 0, 0] and block["voxels_different"] == 1
    assert block["file"].startswith("color/2") and block["mag"] == [2, 2, 2]
    # the other way round the block is named by the zarr3 copy's shard
    code, report, _ = run_json(capsys, copy, src, "--layer", "color", "--mag", "2")
    assert code == 1 and report["mismatching_blocks"][0]["position"] == [0, 0, 0]
    assert report["mismatching_blocks"][0]["file"].startswith("color/2/")


def test_a_wkw_mag_against_a_zarr3_array_of_other_shards(converted, tmp_path):
    """A single WKW mag against one zarr3 array: WKW's chunks found in zarr3's shards (two
    shard sizes) and compared chunk by chunk; a change placed in WKW's file and block."""
    src, _ = converted
    for shard_len in (32, 64):
        out = Path(wkw_to_zarr3(src / "segmentation" / "1", tmp_path / f"s{shard_len}",
                                shard_len=shard_len))
        s = compare(src / "segmentation" / "1", out)
        assert s.equal, s.structure
        assert {f.kind for f in s.structure} >= {"format"}
    import tensorstore as ts

    arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(out)}}).result()
    arr[0, 70, 40, 20].write(np.uint32(99999)).result()
    s = compare(src / "segmentation" / "1", out)
    assert [(r.file, r.position, r.voxels_different) for r in s.mismatching_blocks] == [
        ("z0/y0/x0.wkw", (64, 32, 0), 1)]


def test_same_stored_bytes_under_another_chunk_order_are_not_equal(converted, tmp_path):
    """B's chunks are A's bytes exactly, but B's metadata reads them in C order instead of
    Fortran order (the transpose codec): equal stored bytes must not pass for equal voxels
    (the codec signature holds the whole codec chain), and the bug is named."""
    src, _ = converted
    a = Path(wkw_to_zarr3(src / "color" / "1", tmp_path / "a", shard_len=32))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    meta = json.loads((b / "zarr.json").read_text())
    inner = meta["codecs"][0]["configuration"]["codecs"]
    assert inner[0]["name"] == "transpose" and inner[0]["configuration"]["order"] == [3, 2, 1, 0]
    inner[0]["configuration"]["order"] = [0, 1, 2, 3]
    (b / "zarr.json").write_text(json.dumps(meta))
    s = compare(a, b)
    assert not s.equal and s.mismatching_blocks
    assert [f.kind for f in s.structure if f.severity == "diagnosis"] == ["block_order"]
