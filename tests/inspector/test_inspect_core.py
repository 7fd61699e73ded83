"""viewer.core.inspect: header reports, block tables, file stats, scans, planes (no Qt)."""

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
from viewer.format import wkw
from viewer.format.errors import HeaderError
from viewer.format.wkw import lz4block


@pytest.mark.parametrize("which", ["known_dataset", "reference_dataset"])
def test_block_table_matches_bytes_of_file(which: str, request: pytest.FixtureRequest) -> None:
    root: Path = request.getfixturevalue(which)
    for path in sorted(root.glob("z*/y*/x*.wkw")):
        truth = parse_independently(path)
        with wkw.File.open(path) as f:
            table = inspect.block_table(f)
        assert table.sizes.tolist() == truth["sizes"]
        assert table.starts.tolist() == truth["starts"]
        assert table.ends.tolist() == truth["ends"]
        assert table.flags.tolist() == [0] * FILE_LEN ** 3
        assert table.problems == []
        # Morton order: x is bit 0, then y, then z.
        assert table.coords[1].tolist() == [1, 0, 0]
        assert table.coords[2].tolist() == [0, 1, 0]
        assert table.coords[4].tolist() == [0, 0, 1]
        assert table.coords[8].tolist() == [2, 0, 0]


def test_random_block_is_large_and_zero_block_is_small(known_dataset: Path) -> None:
    with wkw.File.open(known_dataset / "z0/y0/x0.wkw") as f:
        table = inspect.block_table(f)
    block_bytes = BLOCK_LEN ** 3
    assert table.sizes[1] >= block_bytes  # random bytes do not compress
    assert table.sizes[0] < block_bytes // 8
    assert table.ratio[1] < 1.01 and table.ratio[0] > 8


def test_header_report_fields_hex_and_geometry(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    rep = inspect.header_report(path, wkw.Dataset.open(str(known_dataset)).header)
    assert rep.raw == truth["raw16"]
    assert rep.hex == " ".join(f"{b:02x}" for b in truth["raw16"])  # type: ignore[union-attr]
    fields = {f.name: f.raw for f in rep.fields}
    assert fields == {"magic": b"WKW", "version": 1, "perDimLog2": truth["per_dim"],
                      "blockType": 3, "voxelType": 1, "voxelSize": 1,
                      "dataOffset": truth["data_offset"]}
    assert rep.expected_data_offset == rep.found_data_offset == 16 + 8 * FILE_LEN ** 3
    geometry = dict(rep.geometry)
    assert geometry["blocks per file"] == f"{FILE_LEN}^3 = {FILE_LEN ** 3}"
    assert geometry["block bytes"] == f"{BLOCK_LEN ** 3:,}"
    assert rep.differences == {}
    assert rep.error is None


def test_header_report_shows_differences_from_header_wkw(known_dataset: Path) -> None:
    # A file whose header says LZ4 while header.wkw says LZ4HC (both valid on their own).
    path = known_dataset / "z0/y0/x1.wkw"
    raw = bytearray(path.read_bytes())
    raw[5] = wkw.BLOCK_TYPE_LZ4
    path.write_bytes(bytes(raw))
    ds = wkw.Dataset.open(str(known_dataset))
    rep = inspect.header_report(path, ds.header)
    assert rep.differences == {"block_type": "LZ4HC vs LZ4"}
    assert inspect.DIFFERENCE_FIELDS["block_type"] == "blockType"
    stats = inspect.file_stats(str(path), (1, 0, 0), ds.header)
    assert any("differs from header.wkw" in str(p) for p in stats.problems)


def test_header_report_of_a_file_with_a_bad_magic(tmp_path: Path) -> None:
    path = tmp_path / "bad.wkw"
    path.write_bytes(b"XYZ\x01\x55\x03\x01\x01" + (16 + 8 * 32768).to_bytes(8, "little"))
    rep = inspect.header_report(path)
    assert rep.header is None
    assert isinstance(rep.error, HeaderError)
    assert rep.fields[0].raw == b"XYZ" and "not a WKW file" in rep.fields[0].meaning
    stats = inspect.file_stats(str(path))
    assert stats.problem_count == 1 and "magic" in str(stats.problems[0])


def test_damaged_jump_table_is_flagged_without_decoding(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    ends = truth["ends"]
    size = truth["file_size"]
    bound = lz4block.compress_bound(BLOCK_LEN ** 3)
    # Block 3 gets zero length (it ends where block 2 ends); block 63 ends past the file end.
    damage_jump_table(path, {3: ends[2], 63: size + 100})  # type: ignore[index]
    with wkw.File.open(path) as f:
        table = inspect.block_table(f)
    assert table.flags[3] & inspect.ZERO_LENGTH
    assert table.flags[63] & inspect.PAST_EOF
    # Block 4 now starts where block 2 ends (the table says block 3 ended there): its size grew.
    assert table.sizes[4] == ends[4] - ends[2]  # type: ignore[index]
    problems = {p.block for p in table.problems}
    assert {3, 63} <= problems
    big = [i for i in range(FILE_LEN ** 3) if table.sizes[i] > bound]
    assert all(table.flags[i] & inspect.ABOVE_BOUND for i in big)
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
    with wkw.File.open(path) as f:
        table = inspect.block_table(f)
    assert table.flags[10] & inspect.ABOVE_BOUND
    assert table.flags[11] & inspect.BAD_RANGE  # block 11 now ends before it starts


def test_truncated_file_is_a_problem_row_not_a_crash(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    path.write_bytes(path.read_bytes()[:100])  # inside the jump table
    stats = inspect.file_stats(str(path), (0, 0, 0))
    assert stats.block_count == 0 and stats.problem_count == 1
    assert "truncated" in str(stats.problems[0])


def test_file_stats_from_jump_table(known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    sizes = np.array(truth["sizes"])
    stats = inspect.file_stats(str(path), (0, 0, 0))
    assert (stats.size_min, stats.size_max) == (sizes.min(), sizes.max())
    assert stats.size_median == float(np.median(sizes))
    assert stats.ratio == pytest.approx(BLOCK_LEN ** 3 * len(sizes) / sizes.sum())
    assert stats.size_on_disk == truth["file_size"]
    assert stats.block_type == "LZ4HC" and stats.block_count == FILE_LEN ** 3
    assert stats.histogram is not None and int(stats.histogram.sum()) == FILE_LEN ** 3


@pytest.mark.parametrize("use_process", [True, False], ids=["child process", "thread"])
def test_file_scan_streams_every_file_and_can_be_cancelled(known_dataset: Path,
                                                           use_process: bool) -> None:
    ds = wkw.Dataset.open(str(known_dataset))
    batches: list[inspect.ScanBatch] = []
    done = threading.Event()

    def on_batch(batch: inspect.ScanBatch) -> None:
        batches.append(batch)
        if batch.finished:
            done.set()

    scan = inspect.FileScan(ds, on_batch, batch_rows=1, use_process=use_process)
    scan.PROCESS_THRESHOLD = 0  # this small dataset would be scanned on a thread
    scan.start()
    assert done.wait(60)
    rows = [r for b in batches for r in b.rows]
    assert sorted(r.position for r in rows) == [(0, 0, 0), (1, 0, 0)]  # type: ignore[type-var]
    assert batches[-1].done == batches[-1].total == 2
    expected = inspect.scan_all(ds)
    by_path = {r.path: r for r in rows}
    for e in expected:
        assert (by_path[e.path].size_min, by_path[e.path].size_max, by_path[e.path].ratio) == (
            e.size_min, e.size_max, e.ratio)

    cancelled: list[inspect.ScanBatch] = []
    scan = inspect.FileScan(ds, cancelled.append, use_process=use_process)
    scan.cancel()
    scan.start()
    assert scan.wait(30)
    assert cancelled == []


def test_plane_blocks_and_read_runs(known_dataset: Path) -> None:
    with wkw.File.open(known_dataset / "z0/y0/x0.wkw") as f:
        table = inspect.block_table(f)
    xy = inspect.plane_blocks(table, 2, 0)  # z = 0: bz == 0
    assert len(xy) == FILE_LEN ** 2
    assert all(table.coords[i, 2] == 0 for i in xy)
    yz = inspect.plane_blocks(table, 0, SIDE - 1)  # x = 31: bx == 3
    assert all(table.coords[i, 0] == FILE_LEN - 1 for i in yz)
    assert 1 <= inspect.read_runs(table, xy) <= len(xy)
    assert inspect.read_runs(table, np.arange(FILE_LEN ** 3)) == 1  # the whole file: one run
    assert inspect.read_runs(table, np.array([0, 63]), gap=0) == 2


def test_compression_plane_places_blocks(known_dataset: Path) -> None:
    ds = wkw.Dataset.open(str(known_dataset))
    positions = {(0, 0, 0), (1, 0, 0)}
    plane = inspect.compression_plane(ds, 2, 3, positions, inspect.SIZE)
    assert plane is not None
    assert plane.values.shape == (2 * FILE_LEN, FILE_LEN)
    assert plane.origin == (0, 0)
    truth = parse_independently(known_dataset / "z0/y0/x0.wkw")
    assert plane.values[1, 0] == truth["sizes"][1]  # type: ignore[index]
    assert plane.values[0, 0] == truth["sizes"][0]  # type: ignore[index]
    ratio = inspect.compression_plane(ds, 2, 3, positions, inspect.RATIO)
    assert ratio is not None and ratio.values[1, 0] < 1.01 < ratio.values[0, 0]
    # A plane that crosses no file.
    assert inspect.compression_plane(ds, 2, 5 * SIDE, positions) is None
    # Sparse: an absent file on the plane is NaN.
    sparse = inspect.compression_plane(ds, 2, 0, positions | {(3, 0, 0)})
    assert sparse is not None and np.isnan(sparse.values[3 * FILE_LEN:, :]).all()


def test_block_contents_only_on_request(known_dataset: Path) -> None:
    with wkw.File.open(known_dataset / "z0/y0/x1.wkw") as f:
        parts = list(inspect.scan_block_contents(f, [0, 1, 2]))
    (indices, flags, errors), = parts
    assert errors == []
    assert indices.tolist() == [0, 1, 2]
    assert all(fl & inspect.CONSTANT and not fl & inspect.ALL_ZERO for fl in flags.tolist())
    with wkw.File.open(known_dataset / "z0/y0/x0.wkw") as f:
        (_, flags, _), = list(inspect.scan_block_contents(f, [0, 1]))
        table = inspect.block_table(f)
    assert flags[0] & inspect.ALL_ZERO and not flags[1] & inspect.CONSTANT
    table.apply_content_flags(np.array([0, 1]), flags)
    assert inspect.flag_names(int(table.flags[0])) == ["constant", "all zero"]


def test_block_at_and_center_round_trip() -> None:
    h = wkw.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN)
    fpos, index = inspect.block_at(h, (SIDE + 9, 2, 17))
    assert fpos == (1, 0, 0) and index == int(wkw.morton.encode(1, 0, 2))
    center = inspect.block_center(h, fpos, index)
    assert inspect.block_at(h, center) == (fpos, index)


def test_file_stats_do_not_decode_blocks_but_decoding_on_request_finds_damage(
        known_dataset: Path) -> None:
    path = known_dataset / "z0/y0/x0.wkw"
    truth = parse_independently(path)
    start = truth["starts"][2]  # type: ignore[index]
    raw = bytearray(path.read_bytes())
    raw[start:start + 4] = b"\xff\xff\xff\xff"  # block 2's LZ4 payload no longer decodes
    path.write_bytes(bytes(raw))
    stats = inspect.file_stats(str(path), (0, 0, 0))
    assert stats.problems == ()  # the jump table is sound; nothing was decoded
    with wkw.File.open(path) as f:
        (_, flags, errors), = list(inspect.scan_block_contents(f, [1, 2]))
    assert not flags[0] & inspect.DECODE_FAILED
    assert flags[1] & inspect.DECODE_FAILED
    assert [e.block for e in errors] == [2]
