"""``wkw-viewer install-desktop [--uninstall]``: a .desktop entry and the icon in the user's
XDG data folder (here a folder of the test's: XDG_DATA_HOME)."""

from __future__ import annotations

import configparser
import os
import shlex
import subprocess
import sys
from importlib import resources
from pathlib import Path

from viewer.cli import desktop


def _entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"))
    return subprocess.run([sys.executable, "-m", "viewer", "install-desktop", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_install_puts_entry_and_icon_in_xdg_data_home_and_uninstall_removes_them(tmp_path):
    run = _run(tmp_path)
    assert run.returncode == 0, run.stderr
    entry_path = tmp_path / "data" / "applications" / "wkw-viewer.desktop"
    icon_path = tmp_path / "data" / "icons" / "hicolor" / "256x256" / "apps" / "wkw-viewer.png"
    assert entry_path.is_file() and icon_path.is_file()
    assert icon_path.read_bytes() == \
        resources.files("viewer.resources").joinpath("icon.png").read_bytes()
    entry = _entry(entry_path)
    assert entry["Type"] == "Application" and entry["Icon"] == "wkw-viewer"
    assert "inode/directory" in entry["MimeType"]  # offered for folders
    command = shlex.split(entry["Exec"])
    assert command[-1] == "%f"
    assert os.path.isabs(command[0]) and os.access(command[0], os.X_OK)
    # the command really starts this program
    check = subprocess.run([*command[:-1], "info", "--help"], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0 and "wkw-viewer info" in check.stdout
    run = _run(tmp_path, "--uninstall")
    assert run.returncode == 0, run.stderr
    assert not entry_path.exists() and not icon_path.exists()
    assert "nothing to remove" in _run(tmp_path, "--uninstall").stdout


def test_exec_line_quotes_paths_with_spaces_and_specials():
    line = desktop._exec_line(["/opt/my apps/wkw viewer", "-m", "viewer"])
    assert line == '"/opt/my apps/wkw viewer" -m viewer %f'
    assert desktop._exec_line(["/a/50%"]) == "/a/50%% %f"
    assert desktop._exec_line(['/x/$y']) == '"/x/\\\\$y" %f'


def test_unwritable_data_home_exits_2(tmp_path):
    (tmp_path / "data").write_text("a file where a folder should be")
    run = _run(tmp_path)
    assert run.returncode == 2 and "install-desktop" in run.stderr
