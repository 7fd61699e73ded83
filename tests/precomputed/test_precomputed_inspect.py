"""The inspector's view of precomputed, through the format interface alone: per chunk of a
sharded scale its shard file, byte range, stored and decoded bytes and ratio; the Header tab's
shard index (a field per minishard: its byte range) and minishard index (chunk id, grid
position, byte range); the Files scan and the Map tab's sizes, each checked against the shard
files parsed by hand in the test (``hand_parse_shard``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import precomputed_writers as w

from viewer.core.inspect.chunks import unit_table
from viewer.core.inspect.header import header_report
from viewer.core.inspect.plane import compression_plane
from viewer.core.inspect.scan import scan_all
from viewer.format import open_volume


def hand_chunks(root: Path, minishard_bits: int, gzip_index: bool, grid: tuple[int, int, int]
                ) -> dict[tuple[int, int, int], tuple[Path, int, int, int, int]]:
    """Every stored chunk: grid position -> (shard file, chunk id, minishard, offset,
    size)."""
    out = {}
    for shard in sorted((root / "4_4_40").glob("*.shard")):
        _, chunks = w.hand_parse_shard(shard, minishard_bits, gzip_index)
        for chunk_id, (m, off, size) in chunks.items():
            out[w.morton_position(chunk_id, grid)] = (shard, chunk_id, m, off, size)
    return out


def test_chunk_rows_and_header_match_the_shard_files(pc: dict[str, Any]) -> None:
    root = pc["sharded_murmur"][0]
    v = open_volume(root)
    grid = v.scale.grid_shape
    expected = hand_chunks(root, 2, True, grid)
    assert len(expected) == 27
    for pos, (shard, chunk_id, m, off, size) in expected.items():
        unit = v.open_unit(pos)
        assert unit is not None and unit.path == str(shard)
        table = unit_table(v, pos, unit)
        assert table.starts.tolist() == [off] and table.sizes.tolist() == [size]
        assert table.flags.tolist() == [0]
        row = table.describe_chunk(0)
        assert row["chunk_id"] == chunk_id and row["minishard"] == m
        assert row["grid"] == list(pos) and row["stored_bytes"] == size
        box = v.chunk_box(pos)
        assert row["decoded_bytes"] == int(np.prod(box)) * 8
        assert row["cseg_blocks"] == int(np.prod([-(-b // k) for b, k in
                                                  zip(box, (8, 8, 4), strict=True)]))
        desc = table.description.fields
        index, chunks = w.hand_parse_shard(shard, 2, True)
        assert [(r["start"], r["end"]) for r in desc["shard_index"]] == index
        mine = sorted((c, o, s) for c, (mm, o, s) in chunks.items() if mm == m)
        assert sorted((r["chunk_id"], r["offset"], r["size"])
                      for r in desc["minishard_index"]) == mine
        assert all(r["grid"] == list(w.morton_position(r["chunk_id"], grid))
                   for r in desc["minishard_index"])
        report = header_report(v, unit.path, table)
        assert not report.differences
        fields = {f.name: f for f in report.fields}
        for k, (a, b) in enumerate(index):
            f = fields[f"minishard {k}"]
            assert f.first_byte == 16 * k and f.length == 16
            assert f.raw == f"{a - 64}, {b - 64}"
        assert report.hex == shard.read_bytes()[:64].hex(" ")
        derived = dict(report.geometry)
        assert derived[f"chunk {chunk_id} at {'/'.join(map(str, pos))}"].startswith(
            f"bytes [{off}, {off + size}), {size} B")


def test_files_scan_and_map_sizes(pc: dict[str, Any]) -> None:
    root = pc["sharded_identity"][0]
    v = open_volume(root)
    g0 = [o // c for o, c in zip(v.origin, v.chunk_shape, strict=True)]
    expected = {(p[0] + g0[0], p[1] + g0[1], p[2] + g0[2]): e
                for p, e in hand_chunks(root, 2, False, v.scale.grid_shape).items()}
    rows = scan_all(v)
    assert {r.position for r in rows} == set(expected)
    for r in rows:
        assert r.position is not None
        shard, _, _, _, size = expected[r.position]
        assert r.path == str(shard) and r.size_max == size and not r.problems
    z = v.origin[2] + 3  # the XY plane through the first z layer of chunks
    plane = compression_plane(v, 2, z, list(v.iter_units()))
    assert plane is not None
    for (x, y, zc), (_, _, _, _, size) in expected.items():
        if zc == z // v.chunk_shape[2]:
            u = x * v.chunk_shape[0] - plane.origin[0]
            vv = y * v.chunk_shape[1] - plane.origin[1]
            assert plane.values[u // v.chunk_shape[0], vv // v.chunk_shape[1]] == size
