"""The check before Qt starts on X11: missing xcb libraries are one clear line and exit 2,
never Qt's C++ abort (exit 134)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

from viewer.ui import xcb_libs


def test_every_missing_library_is_named_with_debian_and_fedora_packages():
    absent = {"libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-cursor.so.0"}

    def load(name: str) -> object:
        if name in absent:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        return object()

    line = xcb_libs.check(load, plugin=None)
    assert line is not None and "\n" not in line
    for name in absent:
        assert name in line
    assert "Debian/Ubuntu: sudo apt install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in line
    assert "Fedora: sudo dnf install xcb-util-cursor xcb-util-wm xcb-util-keysyms" in line
    assert xcb_libs.check(lambda name: object(), plugin=None) is None


def test_a_library_outside_the_table_is_named_from_the_loader():
    def load(name: str) -> object:
        if name.endswith("libQt6XcbQpa.so.6"):
            raise OSError("libxcb-new-thing.so.2: cannot open shared object file")
        return object()

    line = xcb_libs.check(load, plugin=xcb_libs.Path("/qt/lib/libQt6XcbQpa.so.6"))
    assert line is not None and "libxcb-new-thing.so.2" in line


def test_the_check_agrees_with_the_dynamic_loader_on_this_machine():
    """Whatever this machine has installed: the check passes exactly when Qt's xcb library
    loads."""
    plugin = xcb_libs.plugin_library()
    assert plugin is not None, "PySide6's xcb platform library not found"
    try:
        ctypes.CDLL(str(plugin))
        loads = True
    except OSError:
        loads = False
    assert (xcb_libs.check() is None) == loads


def test_platform_choice():
    assert xcb_libs.uses_xcb({}) == sys.platform.startswith("linux")
    assert not xcb_libs.uses_xcb({"QT_QPA_PLATFORM": "offscreen"})
    assert xcb_libs.uses_xcb({"QT_QPA_PLATFORM": "xcb"}) == sys.platform.startswith("linux")
    assert not xcb_libs.uses_xcb({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"})


def test_window_with_a_missing_library_exits_2_before_qt():
    """End to end: ``wkw-viewer`` on an X display where one library the table names cannot be
    loaded prints the line and exits 2 (Qt never starts)."""
    code = ("import sys; from viewer.ui import xcb_libs; "
            "xcb_libs.XCB_LIBRARIES += (('libwkw-viewer-absent.so.7', 'absent-deb', "
            "'absent-rpm'),); from viewer.cli import main; sys.exit(main([]))")
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env["DISPLAY"] = ":97"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "libwkw-viewer-absent.so.7" in lines[0]
    assert "absent-deb" in lines[0] and "absent-rpm" in lines[0]
    probe = subprocess.run(
        [sys.executable, "-c", code.replace("sys.exit(main([]))",
                                            "rc = main([]); print('PySide6.QtGui' in sys.modules)"
                                            )], env=env, capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "False"
