"""The first window on screens of common sizes (an X server per size, Qt's xcb platform, the
real ``main``, no resizing by the test): the window's frame lies within the screen, every
inspector tab is reached by clicking where it shows, and no text on screen (labels, buttons,
table headers) is cut, on every tab."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DRIVER = Path(__file__).with_name("first_window.py")
ROOT = Path(__file__).resolve().parents[2]
TABS = ["Header", "Units", "Chunks", "Sizes", "Bytes", "Problems", "Map", "What if"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    """A webKnossos dataset of two layers with a voxel size (long texts in the status bar
    and the inspector), two mags."""
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos.writer import write_synthetic_dataset

    root = str(tmp_path_factory.mktemp("first-window") / "em-dataset")
    write_synthetic_dataset(root, EMVolume(7), shape=(128, 128, 64),
                            mags=[(1, 1, 1), (2, 2, 1)], block_len=32, file_len=2, workers=1)
    return root


def first_window(display: str, dataset: str, folder: Path, name: str,
                 *extra: str) -> dict[str, Any]:
    """Run the driver on ``display``: its report (pictures at ``folder/name-N.png``)."""
    out_json = folder / f"{name}.json"
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=display, QT_QPA_PLATFORM="xcb", WKW_VIEWER_NO_SETTINGS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", ""))
                                          if p))  # this checkout's program
    done = subprocess.run([sys.executable, str(DRIVER), dataset, str(out_json),
                           str(folder / name), *extra], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0 and out_json.exists(), done.stderr[-3000:]
    report: dict[str, Any] = json.loads(out_json.read_text())
    assert "error" not in report, (report, done.stderr[-3000:])
    return report


@pytest.mark.parametrize("size", [(1280, 800), (1024, 700)])
def test_first_window_fits_its_screen_every_tab_reached_no_text_cut(x_screens, dataset,
                                                                      tmp_path, size):
    report = first_window(x_screens(*size), dataset, tmp_path, "window")
    assert report["platform"] == "xcb" and report["exit"] == 0
    ax, ay, aw, ah = report["available"]
    fx, fy, fw, fh = report["frame"]
    assert (aw, ah) == size
    assert ax <= fx and ay <= fy and fx + fw <= ax + aw and fy + fh <= ay + ah, report
    assert [t["name"] for t in report["tabs"]] == TABS
    assert all(t["reached"] for t in report["tabs"]), [
        t for t in report["tabs"] if not t["reached"]]
    assert report["cut"] == {name: [] for name in TABS}, report["cut"]


def test_remote_dataset_compared_with_a_copy_every_tab_reached_no_text_cut(
        x_screens, dataset, tmp_path):
    """The harder case at 1024 x 700: A at a URL (its units' headers are described, not read
    at byte offsets: long values) and the Compare dock open beside a local copy B (a narrower
    inspector quadrant)."""
    import shutil

    sys.path.insert(0, str(ROOT / "tests" / "remote"))
    from range_server import RangeServer

    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    root = Path(dataset).parent
    with RangeServer(str(root)) as server:
        report = first_window(x_screens(1024, 700), f"{server.url}/{Path(dataset).name}",
                              tmp_path, "remote", "--compare", str(copy))
    fx, fy, fw, fh = report["frame"]
    assert fx + fw <= 1024 and fy + fh <= 700, report
    assert all(t["reached"] for t in report["tabs"]), [
        t for t in report["tabs"] if not t["reached"]]
    assert report["cut"] == {name: [] for name in TABS}, report["cut"]
