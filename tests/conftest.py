"""Shared test set-up: GUI tests run offscreen, with no display; the real-display tests
(tests/display, the bundle's window) get an X server of their own.

``x_display`` starts ``Xvfb`` once per session on a free display number (Xvfb picks it and
says which through ``-displayfd``), waits at most ``START_TIMEOUT_S`` for it, and stops it at
the end.  Without Xvfb those tests are skipped, except in CI (``CI`` set), where ``.ci/run``
installs it: there they fail.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("WKW_VIEWER_NO_SETTINGS", "1")  # tests never touch the user's settings
# The test-only toy format (one .npy file per chunk) is a format plugin: tests/ holds it and the
# metadata of a distribution declaring it in the ``wkw_viewer.formats`` entry point group, so the
# registry loads it in this process and in every child process the tests start (tests/ is on
# their path).
_root = os.path.dirname(os.path.abspath(__file__))  # tests/: where toyformat.py lives
if _root not in sys.path:
    sys.path.insert(0, _root)
if _root not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_root, os.environ.get("PYTHONPATH", "")) if p)

START_TIMEOUT_S = 15.0
SCREEN = "1600x1000x24"


@contextlib.contextmanager
def xvfb_server(screen: str = SCREEN) -> Iterator[str]:
    """An X server (``Xvfb``) with one screen of ``screen`` (``WIDTHxHEIGHTxDEPTH``) on a
    free display number, for as long as the block runs: its ``DISPLAY`` (":N")."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        if os.environ.get("CI"):
            pytest.fail("Xvfb is not installed (.ci/run installs the package xvfb)")
        pytest.skip("Xvfb is not installed (Debian/Ubuntu: apt install xvfb)")
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen([xvfb, "-displayfd", str(write_fd), "-screen", "0", screen,
                               "-nolisten", "tcp", "-noreset"], pass_fds=(write_fd,),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(write_fd)
    try:
        ready, _, _ = select.select([read_fd], [], [], START_TIMEOUT_S)
        number = os.read(read_fd, 64).decode().strip() if ready else ""
        if not number:
            server.kill()
            err = server.communicate(timeout=5)[1].decode(errors="replace")[-2000:]
            pytest.fail(f"Xvfb did not start within {START_TIMEOUT_S} s: {err}")
        yield f":{number}"
    finally:
        os.close(read_fd)
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


@pytest.fixture(scope="session")
def x_display() -> Iterator[str]:
    with xvfb_server(SCREEN) as display:
        yield display


@pytest.fixture(scope="session")
def x_screens() -> Iterator[Callable[[int, int], str]]:
    """``x_screens(width, height)``: the DISPLAY of an X server whose one screen has that
    size (started on first use, one per size, stopped at the end of the session)."""
    servers: dict[tuple[int, int], str] = {}
    with contextlib.ExitStack() as stack:
        def display(width: int, height: int) -> str:
            if (width, height) not in servers:
                servers[(width, height)] = stack.enter_context(
                    xvfb_server(f"{width}x{height}x24"))
            return servers[(width, height)]

        yield display


@pytest.fixture(autouse=True)
def _collect_cycles_between_tests() -> Iterator[None]:
    """Once a window moved cycle collection to the GUI thread (``viewer.ui.collector``), it
    happens on that thread's timer, which runs only while a test waits in the event loop: do
    what is due after each test as well (on the main thread, the GUI thread of the tests)."""
    yield
    collector = sys.modules.get("viewer.ui.collector")
    if collector is not None and collector.installed():
        collector.collect_if_due()
