"""The program on a real X display (Xvfb, Qt's xcb platform), started through its real
``main``: it comes up, M on XY grows the view to the whole views' area and back, the status
bar's text fits, and the X server's picture of the window at 1280 x 800 has the expected
layout (its structure: bands and quadrants, not exact pixels)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtGui import QImage

DRIVER = Path(__file__).with_name("driver.py")
XY, XZ, YZ = "2", "1", "0"

#: Chrome colours of the dark theme (viewer/ui/main_window.py STYLE, slice_view.BACKGROUND).
MENU = (42, 43, 48)
STATUS = (29, 30, 34)
PANEL = (35, 36, 40)
VIEW_BACKGROUND = (24, 25, 28)
XY_COLOUR = (235, 87, 87)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    """A webKnossos dataset (two layers, a voxel size): long status bar texts."""
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos.writer import write_synthetic_dataset

    root = str(tmp_path_factory.mktemp("display") / "em-dataset")
    write_synthetic_dataset(root, EMVolume(7), shape=(256, 256, 96),
                            mags=[(1, 1, 1), (2, 2, 1)], block_len=32, file_len=4, workers=1)
    return root


_runs: dict[tuple[int, int], tuple[dict[str, Any], Path]] = {}


@pytest.fixture(scope="module")
def run(x_display, dataset, tmp_path_factory):
    """``run(width, height)``: the driver's report and the window's picture (one run per
    size)."""
    folder = tmp_path_factory.mktemp("runs")

    def go(width: int, height: int) -> tuple[dict[str, Any], Path]:
        if (width, height) not in _runs:
            out_json = folder / f"{width}x{height}.json"
            out_png = folder / f"{width}x{height}.png"
            env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
            env.update(DISPLAY=x_display, QT_QPA_PLATFORM="xcb", WKW_VIEWER_NO_SETTINGS="1")
            done = subprocess.run([sys.executable, str(DRIVER), dataset, str(out_json),
                                   str(out_png), str(width), str(height)], env=env,
                                  capture_output=True, text=True, timeout=180)
            assert done.returncode == 0 and out_json.exists(), done.stderr[-3000:]
            report = json.loads(out_json.read_text())
            assert "error" not in report, (report, done.stderr[-3000:])
            _runs[(width, height)] = (report, out_png)
        return _runs[(width, height)]

    return go


def test_starts_on_x11_and_m_grows_xy_to_the_views_area(run):
    report, _ = run(1280, 800)
    assert report["platform"] == "xcb" and report["exit"] == 0
    before, maximised, back = report["xy_before"], report["xy_maximised"], report["xy_back"]
    area = report["views_area"]
    assert maximised[0] >= area[0] - 1 and maximised[1] >= area[1] - 1, report
    assert maximised[0] > 1.8 * before[0] and maximised[1] > 1.8 * before[1]
    assert abs(back[0] - before[0]) <= 1 and abs(back[1] - before[1]) <= 1


@pytest.mark.parametrize("size", [(1280, 800), (1024, 700)])
def test_status_bar_text_fits_on_a_real_display(run, size):
    report, _ = run(*size)
    assert report["size"] == list(size)
    assert "segmentation" in report["value_text"]  # the mouse is over the data
    assert report["status_cut"] == []


def _classes(pixels: np.ndarray) -> dict[str, np.ndarray]:
    def near(colour: tuple[int, int, int], tolerance: int = 4) -> np.ndarray:
        return (np.abs(pixels - np.array(colour)) <= tolerance).all(axis=-1)

    return {"menu": near(MENU), "status": near(STATUS), "panel": near(PANEL),
            "background": near(VIEW_BACKGROUND), "xy": near(XY_COLOUR, 10)}


def test_window_picture_at_1280x800_has_the_expected_layout(run):
    report, png = run(1280, 800)
    image = QImage(str(png)).convertToFormat(QImage.Format.Format_RGB32)
    assert (image.width(), image.height()) == (1280, 800)
    pixels = np.frombuffer(image.constBits(), np.uint8).reshape(800, 1280, 4)[..., 2::-1]
    pixels = pixels.astype(np.int32)
    cls = _classes(pixels)
    layout = report["layout"]
    views = layout["views"]

    def share(name: str, x: int, y: int, w: int, h: int) -> float:
        return float(cls[name][y:y + h, x:x + w].mean())

    # The expected layout: menu and tool bar across the top, the status bar across the
    # bottom, the side docks on the right, and the 2x2 grid in between: XY top left, YZ to
    # its right, XZ below it, the inspector in the fourth quadrant.
    mx, my, mw, mh = layout["menu"]
    assert my == 0 and mw == 1280 and share("menu", 0, 0, 1280, mh) > 0.6
    sx, sy, sw, sh = layout["status"]
    assert sy + sh == 800 and sw == 1280 and 20 <= sh <= 80
    assert share("status", 0, sy, 1280, sh) > 0.5
    dx, dy, dw, dh = layout["dock"]
    assert dx + dw >= 1270 and 180 <= dw <= 360
    gx, gy, gw, gh = layout["grid"]  # inside the central widget
    gx, gy = gx + layout["central"][0], gy + layout["central"][1]
    assert gx + gw <= dx + 8 and gy >= mh and gy + gh <= sy + 4
    xy, xz, yz, side = views[XY], views[XZ], views[YZ], layout["side"]
    assert abs(xy[0] - xz[0]) <= 1 and abs(xy[1] - yz[1]) <= 1  # aligned columns and rows
    assert yz[0] > xy[0] + xy[2] - 4 and xz[1] > xy[1] + xy[3] - 4
    assert abs(side[0] - yz[0]) <= 1 and abs(side[1] - xz[1]) <= 1
    for a, b in ((xy, yz), (xy, xz)):
        assert abs(a[2] - b[2]) <= 2 and abs(a[3] - b[3]) <= 2  # four equal quadrants
    # ... and the X server's picture shows that: XY framed in its colour (it has the focus),
    # each view showing data on its dark background, the dock in the panel colour.
    x, y, w, h = xy
    frame = cls["xy"][y + 2:y + h - 2, x:x + 3].any(axis=1).mean()
    assert frame > 0.9, frame
    for x, y, w, h in (xy, yz, xz):
        inner = pixels[y + 4:y + h - 4, x + 4:x + w - 4]
        data = ~(_classes(inner)["background"])
        assert 0.2 < data.mean() < 0.98  # data, and background around it
        assert inner.std() > 10
    assert share("panel", dx, dy + dh // 2, dw, dh // 4) > 0.4
