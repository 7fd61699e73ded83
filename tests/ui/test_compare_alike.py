"""Compare draws A and B alike: B in place of A's compared layer, with A's other layers (the
segmentation overlay), contrast and colormaps.  A dataset against its identical copy gives
pixel-identical pictures side by side, and flicker changes nothing but the data."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from viewer.core import state as st


@pytest.fixture(scope="module")
def two_layer_pair(tmp_path_factory) -> tuple[Path, Path]:
    """A webKnossos dataset with a color and a segmentation layer, and its copy."""
    from viewer.core.synthetic import EMVolume
    from viewer.format.webknossos.writer import write_synthetic_dataset

    root = tmp_path_factory.mktemp("alike")
    a = root / "A"
    write_synthetic_dataset(str(a), EMVolume(3), shape=(64, 64, 32), mags=[(1, 1, 1)],
                            block_len=32, file_len=1, workers=1)
    b = root / "B"
    shutil.copytree(a, b)
    return a, b


def _argb(view) -> np.ndarray:
    assert view.rendered is not None
    return np.asarray(view.rendered.argb())


def test_side_by_side_of_an_identical_copy_is_pixel_identical(qtbot, window, two_layer_pair):
    from viewer.ui.compare import modes

    a, b = two_layer_pair
    assert window.open_path(a, pos=(30, 30, 15), zoom=2.0)
    names = [la.name for la in window.state.layers]
    assert any(la.category == st.SEGMENTATION for la in window.state.layers), names
    controller = window.add_compare()
    assert controller.open_b(str(b), start=False)
    controller.set_mode(modes.SIDE)
    qtbot.waitUntil(lambda: window.planes_complete() and controller.planes_complete()
                    and all(v.plane is not None and v.plane.complete
                            for v in controller.b.views.values()), timeout=30000)
    qtbot.wait(50)
    colormaps = ("viridis", "grey")
    for colormap in colormaps:  # the look changes: both sides follow
        color = next(la.name for la in window.state.layers if la.category == st.COLOR)
        window.state.set_active_layer(color)
        window.state.set_contrast(colormap=colormap)
        qtbot.wait(50)
        for axis, view in window.views.items():
            b_view = controller.b.views[axis]
            assert b_view.request == view.request
            assert np.array_equal(_argb(view), _argb(b_view)), (axis, colormap)
    # Flicker shows B's data in A's place, the overlay as it was: for a copy, A's picture.
    controller.set_mode(modes.FLICKER)
    for axis, view in window.views.items():
        picture = controller.pictures.picture(axis, modes.FLICKER, True, 0.0)
        assert picture is not None
        image = picture[0]
        pixels = np.frombuffer(image.constBits(), np.uint32).reshape(
            image.height(), image.width())
        assert np.array_equal(pixels | 0xFF000000, _argb(view) | 0xFF000000), axis
