"""Regression: a jump-table entry overwritten with 2^64 - 1 (the end of block i, and so the
start of block i + 1) was reported as block i "starting before the data", at the wrong table
offset for block i + 1, and its impossible sizes went into the file's size statistics."""

import json
import struct

import numpy as np
import pytest

from viewer.cli import main as cli_main
from viewer.format import JumpTableError, wkw

BLOCK = 5


@pytest.fixture
def damaged(tmp_path):
    header = wkw.Header(np.uint8, block_len=8, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4HC)
    ds = wkw.Dataset.create(str(tmp_path / "ds"), header)
    rng = np.random.default_rng(3)
    ds.write((0, 0, 0), rng.integers(0, 4, (16, 16, 16), dtype=np.uint8))
    path = ds.file_path(0, 0, 0)
    with open(path, "rb") as fh:
        raw = fh.read()
    entry = 16 + 8 * BLOCK  # the entry holding the end of block BLOCK
    sound_sizes = np.diff(np.frombuffer(raw[8:16 + 8 * 8], dtype="<u8").astype(np.int64))
    with open(path, "r+b") as fh:
        fh.seek(entry)
        fh.write(struct.pack("<Q", 2**64 - 1))
    return tmp_path / "ds", path, entry, np.delete(sound_sizes, [BLOCK, BLOCK + 1])


def test_jump_table_entry_past_eof_names_both_blocks_at_that_entry(damaged):
    _, path, entry, _ = damaged
    problems = [p for p in wkw.validate(path) if isinstance(p, JumpTableError)]
    by_block = {p.block: p for p in problems}
    assert set(by_block) == {BLOCK, BLOCK + 1}
    assert by_block[BLOCK].offset == entry and "ends at byte 18446744073709551615" in str(
        by_block[BLOCK])
    assert by_block[BLOCK + 1].offset == entry and "starts at byte 18446744073709551615" in str(
        by_block[BLOCK + 1])
    with wkw.File.open(path) as f:
        assert f.read_blocks([BLOCK - 1])[0] is not None  # its neighbour still reads
        with pytest.raises(JumpTableError):
            f.read_block(BLOCK)


def test_info_block_size_statistics_leave_out_damaged_ranges(damaged, capsys):
    root, _, _, sound_sizes = damaged
    assert cli_main(["info", str(root), "--json", "--quick"]) == 1
    stats = json.loads(capsys.readouterr().out)["files"][0]["block_sizes"]
    assert stats["min"] == int(sound_sizes.min()) and stats["max"] == int(sound_sizes.max())
    assert stats["total"] == int(sound_sizes.sum())
