"""The window on datasets at a URL (pytest-qt): it opens one and shows its data; File > Open
URL is Ctrl+U; blocks whose requests hang fail after the timeout (hatched red) while the window
keeps handling events; a failing server's HTTP status shows in the status bar; opening a URL
from a server that hangs returns with a message, the window handling events meanwhile."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from range_server import RangeServer

from viewer.core.slicing import Status
from viewer.environment import read_config, variables
from viewer.format.remote import configure

WAIT_MS = 60_000


@pytest.fixture
def window(qtbot):
    from viewer.ui.main_window import QtMainWindow

    w = QtMainWindow()
    w.resize(700, 600)
    qtbot.addWidget(w)
    w.add_background_loading(budget_bytes=32 << 20)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()


class _Ticks:
    """A timer on the GUI thread that notes whether it ran while the server held requests."""

    def __init__(self, srv: RangeServer, window: object) -> None:
        from PySide6.QtCore import QTimer

        self.srv = srv
        self.during_hang = 0
        # Owned by the window (deleted with it on the GUI thread), never by the garbage
        # collector, which may run on any thread.
        self.timer = QTimer(window)
        self.timer.setInterval(20)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        if self.srv.hanging:
            self.during_hang += 1


def test_window_opens_a_url_and_shows_its_data(qtbot, window, http: RangeServer,
                                               truth: np.ndarray) -> None:
    assert window.open_path(f"{http.url}/ds", pos=(20, 30, 10))
    qtbot.waitUntil(window.planes_complete, timeout=WAIT_MS)
    view = window.views[2]  # XY at z = 10
    plane = view.plane
    assert plane is not None and plane.request.index == 10
    at = plane.pixel_index(20, 30)
    assert at is not None and int(plane.status[at]) == Status.DATA
    assert int(plane.data[0, at[0], at[1]]) == int(truth[20, 30, 10])
    qtbot.waitUntil(lambda: "net" in window.remote_status.text(), timeout=WAIT_MS)
    assert window.remote_status.isVisible()
    actions = {a.text(): a for a in window.findChildren(type(window.menus.open_action))}
    assert actions["Open &URL\u2026"].shortcut().toString() == "Ctrl+U"


def test_hanging_blocks_fail_after_the_timeout_and_the_window_stays_responsive(
        qtbot, window, http: RangeServer) -> None:
    configure(timeout_s=0.5, retries=0)
    http.fault_match = "/x"  # the data files hang; the metadata answers
    http.hang = True
    ticks = _Ticks(http, window)
    assert window.open_path(f"{http.url}/ds", pos=(20, 30, 10))
    qtbot.waitUntil(window.planes_complete, timeout=WAIT_MS)  # failed is not pending
    plane = window.views[2].plane
    assert plane is not None and (plane.status == Status.FAILED).any()
    assert plane.errors and "timed out" in str(next(iter(plane.errors.values())))
    assert ticks.during_hang > 0  # the GUI thread ran while requests hung
    assert "errors" in window.remote_status.text()
    assert any("timed out" in e for e in window.errors)


def test_a_failing_server_shows_its_http_status(qtbot, window, http: RangeServer) -> None:
    configure(retries=0)
    http.fault_match = "/x"
    http.fail_next = 1000
    http.fail_status = 503
    assert window.open_path(f"{http.url}/ds", pos=(20, 30, 10))
    qtbot.waitUntil(window.planes_complete, timeout=WAIT_MS)
    assert (window.views[2].plane.status == Status.FAILED).any()
    qtbot.waitUntil(lambda: "HTTP 503" in window.remote_status.text(), timeout=WAIT_MS)
    assert any("HTTP 503" in e for e in window.errors)


def test_opening_a_url_that_hangs_returns_and_keeps_the_window_alive(
        qtbot, window, http: RangeServer, data_root: Path) -> None:
    configure(timeout_s=0.5, retries=0)
    http.hang = True
    ticks = _Ticks(http, window)
    assert not window.open_path(f"{http.url}/ds")
    assert ticks.during_hang > 0
    assert window.errors and "Cannot open" in window.errors[-1]


@pytest.fixture
def settings_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "settings"
    folder.mkdir()
    monkeypatch.delenv("WKW_VIEWER_NO_SETTINGS", raising=False)
    monkeypatch.setenv("WKW_VIEWER_SETTINGS_DIR", str(folder))
    monkeypatch.delenv("WKW_VIEWER_REMOTE_CACHE_MB", raising=False)
    return folder


def test_cache_size_is_a_setting_kept_for_the_next_window(qtbot, settings_dir: Path,
                                                          tmp_path: Path) -> None:
    from PySide6.QtCore import QSettings

    from viewer.format.remote import current
    from viewer.format.remote.store import cache_info
    from viewer.ui.main_window import QtMainWindow
    from viewer.ui.remote import CACHE_KEY, QtRemoteCacheDialog

    assert current().cache_bytes == 4096 << 20  # the default: a few GB
    assert cache_info().folder == str(tmp_path / "range-cache")  # the conftest's, not the user's
    dialog = QtRemoteCacheDialog()
    qtbot.addWidget(dialog)
    assert dialog.size_box.value() == 4096
    dialog.size_box.setValue(512)
    dialog.apply()
    assert current().cache_bytes == 512 << 20
    stored = QSettings(str(settings_dir / "wkw-viewer.ini"), QSettings.Format.IniFormat)
    assert int(stored.value(CACHE_KEY)) == 512
    # The next run: the window applies what was kept.
    from viewer.format.remote import config

    config.reset(read_config(os.environ))
    assert current().cache_bytes == 4096 << 20
    window = QtMainWindow()
    qtbot.addWidget(window)
    assert current().cache_bytes == 512 << 20
    window.close()


def test_cache_size_of_the_run_wins_over_the_setting(qtbot, settings_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from PySide6.QtCore import QSettings

    from viewer.cli import _take_option
    from viewer.format.remote import current, set_cache_mb
    from viewer.ui.main_window import QtMainWindow
    from viewer.ui.remote import CACHE_KEY

    stored = QSettings(str(settings_dir / "wkw-viewer.ini"), QSettings.Format.IniFormat)
    stored.setValue(CACHE_KEY, 100)
    stored.sync()
    args, value = _take_option(["--remote-cache-mb", "300", "info", "x"], "--remote-cache-mb")
    assert args == ["info", "x"] and value == "300"
    monkeypatch.setenv("WKW_VIEWER_REMOTE_CACHE_MB", "0")  # undone after the test
    set_cache_mb(int(value), for_children=True)  # what the command line does
    assert current().cache_size_given and variables(current())["WKW_VIEWER_REMOTE_CACHE_MB"] \
        == "300"
    window = QtMainWindow()
    qtbot.addWidget(window)
    assert current().cache_bytes == 300 << 20
    window.close()


def test_remote_cache_option_of_any_command(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from viewer.cli import main
    from viewer.format.remote import current

    monkeypatch.setenv("WKW_VIEWER_REMOTE_CACHE_MB", "1")  # undone after the test
    assert main(["--remote-cache-mb=64", "info", str(tmp_path / "nothing")]) == 2
    assert current().cache_bytes == 64 << 20 and current().cache_size_given
    assert main(["--remote-cache-mb", "lots", "info", str(tmp_path / "nothing")]) == 2


def test_opening_a_url_shows_progress_at_once_and_esc_stops_it(
        qtbot, window, http: RangeServer) -> None:
    """A server that does not answer: the banner and the status bar say what is being opened
    while it waits, and Esc (whatever has the focus; compare's Esc is a shortcut too) stops
    it: nothing opened, no error, the window as it was."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest

    http.hang = True
    seen: dict[str, str] = {}

    def look_then_escape() -> None:
        seen["banner"] = window.banner.text()
        seen["status"] = window.statusBar().currentMessage()
        QTest.keyClick(window.views[2], Qt.Key.Key_Escape)

    QTimer.singleShot(200, look_then_escape)
    assert not window.open_path(f"{http.url}/ds")
    assert "Opening a URL" in seen["banner"] and "Esc" in seen["banner"], seen
    assert http.url in seen["status"] and "Esc" in seen["status"], seen
    assert window.dataset is None and window.errors == []
    assert not window.banner.isVisible()
    assert "stopped opening" in window.statusBar().currentMessage()


def test_a_url_with_nothing_there_says_so(http: RangeServer) -> None:
    """Every probe of every format answered 404: "nothing at this URL", not the list of
    every format the program reads."""
    from viewer.format import FormatError, open_dataset

    with pytest.raises(FormatError, match="nothing at this URL") as raised:
        open_dataset(f"{http.url}/nothing-here")
    assert "it reads:" not in str(raised.value)
