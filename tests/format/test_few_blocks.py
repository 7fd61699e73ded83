"""``File.read_blocks`` of a few blocks takes a plain-int path: the same arrays and
the same errors as the vectorised path, compressed and raw, damaged and short."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from viewer.format import FormatError, wkw
from viewer.format.wkw import file as file_module

wkw_ref = pytest.importorskip("wkw")


@pytest.mark.parametrize("block_type", [1, 2], ids=["raw", "lz4"])
def test_few_blocks_equal_the_vectorised_path(tmp_path: Path, block_type: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    data = rng.integers(0, 60000, (2, 16, 16, 16)).astype(np.uint16)
    header = wkw_ref.Header(np.uint16, num_channels=2, block_len=8, file_len=2,
                            block_type=block_type)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), data)
    path = tmp_path / "z0" / "y0" / "x0.wkw"
    with wkw.File.open(path) as f:
        starts, ends = f.block_ranges()
    with open(path, "r+b") as fh:  # block 5 damaged (raw: the file cut inside block 6)
        if block_type == 1:
            fh.truncate(int(starts[6]) + 10)
        else:
            fh.seek(int(starts[5]))
            fh.write(b"\xff" * int(ends[5] - starts[5]))
    wanted = [[0], [3, 1], [7, 5, 2], [6, 4, 5, 0]]

    def results() -> list[list[object]]:
        out: list[list[object]] = []
        with wkw.File.open(path) as f:
            for idx in wanted:
                out.append([r if isinstance(r, FormatError) else np.array(r)
                            for r in f.read_blocks(idx)])
        return out

    few = results()
    monkeypatch.setattr(file_module, "FEW_BLOCKS", 0)
    many = results()
    for a_list, b_list in zip(few, many, strict=True):
        for a, b in zip(a_list, b_list, strict=True):
            if isinstance(b, FormatError):
                assert type(a) is type(b) and str(a) == str(b)
            else:
                assert isinstance(a, np.ndarray) and np.array_equal(a, b)
    assert any(isinstance(r, FormatError) for r in few[2])
    with wkw.File.open(path) as f, pytest.raises(IndexError):
        f.read_blocks([8])


@pytest.mark.parametrize("native", [True, False], ids=["kernel", "python"])
@pytest.mark.parametrize("bad", [8, -1])
def test_a_batch_with_an_index_out_of_range_raises(tmp_path: Path, native: bool,
                                                  bad: int) -> None:
    header = wkw_ref.Header(np.uint8, block_len=8, file_len=2, block_type=2)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), np.ones((1, 16, 16, 16), np.uint8))
    with wkw.File.open(tmp_path / "z0" / "y0" / "x0.wkw") as f, \
            pytest.raises(IndexError, match="out of range"):
        f.read_blocks([0, 1, 2, 3, 4, bad], native=native)
