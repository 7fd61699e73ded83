"""A sharded segmentation (murmurhash3, compressed_segmentation) at two scales in the window
(``wkw-viewer PATH --screenshot``, the program's ``main`` run in the test process): zoomed
out, the views draw the coarse scale; zoomed in, the fine one.  The scales hold different
segment ids on purpose, so which scale was drawn shows in the segment colours of the
pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import precomputed_writers as w
import pytest
from program_main import run_main

from viewer.render.segments import segment_rgb

QtGui = pytest.importorskip("PySide6.QtGui")
pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")

FINE, COARSE = 7, 1234567890123


def _rgb(v: int) -> np.ndarray:
    return np.asarray([(v >> 16) & 255, (v >> 8) & 255, v & 255], np.float64)


def _shot(root: Path, zoom: str, png: Path) -> tuple[int, int]:
    """Pixels of the screenshot's XY view (its top-left quarter) drawn in the fine and in
    the coarse segment's colour (the direction of the colour, whatever the blending's
    brightness).  The XY view only: with voxels ten times deeper than wide, the views across
    z may draw from another mag."""
    code, err = run_main(f"precomputed://{root}", "--pos", "128,128,32", "--zoom", zoom,
                         "--screenshot", str(png))
    assert code == 0, err
    image = QtGui.QImage(str(png))
    assert image.width() >= 800
    px = np.asarray([[image.pixel(x, y) & 0xFFFFFF for x in range(0, image.width() * 2 // 5, 3)]
                     for y in range(0, image.height() // 2, 3)], np.int64).reshape(-1)
    rgb = np.stack([(px >> 16) & 255, (px >> 8) & 255, px & 255], axis=1).astype(np.float64)
    bright = rgb.max(axis=1) >= 48
    unit = rgb / np.maximum(np.linalg.norm(rgb, axis=1, keepdims=True), 1)
    fine, coarse = (_rgb(segment_rgb(v)) for v in (FINE, COARSE))
    near_fine = unit @ (fine / np.linalg.norm(fine)) > 0.995
    near_coarse = unit @ (coarse / np.linalg.norm(coarse)) > 0.995
    return int((bright & near_fine & ~near_coarse).sum()), \
        int((bright & near_coarse & ~near_fine).sum())


def test_two_scales_of_a_sharded_segmentation(qapp, tmp_path: Path) -> None:
    root = tmp_path / "seg"
    w.write_scale(root, np.full((1, 256, 256, 64), FINE, np.uint64), dtype="uint64",
                  kind="segmentation", encoding="compressed_segmentation", chunk=(64, 64, 32),
                  sharding=w.MURMUR_GZIP)
    w.write_scale(root, np.full((1, 128, 128, 32), COARSE, np.uint64), dtype="uint64",
                  kind="segmentation", encoding="compressed_segmentation", chunk=(64, 64, 32),
                  resolution=(8, 8, 80), sharding=w.MURMUR_GZIP)
    fine, coarse = _shot(root, "0.25", tmp_path / "out.png")
    assert coarse > 200 and fine < coarse // 10, (fine, coarse)
    fine, coarse = _shot(root, "4", tmp_path / "in.png")
    assert fine > 3000 and coarse < fine // 10, (fine, coarse)
