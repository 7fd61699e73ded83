"""The PyInstaller bundle is a product: ``pyinstaller packaging/wkw-viewer.spec`` builds it,
it stays within ``MAX_BUNDLE_MIB``, and the bundled executable writes the demo dataset, runs
``info``, ``compare`` and ``--screenshot`` on it (about a minute: PyInstaller analyses the
whole program; a whole run of the suite builds it in the background from its start, see
tests/conftest.py).  Marked ``bundle``; it runs with the rest of the suite (CI included), and
``-m "not bundle"`` leaves it out while working."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parents[1]
#: The size the bundle must stay within (MiB, as ``du`` counts them).
MAX_BUNDLE_MIB = 150

pytestmark = pytest.mark.bundle


def _size_mib(folder: Path) -> float:
    total = 0
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_blocks * 512
    return total / (1 << 20)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, bundle_build) -> Path:
    pytest.importorskip("PyInstaller", reason="PyInstaller is in the test extra")
    if bundle_build is not None:  # built in the background since the session began
        exe = bundle_build / "dist" / "wkw-viewer" / "wkw-viewer"
        assert exe.is_file() and os.access(exe, os.X_OK)
        return exe
    work = tmp_path_factory.mktemp("bundle")
    build = subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
         "--distpath", str(work / "dist"), "--workpath", str(work / "build"),
         str(ROOT / "packaging" / "wkw-viewer.spec")],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-4000:]
    exe = work / "dist" / "wkw-viewer" / "wkw-viewer"
    assert exe.is_file() and os.access(exe, os.X_OK)
    return exe


def _start(exe: Path, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.Popen[str]:
    # The tests' toy format (a plugin found on the tests' path) is not part of the product:
    # the bundle knows only its own formats.
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONPATH", None)
    return subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _finish(child: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        out, err = child.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def _run(exe: Path, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return _finish(_start(exe, *args, env=env))


def test_bundle_size(bundle, record_property):
    size = _size_mib(bundle.parent)
    record_property("bundle_mib", round(size, 1))
    print(f"bundle: {size:.1f} MiB in {bundle.parent}")
    assert size <= MAX_BUNDLE_MIB, f"the bundle grew to {size:.1f} MiB"
    # what it is for: its icon and package data came along
    assert (bundle.parent / "_internal" / "viewer" / "resources" / "icon.png").is_file()


def test_bundle_carries_the_native_kernel_where_it_was_built(bundle):
    from viewer.format import native
    from viewer.format.native import planes

    shown = _run(bundle, "--version")
    assert shown.returncode == 0, shown.stderr[-3000:]
    want = "native read kernel: built" if native.available() else "kernel: not built"
    assert want in shown.stdout
    want = "plane assembly: built" if planes.available() else "plane assembly: not built"
    assert want in shown.stdout


@pytest.fixture(scope="module")
def demo(bundle, tmp_path_factory) -> Path:
    """The demo dataset, written by the bundle's ``demo`` command (once for the module)."""
    folder = tmp_path_factory.mktemp("bundle-demo") / "demo"
    made = _run(bundle, "demo", str(folder))
    assert made.returncode == 0, made.stderr[-3000:]
    return folder


def test_bundle_runs_on_the_demo(bundle, demo, tmp_path):
    # The runs are independent of each other: they run at once, each checked after.
    empty = tmp_path / "empty"
    empty.mkdir()
    png = tmp_path / "shot.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    env.pop("WKW_VIEWER_NO_SETTINGS", None)
    runs = [_start(bundle, "info", str(demo), "--json"),
            _start(bundle, "compare", str(demo), str(demo)),
            _start(bundle, "compare", str(empty), str(demo)),
            _start(bundle, str(demo), "--screenshot", str(png), env=env),
            _start(bundle, "install-desktop",
                   env=dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data")))]
    info, same, other, shot, desktop = (_finish(run) for run in runs)
    assert info.returncode == 0, info.stderr[-3000:]
    assert '"valid": true' in info.stdout
    assert same.returncode == 0 and "EQUAL" in same.stdout, same.stderr[-3000:]
    assert other.returncode == 2
    assert shot.returncode == 0, shot.stderr[-3000:]
    assert "propagateSizeHints" not in shot.stderr
    image = QImage(str(png))
    assert image.width() >= 1000 and image.height() >= 700
    assert not (tmp_path / "cfg").exists()  # a screenshot run writes no settings
    assert desktop.returncode == 0, desktop.stderr
    entry = (tmp_path / "data" / "applications" / "wkw-viewer.desktop").read_text()
    assert f"Exec={bundle}" in entry  # the menu entry starts the bundle


def test_bundle_window_on_a_real_display(bundle, demo, x_display, tmp_path):
    """The bundle's xcb platform plugin loads: the window renders on an X server."""
    png = tmp_path / "x11.png"
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=x_display, QT_QPA_PLATFORM="xcb", WKW_VIEWER_NO_SETTINGS="1")
    shot = _run(bundle, str(demo), "--screenshot", str(png), env=env)
    assert shot.returncode == 0, shot.stderr[-3000:]
    assert QImage(str(png)).width() >= 1000

