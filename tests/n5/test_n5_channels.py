"""A channel axis split over N5 blocks (BigDataViewer, the n5-viewer and z5py write one
channel per block, or a few): read as C of ``(C, X, Y, Z)`` through a ``ChannelStack`` of one
volume per block, voxel for voxel against the writer, with the native kernel on and off."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from n5_writers import source, write_tensorstore

from viewer.format import open_volume
from viewer.format.channels import channel_volume
from viewer.format.n5 import N5Volume, nativeread
from viewer.format.n5.attributes import parse_dataset
from viewer.format.store import open_store

pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")

SHAPE = (21, 13, 6)
#: Five channels, ``(X, Y, Z, C)`` as N5 orders them.
CHANNELS = np.stack([source(SHAPE, "uint16", seed=70 + k) for k in range(5)], axis=-1)


def _with_axes(path: Path) -> Path:
    attrs_path = path / "attributes.json"
    attrs = json.loads(attrs_path.read_text())
    attrs["axes"] = ["x", "y", "z", "c"]
    attrs_path.write_text(json.dumps(attrs))
    return path


@pytest.fixture(scope="session")
def split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``ts2``: tensorstore, gzip, two channels per block (the last block half full);
    ``z5py1``: z5py, raw, one channel per block."""
    import z5py

    root = tmp_path_factory.mktemp("n5-channels")
    write_tensorstore(root / "ts2", CHANNELS, (8, 8, 4, 2), {"type": "gzip"},
                      extra={"axes": ["x", "y", "z", "c"]})
    f = z5py.File(str(root / "c.n5"), mode="a", use_zarr_format=False)
    ds = f.create_dataset("z5py1", shape=CHANNELS.shape[::-1], chunks=(1, 4, 8, 8),
                          dtype=CHANNELS.dtype, compression="raw")
    ds[...] = np.ascontiguousarray(CHANNELS.T)
    return {"ts2": root / "ts2", "z5py1": _with_axes(root / "c.n5" / "z5py1")}


@pytest.fixture(params=[True, False], ids=["kernel", "python"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(nativeread, "ENABLED", request.param)
    return bool(request.param)


@pytest.mark.parametrize("name", ["ts2", "z5py1"])
def test_channels_split_over_blocks(split: dict[str, Path], name: str, kernel: bool) -> None:
    v = open_volume(split[name])
    want = np.moveaxis(CHANNELS, -1, 0)
    assert v.num_channels == 5 and v.shape == SHAPE and v.chunk_shape == (8, 8, 4)
    np.testing.assert_array_equal(v.read((0, 0, 0), SHAPE), want)
    np.testing.assert_array_equal(v.read((3, 9, 2), (11, 4, 3)), want[:, 3:14, 9:13, 2:5])
    groups = v.channel_groups()
    step = 2 if name == "ts2" else 1
    assert [r for r, _ in groups] == [(c, min(c + step, 5)) for c in range(0, 5, step)]
    for (c0, c1), g in groups:  # each group reads its own blocks only
        np.testing.assert_array_equal(g.read((0, 0, 0), SHAPE), want[c0:c1])
    for c in range(5):  # one channel as the window's layer of it reads it
        np.testing.assert_array_equal(channel_volume(v, c).read((0, 0, 0), SHAPE),
                                      want[c:c + 1])
    assert sorted(v.iter_units()) == [(i, j, k) for i in range(3) for j in range(2)
                                      for k in range(2)]
    # the loader's batch read: chunk (1, 1, 1) of every channel, decoded and stacked
    [chunks] = v.read_units([((1, 1, 1), [0])])
    assert isinstance(chunks, list)
    [chunk] = chunks
    assert isinstance(chunk, np.ndarray) and chunk.shape == (5, 8, 8, 4)
    np.testing.assert_array_equal(chunk[:, :8, :5, :2], want[:, 8:16, 8:13, 4:6])


def test_a_channel_run_starting_inside_a_block(split: dict[str, Path], kernel: bool) -> None:
    """Channels 1..1 and 3..3 of blocks of two: the kernel places a block from its first
    channel, so such a volume is read on the Python path, whatever the kernel's state."""
    path = split["ts2"]
    store = open_store(path)
    attrs = parse_dataset(json.loads((path / "attributes.json").read_text()),
                          str(path / "attributes.json"))
    want = np.moveaxis(CHANNELS, -1, 0)
    for c in (1, 3):
        v = N5Volume(store, "", attrs, channels=(c, c + 1))
        assert v.num_channels == 1
        np.testing.assert_array_equal(v.read((0, 0, 0), SHAPE), want[c:c + 1])
        [chunks] = v.read_units([((2, 1, 1), [0])])
        assert isinstance(chunks, list)
        [chunk] = chunks
        assert isinstance(chunk, np.ndarray)
        np.testing.assert_array_equal(chunk[:, :5, :5, :2], want[c:c + 1, 16:21, 8:13, 4:6])
    with pytest.raises(Exception, match="not in one block"):
        N5Volume(store, "", attrs, channels=(1, 3))


@pytest.mark.parametrize("quick", [False, True])
def test_info_names_each_channel_blocks_own_file(split: dict[str, Path], quick: bool,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``info`` on channels one per block (z5py): a row per chunk file, each with its own path,
    size and channel, every file of the dataset listed once."""
    from viewer.cli import main

    path = split["z5py1"]
    assert main(["info", str(path), "--json", *(["--quick"] if quick else [])]) == 0
    doc = json.loads(capsys.readouterr().out)
    on_disk = {str(p) for p in path.rglob("*") if p.is_file() and p.name != "attributes.json"}
    rows = doc["files"]
    assert {r["path"] for r in rows} == on_disk and len(rows) == len(on_disk)
    for r in rows:
        c = int(Path(r["path"]).name)  # N5 block path x/y/z/c: the channel block last
        assert r["channels"] == [c, c + 1]
        assert r["file_size"] == Path(r["path"]).stat().st_size
    assert doc["chunks"]["present"] == doc["chunks"]["count"] == len(on_disk)
