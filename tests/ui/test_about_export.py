"""Help > About (versions) and File > Export View (PNG of the focused view or all views at 1x
or 2x)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from viewer.core.slicing import XY, XZ
from viewer.ui.menus import find_menu


def _action(window, menu: str, text: str):
    for action in find_menu(window, menu).actions():
        if action.text().replace("&", "").startswith(text):
            return action
    raise AssertionError(f"no {menu} > {text}")


def test_about_names_the_versions(window, qtbot):
    import lz4
    import numpy
    from PySide6.QtCore import qVersion

    import viewer

    _action(window, "Help", "About").trigger()
    box = window.menus.about_box
    qtbot.waitUntil(box.isVisible)
    text = box.text()
    for needle in (viewer.__version__, qVersion(), numpy.__version__, lz4.__version__,
                   "Python", "PySide6", "pyqtgraph"):
        assert needle in text
    box.close()


def _array(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    return np.frombuffer(image.constBits(), np.uint8).reshape(
        image.height(), image.width(), 4)[..., :3].copy()


@pytest.mark.parametrize("scale", [1, 2])
def test_export_focused_view_as_png(window, ramp_dataset, tmp_path, scale):
    from viewer.ui.export import export_view

    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    window.state.set_focused(XZ)
    out = tmp_path / f"xz{scale}.png"
    assert export_view(window, str(out), "focused", scale)
    image = QImage(str(out))
    view = window.views[XZ]
    assert (image.width(), image.height()) == (view.width() * scale, view.height() * scale)
    # the picture is the view's: at 1x, pixel for pixel what the screen shows
    shown = _array(view.grab().toImage())
    exported = _array(image)
    if scale == 1:
        assert np.mean(np.abs(shown.astype(int) - exported.astype(int)) > 8) < 0.01
    else:  # each screen pixel is 2x2 pixels of about the same colour (lines are finer)
        halved = exported[::2, ::2]
        assert np.mean(np.abs(shown.astype(int) - halved.astype(int)) > 8) < 0.05


def test_export_all_views_keeps_their_layout(window, ramp_dataset, tmp_path):
    from viewer.ui.export import export_view

    window.open_path(ramp_dataset, pos=(10, 10, 10), zoom=4)
    out = tmp_path / "all.png"
    assert export_view(window, str(out), "all", 2)
    image = QImage(str(out))
    xy, xz = window.views[XY], window.views[XZ]
    # XY top left, XZ below it: the whole grid of views, twice as large
    assert image.width() >= 2 * (xy.width() * 2) - 20
    assert image.height() >= 2 * (xy.height() + xz.height()) - 20
    assert not export_view(window, str(tmp_path / "no-such-folder" / "x.png"))
