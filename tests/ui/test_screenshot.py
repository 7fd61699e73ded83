"""``wkw-viewer PATH --screenshot FILE``: renders offscreen to a PNG and exits (0 ok, 2 when
the dataset could not be shown, with the message in the picture).  The first test runs the
program in a process of its own; the others call its ``main`` in the test process (the same
exit status and messages, without an interpreter's and Qt's start each)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
from program_main import run_main
from PySide6.QtGui import QImage
from window_fixtures import write_dataset


def run_viewer(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WKW_VIEWER_NO_SETTINGS="1")
    return subprocess.run([sys.executable, "-m", "viewer", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_screenshot_writes_a_png_of_the_window_at_pos_and_zoom(tmp_path):
    data = np.full((32, 32, 32), 30, dtype=np.uint8)
    data[10, 20, 5] = 255
    root = write_dataset(tmp_path / "ds", data)
    png = tmp_path / "shot.png"
    result = run_viewer(str(root), "--pos", "10,20,5", "--zoom", "6", "--screenshot", str(png))
    assert result.returncode == 0, result.stderr
    image = QImage(str(png))
    assert image.width() >= 800 and image.height() >= 600
    # the bright voxel at the cursor shows somewhere as pure white (three views, 6x6 pixels each)
    bright = sum(1 for y in range(0, image.height(), 2) for x in range(0, image.width(), 2)
                 if image.pixel(x, y) & 0xFFFFFF == 0xFFFFFF)
    assert bright >= 3 * 9


def test_screenshot_of_a_bad_path_shows_the_message_and_exits_2(qapp, tmp_path):
    png = tmp_path / "bad.png"
    missing = tmp_path / "no-such-dataset"
    code, err = run_main(str(missing), "--screenshot", str(png))
    assert code == 2
    assert "Cannot open" in err and str(missing) in err
    assert "Traceback" not in err
    assert QImage(str(png)).width() > 0


def test_bad_pos_is_refused_with_exit_2(qapp, tmp_path):
    code, err = run_main(str(tmp_path), "--pos", "1,2", "--screenshot", str(tmp_path / "x.png"))
    assert code == 2 and "three numbers" in err


def test_screenshot_of_a_damaged_file_marks_it_and_exits_2(qapp, tmp_path):
    from viewer.format import wkw

    root = write_dataset(tmp_path / "ds", np.full((32, 32, 32), 90, dtype=np.uint8))
    victim = root / "z0" / "y0" / "x0.wkw"
    raw = bytearray(victim.read_bytes())
    with wkw.File.open(victim) as f:
        starts, ends = f.block_ranges()
    raw[int(starts[0]):int(ends[0])] = b"\x00" * int(ends[0] - starts[0])
    victim.write_bytes(bytes(raw))
    png = tmp_path / "damaged.png"
    code, err = run_main(str(root), "--pos", "2,2,2", "--zoom", "8", "--screenshot", str(png))
    assert code == 2, err
    assert "x0.wkw" in err and "block 0" in err
    assert "Traceback" not in err
    image = QImage(str(png))
    reds = sum(1 for y in range(0, image.height(), 3) for x in range(0, image.width(), 3)
               if (image.pixel(x, y) >> 16) & 0xFF > 150 and (image.pixel(x, y) >> 8) & 0xFF < 60)
    assert reds > 100  # the failed block is drawn hatched red
