"""``info --quick`` with forked workers that list the units themselves (``viewer.cli.listed``):
the listing cut into parts (``Volume.listing_parts``, ``iter_units_in``) is the listing, the
workers' box is the files' box, and the report is the one a single process prints, on sparse
datasets written by the reference ``wkw``, with parts cut into slices of a batch or not."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import wkw as reference
from small_units import info_output

from viewer.cli import info, listed
from viewer.core.parallel import ForkedWorkers, can_fork
from viewer.format import Volume, handles, open_volume
from viewer.format.wkw.volume import WkwVolume

needs_fork = pytest.mark.skipif(not can_fork(), reason="no fork here")


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One-block LZ4 files by the reference ``wkw`` in uneven runs over several z and y
    folders (folders of 1 to 7 files, gaps between them), one of them damaged."""
    root = tmp_path_factory.mktemp("listed") / "sparse"
    header = reference.Header(np.uint8, block_len=8, file_len=1,
                              block_type=reference.Header.BLOCK_TYPE_LZ4)
    rng = np.random.default_rng(7)
    with reference.Dataset.create(str(root), header) as ds:
        for x0, x1, y, z in [(2, 9, 1, 0), (0, 1, 3, 0), (5, 8, 0, 2), (1, 6, 2, 2),
                             (3, 4, 7, 11), (0, 7, 0, 11)]:
            ds.write((8 * x0, 8 * y, 8 * z),
                     rng.integers(0, 9, (1, 8 * (x1 - x0), 8, 8), dtype=np.uint8))
    victim = root / "z2" / "y2" / "x3.wkw"
    raw = bytearray(victim.read_bytes())
    raw[16:24] = (10**9).to_bytes(8, "little")  # the block ends past the file
    victim.write_bytes(bytes(raw))
    time.sleep(handles.RACY_WINDOW_NS / 1e9 + 0.05)  # old enough to be taken as sound
    return str(root)


def test_parts_list_what_the_listing_lists(sparse: str) -> None:
    volume = open_volume(sparse)
    try:
        parts = list(volume.listing_parts())
        assert len(parts) == 6
        units = [u for part in parts for u in volume.iter_units_in(part)]
        assert units == list(volume.iter_units()) and len(units) == 7 + 1 + 3 + 5 + 1 + 7
    finally:
        volume.close()


def test_a_volume_of_one_part_lists_it_whole(sparse: str) -> None:
    volume = open_volume(sparse)
    try:
        assert list(Volume.listing_parts(volume)) == [None]
        assert list(Volume.iter_units_in(volume, None)) == list(volume.iter_units())
    finally:
        volume.close()


def test_a_noted_box_is_the_files_box(sparse: str) -> None:
    listed_box, walked = open_volume(sparse), open_volume(sparse)
    try:
        listed_box.note_listed_box((0, 0, 0), (8, 7, 11))
        assert listed_box.bounds == walked.bounds == ((0, 0, 0), (72, 64, 96))
    finally:
        listed_box.close()
        walked.close()


@pytest.mark.parametrize(("per_batch", "counts", "expected"), [
    (4, [3, 0, 2, 9], [[("a", 0, None), ("c", 0, None)], [("d", 0, 4)], [("d", 4, 8)],
                       [("d", 8, None)]]),
    (100, [3, 0, 2], [[("a", 0, None), ("c", 0, None)]]),
    (1, [40], [[("a", i * 5, i * 5 + 5 if i < 7 else None)] for i in range(8)]),
])
def test_tasks_cover_every_unit_once_in_order(per_batch: int, counts: list[int],
                                              expected: list[list[listed.Slice]]) -> None:
    parts = ["a", "b", "c", "d"][:len(counts)]
    assert list(listed._tasks_of(parts, counts, per_batch)) == expected


@needs_fork
@pytest.mark.parametrize("as_json", [True, False])
@pytest.mark.parametrize(("batch", "sliced", "kept"), [
    (1024, 8, listed.KEPT_UNITS), (2, 8, listed.KEPT_UNITS), (2, 8, 0), (2, 1, 0)])
def test_forked_listing_prints_what_one_process_prints(
        sparse: str, monkeypatch: pytest.MonkeyPatch, as_json: bool, batch: int,
        sliced: int, kept: int) -> None:
    flags = ("--json",) if as_json else ()
    alone = info_output(sparse, "--quick", "--threads", "1", *flags)
    monkeypatch.setattr(info, "BATCH_UNITS", batch)
    # With none kept, the workers list again: with 2, parts cut into slices.
    monkeypatch.setattr(listed, "KEPT_UNITS", kept)
    # With 1: a part of 7 files is too big for slices, the parent lists and hands out batches.
    monkeypatch.setattr(listed, "SLICED_BATCHES", sliced)

    def no_walk(self: WkwVolume) -> None:
        raise AssertionError("the parent listed the files for their box")

    monkeypatch.setattr(WkwVolume, "_files_box", no_walk)
    used = []
    original = listed.ListedCheck.__init__

    def spy(self: listed.ListedCheck, *args: object, **kwargs: object) -> None:
        used.append(True)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(listed.ListedCheck, "__init__", spy)
    forked = info_output(sparse, "--quick", "--threads", "2", *flags)
    assert used and forked == alone and alone[0] == 1
    if as_json:
        doc = json.loads(alone[1])
        assert len(doc["files"]) == 24 and doc["shape"] == [72, 64, 96]
        assert [f["path"] for f in doc["files"] if f["problems"]] == \
            [str(Path(sparse) / "z2" / "y2" / "x3.wkw")]
    assert not multiprocessing.active_children()


@needs_fork
def test_workers_serve_one_map_after_another() -> None:
    workers = ForkedWorkers(lambda n: -n, 2)
    try:
        assert list(workers.map(range(5))) == [0, -1, -2, -3, -4]
        assert list(workers.map(range(3), ahead=1)) == [0, -1, -2]
    finally:
        workers.close()
    assert not multiprocessing.active_children()


@needs_fork
def test_a_volume_of_one_part_is_listed_by_the_parent(tmp_path: Path) -> None:
    """A zarr v2 array of one chunk per file (small units, its listing not cut into parts):
    the same report with forked workers as with one process."""
    import zarr

    root = tmp_path / "arr.zarr"
    data = np.arange(24 * 16 * 8, dtype=np.uint16).reshape(24, 16, 8)
    array = zarr.open_array(str(root), mode="w", shape=data.shape, chunks=(4, 8, 8),
                            dtype=data.dtype, zarr_format=2)
    array[...] = data
    volume = open_volume(str(root))
    try:
        assert volume.small_units and list(volume.listing_parts()) == [None]
    finally:
        volume.close()
    time.sleep(handles.RACY_WINDOW_NS / 1e9 + 0.05)
    alone = info_output(str(root), "--quick", "--json", "--threads", "1")
    forked = info_output(str(root), "--quick", "--json", "--threads", "2")
    assert forked == alone and len(json.loads(alone[1])["files"]) == 12
    assert not multiprocessing.active_children()


@needs_fork
@pytest.mark.parametrize(("kept", "once"), [(listed.KEPT_UNITS, 6), (12, 2), (0, 0)])
def test_two_workers_list_each_folder_once_and_check_each_unit_once(
        sparse: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int,
        once: int) -> None:
    """Every unit reaches a check exactly once, in listing order; with the listing kept (all
    of it, or the first groups of folders) no folder is listed twice by the workers, and the
    parent lists none."""
    log = tmp_path / "listed.log"
    original = WkwVolume.iter_units_in

    def logged(self: WkwVolume, part: object) -> Iterator[tuple[int, int, int]]:
        with open(log, "a") as fh:  # one short line a call: appends from two processes
            fh.write(f"{os.getpid()} {part!r}\n")
        return original(self, part)

    monkeypatch.setattr(WkwVolume, "iter_units_in", logged)
    monkeypatch.setattr(listed, "KEPT_UNITS", kept)
    monkeypatch.setattr(listed, "PARTS_PER_COUNT", 2)  # three groups of folders
    volume = open_volume(sparse)
    try:
        assert isinstance(volume, WkwVolume)
        parts = list(volume.listing_parts())
        expected = [u for part in parts for u in original(volume, part)]
        check = listed.ListedCheck(volume, lambda batch: [tuple(u) for u in batch], 2,
                                   per_batch=4, ahead=4)
        try:
            got = list(check.reports())
        finally:
            check.close()
    finally:
        volume.close()
    assert got == expected
    calls = [line.split(" ", 1) for line in log.read_text().splitlines()]
    assert str(os.getpid()) not in {pid for pid, _ in calls}
    listings = Counter(part for _, part in calls)
    assert set(listings) == {repr(p) for p in parts}
    # The folders of the groups kept (all six by default; the first two, 8 units, within 12)
    # are listed once; the others again for the check (once a slice).
    assert [listings[repr(p)] == 1 for p in parts] == [k < once for k in range(len(parts))]
    assert not multiprocessing.active_children()


def test_a_listing_is_kept_in_the_narrowest_integers_it_fits() -> None:
    small = listed._compact([(0, 1, 2), (32_767, -5, 3)])
    wide = listed._compact([(0, 1, 2), (40_000, 0, 0)])
    huge = listed._compact([(2**40, 0, 0)])
    assert (small.dtype, wide.dtype, huge.dtype) == (np.int16, np.int32, np.int64)
    assert small.tolist() == [[0, 1, 2], [32_767, -5, 3]] and huge.tolist() == [[2**40, 0, 0]]
    assert listed._compact([]).shape == (0, 3)
