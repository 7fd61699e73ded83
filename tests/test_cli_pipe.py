"""Regression: a subcommand whose reader stops early (``| head``) ended in a BrokenPipeError
traceback."""

import subprocess
import sys

import numpy as np

from viewer.format import wkw


def test_info_into_a_closed_pipe_ends_quietly(tmp_path):
    header = wkw.Header(np.uint8, block_len=4, file_len=1, block_type=wkw.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(tmp_path / "ds"), header)
    ds.write((0, 0, 0), np.ones((4, 4, 4 * 400), dtype=np.uint8))  # 400 files: long output
    proc = subprocess.Popen([sys.executable, "-m", "viewer", "info", str(tmp_path / "ds")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()
    assert proc.returncode in (0, 141)
