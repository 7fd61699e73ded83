"""``info``, ``compare`` and ``digest`` on the true extent: a webKnossos zarr3 layer (its array
allocated past the layer's box) says what its WKW twin says; a zarr array whose extent is not
a multiple of its chunks or shards counts the chunks the extent meets, not its shards'."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import extents_writers as w
import pytest

from viewer.cli import main
from viewer.core.digest import compute
from viewer.format import open_volume


def _info(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    code = main(["info", str(path), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    doc: dict[str, Any] = json.loads(out)
    return doc


def _wk(cases: tuple[Path, list[Any]]) -> tuple[Path, Path]:
    root, found = cases
    if not any(c.rel == "wk-zarr3" for c in found):
        pytest.skip("the webknossos package is not installed")
    return root / "wk-zarr3", root / "wk-wkw"


# The layer's box: top-left (6, 4, 2), 70 x 50 x 28 voxels; 16^3 chunks: x 0..4, y 0..3,
# z 0..1 meet it.
BOX = {"topLeft": list(w.WK_TOP_LEFT), "width": 70, "height": 50, "depth": 28}
CHUNKS_MET = 5 * 4 * 2


def test_webknossos_zarr3_layer_reports_its_box_like_its_wkw_twin(
        cases: tuple[Path, list[Any]], capsys: pytest.CaptureFixture[str]) -> None:
    zarr3, wkw = _wk(cases)
    a, b = _info(capsys, zarr3), _info(capsys, wkw)
    for doc in (a, b):
        assert doc["layers"][0]["bounding_box"] == BOX
        assert doc["origin"] == list(w.WK_TOP_LEFT) and doc["shape"] == list(w.ODD)
        assert doc["chunks"]["count"] == doc["chunks"]["present"] == CHUNKS_MET
        assert sum(f["chunks"]["count"] for f in doc["files"]) == CHUNKS_MET
        assert sum(f["chunks"]["present"] for f in doc["files"]) == CHUNKS_MET
        # the stored bytes and ratios are of the chunks in the box, not of the padding
        assert sum(f["block_sizes"]["total"] for f in doc["files"]) == \
            doc["chunks"]["stored_bytes"]["total"]
        assert all(f["ratio"] < 20 for f in doc["files"])  # noisy uint16 compresses little
    assert a["format"] == b["format"] == "webknossos"
    assert a["header"]["zarr_format"] == 3
    for key in ("origin", "shape", "chunk_shape", "layers", "layer", "mag"):
        assert a[key] == b[key], key
    assert a["chunks"]["count"] == b["chunks"]["count"]
    assert a["chunks"]["present"] == b["chunks"]["present"]


def test_webknossos_zarr3_layer_volume_is_the_box_at_each_mag(
        cases: tuple[Path, list[Any]]) -> None:
    zarr3, wkw = _wk(cases)
    for mag, lo, hi in (((1, 1, 1), (6, 4, 2), (76, 54, 30)),
                        ((2, 2, 1), (3, 2, 2), (38, 27, 30))):
        for path in (zarr3, wkw):
            v = open_volume(path, "color", mag)
            try:
                assert v.bounds == (lo, hi), (path.name, mag)
                assert v.extent_declared
            finally:
                v.close()


def test_compare_and_digest_of_the_twins_cover_the_box(
        cases: tuple[Path, list[Any]], capsys: pytest.CaptureFixture[str]) -> None:
    zarr3, wkw = _wk(cases)
    code = main(["compare", str(zarr3), str(wkw), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["equal"] is True
    # mag 1: the 40 chunks the box meets; 2-2-1 (box 35 x 25 x 28 from (3, 2, 2)): 3 x 2 x 2
    assert [p["blocks_compared"] for p in report["pairs"]] == [CHUNKS_MET, 3 * 2 * 2]
    digests = []
    for path in (zarr3, wkw):
        v = open_volume(path)
        try:
            digests.append(compute(v))
        finally:
            v.close()
    assert digests[0].shape == digests[1].shape == w.ODD
    assert digests[0].origin == digests[1].origin == w.WK_TOP_LEFT
    assert digests[0].regions == digests[1].regions and digests[0].regions


@pytest.mark.parametrize(("rel", "met"), [
    ("zp3s.zarr", 5 * 4 * 2),  # chunks 16^3 in shards of 32^3: ceil(70 / 16) x ...
    ("ts3s.zarr", 5 * 4 * 2),
    ("zp2.zarr", 3 * 2 * 1),  # chunks 32^3
])
def test_zarr_chunk_counts_are_over_the_chunks_the_shape_meets(
        cases: tuple[Path, list[Any]], capsys: pytest.CaptureFixture[str], rel: str,
        met: int) -> None:
    doc = _info(capsys, cases[0] / rel)
    assert doc["origin"] == [0, 0, 0] and doc["shape"] == list(w.ODD)
    assert doc["chunks"]["count"] == doc["chunks"]["present"] == met
    assert sum(f["chunks"]["count"] for f in doc["files"]) == met


@pytest.mark.parametrize("rel, quick", [("ome-tc.zarr", False), ("ome-tc.zarr", True),
                                        ("ome-c.zarr", False), ("ome-c.zarr", True)])
def test_info_names_each_channel_groups_own_file(cases: tuple[Path, list[Any]],
                                                 capsys: pytest.CaptureFixture[str],
                                                 rel: str, quick: bool) -> None:
    """Channels in chunks of their own (zarr-python): a row per file, each naming its own
    file and channels, with that file's size; a shard holding two channels' chunks is one
    row for both."""
    root, _ = cases
    array = root / rel / "0"
    code = main(["info", str(root / rel), "--json", "--chunks", *(["--quick"] if quick else [])])
    out = capsys.readouterr().out
    assert code == 0, out
    doc = json.loads(out)
    if rel == "ome-tc.zarr":  # zarr v2, t c z y x, one chunk per file: t=0's files
        on_disk = {str(p) for p in array.iterdir()
                   if not p.name.startswith(".") and p.name.split(".")[0] == "0"}
    else:  # zarr v3, c z y x, shards of 2 channels (3 channels: 2 shards along c)
        on_disk = {str(p) for p in (array / "c").rglob("*") if p.is_file()}
    rows = doc["files"]
    assert {r["path"] for r in rows} == on_disk and len(rows) == len(on_disk)
    for r in rows:
        assert r["file_size"] == Path(r["path"]).stat().st_size
        c0, c1 = r["channels"]
        if rel == "ome-tc.zarr":
            assert int(Path(r["path"]).name.split(".")[1]) == c0 and c1 == c0 + 1
            assert r["block_sizes"]["total"] == r["file_size"]
        else:
            k = int(Path(r["path"]).relative_to(array / "c").parts[0])
            assert (c0, c1) == (2 * k, min(2 * k + 2, 3))
    met = w.ODD[0] // 16 + 1, w.ODD[1] // 16 + 1, 1  # 70 x 50 x 12 in 16^3 chunks
    groups = 3
    assert doc["chunks"]["count"] == doc["chunks"]["present"] == math.prod(met) * groups
    assert sum(r["chunks"]["present"] for r in rows) == doc["chunks"]["present"]
    assert len(doc["chunk_list"]) == doc["chunks"]["present"]
    assert all(e["channels"] in [r["channels"] for r in rows] for e in doc["chunk_list"])
