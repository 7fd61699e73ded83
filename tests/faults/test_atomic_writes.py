"""Regressions: writes that could be torn, and files with the wrong mode.

Measured: ``--screenshot`` wrote its PNG in place (2 of 50 kills left a truncated PNG); the
library wrote raw files in place (37 of 50 kills left a torn file); a killed ``wkw-viewer demo
DIR`` left its temporary folders beside DIR (23 after 28 kills); LZ4HC files and ``demo DIR``
were created 600 / 700 whatever the umask.

Each write path is killed (SIGKILL) at many points, or watched by a reader while it writes:
the destination is always the old version or the new one, whole."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from viewer.format import wkw

SIDE = 32
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PNG_END = b"IEND\xaeB`\x82"

#: A writer of the dataset, forked per kill from a process that imported numpy and the library
#: once (a line "go" on its stdin forks one, which prints "ready PID" and writes the whole box
#: over and over until it is killed, or "failed ..."; "reap PID" waits for it and prints
#: "reaped").
FORK_SERVER = textwrap.dedent("""
    import os, sys
    import numpy as np
    from viewer.format import wkw
    root, side = sys.argv[1], int(sys.argv[2])
    for line in sys.stdin:
        word, _, arg = line.strip().partition(" ")
        if word == "go":
            if os.fork() == 0:
                try:
                    ds = wkw.Dataset.open(root)
                    print("ready", os.getpid(), flush=True)
                    k = 0
                    while True:
                        k += 1
                        ds.write((0, 0, 0), np.full((side,) * 3, 1 + k % 2, dtype=np.uint8))
                except BaseException as exc:
                    print("failed", repr(exc).replace("\\n", " "), flush=True)
                finally:
                    os._exit(1)
        elif word == "reap":
            os.waitpid(int(arg), 0)
            print("reaped", flush=True)
""")


def _make(root: Path, block_type: int) -> None:
    header = wkw.Header(np.uint8, block_len=8, file_len=4, block_type=block_type)
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), np.full((SIDE, SIDE, SIDE), 1, dtype=np.uint8))


@pytest.mark.parametrize("block_type", [wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4HC],
                         ids=["raw", "lz4hc"])
def test_killed_library_writes_leave_the_old_or_the_new_file(tmp_path: Path,
                                                             block_type: int) -> None:
    root = tmp_path / "ds"
    _make(root, block_type)
    rng = np.random.default_rng(3)
    server = subprocess.Popen([sys.executable, "-c", FORK_SERVER, str(root), str(SIDE)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdin is not None and server.stdout is not None
    try:
        for kill in range(12):
            server.stdin.write("go\n")
            server.stdin.flush()
            line = server.stdout.readline()
            assert line.startswith("ready "), f"the writer did not start: {line!r}"
            pid = line.split()[1]
            time.sleep(float(rng.uniform(0.005, 0.08)))
            os.kill(int(pid), signal.SIGKILL)
            server.stdin.write(f"reap {pid}\n")
            server.stdin.flush()
            assert server.stdout.readline().strip() == "reaped"
            with wkw.Dataset.open(root) as ds:
                data = ds.read((0, 0, 0), (SIDE, SIDE, SIDE))
            values = np.unique(data)
            assert len(values) == 1 and int(values[0]) in (1, 2), f"kill {kill}: torn {values}"
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    # The temporaries the kills left are removed by the next write into the folder.
    with wkw.Dataset.open(root) as ds:
        ds.write((0, 0, 0), np.full((SIDE, SIDE, SIDE), 3, dtype=np.uint8))
    folder = root / "z0" / "y0"
    assert sorted(p.name for p in folder.iterdir()) == ["x0.wkw"]


def _modes(root: Path) -> tuple[set[int], set[int]]:
    files, folders = set(), set()
    for dirpath, _dirnames, filenames in os.walk(root):
        folders.add(stat.S_IMODE(os.stat(dirpath).st_mode))
        for name in filenames:
            files.add(stat.S_IMODE(os.stat(os.path.join(dirpath, name)).st_mode))
    return files, folders


def _umask(mask: int):  # type: ignore[no-untyped-def]
    return lambda: os.umask(mask)


@pytest.mark.parametrize("block_type", [wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4HC],
                         ids=["raw", "lz4hc"])
def test_written_files_follow_the_umask(tmp_path: Path, block_type: int) -> None:
    old = os.umask(0o022)
    try:
        _make(tmp_path / "ds", block_type)
        with wkw.Dataset.open(tmp_path / "ds") as ds:  # a partial write, too
            ds.write((3, 4, 5), np.full((4, 4, 4), 9, dtype=np.uint8))
    finally:
        os.umask(old)
    assert _modes(tmp_path / "ds") == ({0o644}, {0o755})


def _run_demo(target: Path, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "viewer", "demo", str(target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kwargs)  # type: ignore[call-overload]


def test_killed_demo_runs_leave_nothing_the_next_run_keeps(tmp_path: Path) -> None:
    """Killed ``demo DIR`` runs leave no temporaries a whole run keeps, and the whole run's
    files and folders follow the umask."""
    target = tmp_path / "demo"
    for delay in (0.3, 0.8, 1.5):
        child = _run_demo(target)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        assert not target.exists() or (target / "datasource-properties.json").is_file()
    if target.exists():  # a run finished before its kill: start from nothing
        import shutil

        shutil.rmtree(target)
    child = _run_demo(target, preexec_fn=_umask(0o022))
    _, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]  # no temporaries left
    assert _modes(target) == ({0o644}, {0o755})


def test_screenshot_never_shows_a_torn_png(tmp_path: Path) -> None:
    """A reader watching the destination while ``--screenshot`` writes it sees the old file
    or the whole new PNG, never a part (the PNG used to be written in place)."""
    root = tmp_path / "ds"
    _make(root, wkw.BLOCK_TYPE_LZ4HC)
    png = tmp_path / "shot.png"
    old = b"old contents"
    torn = 0
    for _ in range(3):
        png.write_bytes(old)
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WKW_VIEWER_NO_SETTINGS="1")
        child = subprocess.Popen([sys.executable, "-m", "viewer", str(root), "--screenshot",
                                  str(png)], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        while child.poll() is None:
            try:
                data = png.read_bytes()
            except FileNotFoundError:
                torn += 1  # the destination went missing
                continue
            if data != old and not (data.startswith(PNG_MAGIC) and data.endswith(PNG_END)):
                torn += 1
        assert child.returncode == 0, child.stderr.read() if child.stderr else ""
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC) and data.endswith(PNG_END)
    assert torn == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "shot.png"]


def test_a_partial_raw_write_keeps_the_file_sparse(tmp_path: Path) -> None:
    """The copy a partial raw write patches keeps the file's holes (a raw file is allocated to
    full size, sparse): a small write into a big raw file does not fill it in."""
    header = wkw.Header(np.uint8, block_len=32, file_len=8)  # 256^3 voxels: 16 MiB apparent
    root = tmp_path / "ds"
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), np.full((32, 32, 32), 7, dtype=np.uint8))
        ds.write((200, 200, 200), np.full((8, 8, 8), 9, dtype=np.uint8))
        path = root / "z0" / "y0" / "x0.wkw"
        st = os.stat(path)
        assert st.st_size == 16 + 256 ** 3
        assert st.st_blocks * 512 < 1 << 20  # two blocks of data, not 16 MiB
        assert int(ds.read((0, 0, 0), (32, 32, 32)).min()) == 7
        assert int(ds.read((200, 200, 200), (8, 8, 8)).min()) == 9
        assert int(ds.read((100, 100, 100), (8, 8, 8)).max()) == 0
