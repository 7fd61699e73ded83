"""The Qt pin (pyproject: PySide6-Essentials < 6.12 on Python < 3.12).

PySide6 6.12.0 on Python 3.11 drops a reference to ``True`` on every ``Signal.emit()`` and to
``None`` on every graphics item ``update()``; the interpreter aborts after about a thousand
frames.  This drives over a thousand cursor moves through the real window in a subprocess (so
an abort fails this test, not the whole suite) and checks that the process lives and that
``sys.getrefcount(True)`` and ``sys.getrefcount(None)`` have not drifted: each move emits and
updates several times, so such a leak shows as thousands long before the abort.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from window_fixtures import write_dataset

from viewer.format import wkw

MOVES = 1000

SCRIPT = r"""
import sys
from PySide6.QtWidgets import QApplication
from viewer.ui.main_window import QtMainWindow

app = QApplication([])
window = QtMainWindow()
window.resize(480, 420)  # about the window's least size: each paint costs less, as many happen
window.show()
assert window.open_path(sys.argv[1], pos=(16, 16, 16), zoom=4)
emitted = []
window.cursor_changed.connect(emitted.append)
state = window.state
for i in range(200):  # warm up caches and lazily created objects
    state.set_cursor((i % 32, (i * 7) % 32, (i * 3) % 32))
    app.processEvents()
true_before, none_before = sys.getrefcount(True), sys.getrefcount(None)
paints_before = sum(v.paint_count for v in window.views.values())
for i in range({moves}):
    # mostly in-plane moves (crosshairs only), every 8th a new slice, as when browsing
    state.set_cursor((16 + (i % 8), 16 - (i % 8), 16 + (i // 8) % 4))
    app.processEvents()
emitted.clear()
paints = sum(v.paint_count for v in window.views.values()) - paints_before
print("true_drift", sys.getrefcount(True) - true_before)
print("none_drift", sys.getrefcount(None) - none_before)
print("paints", paints)
""".replace("{moves}", str(MOVES))


def test_thousands_of_cursor_moves_leave_true_and_none_alone(tmp_path):
    x, y, z = np.indices((32, 32, 32))
    root = write_dataset(tmp_path / "ds", ((x * 5 + y * 3 + z) % 256).astype(np.uint8),
                         block_type=wkw.BLOCK_TYPE_RAW)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WKW_VIEWER_NO_SETTINGS="1")
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(root)], capture_output=True,
                            text=True, env=env, timeout=300,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, \
        f"the process died ({result.returncode}): {result.stderr[-2000:]}"
    figures = dict(line.split() for line in result.stdout.splitlines() if line.strip())
    assert int(figures["paints"]) >= MOVES  # the moves really went through painted views
    # a leak of one reference per emit or update would show as thousands here
    assert abs(int(figures["true_drift"])) < 100, figures
    assert abs(int(figures["none_drift"])) < 100, figures
