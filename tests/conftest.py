"""Shared test set-up: GUI tests run offscreen, with no display; the real-display tests
(tests/display, the bundle's window) get an X server of their own.

The suite's order (``pytest_collection_modifyitems``): the modules that take longest run first,
so that ``-n auto --dist loadscope`` hands them out while the short ones are still left to fill
in behind them, and ``tests/test_bundle.py`` runs last: its PyInstaller build starts in the
background when the session begins (``pytest_configure``, in the main process only) and is
ready by then (``bundle_build``).

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
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

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

# Where the environment says not to write compiled bytecode (``PYTHONDONTWRITEBYTECODE``), the
# session writes it all the same, beside the sources as Python does by default (``__pycache__``,
# which git ignores), for itself and every process it starts.  Without it each of xdist's
# workers and each child interpreter compiles the program and pytest rewrites every test module
# again; a bytecode folder of the session's own (``PYTHONPYCACHEPREFIX``) hides the bytecode the
# libraries' installs wrote beside their sources, so every worker compiled those as well.
if sys.flags.dont_write_bytecode and not os.environ.get("PYTHONPYCACHEPREFIX"):
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False

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
    # Its messages go to a file: a pipe nobody reads fills up with the warnings each client's
    # keymap brings, and a server blocked writing to it does not end when told to.
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen([xvfb, "-displayfd", str(write_fd), "-screen", "0", screen,
                                   "-nolisten", "tcp", "-noreset"], pass_fds=(write_fd,),
                                  stdout=subprocess.DEVNULL, stderr=log)
        os.close(write_fd)
        try:
            ready, _, _ = select.select([read_fd], [], [], START_TIMEOUT_S)
            number = os.read(read_fd, 64).decode().strip() if ready else ""
            if not number:
                server.kill()
                server.wait(timeout=5)
                log.seek(0)
                err = log.read().decode(errors="replace")[-2000:]
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


# -- how many workers ``-n auto`` starts -------------------------------------------------------

def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One more than the cores: the tests wait for servers, child processes and timeouts
    about a third of their time (two workers on two cores kept 1.4 cores busy), and a third
    worker fills those waits."""
    return (os.cpu_count() or 1) + 1


# -- the order of the modules -------------------------------------------------------------------

#: The modules that take longest (their setup included), longest first: they start first.
#: A module not listed keeps its place after them; an entry that names no module is ignored.
LONGEST_FIRST = (
    "tests/conformance/test_matrix.py",
    "tests/test_typing.py",
    "tests/display/test_first_window.py",
    "tests/fuzz/test_fuzz.py",
    "tests/ui/test_qt_pin.py",
    "tests/zarr/test_zarr_compare.py",
    "tests/cluster/test_cluster.py",
    "tests/faults/test_atomic_writes.py",
    "tests/extents/test_store_matrix.py",
    "tests/format/test_conformance.py",
    "tests/advise/test_writers.py",
    "tests/test_docs.py",
    "tests/ui/test_compare_ui.py",
    "tests/ui/test_memory.py",
    "tests/display/test_real_display.py",
    "tests/ui/test_screenshot.py",
    "tests/core/test_digest.py",
    "tests/ui/test_window.py",
    "tests/n5/test_n5_window.py",
    "tests/n5/test_n5_peers.py",
    "tests/cli/test_interrupt.py",
    "tests/webknossos/test_wk_open.py",
    "tests/advise/test_sampling.py",
    "tests/faults/test_fd_limit.py",
    "tests/zarr/test_zarr_conversion.py",
    "tests/remote/test_remote_exit.py",
    "tests/test_declared.py",
    "tests/advise/test_advise_cluster.py",
    "tests/remote/test_remote_cache.py",
    "tests/n5/test_n5_java.py",
    "tests/ui/test_first_hour.py",
    "tests/format/test_bigmemory.py",
    "tests/test_install_desktop.py",
)
#: The module that runs last (its build runs in the background meanwhile).
LAST = "tests/test_bundle.py"
_ROOT = Path(_root).parent


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def key(item: pytest.Item) -> int:
        name = Path(str(item.path)).resolve().relative_to(_ROOT).as_posix() \
            if Path(str(item.path)).resolve().is_relative_to(_ROOT) else ""
        if name == LAST:
            return len(rank) + 1
        return rank.get(name, len(rank))

    items.sort(key=key)  # stable: the tests of a module keep their order


# -- the bundle, built in the background --------------------------------------------------------

#: Where the background build of the bundle puts it (a folder; set for the test processes).
BUNDLE_ENV = "WKW_VIEWER_TEST_BUNDLE_BUILD"
#: The longest the bundle's tests wait for its build.
BUNDLE_BUILD_TIMEOUT_S = 900.0
#: The build runs at the lowest CPU priority: the tests come first and it takes the time they
#: leave (waits, child processes starting), as it has until the bundle's tests, which run last.
_BUILD_SCRIPT = """
import os, subprocess, sys
os.nice(19)
work, spec = sys.argv[1], sys.argv[2]
with open(os.path.join(work, "build.log"), "w") as log:
    rc = subprocess.run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level",
                         "WARN", "--distpath", os.path.join(work, "dist"), "--workpath",
                         os.path.join(work, "build"), spec], stdout=log,
                        stderr=subprocess.STDOUT).returncode
with open(os.path.join(work, "rc.tmp"), "w") as f:
    f.write(str(rc))
os.replace(os.path.join(work, "rc.tmp"), os.path.join(work, "rc"))
"""
_bundle_build: subprocess.Popen[bytes] | None = None


def _bundle_wanted(config: pytest.Config) -> bool:
    """Whether this run runs tests/test_bundle.py (the paths named, no -k, no "not bundle")."""
    if config.option.keyword or "bundle" in (config.option.markexpr or "") \
            or config.option.collectonly:
        return False
    import importlib.util

    if importlib.util.find_spec("PyInstaller") is None:
        return False
    target = _ROOT / LAST
    args = [a.split("::")[0] for a in config.args] or ["tests"]
    for arg in args:
        path = (Path(config.invocation_params.dir) / arg).resolve()
        if path == target or path in target.parents:
            return True
    return False


#: The temporary folders of earlier sessions that ``_remove_old_sessions_folders`` leaves.
KEEP_SESSIONS = 2


def _remove_old_sessions_folders() -> None:
    """Remove, in the background at the lowest priority, the temporary folders of finished
    sessions but the last ``KEEP_SESSIONS``: pytest removes them itself when the session ends
    (keeping three, this one's among them), tens of thousands of files each, which kept the
    session from ending for 10-30 s of disk writes after its last test.  A folder still
    locked (a session running) is left."""
    import getpass

    root = Path(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir())
    root = root / f"pytest-of-{getpass.getuser()}"
    numbered = sorted((int(p.name.split("-", 1)[1]), p) for p in root.glob("pytest-[0-9]*")
                      if p.name.split("-", 1)[1].isdigit() and not p.is_symlink())
    old = [p for _, p in numbered[:-KEEP_SESSIONS] if not (p / ".lock").exists()]
    old += [p for p in root.glob("garbage-*") if not p.is_symlink()]
    if old:
        subprocess.Popen(["nice", "-n", "19", "rm", "-rf", "--", *map(str, old)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)


def pytest_configure(config: pytest.Config) -> None:
    global _bundle_build
    # loadscope keeps the order above (by default it reorders modules by their number of
    # tests, which put a few long modules, the bundle's among them, last).
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if not hasattr(config, "workerinput") and config.option.basetemp is None:
        _remove_old_sessions_folders()
    if hasattr(config, "workerinput") or BUNDLE_ENV in os.environ \
            or not _bundle_wanted(config):
        return
    work = tempfile.mkdtemp(prefix="wkw-viewer-bundle-")
    _bundle_build = subprocess.Popen(
        [sys.executable, "-c", _BUILD_SCRIPT, work, str(_ROOT / "packaging" / "wkw-viewer.spec")],
        cwd=_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    os.environ[BUNDLE_ENV] = work  # the test processes (xdist's workers) start after this


def pytest_unconfigure(config: pytest.Config) -> None:
    global _bundle_build
    if _bundle_build is None:
        return
    if _bundle_build.poll() is None:  # the bundle's tests did not run: stop it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(_bundle_build.pid, 9)
    _bundle_build.wait()
    _bundle_build = None
    shutil.rmtree(os.environ.pop(BUNDLE_ENV), ignore_errors=True)


@pytest.fixture(scope="session")
def bundle_build() -> Path | None:
    """The folder of the bundle built in the background for this session (``dist/`` and
    ``build.log`` in it), once its build ended; None when no build was started (the bundle's
    tests then build it themselves).  A failed build fails the test with its log."""
    work = os.environ.get(BUNDLE_ENV)
    if work is None:
        return None
    rc = Path(work) / "rc"
    deadline = time.monotonic() + BUNDLE_BUILD_TIMEOUT_S
    while not rc.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the background build of the bundle took over {BUNDLE_BUILD_TIMEOUT_S} s")
        time.sleep(0.5)
    if rc.read_text().strip() != "0":
        log = (Path(work) / "build.log").read_text(errors="replace")
        pytest.fail(f"the bundle's build failed:\n{log[-4000:]}")
    return Path(work)
