"""viewer.core.inspect on real WKW files, through the volume interface only: header reports,
unit tables, unit stats, scans, planes (no Qt).  The expected values come from the files'
bytes, parsed here without the project's library."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from inspector_data import (
    BLOCK_LEN,
    FILE_LEN,
    SIDE,
    damage_jump_table,
    parse_independently,
)

from viewer.core import inspect
from viewer.format import HeaderError, open_volume, wkw
from viewer.format.wkw import lz4block


def _table(root: Path, unit: tuple[int, int, int] = (0, 0, 0)) -> inspect.UnitTable:
    table, error = inspect.open_table(open_volume(root), unit)
    assert error is None and table is not None
    return table


@pytest.mark.parametrize("which", ["known_dataset", "reference_dataset"])
def test_unit_table_matches_bytes_of_file(which: str, request: pytest.FixtureRequest) -> None:
    root: Path = request.getfixturevalue(which)
    volume = open_volume(root)
    for path in sorted(root.glob("z*/y*/x*.wkw")):
        truth = parse_independently(path)
        x = int(path.stem[1:])
        table, error = inspect.open_table(volume, (x, 0, 0))
        assert error is None and table is not None and table.path == str(path)
        assert table.sizes.tolist() == truth["sizes"]
        assert table.starts.tolist() == truth["starts"]
        assert table.ends.tolist() == truth["ends"]
        assert table.flags.tolist() == [0] * FILE_LEN ** 3
        assert table.problems == []
        # The unit's chunk order (WKW: Morton, x is bit 0, then y, then z).
        assert table.coords[1].tolist() == [1, 0, 0]
        assert table.coords[2].tolist() == [0, 1, 0]
        assert table.coords[4].tolist() == [0, 0, 1]
        assert table.coords[8].tolist() == [2, 0, 0]


def test_random_block_is_large_and_zero_block_is_small(known_dataset: Path) -> None:
    table = _table(known_dataset)
    block_bytes = BLOCK_LEN ** 3
    assert table.sizes[1] >= block_bytes  # random bytes do not compress
    assert table.sizes[0] < block_bytes // 8
    assert table.ratio[1] < 1.01 and table.ratio[0] > 8


def test_header_report_fields_hex_and_geometry(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    volume = open_volume(known_dataset)
    table = _table(known_dataset)
    rep = inspect.header_report(volume, str(path), table)
    assert rep.raw == truth["raw16"]
    assert rep.hex == " ".join(f"{b:02x}" for b in truth["raw16"])  # type: ignore[union-attr]
    fields = {f.name: f.raw for f in rep.fields}
    assert fields == {"magic": "WKW", "version": 1, "perDimLog2": truth["per_dim"],
                      "blockType": 3, "voxelType": 1, "voxelSize": 1,
                      "dataOffset": truth["data_offset"]}
    assert {f.name: f.bytes_text for f in rep.fields}["dataOffset"] == "8..15"
    geometry = dict(rep.geometry)
    assert geometry["chunk shape"] == f"{BLOCK_LEN} x {BLOCK_LEN} x {BLOCK_LEN} voxels"
    assert geometry["chunks per unit"] == f"{FILE_LEN} x {FILE_LEN} x {FILE_LEN} = {FILE_LEN ** 3}"
    assert geometry["blocks per file"] == f"{FILE_LEN}^3 = {FILE_LEN ** 3}"
    assert geometry["block bytes"] == f"{BLOCK_LEN ** 3:,}"
    offset = f"{16 + 8 * FILE_LEN ** 3:,}"
    assert geometry["expected data offset"] == geometry["found data offset"] == offset
    assert rep.differences == {}
    assert rep.error is None


def test_header_report_shows_differences_from_the_volume_header(known_dataset: Path) -> None:
    # A file whose header says LZ4 while header.wkw says LZ4HC (both valid on their own).
    path = known_dataset / "z0/y0/x1.wkw"
    raw = bytearray(path.read_bytes())
    raw[5] = wkw.BLOCK_TYPE_LZ4
    path.write_bytes(bytes(raw))
    volume = open_volume(known_dataset)
    table, _ = inspect.open_table(volume, (1, 0, 0))
    assert table is not None
    rep = inspect.header_report(volume, str(path), table)
    assert rep.differences == {"block_type": "3 vs 2", "block_type_name": "LZ4HC vs LZ4"}
    assert rep.marked_fields == {"blockType"}
    stats = inspect.unit_stats(volume, (1, 0, 0))
    assert any("differs from the volume's" in str(p) and "LZ4HC vs LZ4" in str(p)
               for p in stats.problems)


def test_header_report_of_a_file_with_a_bad_magic(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    raw = bytearray(path.read_bytes())
    raw[0:3] = b"XYZ"
    path.write_bytes(bytes(raw))
    volume = open_volume(known_dataset)
    table, error = inspect.open_table(volume, (0, 0, 0))
    assert table is None and isinstance(error, HeaderError)
    rep = inspect.header_report(volume, str(path), None, error)
    assert rep.error is error and rep.raw == bytes(raw[:16])  # the first bytes as found
    stats = inspect.unit_stats(volume, (0, 0, 0))
    assert stats.problem_count == 1 and "magic" in str(stats.problems[0])


def test_damaged_jump_table_is_flagged_without_decoding(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    ends = truth["ends"]
    size = truth["file_size"]
    bound = lz4block.compress_bound(BLOCK_LEN ** 3)
    # Block 3 gets zero length (it ends where block 2 ends); block 63 ends past the file end.
    damage_jump_table(path, {3: ends[2], 63: size + 100})  # type: ignore[index]
    table = _table(known_dataset)
    assert table.flags[3] & inspect.ZERO_LENGTH
    assert table.flags[63] & inspect.PAST_EOF
    # Block 4 now starts where block 2 ends (the table says block 3 ended there): its size grew.
    assert table.sizes[4] == ends[4] - ends[2]  # type: ignore[index]
    problems = {p.block for p in table.problems}
    assert {3, 63} <= problems
    big = [i for i in range(FILE_LEN ** 3) if table.sizes[i] > bound]
    assert all(table.flags[i] & inspect.PROBLEM_FLAGS for i in big)
    stats = inspect.stats_of_table(table, (0, 0, 0))
    assert stats.problem_count >= 2


def test_above_lz4_bound_is_flagged(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    ends = truth["ends"]
    bound = lz4block.compress_bound(BLOCK_LEN ** 3)
    # Make block 10 span blocks 10.. until it exceeds the bound (still inside the file).
    target = next(k for k in range(11, 64) if ends[k] - ends[9] > bound)  # type: ignore[index]
    damage_jump_table(path, {10: ends[target]})  # type: ignore[index]
    table = _table(known_dataset)
    # The format's own check names it (the table alone cannot know LZ4's bound).
    assert table.flags[10] & inspect.DAMAGED
    assert any(p.block == 10 and "more than LZ4 can encode" in str(p) for p in table.problems)
    assert table.flags[11] & inspect.BAD_RANGE  # block 11 now ends before it starts


def test_truncated_file_is_a_problem_row_not_a_crash(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    path.write_bytes(path.read_bytes()[:100])  # inside the jump table
    stats = inspect.unit_stats(open_volume(known_dataset), (0, 0, 0))
    assert stats.chunk_count == 0 and stats.problem_count == 1
    assert "truncated" in str(stats.problems[0])


def test_unit_stats_from_jump_table(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    sizes = np.array(truth["sizes"])
    stats = inspect.unit_stats(open_volume(known_dataset), (0, 0, 0))
    assert (stats.size_min, stats.size_max) == (sizes.min(), sizes.max())
    assert stats.size_median == float(np.median(sizes))
    assert stats.ratio == pytest.approx(BLOCK_LEN ** 3 * len(sizes) / sizes.sum())
    assert stats.size_on_disk == truth["file_size"]
    assert stats.compression == "LZ4HC" and stats.chunk_count == FILE_LEN ** 3
    assert stats.histogram is not None and int(stats.histogram.sum()) == FILE_LEN ** 3


@pytest.mark.parametrize("use_process", [True, False], ids=["child process", "thread"])
def test_unit_scan_streams_every_unit_and_can_be_cancelled(known_dataset: Path,
                                                           use_process: bool) -> None:
    volume = open_volume(known_dataset)
    batches: list[inspect.ScanBatch] = []
    done = threading.Event()

    def on_batch(batch: inspect.ScanBatch) -> None:
        batches.append(batch)
        if batch.finished:
            done.set()

    scan = inspect.UnitScan(volume, on_batch, batch_rows=1, use_process=use_process,
                            reopen=inspect.Reopen(str(known_dataset)))
    scan.PROCESS_THRESHOLD = 0  # this small dataset would be scanned on a thread
    scan.start()
    assert done.wait(60)
    rows = [r for b in batches for r in b.rows]
    assert sorted(r.position for r in rows) == [(0, 0, 0), (1, 0, 0)]  # type: ignore[type-var]
    assert batches[-1].done == batches[-1].total == 2
    expected = inspect.scan_all(volume)
    by_path = {r.path: r for r in rows}
    for e in expected:
        assert (by_path[e.path].size_min, by_path[e.path].size_max, by_path[e.path].ratio) == (
            e.size_min, e.size_max, e.ratio)

    cancelled: list[inspect.ScanBatch] = []
    scan = inspect.UnitScan(volume, cancelled.append, use_process=use_process)
    scan.cancel()
    scan.start()
    assert scan.wait(30)
    assert cancelled == []


def test_child_process_that_opens_another_volume_falls_back_to_a_thread(
        known_dataset: Path, tmp_path: Path) -> None:
    """The child checks it opened the parent's volume; when not, the parent scans itself."""
    volume = open_volume(known_dataset)
    batches: list[inspect.ScanBatch] = []
    done = threading.Event()

    def on_batch(batch: inspect.ScanBatch) -> None:
        batches.append(batch)
        if batch.finished:
            done.set()

    scan = inspect.UnitScan(volume, on_batch, use_process=True,
                            reopen=inspect.Reopen(str(tmp_path / "nothing")))
    scan.PROCESS_THRESHOLD = 0
    scan.start()
    assert done.wait(60)
    rows = [r for b in batches for r in b.rows]
    assert sorted(r.position for r in rows) == [(0, 0, 0), (1, 0, 0)]  # type: ignore[type-var]


def test_plane_chunks_and_read_runs(known_dataset: Path) -> None:
    table = _table(known_dataset)
    xy = inspect.plane_chunks(table, 2, 0)  # z = 0: cz == 0
    assert len(xy) == FILE_LEN ** 2
    assert all(table.coords[i, 2] == 0 for i in xy)
    yz = inspect.plane_chunks(table, 0, SIDE - 1)  # x = 31: cx == 3
    assert all(table.coords[i, 0] == FILE_LEN - 1 for i in yz)
    assert 1 <= inspect.read_runs(table, xy) <= len(xy)
    assert inspect.read_runs(table, np.arange(FILE_LEN ** 3)) == 1  # the whole file: one run
    assert inspect.read_runs(table, np.array([0, 63]), gap=0) == 2


def test_compression_plane_places_chunks(known_dataset: Path) -> None:
    volume = open_volume(known_dataset)
    positions = {(0, 0, 0), (1, 0, 0)}
    plane = inspect.compression_plane(volume, 2, 3, positions, inspect.SIZE)
    assert plane is not None
    assert plane.values.shape == (2 * FILE_LEN, FILE_LEN)
    assert plane.origin == (0, 0) and plane.chunk_size == (BLOCK_LEN, BLOCK_LEN)
    truth = parse_independently(known_dataset / "z0/y0/x0.wkw")
    assert plane.values[1, 0] == truth["sizes"][1]  # type: ignore[index]
    assert plane.values[0, 0] == truth["sizes"][0]  # type: ignore[index]
    ratio = inspect.compression_plane(volume, 2, 3, positions, inspect.RATIO)
    assert ratio is not None and ratio.values[1, 0] < 1.01 < ratio.values[0, 0]
    # A plane that crosses no unit.
    assert inspect.compression_plane(volume, 2, 5 * SIDE, positions) is None
    # Sparse: an absent unit on the plane is NaN.
    sparse = inspect.compression_plane(volume, 2, 0, positions | {(3, 0, 0)})
    assert sparse is not None and np.isnan(sparse.values[3 * FILE_LEN:, :]).all()


def test_chunk_contents_only_on_request(known_dataset: Path) -> None:
    volume = open_volume(known_dataset)
    unit = volume.open_unit((1, 0, 0))
    assert unit is not None
    (indices, flags, errors), = list(inspect.scan_chunk_contents(unit, [0, 1, 2]))
    assert errors == []
    assert indices.tolist() == [0, 1, 2]
    assert all(fl & inspect.CONSTANT and not fl & inspect.ALL_ZERO for fl in flags.tolist())
    unit = volume.open_unit((0, 0, 0))
    assert unit is not None
    (_, flags, _), = list(inspect.scan_chunk_contents(unit, [0, 1]))
    table = _table(known_dataset)
    assert flags[0] & inspect.ALL_ZERO and not flags[1] & inspect.CONSTANT
    table.apply_content_flags(np.array([0, 1]), flags)
    assert inspect.flag_names(int(table.flags[0])) == ["constant", "all zero"]


def test_chunk_at_and_center_round_trip(known_dataset: Path) -> None:
    volume = open_volume(known_dataset)
    upos, index = inspect.chunk_at(volume, (SIDE + 9, 2, 17))
    assert upos == (1, 0, 0) and index == int(wkw.morton.encode(1, 0, 2))
    center = inspect.chunk_center(volume, upos, index)
    assert inspect.chunk_at(volume, center) == (upos, index)
    assert inspect.unit_center(volume, upos) == (SIDE + SIDE // 2, SIDE // 2, SIDE // 2)


def test_unit_stats_do_not_decode_chunks_but_decoding_on_request_finds_damage(
        known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    start = truth["starts"][2]  # type: ignore[index]
    raw = bytearray(path.read_bytes())
    raw[start:start + 4] = b"\xff\xff\xff\xff"  # block 2's LZ4 payload no longer decodes
    path.write_bytes(bytes(raw))
    volume = open_volume(known_dataset)
    stats = inspect.unit_stats(volume, (0, 0, 0))
    assert stats.problems == ()  # the jump table is sound; nothing was decoded
    unit = volume.open_unit((0, 0, 0))
    assert unit is not None
    (_, flags, errors), = list(inspect.scan_chunk_contents(unit, [1, 2]))
    assert not flags[0] & inspect.DECODE_FAILED
    assert flags[1] & inspect.DECODE_FAILED
    assert [e.block for e in errors] == [2]
