"""The desktop program: ``wkw-viewer [PATH] [--pos X,Y,Z] [--index t=3] [--zoom Z]
[--screenshot FILE] [--cache-mb N] [--compare B]``.

Builds the QApplication, the model (``ViewerState``), the plane source and the window, and wires
them.  With no PATH it opens the built-in demo dataset, generating it on first use.  With
``--screenshot FILE`` it renders the window offscreen (no screen needed) to a PNG and exits:
0 when the dataset showed, 2 when it could not be opened or a block on screen failed to read
(the PNG then shows the message).  A bad path or a damaged file is a message in the window,
never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from viewer.cli.index_arg import add_index_argument, index_of
from viewer.core.state import ViewerState, parse_position

if TYPE_CHECKING:
    from PySide6.QtCore import QCoreApplication

    from viewer.ui.main_window import QtMainWindow

WINDOW_SIZE = (1280, 860)
#: How often the event loop lets Python look for a Ctrl+C (ms).
SIGNAL_TICK_MS = 100

#: The subcommands (``viewer.cli.COMMANDS``) for ``wkw-viewer --help``.
EPILOG = """commands (wkw-viewer COMMAND --help for each):
  info PATH           what a dataset holds, every problem (--json, --quick)
  compare A B         same voxels? where not, and why (--json)
  digest PATH         digests of the voxels per region; --check LIST PATH: does a copy match?
  advise PATH         what the data would cost under other codecs and chunkings (--json)
  demo DIR            write the demo dataset to DIR
  install-desktop     add wkw-viewer to the desktop's application menu

--anon and --remote-cache-mb N go with any command; --version says whether the native read
kernel was built.  Exit status: 0 ok, 1 a finding (datasets differ, damage, something not
checked), 2 bad input, 130 interrupted.  docs/cli.md has them all."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="wkw-viewer",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Browse a chunked volume dataset (WKW, webKnossos, N5, Zarr v2/v3, zfpc, "
                    "OpenVDS; local or at a URL) in three linked orthogonal views.",
        epilog=EPILOG)
    parser.add_argument("path", nargs="?",
                        help="dataset folder, .wkw file or URL (http(s)://, s3://, gs://; "
                             "--anon: a public bucket without credentials) (default: the demo)")
    parser.add_argument("--layer", help="the layer to make active (default: the first color "
                                        "layer)")
    parser.add_argument("--mag", help="lock the active layer's mag, e.g. 2-2-1 (default: "
                                      "chosen from the zoom)")
    parser.add_argument("--pos", help="cursor position X,Y,Z in voxels")
    add_index_argument(parser)
    parser.add_argument("--zoom", type=float, help="screen pixels per voxel (e.g. 2 or 0.5)")
    parser.add_argument("--screenshot", metavar="FILE",
                        help="render the window offscreen to this PNG and exit")
    parser.add_argument("--cache-mb", type=int, default=None,
                        help="decoded-block cache budget in MiB (background loader)")
    parser.add_argument("--no-settings", action="store_true",
                        help="neither read nor write settings (recent datasets, window "
                             "layout, each dataset's last view) in this run")
    parser.add_argument("--compare", metavar="B",
                        help="compare with dataset B: same cursor and zoom, compare modes, a "
                             "whole-dataset comparison in the background (Compare menu)")
    # Read by every command before it starts (viewer.cli); listed here for --help.
    parser.add_argument("--version", action="store_true",
                        help="print the version and whether the native read kernel was built, "
                             "and exit")
    parser.add_argument("--anon", action="store_true",
                        help="any command: read public buckets (s3://, gs://) without "
                             "credentials")
    parser.add_argument("--remote-cache-mb", metavar="N", type=int,
                        help="any command: on-disk cache of bytes read over the network, in "
                             "MiB, for this run (0: none)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="scan whole datasets in the inspector on a Dask cluster: "
                             "tcp://HOST:PORT of its scheduler, or local:N worker processes")
    return parser.parse_args(list(argv))


def _has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def _choose_index(window: QtMainWindow, index: dict[str, int]) -> str | None:
    """Show ``--index`` (an axis the dataset lacks, or an element past it: the problem)."""
    axes = window.state.extra_axes
    for axis, value in index.items():
        if axis not in axes:
            if value:
                return f"--index: no extra axis {axis!r} (extra axes: " \
                    f"{', '.join(axes) or 'none'})"
            continue
        if not 0 <= value < axes[axis]:
            return f"--index: {axis}={value} is outside 0..{axes[axis] - 1}"
        window.state.set_index(axis, value)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    pos = None
    if args.pos:
        try:
            pos = parse_position(args.pos)
        except ValueError as exc:
            print(f"wkw-viewer: --pos: {exc}", file=sys.stderr)
            return 2
    if args.zoom is not None and not args.zoom > 0:
        print("wkw-viewer: --zoom must be a positive number", file=sys.stderr)
        return 2
    if args.scheduler:
        from viewer.core.cluster import SchedulerError
        from viewer.core.inspect import set_scan_scheduler

        try:
            set_scan_scheduler(args.scheduler)
        except SchedulerError as exc:
            print(f"wkw-viewer: {exc}", file=sys.stderr)
            return 2
    if args.screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    elif args.path and "://" not in args.path and not os.path.exists(args.path):
        print(f"wkw-viewer: {args.path}: no such file or directory (wkw-viewer --help lists "
              "the commands)", file=sys.stderr)
        return 2
    elif not _has_display():
        print("wkw-viewer: no display found (DISPLAY is not set).  On a headless machine, "
              "--screenshot FILE renders the window to a PNG and exits.", file=sys.stderr)
        return 2
    from viewer.ui import xcb_libs  # Qt-free: before Qt, which would abort without them

    if xcb_libs.uses_xcb():
        problem = xcb_libs.check()
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2

    from viewer.cli import interrupt

    # Ctrl+C must never raise inside Qt: an exception coming up through the bindings' start
    # aborts them, and one raised in a Python override that Qt calls (a widget built, shown,
    # painted) can crash the process.  So a signal waits for the imports, then asks the event
    # loop to quit once it runs (the watchdog ends the process if that takes too long).
    with interrupt.held():
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication

        from viewer.ui import settings
        from viewer.ui.main_window import QtMainWindow
        from viewer.ui.memory import install_memory

        if args.screenshot or args.no_settings:
            settings.disable()  # a screenshot run leaves no trace: no recent entry, no layout
        _quiet_offscreen_warnings()
        app = QApplication.instance() or QApplication(
            [sys.argv[0] if sys.argv else "wkw-viewer"])
        interrupt.set_on_signal(lambda: QTimer.singleShot(0, app.quit))
    app.setApplicationName("wkw-viewer")
    app.setOrganizationName("wkw-viewer")
    _set_icon()
    state = ViewerState()
    window = QtMainWindow(state)
    # Planes come from the background loader (decoded-block cache, worker threads); without
    # it the window reads each plane at once on the GUI thread.
    window.add_background_loading(args.cache_mb << 20 if args.cache_mb else None)
    compare = window.add_compare()  # File > Compare with..., the Compare menu and dock
    from PySide6.QtCore import QSize

    from viewer.ui.screen_fit import fit_after_show, fit_to_screen

    window.resize(*WINDOW_SIZE)
    if not args.screenshot:  # (the offscreen platform's pretend screen is no limit)
        fit_to_screen(window, QSize(*WINDOW_SIZE))  # a small screen: at most its free area
    memory = install_memory(window)  # the remembered geometry and docks replace the defaults
    if not args.screenshot:
        fit_to_screen(window)  # remembered on a larger screen: clamped to this one
    previous_hook = sys.excepthook
    sys.excepthook = lambda t, e, tb: window.report_exception(e)
    try:
        if args.screenshot:
            from PySide6.QtCore import Qt

            window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
        window.show()
        if not args.screenshot:
            fit_after_show(window)  # the window system's frame counts too
        path = args.path
        if path is None:  # the demo: generated on first use, the window already up
            path = _demo_path(window, headless=bool(args.screenshot))
        if path is not None and window.open_path(path, pos=pos, zoom=args.zoom):
            problem = _choose_layer(window, args.layer, args.mag) or \
                _choose_index(window, index_of(args))
            if problem:
                print(f"wkw-viewer: {problem}", file=sys.stderr)
                if args.screenshot:
                    return 2
        if args.compare and window.dataset is not None:
            compare.open_b(args.compare)
        if args.screenshot:
            from viewer.ui.compare.install import settle

            _wait_for_planes(window)
            _report_first_paint(started)
            _install_inspector(window)
            _wait_for_inspector(window)  # it reads the unit under the cursor in the background
            settle(compare)  # B's planes and the whole-dataset comparison
            code = _screenshot(app, window, args.screenshot)
            # Before the interpreter's exit, the background work ends in order (compare, the
            # inspector's scan, the loaders): no thread is left inside a decoder.
            window.shutdown()
            return interrupt.status() if interrupt.interrupted() else code
        # The inspector (and its pyqtgraph import) comes right after the first paint, so the
        # views show without waiting for it.
        def mount_docks() -> None:
            _install_inspector(window)
            memory.restore_docks()  # the Layers dock exists now: put it where it was

        QTimer.singleShot(0, mount_docks)
        return _exec(app)
    finally:
        sys.excepthook = previous_hook
        window.close()
        interrupt.set_on_signal(None)  # from here a signal unwinds the command again


def _exec(app: QCoreApplication) -> int:
    """Run the event loop; Ctrl+C or SIGTERM quits it (exit status 130 / 143).  Python runs
    its signal handlers only between its own instructions, so a timer wakes it while Qt
    waits for events."""
    from PySide6.QtCore import QTimer

    from viewer.cli import interrupt

    interrupt.set_on_signal(app.quit)
    tick = QTimer()
    tick.timeout.connect(lambda: None)
    tick.start(SIGNAL_TICK_MS)
    try:
        code = int(app.exec())
    finally:
        tick.stop()
        interrupt.set_on_signal(None)
    return interrupt.status() if interrupt.interrupted() else code


def _choose_layer(window: QtMainWindow, layer: str | None, mag: str | None) -> str | None:
    """Make ``layer`` active and lock its ``mag`` (``--layer``, ``--mag``); the problem, if
    any, as a sentence."""
    state = window.state
    names = [la.name for la in state.layers]
    if layer is not None:
        if layer not in names:
            return f"--layer: no layer {layer!r} (layers: {', '.join(names)})"
        state.set_active_layer(layer)
    if mag is not None:
        from viewer.format import parse_mag

        try:
            vector = parse_mag(mag)
        except ValueError as exc:
            return f"--mag: {exc}"
        active = state.active_layer
        source = window.source
        mags = source.layers[active].mag_list if source is not None and active else []
        if active is None or vector not in mags:
            return f"--mag: layer {active!r} has no mag {mag} (mags: " \
                   f"{', '.join('-'.join(map(str, m)) for m in mags)})"
        state.set_layer(active, mag_lock=vector)
    return None


def _install_inspector(window: QtMainWindow) -> None:
    """Mount the Layers dock (beside Contrast; keys V and L) and the inspector in the fourth
    quadrant, once the views show their data; if one cannot load, say so and go on."""
    from viewer.ui.layers_panel import install_layers_panel

    install_layers_panel(window)
    try:
        window.add_inspector()
    except Exception as exc:  # the views stay usable without it
        window.show_error("The inspector could not start", str(exc))


#: Warnings of Qt's offscreen platform that say nothing to a person (it cannot pass a window's
#: size hints to a window system it does not have).
OFFSCREEN_NOISE = ("This plugin does not support propagateSizeHints()",)


def _quiet_offscreen_warnings() -> None:
    """On the offscreen platform (``--screenshot``), drop ``OFFSCREEN_NOISE``; every other
    message of Qt goes to stderr as before."""
    if os.environ.get("QT_QPA_PLATFORM", "").split(":")[0] != "offscreen":
        return
    from PySide6.QtCore import (
        QMessageLogContext,
        QtMsgType,
        qFormatLogMessage,
        qInstallMessageHandler,
    )

    def handler(kind: QtMsgType, context: QMessageLogContext, text: str) -> None:
        if text not in OFFSCREEN_NOISE:
            sys.stderr.write(qFormatLogMessage(kind, context, text) + "\n")

    qInstallMessageHandler(handler)


def _demo_path(window: QtMainWindow, headless: bool) -> str | None:
    from viewer.core import demo

    path = demo.default_demo_path(os.environ.get(demo.CACHE_ENV))
    if demo.is_complete(path):
        return str(path)
    if headless:
        began = time.perf_counter()

        def progress(done: int, total: int) -> None:
            print(f"\rgenerating the demo dataset in {path}: file {done}/{total} "
                  f"({time.perf_counter() - began:.1f} s)", end="", file=sys.stderr, flush=True)

        try:
            demo.build_demo(path, progress)
        except OSError as exc:
            print(file=sys.stderr)
            window.show_error("Cannot generate the demo dataset", str(exc))
            return None
        print(file=sys.stderr)
        return str(path)
    from viewer.ui.demo_dialog import ensure_demo_with_progress

    found = ensure_demo_with_progress(window)
    return str(found) if found is not None else None


def _wait_for_planes(window: QtMainWindow, timeout_s: float = 60.0) -> None:
    """Wait until every plane on screen has arrived from the loader."""
    from viewer.ui.waiting import wait_until

    wait_until(window.planes_complete, [window.planes_updated], timeout_s)


def _wait_for_inspector(window: QtMainWindow, timeout_s: float = 60.0) -> None:
    """Wait until the inspector has read the unit under the cursor (or failed to)."""
    from viewer.ui.waiting import wait_until

    inspector = window.inspector
    if inspector is not None:
        wait_until(lambda: not inspector.loading_unit, [inspector.unit_done], timeout_s)


def _report_first_paint(started: float) -> None:
    """With WKW_VIEWER_TIMING set, print when the window first showed its data (wall clock,
    for benchmarks/interaction.py, and seconds since main() began)."""
    if os.environ.get("WKW_VIEWER_TIMING"):
        print(f"first_paint_unix={time.time():.6f} "
              f"after_main={time.perf_counter() - started:.3f}", file=sys.stderr)


def _screenshot(app: QCoreApplication, window: QtMainWindow, filename: str) -> int:
    window.drawing.on_histogram_due()  # the histogram timer has not fired yet
    app.processEvents()
    image = window.grab()
    from viewer.format import atomic  # written beside FILE, then renamed over it: never torn

    tmp = atomic.temp_name(filename)
    try:
        if not image.save(tmp, "PNG"):
            raise OSError("the PNG could not be written")
        atomic.commit_file(tmp, filename)
    except OSError as exc:
        atomic.discard(tmp)
        print(f"wkw-viewer: cannot write {filename}: {exc}", file=sys.stderr)
        return 2
    errors = window.errors
    for message in errors:
        print(f"wkw-viewer: {message}", file=sys.stderr)
    return 2 if errors else 0


def _set_icon() -> None:
    from importlib import resources

    from PySide6.QtGui import QGuiApplication, QIcon, QPixmap

    icon = resources.files("viewer.resources").joinpath("icon.png")
    if icon.is_file():
        pixmap = QPixmap()
        pixmap.loadFromData(icon.read_bytes())
        QGuiApplication.setWindowIcon(QIcon(pixmap))


if __name__ == "__main__":
    sys.exit(main())
