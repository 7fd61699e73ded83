"""``wkw-viewer install-desktop [--uninstall]``: put wkw-viewer in the desktop's application
menu for the current user (the freedesktop.org way: a ``.desktop`` entry in
``$XDG_DATA_HOME/applications`` and the icon in ``$XDG_DATA_HOME/icons/hicolor``; without
``XDG_DATA_HOME``, ``~/.local/share``), so that it can be started from the menu and offered
for folders ("Open with wkw-viewer").  ``--uninstall`` removes both.

The entry starts this very program: the bundle's executable, the ``wkw-viewer`` script that
runs now, or else this Python with ``-m viewer``.  Exit codes: 0 done, 2 cannot write.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from viewer.format import atomic

DESKTOP_NAME = "wkw-viewer.desktop"
ICON_SIZE = "256x256"
ICON_NAME = "wkw-viewer.png"


def data_home() -> Path:
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def targets(home: Path | None = None) -> tuple[Path, Path]:
    """Where the entry and the icon go."""
    base = data_home() if home is None else home
    return (base / "applications" / DESKTOP_NAME,
            base / "icons" / "hicolor" / ICON_SIZE / "apps" / ICON_NAME)


def program_command() -> list[str]:
    """The command that starts this program again."""
    if getattr(sys, "frozen", False):  # a PyInstaller bundle
        return [os.path.abspath(sys.executable)]
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "wkw-viewer" and os.access(script, os.X_OK):
        return [script]
    found = shutil.which("wkw-viewer")
    if found is not None:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "viewer"]


#: Characters that make an argument of an Exec line need quotes (Desktop Entry spec).
RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def _exec_line(command: Sequence[str]) -> str:
    """The desktop entry's Exec value: the command quoted as the Desktop Entry spec says,
    then %f (one file or folder)."""
    quoted = []
    for arg in command:
        arg = arg.replace("%", "%%")
        if any(c in RESERVED for c in arg):
            for c in "\\\"`$":
                arg = arg.replace(c, "\\" + c)
            arg = f'"{arg}"'
        # A string value's own escape: a backslash is written twice.
        quoted.append(arg.replace("\\", "\\\\"))
    return " ".join(quoted) + " %f"


def desktop_entry(command: Sequence[str]) -> str:
    template = resources.files("viewer.resources").joinpath(DESKTOP_NAME).read_text("utf-8")
    lines = [f"Exec={_exec_line(command)}" if line.startswith("Exec=") else line
             for line in template.splitlines()]
    return "\n".join(lines) + "\n"


def _refresh_caches(home: Path) -> None:
    """Tell the desktop about the change where the tools exist (harmless when they do not)."""
    for command in (["update-desktop-database", "-q", str(home / "applications")],):
        if shutil.which(command[0]):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(command, capture_output=True, timeout=30, check=False)


def install(home: Path | None = None, command: Sequence[str] | None = None) -> list[Path]:
    entry_path, icon_path = targets(home)
    entry_path.parent.mkdir(parents=True, exist_ok=True)
    icon_path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_atomically(entry_path, desktop_entry(command or program_command()).encode())
    atomic.write_atomically(
        icon_path, resources.files("viewer.resources").joinpath("icon.png").read_bytes())
    _refresh_caches(entry_path.parents[1])
    return [entry_path, icon_path]


def uninstall(home: Path | None = None) -> list[Path]:
    removed = []
    for path in targets(home):
        if path.exists():
            path.unlink()
            removed.append(path)
    _refresh_caches(targets(home)[0].parents[1])
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wkw-viewer install-desktop",
        description="Add wkw-viewer to the desktop's application menu for the current user "
                    "(a .desktop entry and the icon under $XDG_DATA_HOME, default "
                    "~/.local/share).")
    parser.add_argument("--uninstall", action="store_true", help="remove them again")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.uninstall:
            removed = uninstall()
            for path in removed:
                print(f"removed {path}")
            if not removed:
                print("nothing to remove")
            return 0
        for path in install():
            print(f"installed {path}")
        print("wkw-viewer now starts from the application menu, as " +
              shlex.join(program_command()))
        return 0
    except OSError as exc:
        print(f"wkw-viewer install-desktop: {exc}", file=sys.stderr)
        return 2
