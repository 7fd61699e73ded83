"""Regression: under a low limit of open files, ``compare`` of a
3,000-file dataset with its identical copy compared 120 of 3,000 blocks, listed the rest as
unreadable ("Too many open files") and said "different"; the window's ``--screenshot`` exited
with a traceback.  Each dataset kept up to 128 files open, whatever the process may open.

Both run here in a child process whose ``RLIMIT_NOFILE`` is set to 128 before it starts."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from viewer.format import wkw
from viewer.format.wkw import writer

LIMIT = 128
GRID = (15, 20, 10)  # 3,000 data files
BLOCK_LEN = 8


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WKW_VIEWER_NO_SETTINGS="1",
               PYTHONFAULTHANDLER="1")  # a crash prints where it happened
    return subprocess.run([sys.executable, "-m", "viewer", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, preexec_fn=_limit_files)


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A WKW dataset of 3,000 one-block LZ4 files (each its own values), and a copy.  The
    files are assembled with the project's encoder and written without fsync (speed)."""
    root = tmp_path_factory.mktemp("fds") / "a"
    header = wkw.Header(np.uint8, block_len=BLOCK_LEN, file_len=1,
                        block_type=wkw.BLOCK_TYPE_LZ4)
    wkw.Dataset.create(str(root), header).close()
    rng = np.random.default_rng(7)
    for fz in range(GRID[2]):
        for fy in range(GRID[1]):
            for fx in range(GRID[0]):
                block = rng.integers(0, 4, (1, BLOCK_LEN, BLOCK_LEN, BLOCK_LEN), dtype=np.uint8)
                payload = writer.assemble_compressed(
                    header, [writer.encode_block(header, writer.block_bytes_of(block))])
                folder = root / f"z{fz}" / f"y{fy}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"x{fx}.wkw").write_bytes(b"".join(payload))
    copy = root.parent / "b"
    shutil.copytree(root, copy)
    return root, copy


def test_compare_of_3000_files_is_right_under_a_low_file_limit(
        many_files: tuple[Path, Path]) -> None:
    a, b = many_files
    run = _run(["compare", str(a), str(b), "--json"])
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert "Too many open files" not in run.stdout
    assert report["equal"] is True
    assert report["blocks_compared"] == report["blocks_total"] == 3000


def test_screenshot_is_right_under_a_low_file_limit(many_files: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    a, _ = many_files
    png = tmp_path / "shot.png"
    run = _run([str(a), "--screenshot", str(png), "--zoom", "0.25"])
    assert run.returncode == 0, run.stderr[-3000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Traceback" not in run.stderr
