"""Conformance with the reference binding (PyPI ``wkw``), voxel for voxel, in both directions.

Every combination of block type (raw, LZ4, LZ4HC) x voxel type (1-10) x channels (1, 3) runs
once per direction, with one of several block_len/file_len pairs (cycled, so each pair meets
every block type).  Each case uses a 2 x 2 x 1 file grid with one file missing (sparse), so
boxes cross files and cover absent ones; reads cover the whole dataset and past its end,
unaligned boxes and planes in the three orientations.  A few extra cases cover the default
32/32 geometry with small boxes, partial writes into compressed files (which the reference
refuses) and ``Dataset.compress``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

wkw_ref = pytest.importorskip("wkw")

from viewer.format import wkw  # noqa: E402
from viewer.format.wkw.header import VOXEL_TYPES  # noqa: E402

BLOCK_TYPES = {1: "raw", 2: "lz4", 3: "lz4hc"}
GEOMETRIES = [(8, 4), (16, 2), (4, 8)]  # (block_len, file_len): 32 voxels per file side
#: The file grid written in every case: (1, 1, 0) stays absent.
PRESENT_FILES = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
EXTENT = (64, 64, 32)


def _cases() -> Iterator[Any]:
    n = 0
    for bt in BLOCK_TYPES:
        for vt in range(1, 11):
            for ch in (1, 3):
                bl, fl = GEOMETRIES[n % len(GEOMETRIES)]
                n += 1
                name = f"{BLOCK_TYPES[bt]}-{VOXEL_TYPES[vt].name}-c{ch}-b{bl}f{fl}"
                yield pytest.param(bt, vt, ch, bl, fl, id=name)


CASES = list(_cases())


def _data(dtype: np.dtype[Any], shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Low-entropy data (compresses, like real volumes) with the type's extremes sprinkled in,
    so a sign, width or byte-order mistake cannot hide."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 6, size=shape)
    if dtype.kind == "f":
        arr = (base * 0.75 - 1.5).astype(dtype)
        extremes = [np.finfo(dtype).max, np.finfo(dtype).tiny, -np.inf, 1e-30]
    else:
        arr = base.astype(dtype)
        if dtype.kind == "i":
            arr -= 2
        extremes = [np.iinfo(dtype).max, np.iinfo(dtype).min]
    flat = arr.reshape(-1)
    spots = rng.choice(flat.size, size=min(64, flat.size), replace=False)
    flat[spots] = np.resize(np.asarray(extremes, dtype=dtype), spots.size)
    return np.asfortranarray(arr)


def _ref_header(vt: int, ch: int, bl: int, fl: int, bt: int) -> Any:
    return wkw_ref.Header(VOXEL_TYPES[vt].type, num_channels=ch, block_len=bl, file_len=fl,
                          block_type=bt)


def _boxes(side: int) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """Whole dataset and past it, unaligned boxes inside and across files, planes XY/XZ/YZ."""
    return [
        ((0, 0, 0), (EXTENT[0] + 5, EXTENT[1], EXTENT[2] + 3)),
        ((3, 5, 7), (side + 1, side - 2, 9)),  # crosses the x file border, unaligned
        ((side - 1, side - 1, 1), (2, 2, 2)),  # the corner of four files (one absent)
        ((0, 0, 11), (EXTENT[0], EXTENT[1], 1)),  # XY plane
        ((0, side + 3, 0), (EXTENT[0], 1, EXTENT[2])),  # XZ plane in the second file row
        ((side - 2, 0, 0), (1, EXTENT[1], EXTENT[2])),  # YZ plane
        ((side + 4, side + 4, 4), (9, 9, 9)),  # inside the absent file: zeros
    ]


def _model_read(model: np.ndarray, offset: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros((model.shape[0], *shape), dtype=model.dtype)
    hi = [min(o + s, m) for o, s, m in zip(offset, shape, model.shape[1:], strict=True)]
    part = model[:, offset[0]:hi[0], offset[1]:hi[1], offset[2]:hi[2]]
    out[:, :part.shape[1], :part.shape[2], :part.shape[3]] = part
    return out


def _assert_same(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.dtype == expected.dtype, what
    assert actual.shape == expected.shape, what
    # Compare bytes: NaN-safe and exact for floats.
    assert np.array_equal(np.ascontiguousarray(actual).view(np.uint8),
                          np.ascontiguousarray(expected).view(np.uint8)), what


def _check_all_reads(ours: wkw.Dataset, ref: Any, model: np.ndarray, side: int) -> None:
    for offset, shape in _boxes(side):
        got = ours.read(offset, shape)
        assert got.flags.f_contiguous
        expected = _model_read(model, offset, shape)
        _assert_same(got, expected, f"ours at {offset} {shape}")
        _assert_same(ref.read(offset, shape), expected, f"reference at {offset} {shape}")


def _case_args(case: Any) -> tuple[int, int, int, int, int]:
    bt, vt, ch, bl, fl = case.values
    return bt, vt, ch, bl, fl


# Each direction writes every case's dataset in a module fixture, all of them before any is
# read: a file written less than the racy window ago is waited for by every read
# (``viewer.format.handles``), so a case that wrote and then read its files paid that wait,
# where a case whose files were written a moment before does not.  A write that fails is kept
# and raised by its own case's test.
@pytest.fixture(scope="module")
def reference_written(tmp_path_factory: pytest.TempPathFactory
                      ) -> dict[str, tuple[Path, np.ndarray] | Exception]:
    """Per case id: the folder the reference wrote the case's sparse 2 x 2 x 1 file grid into
    and the model of what it holds."""
    out: dict[str, tuple[Path, np.ndarray] | Exception] = {}
    for case in CASES:
        path = tmp_path_factory.mktemp("ref-wrote")
        try:
            out[case.id] = (path, _reference_write(path, *_case_args(case)))
        except Exception as exc:  # noqa: BLE001 - raised by the case's own test
            out[case.id] = exc
    return out


def _reference_write(path: Path, bt: int, vt: int, ch: int, bl: int, fl: int) -> np.ndarray:
    side = bl * fl
    dtype = VOXEL_TYPES[vt]
    model = np.zeros((ch, *EXTENT), dtype=dtype, order="F")
    with wkw_ref.Dataset.create(str(path), _ref_header(vt, ch, bl, fl, bt)) as ref:
        for n, (fx, fy, fz) in enumerate(PRESENT_FILES):
            lo = (fx * side, fy * side, fz * side)
            if bt == 1 and n == 0:
                # Raw: an unaligned box, leaving the rest of the file zero.
                lo, shape = (lo[0] + 3, lo[1] + 1, lo[2] + 2), (side - 5, side - 2, side - 4)
            else:
                shape = (side, side, side)  # the reference writes compressed files only whole
            data = _data(dtype, (ch, *shape), seed=vt * 100 + n)
            ref.write(lo, data if ch > 1 else data[0])
            model[:, lo[0]:lo[0] + shape[0], lo[1]:lo[1] + shape[1],
                  lo[2]:lo[2] + shape[2]] = data
    return model


@pytest.mark.parametrize(("bt", "vt", "ch", "bl", "fl"), CASES)
def test_reference_writes_ours_reads(reference_written: dict[str, Any],
                                     request: pytest.FixtureRequest, bt: int, vt: int, ch: int,
                                     bl: int, fl: int) -> None:
    side = bl * fl
    dtype = VOXEL_TYPES[vt]
    written = reference_written[request.node.callspec.id]
    if isinstance(written, Exception):
        raise written
    path, model = written
    ref = wkw_ref.Dataset.open(str(path))
    try:
        with wkw.Dataset.open(path) as ours:
            assert ours.header == wkw.Header(dtype.type, ch, block_len=bl, file_len=fl,
                                             block_type=bt)
            _check_all_reads(ours, ref, model, side)
            # Every file read by itself, and a block read through the File API.
            file = ours.file_path(1, 0, 0)
            with wkw.File.open(file) as f:
                assert f.header.block_type == bt
                arr = f.read((0, 0, 0), (side, side, side))
                _assert_same(arr, model[:, side:2 * side, :side, :side], "File.read")
                block = f.read_block(f.header.num_blocks - 1)
                lo_b = side - bl
                _assert_same(block, model[:, side + lo_b:, lo_b:side, lo_b:side],
                             "File.read_block")
                sizes = f.block_sizes()
                assert sizes.min() > 0
                assert int(f.header.data_offset + sizes.sum()) == os.path.getsize(file)
            with wkw.Dataset.open(file) as single:  # a lone .wkw file opens as a dataset
                _assert_same(single.read((0, 0, 0), (side, side, side)),
                             model[:, side:2 * side, :side, :side], "single file")
    finally:
        ref.close()


def _our_writes(side: int) -> list[tuple[tuple[int, int, int], tuple[int, int, int]]]:
    """An unaligned box across two files, an overlapping partial write into what is then an
    existing (compressed) file, and a box in a third file; the fourth is never touched."""
    return [((2, 1, 3), (2 * side - 5, side - 3, side - 6)), ((side - 3, 2, 1), (7, 5, 30)),
            ((4, side + 2, 0), (20, 10, side))]


@pytest.fixture(scope="module")
def ours_written(tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[dict[str, tuple[Path, wkw.Dataset, np.ndarray] | Exception]]:
    """Per case id: the folder our writer wrote the case into, the dataset that wrote it
    (still open: its reads follow its writes) and the model.  The three writes go round the
    cases in turn (every case's first write, then every second one, ...), so that the partial
    write into an existing file finds that file written a while before."""
    out: dict[str, tuple[Path, wkw.Dataset, np.ndarray] | Exception] = {}
    for case in CASES:
        bt, vt, ch, bl, fl = _case_args(case)
        path = tmp_path_factory.mktemp("ours-wrote")
        header = wkw.Header(VOXEL_TYPES[vt].type, num_channels=ch, block_len=bl, file_len=fl,
                            block_type=bt)
        try:
            ours = wkw.Dataset.create(path, header)
        except Exception as exc:  # noqa: BLE001 - raised by the case's own test
            out[case.id] = exc
            continue
        out[case.id] = (path, ours, np.zeros((ch, *EXTENT), dtype=VOXEL_TYPES[vt], order="F"))
    for n in range(len(_our_writes(1))):
        for case in CASES:
            bt, vt, ch, bl, fl = _case_args(case)
            entry = out[case.id]
            if isinstance(entry, Exception):
                continue
            _, ours, model = entry
            lo, shape = _our_writes(bl * fl)[n]
            data = _data(VOXEL_TYPES[vt], (ch, *shape), seed=vt * 7 + n)
            try:
                ours.write(lo, data if ch > 1 else np.asfortranarray(data[0]))
            except Exception as exc:  # noqa: BLE001 - raised by the case's own test
                ours.close()
                out[case.id] = exc
                continue
            model[:, lo[0]:lo[0] + shape[0], lo[1]:lo[1] + shape[1],
                  lo[2]:lo[2] + shape[2]] = data
    yield out
    for entry in out.values():
        if not isinstance(entry, Exception):
            entry[1].close()


@pytest.mark.parametrize(("bt", "vt", "ch", "bl", "fl"), CASES)
def test_ours_writes_reference_reads(ours_written: dict[str, Any], tmp_path: Path,
                                     request: pytest.FixtureRequest, bt: int, vt: int, ch: int,
                                     bl: int, fl: int) -> None:
    side = bl * fl
    written = ours_written[request.node.callspec.id]
    if isinstance(written, Exception):
        raise written
    path, ours, model = written
    assert not os.path.exists(ours.file_path(1, 1, 0))
    ref_header = _ref_header(vt, ch, bl, fl, bt)
    with open(path / "header.wkw", "rb") as fh:
        ours_header_bytes = fh.read()
    ref_dir = tmp_path / "ref"
    wkw_ref.Dataset.create(str(ref_dir), ref_header).close()
    with open(ref_dir / "header.wkw", "rb") as fh:
        assert ours_header_bytes == fh.read()  # byte-identical header.wkw
    ref = wkw_ref.Dataset.open(str(path))
    try:
        _check_all_reads(ours, ref, model, side)
    finally:
        ref.close()
        ours.close()


def test_default_geometry_raw_reference_writes_ours_reads(tmp_path: Path) -> None:
    """block_len 32, file_len 32 (1024-voxel files, sparse on disk), a small box across the
    corner of eight files."""
    header = wkw_ref.Header(np.uint16, num_channels=1)
    data = _data(np.dtype("<u2"), (1, 20, 24, 28), seed=3)
    lo = (1014, 1012, 1010)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write(lo, data[0])
        expected = ref.read((1010, 1010, 1008), (30, 30, 34))
    with wkw.Dataset.open(tmp_path) as ours:
        got = ours.read((1010, 1010, 1008), (30, 30, 34))
    _assert_same(got, expected, "default geometry")
    assert np.array_equal(got[:, 4:24, 2:26, 2:30], data)


@pytest.mark.parametrize("bt", [2, 3])
def test_default_geometry_compressed_ours_writes_reference_reads(tmp_path: Path, bt: int) -> None:
    header = wkw.Header(np.uint8, block_type=bt)
    data = _data(np.dtype("u1"), (1, 40, 33, 17), seed=4)
    lo = (1000, 7, 1020)
    with wkw.Dataset.create(tmp_path, header) as ours:
        ours.write(lo, data)
    with wkw_ref.Dataset.open(str(tmp_path)) as ref:
        got = ref.read((995, 0, 1015), (50, 45, 30))
    expected = np.zeros((1, 50, 45, 30), dtype=np.uint8)
    expected[:, 5:45, 7:40, 5:22] = data
    _assert_same(got, expected, "reference reads our 32/32 LZ4 files")


@pytest.mark.parametrize("bt", [2, 3])
def test_partial_write_into_reference_compressed_file(tmp_path: Path, bt: int) -> None:
    """The reference refuses partial compressed writes; ours merges and the reference reads
    the merged file back."""
    side = 32
    header = wkw_ref.Header(np.uint32, num_channels=3, block_len=8, file_len=4, block_type=bt)
    whole = _data(np.dtype("<u4"), (3, side, side, side), seed=11)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), whole)
        with pytest.raises(Exception):  # noqa: B017 - the reference raises a plain Exception
            ref.write((1, 2, 3), whole[:, :5, :5, :5])
    patch = _data(np.dtype("<u4"), (3, 5, 6, 7), seed=12)
    with wkw.Dataset.open(tmp_path) as ours:
        ours.write((9, 10, 11), patch)
    whole[:, 9:14, 10:16, 11:18] = patch
    with wkw_ref.Dataset.open(str(tmp_path)) as ref:
        _assert_same(ref.read((0, 0, 0), (side, side, side)), whole, "reference after merge")
    # Block 0 was untouched by the patch: its compressed bytes are kept as they were.
    with wkw.File.open(tmp_path / "z0" / "y0" / "x0.wkw") as f:
        assert f.header.block_type == bt


def test_compress_reference_raw_dataset(tmp_path: Path) -> None:
    """``Dataset.compress`` turns a raw dataset into LZ4HC that both readers agree on."""
    src, dst = tmp_path / "raw", tmp_path / "lz4hc"
    header = wkw_ref.Header(np.int16, num_channels=3, block_len=8, file_len=4)
    data = _data(np.dtype("<i2"), (3, 40, 35, 20), seed=5)
    with wkw_ref.Dataset.create(str(src), header) as ref:
        ref.write((30, 0, 20), data)
        expected = ref.read((0, 0, 0), (70, 40, 40))
    with wkw.Dataset.open(src) as ours:
        compressed = ours.compress(dst)
    assert compressed.header.block_type == wkw.BLOCK_TYPE_LZ4HC
    assert sorted(os.path.relpath(p, dst) for p in compressed.list_files()) == sorted(
        os.path.relpath(p, src) for p in wkw.Dataset.open(src).list_files())
    _assert_same(compressed.read((0, 0, 0), (70, 40, 40)), expected, "ours reads compressed")
    with wkw_ref.Dataset.open(str(dst)) as ref:
        assert ref.header.block_type == 3
        _assert_same(ref.read((0, 0, 0), (70, 40, 40)), expected, "reference reads compressed")
    for path in compressed.list_files():
        with wkw.File.open(path) as f:
            assert f.header.block_type == wkw.BLOCK_TYPE_LZ4HC
    compressed.close()


def test_reference_compress_ours_reads(tmp_path: Path) -> None:
    """Files compressed by the reference's own ``File.compress`` read identically."""
    src, dst = tmp_path / "raw", tmp_path / "lz4hc"
    header = wkw_ref.Header(np.float32, block_len=16, file_len=2)
    data = _data(np.dtype("<f4"), (1, 32, 32, 32), seed=6)
    with wkw_ref.Dataset.create(str(src), header) as ref:
        ref.write((0, 0, 0), data[0])
        ref.compress(str(dst), compress_files=True).close()
    with wkw.Dataset.open(dst) as ours:
        assert ours.header.block_type == wkw.BLOCK_TYPE_LZ4HC
        _assert_same(ours.read((0, 0, 0), (32, 32, 32)), data, "reference-compressed file")


@pytest.mark.parametrize("bt", [1, 3])
def test_split_reads_match_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         bt: int) -> None:
    """Reads split into many batches over two threads (forced here with tiny limits) equal
    the reference's; regression: a helper batch that had not started yet was dropped."""
    from viewer.format.wkw import boxread, nativebox

    monkeypatch.setattr(nativebox, "usable", lambda compressed: False)  # the Python path's
    monkeypatch.setattr(boxread, "STAGING_BYTES", 1)  # one block per slab
    monkeypatch.setattr(boxread, "ONE_BATCH_BYTES", 0)  # every shared read slab by slab
    monkeypatch.setattr(boxread, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(boxread, "PER_BLOCK_COPY", 0)
    header = wkw_ref.Header(np.uint16, num_channels=3, block_len=4, file_len=8, block_type=bt)
    data = _data(np.dtype("<u2"), (3, 64, 32, 32), seed=9)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), data)
        with wkw.Dataset.open(tmp_path) as ours:
            for offset, shape in [((0, 0, 0), (64, 32, 32)), ((5, 3, 2), (50, 27, 29)),
                                  ((0, 0, 9), (64, 32, 1)), ((0, 7, 0), (64, 1, 32)),
                                  ((33, 0, 0), (1, 32, 32))]:
                for _ in range(3):
                    _assert_same(ours.read(offset, shape), ref.read(offset, shape),
                                 f"split read at {offset} {shape}")


@pytest.mark.parametrize("bt", [1, 2])
def test_pread_fallback_matches_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              bt: int) -> None:
    """Files are read with merged preads: same voxels as the reference."""
    header = wkw_ref.Header(np.int32, num_channels=3, block_len=8, file_len=4, block_type=bt)
    data = _data(np.dtype("<i4"), (3, 64, 32, 32), seed=10)
    with wkw_ref.Dataset.create(str(tmp_path), header) as ref:
        ref.write((0, 0, 0), data)
    with wkw.Dataset.open(tmp_path) as ours:
        for offset, shape in [((0, 0, 0), (64, 32, 32)), ((5, 3, 2), (50, 27, 29)),
                              ((0, 0, 9), (64, 32, 1)), ((33, 0, 0), (1, 32, 32))]:
            _assert_same(ours.read(offset, shape), data[:, offset[0]:offset[0] + shape[0],
                                                         offset[1]:offset[1] + shape[1],
                                                         offset[2]:offset[2] + shape[2]],
                         f"pread fallback at {offset} {shape}")
        with wkw.File.open(ours.file_path(1, 0, 0)) as f:
            assert np.array_equal(f.read_block(5), f.read((8, 0, 8), (8, 8, 8)))  # (1, 0, 1)
