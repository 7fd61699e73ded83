"""Before Qt starts on an X11 display: are the system libraries of Qt's xcb platform plugin
there?  Without them Qt aborts the process (exit 134, a C++ abort) with a hint that names one
library; this check names every missing one and the packages that hold them, on one line.

Imports no Qt: it runs before the ``QApplication`` exists.  It asks the dynamic loader itself
(``dlopen`` through ctypes), so it finds what Qt would find, wherever the libraries live.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

#: Each shared library the xcb plugin (``libqxcb.so``, ``libQt6XcbQpa.so.6``) needs from the
#: system: (soname, Debian/Ubuntu package, Fedora package).
XCB_LIBRARIES: tuple[tuple[str, str, str], ...] = (
    ("libxcb.so.1", "libxcb1", "libxcb"),
    ("libX11-xcb.so.1", "libx11-xcb1", "libX11-xcb"),
    ("libxcb-cursor.so.0", "libxcb-cursor0", "xcb-util-cursor"),
    ("libxcb-icccm.so.4", "libxcb-icccm4", "xcb-util-wm"),
    ("libxcb-keysyms.so.1", "libxcb-keysyms1", "xcb-util-keysyms"),
    ("libxcb-image.so.0", "libxcb-image0", "xcb-util-image"),
    ("libxcb-render-util.so.0", "libxcb-render-util0", "xcb-util-renderutil"),
    ("libxcb-util.so.1", "libxcb-util1", "xcb-util"),
    ("libxcb-randr.so.0", "libxcb-randr0", "libxcb"),
    ("libxcb-shape.so.0", "libxcb-shape0", "libxcb"),
    ("libxcb-shm.so.0", "libxcb-shm0", "libxcb"),
    ("libxcb-sync.so.1", "libxcb-sync1", "libxcb"),
    ("libxcb-xfixes.so.0", "libxcb-xfixes0", "libxcb"),
    ("libxcb-xkb.so.1", "libxcb-xkb1", "libxcb"),
    ("libxcb-render.so.0", "libxcb-render0", "libxcb"),
    ("libxkbcommon.so.0", "libxkbcommon0", "libxkbcommon"),
    ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0", "libxkbcommon-x11"),
    ("libfontconfig.so.1", "libfontconfig1", "fontconfig"),
    ("libEGL.so.1", "libegl1", "libglvnd-egl"),
    ("libGL.so.1", "libgl1", "libglvnd-glx"),
)

#: The one line a person reads, with {missing}, {debian} and {fedora} filled in.
MESSAGE = ("wkw-viewer: the X11 display needs system libraries that are missing ({missing}); "
           "install them (Debian/Ubuntu: sudo apt install {debian}; "
           "Fedora: sudo dnf install {fedora}) and start again")

Loader = Callable[[str], object]


def uses_xcb(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Whether Qt will start its xcb (X11) platform plugin: on Linux, unless another platform
    is asked for (``QT_QPA_PLATFORM``) or the session is Wayland (Qt then starts its Wayland
    plugin)."""
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux"):
        return False
    platform = env.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.split(":")[0].split(";")[0] == "xcb"
    wayland = env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE") == "wayland"
    return not wayland


def _dlopen(name: str) -> object:
    """Load ``name`` as Qt would find it: from the system, or from the bundle's own folder
    (a PyInstaller bundle carries some of these libraries)."""
    try:
        return ctypes.CDLL(name)
    except OSError:
        bundled = getattr(sys, "_MEIPASS", None)
        if bundled is not None and os.path.exists(os.path.join(bundled, name)):
            return ctypes.CDLL(os.path.join(bundled, name))
        raise


def missing_libraries(load: Loader = _dlopen,
                      libraries: Sequence[tuple[str, str, str]] | None = None
                      ) -> list[tuple[str, str, str]]:
    """The entries of ``libraries`` (default ``XCB_LIBRARIES``) that ``load`` (``dlopen``)
    cannot open."""
    missing = []
    for entry in XCB_LIBRARIES if libraries is None else libraries:
        try:
            load(entry[0])
        except OSError:
            missing.append(entry)
    return missing


def plugin_library() -> Path | None:
    """Qt's xcb platform library inside the installed (or bundled) PySide6, if found; found
    without importing PySide6."""
    spec = importlib.util.find_spec("PySide6")
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        for candidate in (Path(root) / "Qt" / "lib" / "libQt6XcbQpa.so.6",
                          Path(root) / "Qt" / "plugins" / "platforms" / "libqxcb.so"):
            if candidate.is_file():
                return candidate
    return None


def message(missing: Sequence[tuple[str, str, str]], other: str = "") -> str:
    """The line to print for ``missing`` libraries (and ``other``, the loader's own words
    about a library not in the table)."""
    if not missing:
        return (f"wkw-viewer: the X11 display needs a system library that is missing "
                f"({other}); install the package that provides it and start again")
    names = [m[0] for m in missing] + ([other] if other else [])
    debian = " ".join(dict.fromkeys(m[1] for m in missing))
    fedora = " ".join(dict.fromkeys(m[2] for m in missing))
    return MESSAGE.format(missing=", ".join(names), debian=debian, fedora=fedora)


def check(load: Loader = _dlopen, plugin: Path | None | bool = True,
          libraries: Sequence[tuple[str, str, str]] | None = None) -> str | None:
    """None when the xcb plugin's libraries load, else the one-line message.  ``plugin``:
    the Qt library to try last (True: find it), which catches a library not in the table
    ``libraries`` (default ``XCB_LIBRARIES``)."""
    missing = missing_libraries(load, libraries)
    if missing:
        return message(missing)
    path = plugin_library() if plugin is True else plugin or None
    if path is not None:
        try:
            load(str(path))
        except OSError as exc:
            text = str(exc)
            # "libfoo.so.1: cannot open shared object file: ..." names the missing library.
            first = text.split(":")[0].strip()
            if first and not first.startswith("/"):
                return message([], first)
            return message([], text)
    return None
