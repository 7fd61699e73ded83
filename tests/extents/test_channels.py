"""Channels in chunks of their own and extra axes, on OME-Zarr written by zarr-python: every
channel and every time point reads voxel for voxel, through ``Volume.read`` and through the
storage units the loader reads (``open_unit`` / ``read_units``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.format import open_volume


def _case(cases: tuple[Path, list[Any]], rel: str) -> Path:
    return cases[0] / rel


def _tc(cases: tuple[Path, list[Any]]) -> np.ndarray:
    """The (T, C, X, Y, Z) truth of ``ome-tc.zarr``: time point 0 is its case's layer, time
    point 1 the channels case's."""
    by_rel = {c.rel: c for c in cases[1]}
    return np.stack([by_rel["ome-tc.zarr"].layers[0][0][2], by_rel["ome-c.zarr"].layers[0][0][2]])


def test_time_axis_is_kept_and_index_chooses_the_time_point(
        cases: tuple[Path, list[Any]]) -> None:
    truth = _tc(cases)
    path = _case(cases, "ome-tc.zarr")
    for t in (0, 1):
        v = open_volume(path, index={"t": t})
        try:
            assert v.extra_axes == {"t": 2}
            assert v.extra_index == {"t": t}
            assert v.num_channels == 3 and v.shape == truth.shape[2:]
            np.testing.assert_array_equal(v.read((0, 0, 0), v.shape), truth[t])
            # a box that is not chunk-aligned, past the edge
            np.testing.assert_array_equal(v.read((5, 7, 3), (70, 50, 10))[:, :65, :43, :9],
                                          truth[t][:, 5:, 7:, 3:12])
        finally:
            v.close()
    v = open_volume(path)
    try:
        assert v.extra_index == {"t": 0}
        moved = v.at_index({"t": 1})
        assert moved.extra_index == {"t": 1}
        np.testing.assert_array_equal(moved.read((0, 0, 0), moved.shape), truth[1])
        with pytest.raises(IndexError, match="outside 0..1"):
            v.at_index({"t": 2})
        with pytest.raises(KeyError, match="no extra axis 'q'"):
            v.at_index({"q": 1})
        assert v.at_index({"q": 0}) is v  # time point 0 of an axis it lacks: itself
    finally:
        v.close()


def test_a_child_process_reopens_the_same_time_point(cases: tuple[Path, list[Any]]) -> None:
    """What the inspector's scan and ``advise --scheduler`` give another process to open
    (``Reopen``) names the time point: the volume it opens is the parent's, not time point 0."""
    import pickle

    from viewer.core.inspect import Reopen

    truth = _tc(cases)
    path = _case(cases, "ome-tc.zarr")
    parent = open_volume(path, index={"t": 1})
    try:
        reopen = pickle.loads(pickle.dumps(Reopen(str(path), index=Reopen.index_of(parent))))
        child = reopen.open()
        try:
            assert child.extra_index == {"t": 1}
            np.testing.assert_array_equal(child.read((0, 0, 0), child.shape), truth[1])
        finally:
            child.close()
    finally:
        parent.close()


@pytest.mark.parametrize("rel", ["ome-tc.zarr", "ome-c.zarr", "ome-c2.zarr"])
def test_storage_units_give_every_channel(cases: tuple[Path, list[Any]], rel: str) -> None:
    """What the loader and the inspector read: each unit's chunks stacked over the channel
    chunks, equal to the truth; the groups say which channels each reads."""
    truth = _tc(cases)[1] if rel != "ome-tc.zarr" else _tc(cases)[0]
    v = open_volume(_case(cases, rel))
    try:
        groups = v.channel_groups()
        step = {"ome-c2.zarr": 2}.get(rel, 1)
        assert [r for r, _ in groups] == [(c, min(c + step, 3)) for c in range(0, 3, step)]
        for (c0, c1), g in groups:
            np.testing.assert_array_equal(g.read((0, 0, 0), g.shape), truth[c0:c1])
        units = sorted(set(v.iter_units()))
        assert units
        cs = np.asarray(v.chunk_shape)
        jobs = []
        for pos in units:
            unit = v.open_unit(pos)
            assert unit is not None
            table = unit.chunk_table()
            idx = np.flatnonzero(table.present).tolist()
            jobs.append((pos, idx))
            stored = unit.read_stored(idx)
            for n, chunk, raw in zip(idx, unit.read_chunks(idx), stored, strict=True):
                assert isinstance(chunk, np.ndarray) and isinstance(raw, (bytes, memoryview))
                np.testing.assert_array_equal(unit.decode(n, raw), chunk)
                local = v.chunk_local(np.asarray([n]))[0]
                at = (np.asarray(pos) * np.asarray(v.unit_shape) + local) * cs
                want = truth[:, at[0]:at[0] + cs[0], at[1]:at[1] + cs[1], at[2]:at[2] + cs[2]]
                got = chunk[:, :want.shape[1], :want.shape[2], :want.shape[3]]
                np.testing.assert_array_equal(got, want)
            v.done_with(unit)
        for (pos, idx), found in zip(jobs, v.read_units(jobs), strict=True):
            assert isinstance(found, list) and len(found) == len(idx), pos
    finally:
        v.close()


def test_cli_index_reads_the_time_point(cases: tuple[Path, list[Any]],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``--index t=N`` on info and digest: the time point asked for; an axis the data lacks,
    or a time point past its end, is bad input (exit 2)."""
    import json

    from viewer.cli import digest as digest_cli
    from viewer.cli import info as info_cli

    path = str(_case(cases, "ome-tc.zarr"))
    digests = []
    for t in ("0", "1"):
        assert info_cli.main([path, "--json", "--quick", "--index", f"t={t}"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert f'"index": {{"t": {t}}}' in json.dumps(doc)
        assert digest_cli.main([path, "--json", "--index", f"t={t}"]) == 0
        digests.append(capsys.readouterr().out)
    assert digests[0] != digests[1]
    assert digest_cli.main([path, "--json"]) == 0
    assert capsys.readouterr().out == digests[0]
    for bad in ("t=2", "q=1"):
        assert info_cli.main([path, "--index", bad]) == 2
        assert digest_cli.main([path, "--index", bad]) == 2
        capsys.readouterr()


@pytest.mark.parametrize("rel", ["ome-c.zarr", "ome-c2.zarr"])
def test_each_channel_alone_reads_only_its_own_chunks(cases: tuple[Path, list[Any]],
                                                      rel: str) -> None:
    """What the window shows per channel (``composite_layers``): channel c alone, voxel for
    voxel; where channels have chunks of their own its units are that channel's chunk files
    only, where they share a chunk the shared one cut to the channel."""
    from viewer.core.layered import source_layers
    from viewer.format import open_dataset
    from viewer.format.channels import ChannelView

    truth = _tc(cases)[1]
    ds = open_dataset(_case(cases, rel))
    try:
        layers, problems = source_layers(ds)
        assert not problems
        v = ds.layers[0].finest.volume
        assert [la.name.split("/", 1)[1] for la in layers] == ["DAPI", "GFP", "mCherry"]
        assert [(la.channel.color, la.channel.window, la.channel.active)
                for la in layers if la.channel] == [
            ("#0000FF", (10.0, 30000.0), True), ("#00FF00", (0.0, 50000.0), True),
            ("#FF0000", (100.0, 60000.0), False)]
        for c, la in enumerate(layers):
            alone = la.finest
            assert alone.num_channels == 1
            np.testing.assert_array_equal(alone.read((0, 0, 0), alone.shape), truth[c:c + 1])
            if rel == "ome-c2.zarr":
                assert isinstance(alone, ChannelView) == (c < 2)
            else:
                assert alone in [g for _, g in v.channel_groups()]
            unit = alone.open_unit((0, 0, 0))
            assert unit is not None
            first = int(alone.chunk_index(np.zeros((1, 3), np.int64))[0])  # chunk (0, 0, 0)
            chunk = unit.read_chunks([first])[0]
            assert isinstance(chunk, np.ndarray)
            np.testing.assert_array_equal(chunk[0, :16, :16, :12], truth[c, :16, :16, :12])
    finally:
        ds.close()


@pytest.mark.parametrize(("dtype", "channels", "split"), [
    ("uint8", 3, False), ("uint8", 4, False), ("uint8", 2, True), ("uint16", 3, True),
    ("uint16", 1, False)])
def test_rgb_stays_rgb_other_channels_become_a_composite(tmp_path: Path, dtype: str,
                                                         channels: int, split: bool) -> None:
    import zarr

    from viewer.core.layered import SourceLayer, composite_layers

    arr = zarr.create_array(str(tmp_path / "a.zarr"), shape=(channels, 4, 8, 8), dtype=dtype,
                            chunks=(channels, 4, 8, 8), zarr_format=3, fill_value=0,
                            dimension_names=["c", "z", "y", "x"])
    arr[...] = np.arange(channels * 256, dtype=dtype).reshape(channels, 4, 8, 8)
    v = open_volume(tmp_path / "a.zarr")
    try:
        out = composite_layers(SourceLayer("a", {(1, 1, 1): v}))
        assert len(out) == (channels if split else 1)
        assert [la.composite for la in out] == (["a"] * channels if split else [None])
        seg = composite_layers(SourceLayer("s", {(1, 1, 1): v}, "segmentation"))
        assert len(seg) == 1
    finally:
        v.close()
