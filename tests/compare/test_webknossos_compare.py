"""``wkw-viewer compare`` on webKnossos datasets: every (layer, mag) pair, structure, filters.

Real datasets on disk (written by the project's webKnossos writer: 64^3 voxels, mags 1, 2-2-1,
4-4-2, blocks of 8^3 voxels, files of 4^3 blocks), copied per test and changed on purpose.
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from viewer.cli.compare import main
from viewer.core.compare.datasets import compare_webknossos
from viewer.core.synthetic import EMVolume
from viewer.format.webknossos import WkDataset
from viewer.format.webknossos.properties import PROPERTIES_FILE
from viewer.format.webknossos.writer import write_synthetic_dataset

MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]
PAIRS = [(layer, list(m)) for layer in ("color", "segmentation") for m in MAGS]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = str(tmp_path_factory.mktemp("wk") / "base")
    write_synthetic_dataset(root, EMVolume(3), shape=(64, 64, 64), mags=MAGS, block_len=8,
                            file_len=4, workers=1)
    return root


@pytest.fixture
def copy(base: str, tmp_path):
    def make(name: str) -> str:
        out = str(tmp_path / name)
        shutil.copytree(base, out)
        return out
    return make


def run_json(capsys, *argv):
    code = main([*map(str, argv), "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out.strip() else None, out.err


def change_voxel(root: str, layer: str, mag: str, pos: tuple[int, int, int]) -> int:
    """Flip one voxel of ``layer``/``mag`` at mag voxel ``pos``; returns the old value."""
    with WkDataset(root) as ds:
        m = ds.layer(layer).mag(mag)
        old = m.read(pos, (1, 1, 1))
        new = (old ^ 0x5A).astype(old.dtype)
        assert not np.array_equal(new, old)
        m.write(pos, np.asfortranarray(new.reshape(new.shape[-3:])))
        assert np.array_equal(m.read(pos, (1, 1, 1)), new)
    return int(old.ravel()[0])


def test_equal_datasets_are_equal_per_pair(copy, capsys):
    a, b = copy("a"), copy("b")
    code, report, _ = run_json(capsys, a, b)
    assert code == 0 and report["equal"] is True
    assert report["kind"] == "webknossos" and "mag" in report["coordinates"]
    assert [(p["layer"], p["mag"]) for p in report["pairs"]] == PAIRS
    assert all(p["equal"] and p["mismatching_blocks"] == [] for p in report["pairs"])
    # mag 1: 8 files of 64 blocks; 2-2-1: 2 files; 4-4-2: the 16 blocks of the layer's box
    # at that mag (16x16x32 voxels) in its one file of 64; two layers
    assert [p["blocks_compared"] for p in report["pairs"]] == [512, 128, 16] * 2
    assert report["blocks_compared"] == 2 * (512 + 128 + 16)
    assert report["mismatching_blocks"] == [] and report["structure"] == []


def test_changed_voxel_in_mag_221_is_found_in_its_pair(copy, capsys):
    a, b = copy("a"), copy("b")
    change_voxel(b, "color", "2-2-1", (13, 21, 40))
    code, report, _ = run_json(capsys, a, b)
    assert code == 1 and report["equal"] is False
    by_pair = {(p["layer"], tuple(p["mag"])): p for p in report["pairs"]}
    differing = [k for k, p in by_pair.items() if not p["equal"]]
    assert differing == [("color", (2, 2, 1))]
    blocks = by_pair[("color", (2, 2, 1))]["mismatching_blocks"]
    assert len(blocks) == 1
    block = blocks[0]
    # the block of 8^3 mag-2-2-1 voxels holding (13, 21, 40): its first voxel, in that mag
    assert block["position"] == [8, 16, 40]
    assert block["file"] == "color/2-2-1/z1/y0/x0.wkw"
    assert block["voxels_different"] == 1
    assert block["layer"] == "color" and block["mag"] == [2, 2, 1]
    assert report["mismatching_blocks"] == [block]
    assert report["voxels_different"] == 1
    # the human-readable report names the pair and the file
    assert main([a, b]) == 1
    text = capsys.readouterr().out
    assert "color/2-2-1: DIFFERENT" in text and "color/2-2-1/z1/y0/x0.wkw" in text


def test_missing_mag_in_b_is_a_structural_difference(copy, capsys):
    a, b = copy("a"), copy("b")
    path = os.path.join(b, PROPERTIES_FILE)
    with open(path) as f:
        props = json.load(f)
    for layer in props["dataLayers"]:
        if layer["name"] == "segmentation":
            layer["mags"] = [m for m in layer["mags"] if m["mag"] != [4, 4, 2]]
    with open(path, "w") as f:
        json.dump(props, f)
    shutil.rmtree(os.path.join(b, "segmentation", "4-4-2"))
    code, report, _ = run_json(capsys, a, b)
    assert code == 1 and report["equal"] is False
    missing = [s for s in report["structure"] if s["kind"] == "mag_missing"]
    assert missing == [{"kind": "mag_missing", "severity": "difference",
                        "message": "segmentation/4-4-2 is absent from B",
                        "layer": "segmentation", "mag": [4, 4, 2], "missing_in": "B"}]
    assert len(report["pairs"]) == 5 and all(p["equal"] for p in report["pairs"])
    assert report["mismatching_blocks"] == []


def test_element_class_and_bounding_box_differences(copy, capsys):
    a, b = copy("a"), copy("b")
    path = os.path.join(b, PROPERTIES_FILE)
    with open(path) as f:
        props = json.load(f)
    props["dataLayers"][0]["boundingBox"]["width"] = 60
    with open(path, "w") as f:
        json.dump(props, f)
    code, report, _ = run_json(capsys, a, b, "--layer", "color")
    assert code == 1
    kinds = [(s["kind"], s.get("layer")) for s in report["structure"]]
    assert kinds == [("bounding_box", "color")]
    assert [p["layer"] for p in report["pairs"]] == ["color"] * 3


def test_layer_and_mag_filters(copy, capsys):
    a, b = copy("a"), copy("b")
    change_voxel(b, "color", "2-2-1", (1, 2, 3))
    code, report, _ = run_json(capsys, a, b, "--layer", "segmentation")
    assert code == 0 and [p["layer"] for p in report["pairs"]] == ["segmentation"] * 3
    code, report, _ = run_json(capsys, a, b, "--mag", "4-4-2")
    assert code == 0 and [(p["layer"], p["mag"]) for p in report["pairs"]] == [
        ("color", [4, 4, 2]), ("segmentation", [4, 4, 2])]
    code, report, _ = run_json(capsys, a, b, "--layer", "color", "--mag", "2-2-1")
    assert code == 1 and [(p["layer"], p["mag"]) for p in report["pairs"]] == [
        ("color", [2, 2, 1])]
    assert report["mismatching_blocks"][0]["position"] == [0, 0, 0]
    code, report, _ = run_json(capsys, a, b, "--mag", "1")
    assert code == 0 and [p["mag"] for p in report["pairs"]] == [[1, 1, 1]] * 2
    # what exists on neither side, or a malformed mag: a usage error
    code, _, err = run_json(capsys, a, b, "--layer", "nope")
    assert code == 2 and "nope" in err
    code, _, err = run_json(capsys, a, b, "--mag", "8")
    assert code == 2 and "8-8-8" in err
    code, _, err = run_json(capsys, a, b, "--mag", "2-x")
    assert code == 2


def test_box_is_in_mag1_voxels(copy):
    a, b = copy("a"), copy("b")
    change_voxel(b, "color", "2-2-1", (13, 21, 40))  # mag-1 voxel (26..27, 42..43, 40)
    outside = compare_webknossos(a, b, box=((0, 0, 0), (16, 16, 16)), workers=1)
    assert outside.equal and [p.summary.blocks_compared for p in outside.pairs][:3] == [8, 2, 1]
    inside = compare_webknossos(a, b, box=((24, 40, 40), (8, 8, 1)), workers=1)
    assert not inside.equal and inside.mismatching_blocks[0].position == (8, 16, 40)


def test_plain_mag_folder_against_webknossos_dataset(copy, capsys):
    a, b = copy("a"), copy("b")
    change_voxel(b, "segmentation", "2-2-1", (5, 5, 5))
    # a plain WKW dataset (one mag folder) against a dataset: its chosen layer and mag
    code, report, _ = run_json(capsys, os.path.join(a, "color", "1"), b)
    assert code == 0 and [(p["layer"], p["mag"]) for p in report["pairs"]] == [
        ("color", [1, 1, 1])]
    code, report, _ = run_json(capsys, os.path.join(a, "segmentation", "2-2-1"), b,
                               "--layer", "segmentation", "--mag", "2-2-1")
    assert code == 1 and report["mismatching_blocks"][0]["position"] == [0, 0, 0]
    # two plain mag folders: the plain comparison, as before (no pairs)
    code, report, _ = run_json(capsys, os.path.join(a, "color", "1"),
                               os.path.join(b, "color", "1"))
    assert code == 0 and "pairs" not in report
    code, _, err = run_json(capsys, os.path.join(a, "color", "1"),
                            os.path.join(b, "color", "1"), "--layer", "color")
    assert code == 2 and "webKnossos" in err


def test_unreadable_input_exits_2(copy, tmp_path, capsys):
    a = copy("a")
    code, _, err = run_json(capsys, a, tmp_path / "nothing")
    assert code == 2 and "nothing" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / PROPERTIES_FILE).write_text("{not json")
    code, _, err = run_json(capsys, a, broken)
    assert code == 2


def test_damaged_mag_header_is_reported_per_pair(copy, capsys):
    a, b = copy("a"), copy("b")
    with open(os.path.join(b, "color", "4-4-2", "header.wkw"), "r+b") as f:
        f.write(b"XXXX")  # not the WKW magic any more
    code, report, _ = run_json(capsys, a, b)
    assert code == 1 and report["equal"] is False
    bad = [p for p in report["pairs"] if not p["equal"]]
    assert [(p["layer"], p["mag"]) for p in bad] == [("color", [4, 4, 2])]
    assert bad[0]["comparable"] is False
    assert [s["kind"] for s in bad[0]["structure"]] == ["mag_unreadable"]
    assert all(p["equal"] for p in report["pairs"] if p is not bad[0])


def test_background_run_and_cancel(copy):
    from viewer.core.compare.datasets import WkCompareJob

    a, b = copy("a"), copy("b")
    job = WkCompareJob(a, b, workers=1)
    job.start()
    summary = job.wait(60)
    assert summary is not None and summary.equal and len(summary.pairs) == 6
    cancelled = WkCompareJob(a, b, workers=1)
    cancelled.cancel()
    result = cancelled.run()
    assert result.cancelled and not result.equal and result.pairs == []


def test_a_side_that_cannot_be_opened_exits_2(copy, tmp_path, capsys):
    """An empty folder (nothing any format reads) against a dataset, either way round, is
    unreadable input (exit 2), not "DIFFERENT, 0 of 0 blocks compared"."""
    a = copy("a")
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv in ((a, empty), (empty, a), (os.path.join(a, "color", "1"), empty)):
        code, report, err = run_json(capsys, *argv)
        assert code == 2 and report is None
        assert "empty" in err and "Traceback" not in err
    # a dataset none of whose layers opens
    broken = copy("broken")
    for layer in ("color", "segmentation"):
        shutil.rmtree(os.path.join(broken, layer))
    code, report, err = run_json(capsys, a, broken)
    assert code == 2 and report is None and "broken" in err


def test_a_toy_array_against_a_webknossos_dataset(copy, tmp_path, capsys):
    """A single array of another format against a dataset of layers: compared with the
    dataset's chosen layer and mag, its blocks placed in that mag's voxels."""
    import toyformat

    a = copy("a")
    with WkDataset(a) as ds:
        data = ds.layer("segmentation").mag("2-2-1").read((0, 0, 0), (32, 32, 64))
    data[0, 5, 6, 7] ^= 0x11
    b = toyformat.write_toy(tmp_path / "toy", data, (8, 8, 16))
    code, report, _ = run_json(capsys, a, b, "--layer", "segmentation", "--mag", "2-2-1")
    assert code == 1 and [(p["layer"], p["mag"]) for p in report["pairs"]] == [
        ("segmentation", [2, 2, 1])]
    assert [(r["file"], r["position"], r["voxels_different"])
            for r in report["mismatching_blocks"]] == [("segmentation/2-2-1/z0/y0/x0.wkw",
                                                        [0, 0, 0], 1)]
    assert {s["kind"] for s in report["structure"]} >= {"format", "chunk_shape"}
    code, report, _ = run_json(capsys, b, a, "--layer", "segmentation", "--mag", "2-2-1")
    assert code == 1 and report["mismatching_blocks"][0]["file"] == "c/0.0.0.npy"


def test_empty_folder_against_a_dataset_exits_2_not_1(copy, tmp_path, capsys):
    """An empty folder is not a dataset: that side cannot be opened, whichever side it is
    (it used to be compared as a plain WKW dataset: "DIFFERENT ... 0 of 0 blocks", exit 1)."""
    a = copy("a")
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv, side in (((empty, a), "A"), ((a, empty), "B")):
        code, report, err = run_json(capsys, *argv)
        assert code == 2 and report is None
        assert f"cannot read {side}" in err and "empty" in err
        assert main([str(p) for p in argv]) == 2
        assert "DIFFERENT" not in capsys.readouterr().out
