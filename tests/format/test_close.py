"""Closing a ``wkw.File`` closes its descriptor at once: no descriptor outlives ``close``, a
file replaced after close reads its new contents, and reads between many open/close rounds
(some sharing their decoding with the helper thread) equal the reference's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

wkw_ref = pytest.importorskip("wkw")
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")

from viewer.format import wkw  # noqa: E402
from viewer.format.wkw import boxread  # noqa: E402

BLOCK_LEN, FILE_LEN = 8, 4
SIDE = BLOCK_LEN * FILE_LEN


def _write_reference(root: Path, data: np.ndarray, block_type: int) -> None:
    header = wkw_ref.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN,
                            block_type=block_type)
    with wkw_ref.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), data)


def _fds_on(path: Path) -> int:
    """How many of this process's descriptors are open on ``path`` (other threads of the test
    process may open and close descriptors of their own meanwhile)."""
    target = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                count += 1
        except OSError:  # closed since the listing
            pass
    return count


def test_close_closes_the_descriptor(tmp_path: Path) -> None:
    data = np.random.default_rng(1).integers(0, 9, (SIDE, SIDE, SIDE), dtype=np.uint8)
    _write_reference(tmp_path, data, wkw_ref.Header.BLOCK_TYPE_LZ4HC)
    path = tmp_path / "z0" / "y0" / "x0.wkw"
    f = wkw.File.open(path)
    assert _fds_on(path) == 1
    assert np.array_equal(f.read((0, 0, 0), (SIDE, SIDE, SIDE))[0], data)
    f.close()
    assert _fds_on(path) == 0  # closed at once, not later
    with pytest.raises(ValueError):
        f.read((0, 0, 0), (1, 1, 1))


@pytest.mark.parametrize("block_type", [1, 2], ids=["raw", "lz4hc"])
def test_reads_across_rounds_of_open_and_close_equal_the_reference(
        tmp_path: Path, block_type: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round opens, reads a plane or a box (sharing it with the pool's threads),
    closes, and a file
    rewritten by the reference between rounds reads its new contents."""
    monkeypatch.setattr(boxread, "PARALLEL_BYTES", 0)  # every read shared with the pool
    monkeypatch.setattr(boxread, "PARALLEL_RAW_BYTES", 0)
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    rng = np.random.default_rng(2)
    root = tmp_path / "ds"
    boxes = [((0, 5, 0), (2 * SIDE, 1, 2 * SIDE)), ((7, 0, 0), (1, 2 * SIDE, 2 * SIDE)),
             ((3, 9, 30), (20, 17, 11)), ((0, 0, 13), (2 * SIDE, 2 * SIDE, 1))]
    for version in range(3):
        data = rng.integers(0, 255, (2 * SIDE, 2 * SIDE, 2 * SIDE), dtype=np.uint8)
        fresh = tmp_path / f"v{version}"
        _write_reference(fresh, data, block_type)
        for path in sorted(fresh.rglob("*.wkw")):  # replaced in place, as a writer does
            target = root / path.relative_to(fresh)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        for offset, shape in boxes:
            ds = wkw.Dataset.open(root)
            try:
                ours = ds.read(offset, shape)
            finally:
                ds.close()
            with wkw_ref.Dataset.open(str(root)) as ref:
                expected = ref.read(offset, shape)
            assert np.array_equal(ours, expected), (version, offset, shape)
            sl = tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))
            assert np.array_equal(ours[0], data[sl])


@pytest.mark.parametrize("block_type", [wkw_ref.Header.BLOCK_TYPE_RAW,
                                        wkw_ref.Header.BLOCK_TYPE_LZ4HC])
def test_will_need_is_only_a_hint(tmp_path: Path, block_type: int) -> None:
    """Asking for blocks' pages ahead (any indices, in any order, out of range too, on a
    closed file) never fails and never changes what is read."""
    data = np.random.default_rng(3).integers(0, 255, (SIDE, SIDE, SIDE), dtype=np.uint8)
    _write_reference(tmp_path, data, block_type)
    path = str(tmp_path / "z0" / "y0" / "x0.wkw")
    f = wkw.File.open(path)
    n = f.header.num_blocks
    f.will_need([n - 1, 0, 5, 4, 6, -3, n + 10])
    f.will_need(np.arange(n))
    f.will_need([])
    blocks = f.read_blocks(list(range(n)))
    ref = wkw_ref.Dataset.open(str(tmp_path))
    whole = ref.read((0, 0, 0), (SIDE, SIDE, SIDE))[0]
    ref.close()
    for index, block in enumerate(blocks):
        x, y, z = wkw.morton.decode(index)
        np.testing.assert_array_equal(
            block[0], whole[x * BLOCK_LEN:(x + 1) * BLOCK_LEN, y * BLOCK_LEN:(y + 1) * BLOCK_LEN,
                            z * BLOCK_LEN:(z + 1) * BLOCK_LEN])
    f.close()
    f.will_need([0, 1])  # closed: nothing happens
