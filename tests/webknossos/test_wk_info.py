"""``wkw-viewer info DATASET --json`` on a webKnossos dataset: the ``layers`` list, what did not
open among the problems, and the first color layer's finest mag checked file by file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import wk4_layout as wk4

from viewer.cli import info
from viewer.format.webknossos import WkDataset, layers_json

MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]


def _dataset(root: Path) -> None:
    layers = []
    for name, category, dtype in (("em", "color", np.uint8), ("cells", "segmentation", np.uint32)):
        for mag in MAGS:
            lo, shape = wk4.coarse_box((0, 0, 0), (32, 32, 8), mag)
            wk4.write_mag(root / name / wk4.mag_folder(mag), wk4.model(dtype, shape, 1), lo)
        layers.append(wk4.layer(name, category, np.dtype(dtype).name,
                                wk4.bbox((0, 0, 0), (32, 32, 8)), wk4.mags_entry(name, MAGS)))
    wk4.write_properties(root, layers)


def test_info_json_lists_the_layers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path)
    assert info.main([str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["layers"] == layers_json(WkDataset(tmp_path))
    assert [layer["name"] for layer in doc["layers"]] == ["em", "cells"]
    assert doc["layers"][1]["mags"][2] == {"mag": [4, 4, 2], "path": "./cells/4-4-2"}
    assert doc["path"] == str(tmp_path) and doc["valid"] is True
    # the files checked are those of the first color layer's finest mag
    assert doc["files"] and all(f["path"].startswith(str(tmp_path / "em" / "1"))
                                for f in doc["files"])
    assert doc["format"] == "webknossos" and (doc["layer"], doc["mag"]) == ("em", [1, 1, 1])
    assert doc["dtype"] == "uint8" and doc["chunks"]["present"] > 0


def test_info_reports_what_did_not_open(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path)
    shutil.rmtree(tmp_path / "cells" / "2-2-1")
    assert info.main([str(tmp_path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [m["mag"] for m in doc["layers"][1]["mags"]] == [[1, 1, 1], [4, 4, 2]]
    assert [p["type"] for p in doc["problems"]] == ["MissingMagError"]
    assert doc["problems"][0]["path"] == str(tmp_path / "cells" / "2-2-1")
    assert info.main([str(tmp_path)]) == 1
    text = capsys.readouterr().out
    assert "webKnossos dataset" in text and "MissingMagError" in text
    assert "cells: segmentation uint32" in text


def test_info_on_a_plain_wkw_dataset_is_unchanged(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    wk4.write_mag(tmp_path / "plain", wk4.model(np.uint8, (16, 16, 16), 2))
    assert info.main([str(tmp_path / "plain"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "layers" not in doc and doc["path"] == str(tmp_path / "plain")


def test_info_on_a_dataset_with_no_layer_that_opens(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    wk4.write_properties(tmp_path, [wk4.layer("em", "color", "uint8",
                                              wk4.bbox((0, 0, 0), (8, 8, 8)), [])])
    assert info.main([str(tmp_path), "--json"]) == 2
    assert "no layer" in capsys.readouterr().err
