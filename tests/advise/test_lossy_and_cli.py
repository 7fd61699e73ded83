"""Lossy candidates' errors against the libraries decoding their own output, and the
command line: its JSON document, its exit codes."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from advise_data import FILE, Case
from PIL import Image

from viewer.cli import main as cli_main
from viewer.core.advise import AdviseRequest, run_advice
from viewer.format import open_volume


def _errors(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    sq = sum(float(((b.astype(np.float64) - a.astype(np.float64)) ** 2).sum()) for a, b in pairs)
    n = sum(a.size for a, _ in pairs)
    mx = max(float(np.abs(b.astype(np.float64) - a.astype(np.float64)).max()) for a, b in pairs)
    return mx, math.sqrt(sq / n)


def _present_chunks(case: Case, box: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    c = case.chunk
    out = []
    for i in range(box[0] // c):
        for j in range(box[1] // c):
            for k in range(box[2] // c):
                if (i * c // FILE, j * c // FILE, k * c // FILE) not in case.absent:
                    out.append((i, j, k))
    return out


def test_zfp_error_is_that_of_zfpy_decoding_its_own_stream(
        advise_cases: dict[str, Case]) -> None:
    import zfpy

    case = advise_cases["float"]
    with open_volume(str(case.root)) as volume:
        report = run_advice(volume, AdviseRequest(
            specs=("zarr3+shard:zfp-rate:8",), exhaustive=True, shard_vx=FILE,
            box=((0, 0, 0), (64, 128, 64))))
    (p,) = report.projections
    assert not p.lossless and p.max_abs_error > 0
    c = case.chunk
    pairs = []
    for i, j, k in _present_chunks(case, (64, 128, 64)):
        part = np.ascontiguousarray(case.data[i * c:(i + 1) * c, j * c:(j + 1) * c,
                                              k * c:(k + 1) * c].T)  # (z, y, x)
        pairs.append((part, zfpy.decompress_numpy(zfpy.compress_numpy(part, rate=8))))
    mx, rmse = _errors(pairs)
    assert p.max_abs_error == pytest.approx(mx, rel=1e-12)
    assert p.rmse == pytest.approx(rmse, rel=1e-9)
    lo, hi = float(case.data[:64].min()), float(case.data[:64].max())
    assert p.psnr == pytest.approx(20 * math.log10(hi - lo) - 20 * math.log10(rmse), rel=1e-6)


def test_jpeg_error_is_that_of_pillow_decoding_its_own_image(
        advise_cases: dict[str, Case]) -> None:
    case = advise_cases["smooth"]
    with open_volume(str(case.root)) as volume:
        report = run_advice(volume, AdviseRequest(
            specs=("precomputed:jpeg:75",), exhaustive=True, box=((0, 0, 0), (64, 64, 64))))
    (p,) = report.projections
    c = case.chunk
    pairs = []
    for i, j, k in _present_chunks(case, (64, 64, 64)):
        part = case.data[i * c:(i + 1) * c, j * c:(j + 1) * c, k * c:(k + 1) * c]
        image = np.ascontiguousarray(part.T).reshape(c * c, c)  # x wide, y * z high
        buf = io.BytesIO()
        Image.fromarray(image).save(buf, format="JPEG", quality=75)
        pairs.append((image, np.asarray(Image.open(io.BytesIO(buf.getvalue())))))
    mx, rmse = _errors(pairs)
    assert p.max_abs_error == mx > 0
    assert p.rmse == pytest.approx(rmse, rel=1e-9)
    assert p.psnr == pytest.approx(20 * math.log10(255) - 20 * math.log10(rmse), rel=1e-6)


def test_a_segmentation_is_never_offered_a_lossy_codec(advise_cases: dict[str, Case]) -> None:
    case = advise_cases["segmentation"]
    with open_volume(str(case.root)) as volume:
        report = run_advice(volume, AdviseRequest(
            specs=("precomputed:jpeg:75", "zarr3:zfp-rate:8", "wkw:lz4"), segmentation=True,
            box=((0, 0, 0), (32, 32, 32)), exhaustive=True))
    assert [p.candidate.encoding.name for p in report.projections] == ["lz4"]
    assert len(report.skipped) == 2


def _run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(["advise", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_document(advise_cases: dict[str, Case], capsys: pytest.CaptureFixture[str]
                       ) -> None:
    case = advise_cases["noisy"]
    code, out, _ = _run_cli([str(case.root), "--json", "--seed", "3", "--shard", "64",
                             "--codecs", "wkw:lz4hc:9,zarr3+shard:zstd:3,precomputed:jpeg:75",
                             "--chunk", "32", "--box", "0,0,0,128,128,64"], capsys)
    assert code == 0
    doc: dict[str, Any] = json.loads(out)
    for key in ("path", "format", "current", "sampled_chunks", "total_chunks", "candidates",
                "recommended"):
        assert key in doc
    assert doc["format"] == "wkw" and doc["current"]["encoding"]
    assert doc["current"]["stored_bytes"] > 0
    assert 0 < doc["sampled_chunks"] <= doc["total_chunks"] == 8 * 8 * 4
    assert len(doc["candidates"]) == 6  # three candidates at 16^3 and at 32^3
    for cand in doc["candidates"]:
        for key in ("format", "encoding", "level", "chunk_shape", "projected_bytes",
                    "interval", "ratio_to_current", "encode_mb_s", "decode_mb_s", "lossless",
                    "max_abs_error", "psnr"):
            assert key in cand, key
        lo, hi = cand["interval"]
        assert lo <= cand["projected_bytes"] <= hi
        assert cand["chunk_shape"] in ([16, 16, 16], [32, 32, 32])
        assert (cand["psnr"] is None) == cand["lossless"]
    rec = doc["recommended"]
    assert rec["lossless"] and rec["reason"]


@pytest.mark.parametrize("args", [["--codecs", "wkw:zstd"], ["--sample", "0"],
                                  ["--chunk", "x"], ["--box", "1,2,3"], ["--codecs", "nope"]])
def test_bad_input_exits_2(advise_cases: dict[str, Case], capsys: pytest.CaptureFixture[str],
                           args: list[str]) -> None:
    code, _, err = _run_cli([str(advise_cases["noisy"].root), *args], capsys)
    assert code == 2 and err


def test_missing_path_exits_2(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run_cli([str(tmp_path / "nothing")], capsys)
    assert code == 2 and "nothing" in err


def test_plot_file_is_written(advise_cases: dict[str, Case], capsys: pytest.CaptureFixture[str],
                              tmp_path: Path) -> None:
    from PySide6.QtGui import QImage

    from viewer.ui.advise_plot import FRONT

    out = tmp_path / "whatif.png"
    code, _, _ = _run_cli([str(advise_cases["smooth"].root), "--all", "--shard", "64",
                           "--box", "0,0,0,64,64,64", "--codecs",
                           "wkw:lz4hc:9,zarr3+shard:zstd:3,precomputed:jpeg:75",
                           "--plot", str(out)], capsys)
    assert code == 0
    image = QImage(str(out))
    assert not image.isNull() and image.width() >= 800
    found = {image.pixelColor(x, y).getRgb()[:3] for x in range(0, image.width(), 2)
             for y in range(0, image.height(), 2)}
    assert any(sum(abs(a - b) for a, b in zip(c, FRONT, strict=True)) < 40 for c in found)
