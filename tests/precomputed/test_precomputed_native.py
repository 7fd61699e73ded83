"""The native compressed_segmentation kernel against the streams the ``compressed-segmentation``
package writes and against the Python decoder: the same voxels for whole chunks and boxes of
them (uint32, uint64, one and two channels, chunks not a multiple of the block), and on
damaged streams (bytes changed, cut short) the same outcome: both decode to the same voxels or
both fail with the same error.  Volume reads through the kernel and through the Python path
agree with tensorstore in ``test_precomputed_read.py`` (the kernel moved aside in CI)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from viewer.format.precomputed import cseg, nativecseg

compressed_segmentation = pytest.importorskip("compressed_segmentation")
needs_kernel = pytest.mark.skipif(not nativecseg.usable(np.dtype("<u4")),
                                  reason="native kernel not built")

#: (box, block, channels, dtype): layers of whole words and not, edge blocks, two channels.
CASES = [((16, 16, 8), (8, 8, 4), 1, "<u4"), ((20, 13, 9), (8, 8, 4), 1, "<u8"),
         ((12, 10, 7), (4, 4, 2), 2, "<u4"), ((32, 32, 16), (8, 8, 8), 1, "<u8")]


def _labels(box: tuple[int, int, int], channels: int, dtype: str, seed: int) -> Any:
    """Blocky labels with a few blocks of many values (wide bit widths)."""
    rng = np.random.default_rng(seed)
    shape = (*box, channels)
    coarse = rng.integers(0, 6, size=tuple(-(-s // 3) for s in box) + (channels,))
    data = coarse.repeat(3, 0).repeat(3, 1).repeat(3, 2)[:box[0], :box[1], :box[2]]
    data = data.astype(dtype) * np.asarray(0x9E3779B1, dtype=dtype)
    data[:4, :4, :2] = rng.integers(0, 2**31, size=(4, 4, 2, channels)).astype(dtype)
    return np.asfortranarray(data.reshape(shape))


def _encode(data: Any, block: tuple[int, int, int]) -> bytes:
    """The package's stream of each channel (it encodes one channel at a time), joined under
    one channel header as the format lays channels out."""
    parts = [bytes(compressed_segmentation.compress(np.asfortranarray(data[..., c:c + 1]),
                                                    block_size=block, order="F"))[4:]
             for c in range(data.shape[3])]
    starts = np.cumsum([len(parts)] + [len(p) // 4 for p in parts[:-1]]).astype("<u4")
    return starts.tobytes() + b"".join(parts)


def _boxes(box: tuple[int, int, int]) -> list[tuple[tuple[int, int, int], tuple[int, ...]]]:
    return [((0, 0, 0), box), ((0, 0, 1), (box[0], box[1], 2)), ((1, 2, 3), (box[0] - 1, 5, 4)),
            ((3, 0, box[2] - 1), (4, box[1], box[2])), ((0, 0, 0), (box[0], box[1], 1))]


@needs_kernel
@pytest.mark.parametrize("case", CASES)
def test_kernel_decodes_what_the_package_writes(case: Any) -> None:
    box, block, channels, dtype = case
    data = _labels(box, channels, dtype, 3)
    stream = _encode(data, block)
    want = np.moveaxis(data, 3, 0)
    for lo, hi in _boxes(box):
        got = cseg.decode_checked(stream, box, channels, block, np.dtype(dtype), lo,
                                  (hi[0], hi[1], hi[2]))
        assert np.array_equal(got, want[:, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]), (lo, hi)
    assert np.array_equal(cseg.decode(stream, box, channels, block, np.dtype(dtype)), want)


@needs_kernel
def test_kernel_writes_into_a_strided_output() -> None:
    """A box decoded straight into a view of a larger array (as a volume read does) leaves
    the rest of the array alone."""
    box, block = (16, 16, 8), (8, 8, 4)
    data = _labels(box, 1, "<u4", 5)
    stream = _encode(data, block)
    big = np.full((1, 30, 30, 10), 7, dtype="<u4", order="F")
    batch = nativecseg.Batch(1, block, np.dtype("<u4"))
    batch.add(cseg.words_of(stream), box, (2, 3, 1), (14, 16, 6), big[:, 5:17, 0:13, 4:9])
    assert batch.run() == [True]
    expect = np.full_like(big, 7)
    expect[:, 5:17, 0:13, 4:9] = np.moveaxis(data, 3, 0)[:, 2:14, 3:16, 1:6]
    assert np.array_equal(big, expect)


def _outcome(stream: bytes, box: Any, channels: int, block: Any, dtype: Any, lo: Any, hi: Any,
             native: bool) -> Any:
    try:
        return cseg.decode_checked(stream, box, channels, block, dtype, lo, hi, native=native)
    except cseg.CsegError as exc:
        return str(exc)


def _kernel_only(stream: bytes, box: Any, channels: int, block: Any, dtype: Any, lo: Any,
                 hi: Any) -> Any:
    """The kernel's voxels, or None where it finds the stream damaged."""
    if len(stream) % 4:
        return None
    out = np.zeros((channels, hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]), dtype, order="F")
    batch = nativecseg.Batch(channels, block, dtype)
    batch.add(cseg.words_of(stream), box, lo, hi, out)
    return out if batch.run()[0] else None


@needs_kernel
@pytest.mark.parametrize("case", CASES[:3])
def test_damaged_streams_same_outcome_as_python(case: Any) -> None:
    box, block, channels, dtype = case
    stream = _encode(_labels(box, channels, dtype, 11), block)
    rng = np.random.default_rng(29)
    failed = 0
    for _ in range(150):
        raw = bytearray(stream)
        if rng.random() < 0.3:
            raw = raw[:int(rng.integers(0, len(raw)))]
        for _ in range(int(rng.integers(1, 5))):
            if raw:
                raw[int(rng.integers(0, len(raw)))] = int(rng.integers(0, 256))
        for lo, hi in _boxes(box)[:3]:
            hi3 = (hi[0], hi[1], hi[2])
            ours = _outcome(bytes(raw), box, channels, block, np.dtype(dtype), lo, hi3, True)
            python = _outcome(bytes(raw), box, channels, block, np.dtype(dtype), lo, hi3,
                              False)
            kernel = _kernel_only(bytes(raw), box, channels, block, np.dtype(dtype), lo, hi3)
            if isinstance(python, str):
                failed += 1
                assert ours == python
                assert kernel is None
            else:
                assert not isinstance(ours, str), ours
                assert np.array_equal(ours, python)
                assert kernel is not None and np.array_equal(kernel, python)
    assert failed > 0


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_volume_off_the_chunk_grid_reads_as_tensorstore(tmp_path: Any, dtype: str) -> None:
    """A compressed_segmentation scale whose voxel_offset is not a multiple of its chunk size
    (its stored chunks straddle the absolute grid), written by tensorstore: whole, a box
    across chunks and a plane read as tensorstore reads them (through the kernel where it was
    built, else the Python decoder)."""
    pytest.importorskip("tensorstore")
    import precomputed_writers as w

    from viewer.format import open_volume

    labels = w.segments((37, 29, 19), dtype, 7)
    path = tmp_path / "off"
    w.write_scale(path, labels, dtype=dtype, kind="segmentation",
                  encoding="compressed_segmentation", offset=(5, 3, 2))
    truth = w.read_scale(path, 0)
    v = open_volume(path)
    assert v.origin == (5, 3, 2)
    np.testing.assert_array_equal(v.read(v.origin, v.shape), truth)
    np.testing.assert_array_equal(v.read((12, 9, 6), (20, 17, 9)), truth[:, 7:27, 6:23, 4:13])
    np.testing.assert_array_equal(v.read((5, 3, 13), (37, 29, 1)), truth[:, :, :, 11:12])
    units = sorted(v.iter_units())
    for u, got in zip(units, v.read_units([(u, [0]) for u in units]), strict=True):
        unit = v.open_unit(u)
        assert unit is not None and isinstance(got, list)
        np.testing.assert_array_equal(got[0], unit.read_chunks([0])[0])
    v.close()
