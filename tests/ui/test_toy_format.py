"""The proof that nothing above viewer/format knows WKW: the test-only toy format (one .npy
file per chunk, non-cubic chunks, an absent chunk, a damaged chunk) opens in the window through
the registry, browses voxel for voxel with the background loader, and shows the absent and
failed looks; ``--layer``/``--mag`` pick what the window shows."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from program_main import run_main
from toyformat import write_toy

from viewer.core.slicing import XY, XZ, YZ, Status


def toy_data() -> np.ndarray:
    x, y, z = np.indices((40, 36, 20))
    return ((x * 7 + y * 3 + z * 11) % 60000).astype(np.uint16)[None]


def test_the_toy_format_browses_in_the_window(window, tmp_path: Path, qtbot) -> None:

    data = toy_data()
    root = write_toy(tmp_path / "toy", data, (16, 8, 4), skip=[(1, 1, 1)])
    with open(os.path.join(root, "c", "0.0.2.npy"), "r+b") as fh:
        fh.truncate(30)  # damaged: x 0..15, y 0..7, z 8..11
    window.add_background_loading(64 << 20)
    assert window.open_path(root, pos=(20, 5, 9), zoom=4)
    assert window.opened is not None and window.opened.format == "toy"
    assert window.state.bounds == ((0, 0, 0), (40, 36, 20))
    qtbot.waitUntil(window.planes_complete, timeout=20000)
    xy = window.views[XY].plane
    (x0, y0), z = xy.request.lo, xy.request.index
    status = xy.status
    want = data[0, x0:x0 + status.shape[0], y0:y0 + status.shape[1], z]
    ok = status == Status.DATA
    np.testing.assert_array_equal(xy.data[0][ok], want[ok])
    # chunk (0, 0, 2) is damaged: failed, never zeros; (1, 1, 1) is absent (z 4..7: not here)
    assert (status[0 - x0:16 - x0, 0 - y0:8 - y0] == Status.FAILED).all()
    assert ok.sum() == status.size - 16 * 8
    assert window.errors or window.banner.isVisible() or xy.errors
    # move into the absent chunk's depth: its pixels take the absent look
    window.state.set_cursor((20, 10, 5))
    qtbot.waitUntil(window.planes_complete, timeout=20000)
    xy = window.views[XY].plane
    (x0, y0) = xy.request.lo
    assert (xy.status[16 - x0:32 - x0, 8 - y0:16 - y0] == Status.ABSENT).all()
    for axis in (XZ, YZ):
        assert window.views[axis].plane is not None


def test_layer_and_mag_options_pick_what_the_window_shows(qapp, tmp_path: Path) -> None:
    from viewer.format import BoundingBox
    from viewer.format.webknossos.writer import LayerSpec, create_dataset

    root = tmp_path / "wk"
    create_dataset(root, [LayerSpec("color", BoundingBox((0, 0, 0), (32, 32, 16)), "color",
                                    "uint8", [(1, 1, 1), (2, 2, 1)], block_len=8, file_len=2),
                          LayerSpec("cells", BoundingBox((0, 0, 0), (32, 32, 16)),
                                    "segmentation", "uint32", [(1, 1, 1)], block_len=8,
                                    file_len=2)])
    png = tmp_path / "shot.png"
    # the program's main in this process: the options, not the process, are what is tested
    code, err = run_main(str(root), "--layer", "color", "--mag", "2-2-1", "--screenshot",
                         str(png))
    assert code == 0, err
    code, err = run_main(str(root), "--layer", "nope", "--screenshot", str(png))
    assert code == 2 and "no layer 'nope'" in err
    code, err = run_main(str(root), "--mag", "4", "--screenshot", str(png))
    assert code == 2 and "has no mag 4" in err
