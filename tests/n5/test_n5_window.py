"""An N5 multiscale group in the window (``wkw-viewer PATH --screenshot``, the program's
``main`` run in the test process): zoomed out, the views draw the coarse level; zoomed in, the
fine one.  The levels hold different constant values on purpose, so which level was drawn shows
in the pixels."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from n5_writers import write_tensorstore
from program_main import run_main

pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")
QtGui = pytest.importorskip("PySide6.QtGui")

FINE, COARSE = 60, 250


def _shot(group: Path, zoom: str, png: Path) -> Counter[int]:
    code, err = run_main(str(group), "--pos", "128,128,32", "--zoom", zoom,
                         "--screenshot", str(png))
    # exit 2 only while the inspector is not on the volume interface yet
    assert code == 0 or "inspector could not start" in err, err
    image = QtGui.QImage(str(png))
    assert image.width() >= 800
    return Counter(image.pixel(x, y) & 0xFFFFFF for y in range(0, image.height(), 3)
                   for x in range(0, image.width(), 3))


def test_multiscale_group_zoomed_out_draws_the_coarse_level(qapp, tmp_path: Path) -> None:
    group = tmp_path / "g"
    write_tensorstore(group / "s0", np.full((256, 256, 64), FINE, np.uint8), (64, 64, 64),
                      {"type": "gzip"})
    write_tensorstore(group / "s1", np.full((128, 128, 32), COARSE, np.uint8), (64, 64, 64),
                      {"type": "gzip"}, extra={"downsamplingFactors": [2, 2, 2]})
    (group / "attributes.json").write_text(json.dumps({"multiScale": True,
                                                        "resolution": [4, 4, 4]}))
    fine, coarse = (v * 0x010101 for v in (FINE, COARSE))
    out = _shot(group, "0.25", tmp_path / "out.png")
    assert out[coarse] > 200 and out[fine] < out[coarse] // 10, out.most_common(4)
    near = _shot(group, "4", tmp_path / "in.png")
    assert near[fine] > 5000 and near[coarse] < near[fine] // 10, near.most_common(4)
