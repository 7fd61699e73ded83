"""``info`` keeps running summaries, not every unit: the stored-size statistics, the chunk list
sorted through runs on disk, and the JSON written as it goes (closed with
``"interrupted": true`` when cut short)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from viewer.cli import chunk_list, main, streaming
from viewer.cli.streaming import JsonStream, SizeStats
from viewer.format import wkw


def test_size_stats_exact_median_over_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "PENDING", 7)  # merge often
    rng = np.random.default_rng(5)
    every: list[np.ndarray] = []
    stats = SizeStats()
    for n in (1, 4, 0, 9, 13, 2, 30):
        sizes = rng.integers(100, 400, n).astype(np.int64)
        every.append(sizes)
        stats.add(sizes)
    all_sizes = np.concatenate(every)
    for drop_last in (False, True):  # an even and an odd count
        assert stats.summary() == {"min": int(all_sizes.min()),
                                   "median": float(np.median(all_sizes)),
                                   "max": int(all_sizes.max()), "total": int(all_sizes.sum())}
        if drop_last:
            break
        stats.add(np.array([250], np.int64))
        all_sizes = np.concatenate([all_sizes, [250]])
    assert SizeStats().summary() == {"min": None, "median": None, "max": None, "total": None}


def test_size_stats_binned_median_within_bin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "MAX_DISTINCT", 50)
    monkeypatch.setattr(streaming, "PENDING", 64)
    sizes = np.random.default_rng(2).integers(1_000, 2_000_000, 5_001).astype(np.int64)
    stats = SizeStats()
    for part in np.array_split(sizes, 17):
        stats.add(part)
    assert stats.binned
    got = stats.median()
    assert got is not None and abs(got - float(np.median(sizes))) <= 2e-3 * np.median(sizes)
    assert (stats.min, stats.max, stats.total) == (sizes.min(), sizes.max(), sizes.sum())


def test_json_stream_interrupted_inside_a_list() -> None:
    out = io.StringIO()
    stream = JsonStream(out)
    stream.interrupt()  # not begun: nothing written
    assert out.getvalue() == ""
    stream.begin()
    stream.field("a", 1)
    stream.begin_list("files")
    stream.item({"x": [1, 2]})
    stream.interrupt()
    stream.interrupt()  # once only
    doc = json.loads(out.getvalue())
    assert doc == {"a": 1, "files": [{"x": [1, 2]}], "interrupted": True}


def _multi_chunk_dataset(root: Path) -> None:
    header = wkw.Header(np.uint8, block_len=4, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4)
    ds = wkw.Dataset.create(str(root), header)
    data = np.random.default_rng(9).integers(0, 4, (1, 24, 16, 8), dtype=np.uint8)
    ds.write((0, 0, 0), data)
    ds.close()


def test_chunk_list_through_runs_on_disk_matches_in_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _multi_chunk_dataset(tmp_path / "ds")
    assert main(["info", "--json", "--chunks", "--threads", "1", str(tmp_path / "ds")]) == 0
    whole = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(chunk_list, "RUN", 5)  # many runs, merged from the temporary file
    monkeypatch.setattr(chunk_list, "MERGE_BUDGET", 8)
    monkeypatch.setattr(chunk_list, "MIN_BLOCK", 2)
    assert main(["info", "--json", "--chunks", str(tmp_path / "ds")]) == 0
    spilled = json.loads(capsys.readouterr().out)
    assert spilled == whole
    grids = [c["grid"] for c in whole["chunk_list"]]
    assert grids == sorted(grids) and len(grids) == 6 * 4 * 2 == whole["chunks"]["present"]


@pytest.mark.parametrize("run", [1, 3, 7, 50])
def test_chunk_sorter_merges_runs_in_grid_order(monkeypatch: pytest.MonkeyPatch,
                                                run: int) -> None:
    monkeypatch.setattr(chunk_list, "RUN", run)
    monkeypatch.setattr(chunk_list, "MERGE_BUDGET", 4)
    monkeypatch.setattr(chunk_list, "MIN_BLOCK", 1)
    rng = np.random.default_rng(run)
    sorter = chunk_list.ChunkSorter()
    every = []
    for unit in range(9):  # units in any order, chunks in any order inside each
        grid = rng.integers(0, 4, (6, 3))
        grid[:, 0] += 4 * (unit % 3)
        index = np.arange(6)
        sorter.add(chunk_list.records(grid, index * 10, (unit, 0, 0), index, index * 100,
                                      np.zeros(6, bool)))
        every.extend((*g, i * 10, unit, 0, 0, i, i * 100, 0, 0, 0)
                     for g, i in zip(grid.tolist(), index.tolist(), strict=True))
    got = list(sorter.sorted())
    sorter.close()
    assert [e[:3] for e in got] == sorted(e[:3] for e in every)
    assert sorted(got) == sorted(every)
