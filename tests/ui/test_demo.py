"""The demo dataset: a webKnossos dataset of deterministic EM-like data (color + segmentation,
three mags), written atomically; ``wkw-viewer demo``; the window generating and opening it.
(The dataset's content, mag by mag, is checked in tests/webknossos/test_wk_demo.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from viewer.core import demo
from viewer.core.synthetic import EMVolume
from viewer.format import wkw


def test_build_demo_writes_several_lz4hc_files_of_the_volume(tmp_path):
    seen = []
    root = demo.build_demo(tmp_path / "demo", lambda d, t: seen.append((d, t)),
                           shape=(256, 128, 128))
    assert demo.is_complete(root)
    # per layer: two files at mag 1, one at 2-2-1, one at 4-4-2
    assert seen[0] == (0, 8) and seen[-1] == (8, 8)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    ds = wkw.Dataset.open(root / "color" / "1")
    assert ds.header.block_type == wkw.BLOCK_TYPE_LZ4HC and ds.header.dtype == np.uint8
    assert len(list(ds.list_files())) == 2
    expected = EMVolume(demo.DEMO_SEED).em((128, 0, 0), (128, 128, 128))
    np.testing.assert_array_equal(ds.read((128, 0, 0), (128, 128, 128))[0], expected)
    seg = wkw.Dataset.open(root / "segmentation" / "1")
    assert seg.header.block_type == wkw.BLOCK_TYPE_LZ4HC and seg.header.dtype == np.uint32
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folder left


def test_interrupted_generation_leaves_nothing_and_is_redone(tmp_path, monkeypatch):
    target = tmp_path / "demo"

    def stop(done, total):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        demo.build_demo(target, stop, shape=(256, 128, 128))
    assert not target.exists() and list(tmp_path.iterdir()) == []
    monkeypatch.setattr(demo, "DEMO_SHAPE", (128, 128, 128))
    assert not demo.is_complete(demo.default_demo_path(str(tmp_path)))
    path = demo.ensure_demo(cache_folder=str(tmp_path))
    assert demo.is_complete(path) and path.parent == tmp_path
    assert [p.name for p in tmp_path.iterdir()] == [demo.DEMO_NAME]


def test_an_old_or_unfinished_demo_is_not_taken_for_the_current_one(tmp_path, monkeypatch):
    """A folder without the marker (an old build or a copy interrupted half-way) is rebuilt;
    a finished build is reused as it is."""
    monkeypatch.setattr(demo, "DEMO_SHAPE", (128, 128, 64))
    path = demo.default_demo_path(str(tmp_path))
    path.mkdir()
    (path / "datasource-properties.json").write_text("{}")
    assert not demo.is_complete(path)
    assert demo.ensure_demo(cache_folder=str(tmp_path)) == path and demo.is_complete(path)
    assert (path / "segmentation" / "4-4-2" / "header.wkw").is_file()
    stamp = (path / ".complete").stat().st_mtime_ns
    assert demo.ensure_demo(cache_folder=str(tmp_path)) == path \
        and (path / ".complete").stat().st_mtime_ns == stamp


def test_demo_cli_refuses_a_folder_that_holds_something(tmp_path, capsys):
    from viewer.cli import main  # the command line in this process: its status and message

    (tmp_path / "x").write_text("keep me")
    assert main(["demo", str(tmp_path)]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "x").read_text() == "keep me"


def test_the_window_generates_the_demo_with_a_progress_dialog(window, tmp_path, monkeypatch,
                                                              qtbot):
    monkeypatch.setenv("WKW_VIEWER_CACHE", str(tmp_path))
    monkeypatch.setattr(demo, "DEMO_SHAPE", (256, 128, 128))
    seen = []
    from viewer.ui import demo_dialog

    original = demo_dialog.QtDemoProgress

    class Recording(original):
        def __init__(self) -> None:
            super().__init__()
            self.progressed.connect(lambda d, t: seen.append((d, t)))

    monkeypatch.setattr(demo_dialog, "QtDemoProgress", Recording)
    window.menus.open_demo()
    assert demo.is_complete(tmp_path / demo.DEMO_NAME)
    assert window.dataset_path == str(tmp_path / demo.DEMO_NAME)
    assert seen[-1] == (8, 8)  # progress reached the GUI thread
    assert window.views[2].plane is not None
