"""Large LZ4 reads decoded block by block straight into the destination
(``viewer/format/wkw/directread.py``, issue 20): the same voxels as the reference and as the
staging path, for every dtype and channel count, aligned or cut along y and z, into a
sub-box of a larger array; a damaged block is named as the staging path names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.format import BlockDecodeError, wkw
from viewer.format.wkw import boxread, directread

wkw_ref = pytest.importorskip("wkw")

BLOCK_LEN, FILE_LEN = 8, 4
SIDE = BLOCK_LEN * FILE_LEN


@pytest.fixture(scope="module", params=[(2, np.uint8, 1), (2, np.uint16, 3),
                                        (3, np.float32, 2)], ids=["lz4-u8", "lz4-u16-c3",
                                                                  "lz4hc-f32-c2"])
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, np.ndarray]:
    block_type, dtype, channels = request.param
    root = tmp_path_factory.mktemp("direct")
    rng = np.random.default_rng(11)
    data = np.asfortranarray(rng.integers(0, 200, (channels, 2 * SIDE, SIDE, SIDE))
                             .astype(dtype))
    header = wkw_ref.Header(dtype, num_channels=channels, block_len=BLOCK_LEN,
                            file_len=FILE_LEN, block_type=block_type)
    with wkw_ref.Dataset.create(str(root), header) as ref:
        ref.write((0, 0, 0), data)
    return root, data


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every read of two blocks or more goes through the shared batches; counts the batches
    the direct path read."""
    monkeypatch.setattr(boxread, "DECODE_THREADS", 2)
    monkeypatch.setattr(boxread, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(boxread, "STAGING_BYTES", 1)  # one block layer per batch
    calls: list[int] = []
    real = directread.read_batch

    def spy(*args: Any) -> None:
        calls.append(1)
        real(*args)

    monkeypatch.setattr(directread, "read_batch", spy)
    return calls


BOXES = [((0, 0, 0), (2 * SIDE, SIDE, SIDE)),  # everything: two files
         ((8, 3, 5), (48, 20, 26)),  # whole blocks along x, cut along y and z
         ((0, 0, 7), (SIDE, SIDE, 1))]  # a plane (one layer)


@pytest.mark.parametrize("box", BOXES, ids=["all", "cut-yz", "plane"])
def test_direct_reads_match_the_reference_and_the_staging_path(
        written: tuple[Path, np.ndarray], shared: list[int], box: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root, data = written
    offset, shape = box
    with wkw.Dataset.open(root) as ours:
        got = ours.read(offset, shape)
        big = np.full((data.shape[0], shape[0] + 3, shape[1] + 5, shape[2] + 2), 9,
                      dtype=data.dtype, order="F")
        ours.read_into(big[:, 3:, 5:, 2:], offset)  # into a sub-box of a larger array
    sl = tuple(slice(o, o + s) for o, s in zip(offset, shape))
    assert np.array_equal(got, data[(slice(None), *sl)])
    assert np.array_equal(big[:, 3:, 5:, 2:], got)
    assert (big[:, :3] == 9).all() and (big[:, :, :5] == 9).all() and (big[..., :2] == 9).all()
    if shape[2] > 1:
        assert shared, "the direct path was not taken"
    with wkw_ref.Dataset.open(str(root)) as ref:
        assert np.array_equal(got, ref.read(offset, shape))
    monkeypatch.setattr(directread, "applicable", lambda *a: False)
    with wkw.Dataset.open(root) as ours:
        assert np.array_equal(ours.read(offset, shape), got)


def test_not_taken_when_the_box_cuts_blocks_along_x(written: tuple[Path, np.ndarray],
                                                   shared: list[int]) -> None:
    root, data = written
    with wkw.Dataset.open(root) as ours:
        got = ours.read((3, 0, 0), (40, SIDE, SIDE))
    assert np.array_equal(got, data[:, 3:43])
    assert not shared


def test_direct_read_names_the_lowest_damaged_block(written: tuple[Path, np.ndarray],
                                                    shared: list[int], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = written
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    path = copy / "z0" / "y0" / "x0.wkw"
    with wkw.File.open(path) as f:
        starts, ends = f.block_ranges()
    with open(path, "r+b") as fh:
        for block in (9,):
            fh.seek(int(starts[block]))
            fh.write(b"\xff" * int(ends[block] - starts[block]))
    errors = []
    for direct in (True, False):
        if not direct:
            monkeypatch.setattr(directread, "applicable", lambda *a: False)
        with wkw.Dataset.open(copy) as ours, pytest.raises(BlockDecodeError) as info:
            ours.read((0, 0, 0), (SIDE, SIDE, SIDE))
        errors.append(info.value)
    assert shared
    assert errors[0].block == errors[1].block and errors[0].offset == errors[1].offset
    assert str(errors[0]) == str(errors[1])
