"""The comparison engine on real dataset pairs written to disk."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from compare_fixtures import SIDE, copy_dataset, corrupt_block, file_of, volume

from viewer.core.compare import (
    DIAGNOSIS,
    DIFFERENCE,
    INFO,
    CompareJob,
    abs_difference,
    compare,
    difference_plane,
    mismatch_mask,
    mismatch_rects,
)
from viewer.core.slicing import PlaneRequest, read_plane
from viewer.format import open_volume, wkw
from viewer.format.wkw import morton

RAW, LZ4, LZ4HC = wkw.BLOCK_TYPE_RAW, wkw.BLOCK_TYPE_LZ4, wkw.BLOCK_TYPE_LZ4HC


def kinds(summary, severity=None):
    return [f.kind for f in summary.structure if severity is None or f.severity == severity]


def test_raw_vs_lz4hc_of_the_same_data_is_equal(make):
    data = volume()
    a = make("raw", data, RAW)
    b = make("lz4hc", data, LZ4HC)
    s = compare(a, b)
    assert s.equal
    assert s.blocks_compared == s.blocks_total == 4 * 64
    assert s.mismatching_blocks == [] and s.voxels_different == 0 and s.max_abs_diff == 0
    assert kinds(s) == ["block_type"]  # an encoding difference is information, not a difference


def test_reference_lz4hc_vs_project_lz4_is_equal(make):
    data = volume(seed=3)
    a = make("ref", data, LZ4HC, writer="reference")
    b = make("lz4", data, LZ4)
    assert compare(a, b).equal
    assert compare(b, a).equal


def test_identical_copies_are_equal_without_decoding(make, tmp_path, monkeypatch):
    a = make("a", volume(), LZ4HC)
    b = copy_dataset(a, tmp_path / "b")
    from viewer.format.wkw import lz4block, nativebox

    def forbidden(*args, **kwargs):
        raise AssertionError("identical stored bytes must not be decoded")

    for name in ("decode", "decode_into", "decode_many"):
        monkeypatch.setattr(lz4block, name, forbidden)
    for name in ("read", "read_blocks"):  # the native kernel's decoding too
        monkeypatch.setattr(nativebox, name, forbidden)
    s = compare(a, b)
    assert s.equal and s.blocks_compared == 4 * 64


@pytest.mark.parametrize("block_type_b", [RAW, LZ4HC])
def test_one_voxel_changed_is_found_at_its_block(make, block_type_b):
    data = volume()
    a = make("a", data, LZ4HC)
    changed = data.copy()
    x, y, z = 37, 5, 20
    changed[x, y, z] = data[x, y, z] - 7 if data[x, y, z] > 7 else data[x, y, z] + 7
    b = make("b", changed, block_type_b)
    s = compare(a, b)
    assert not s.equal
    assert len(s.mismatching_blocks) == 1
    r = s.mismatching_blocks[0]
    assert r.file == "z0/y0/x1.wkw"
    assert r.morton_index == int(morton.encode((x - SIDE) // 8, y // 8, z // 8))
    assert r.position == (32, 0, 16)
    assert r.voxels_different == 1 and r.max_abs_diff == 7
    assert s.voxels_different == 1 and s.max_abs_diff == 7
    assert s.first_mismatch == r
    # The same change seen through a tolerance.
    assert compare(a, b, tolerance=7).equal
    assert not compare(a, b, tolerance=6.5).equal


def test_box_limits_the_comparison(make):
    data = volume()
    a = make("a", data, RAW)
    changed = data.copy()
    changed[37, 5, 20] ^= 0xFF
    b = make("b", changed, LZ4HC)
    outside = compare(a, b, box=((0, 0, 0), (32, 64, 32)))
    assert outside.equal and outside.blocks_compared == 2 * 64
    # A box cutting the block: voxel (37, 5, 20) just inside, then just outside.
    inside = compare(a, b, box=((37, 5, 20), (1, 1, 1)))
    assert not inside.equal and inside.blocks_compared == 1
    assert inside.mismatching_blocks[0].voxels_different == 1
    edge = compare(a, b, box=((38, 0, 0), (20, 20, 20)))
    assert edge.equal


def test_deleted_file_is_named_and_checked_for_zeros(make, tmp_path):
    data = volume()
    data[:32, 32:, :] = 0  # the file at (0, 1, 0) holds only zeros
    a = make("a", data, LZ4HC)
    b = copy_dataset(a, tmp_path / "b")
    file_of(b, 1, 0, 0).unlink()  # real data
    file_of(b, 0, 1, 0).unlink()  # zeros only
    s = compare(a, b)
    assert not s.equal
    missing = {f.details["file"]: f for f in s.structure if f.kind == "file_missing"}
    assert set(missing) == {"z0/y0/x1.wkw", "z0/y1/x0.wkw"}
    assert missing["z0/y0/x1.wkw"].severity == DIFFERENCE
    assert missing["z0/y0/x1.wkw"].details["present_all_zeros"] is False
    assert missing["z0/y0/x1.wkw"].details["missing_in"] == "B"
    assert missing["z0/y1/x0.wkw"].severity == INFO
    assert missing["z0/y1/x0.wkw"].details["present_all_zeros"] is True
    # Every block of the deleted data file differs from the zeros it now reads as.
    assert {r.file for r in s.mismatching_blocks} == {"z0/y0/x1.wkw"}
    assert len(s.mismatching_blocks) == 64
    # Deleting only the all-zero file leaves the voxels equal.
    c = copy_dataset(a, tmp_path / "c")
    file_of(c, 0, 1, 0).unlink()
    s2 = compare(c, a)
    assert s2.equal
    assert [f.details["missing_in"] for f in s2.structure if f.kind == "file_missing"] == ["A"]


def test_extent_difference_is_reported(make):
    a = make("a", volume((64, 64, 32)), RAW)
    b = make("b", volume((64, 64, 64)), RAW)
    s = compare(a, b)
    assert "extent" in kinds(s)
    assert not s.equal


@pytest.mark.parametrize("axes, words", [((2, 1, 0), "x and z swapped"),
                                         ((1, 2, 0), "B's x, y, z axes are A's y, z, x axes")])
def test_transposed_copy_is_named(make, axes, words):
    data = volume((64, 64, 64), seed=1)
    a = make("a", data, LZ4HC)
    b = make("b", np.ascontiguousarray(data.transpose(*axes)), LZ4HC)
    s = compare(a, b)
    assert not s.equal
    diagnoses = [f for f in s.structure if f.severity == DIAGNOSIS]
    assert [d.kind for d in diagnoses] == ["transposed"]
    assert diagnoses[0].details["axes"] == "".join("xyz"[i] for i in axes)
    assert words in diagnoses[0].message


def test_fortran_vs_c_order_inside_blocks_is_named(make):
    data = volume((32, 32, 32), seed=2)
    b8 = data.reshape(4, 8, 4, 8, 4, 8)  # (bx, x, by, y, bz, z)
    swapped = b8.transpose(0, 5, 2, 3, 4, 1).reshape(32, 32, 32)  # x and z swapped per block
    a = make("a", data, RAW)
    b = make("b", np.ascontiguousarray(swapped), LZ4HC)
    s = compare(a, b)
    assert [f.kind for f in s.structure if f.severity == DIAGNOSIS] == ["block_order"]


@pytest.mark.parametrize("axis, step, unit", [(0, 1, "voxel"), (2, 8, "block"), (1, -1, "voxel")])
def test_offset_is_named(make, axis, step, unit):
    data = volume((64, 64, 64), seed=4)
    shifted = np.zeros_like(data)
    src = [slice(None)] * 3
    dst = [slice(None)] * 3
    if step > 0:
        dst[axis], src[axis] = slice(step, None), slice(None, -step)
    else:
        dst[axis], src[axis] = slice(None, step), slice(-step, None)
    shifted[tuple(dst)] = data[tuple(src)]
    a = make("a", data, RAW)
    b = make("b", shifted, LZ4HC)
    s = compare(a, b)
    found = [f for f in s.structure if f.severity == DIAGNOSIS]
    assert [f.kind for f in found] == ["offset"]
    expected = [0, 0, 0]
    expected[axis] = step
    assert found[0].details["shift"] == expected and found[0].details["unit"] == unit


def test_unrelated_data_gets_no_diagnosis(make):
    a = make("a", volume((64, 64, 64), seed=5), RAW)
    b = make("b", volume((64, 64, 64), seed=6), RAW)
    s = compare(a, b)
    assert not s.equal and len(s.mismatching_blocks) == 8 * 64
    assert [f for f in s.structure if f.severity == DIAGNOSIS] == []


def test_dtype_mismatch_is_structural(make):
    data = volume()
    a = make("a", data, RAW)
    b = make("b", data.astype(np.uint16), RAW)
    s = compare(a, b)
    assert not s.equal and not s.comparable
    assert "voxel_type" in kinds(s, DIFFERENCE)
    assert s.blocks_compared == 0


def test_channel_mismatch_is_structural(make):
    data = volume((32, 32, 32))
    a = make("a", data, RAW)
    b = make("b", np.stack([data, data]), RAW, channels=2)
    s = compare(a, b)
    assert "num_channels" in kinds(s, DIFFERENCE) and not s.comparable and not s.equal


def write_geometry(path, data, block_len, file_len, block_type=RAW):
    header = wkw.Header(data.dtype, block_len=block_len, file_len=file_len,
                        block_type=block_type)
    with wkw.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), data)
    return path


@pytest.mark.parametrize("block_len, file_len", [(16, 2), (8, 2), (4, 16)])
def test_other_geometry_is_compared_by_voxels(make, tmp_path, block_len, file_len):
    data = volume((64, 64, 32))
    a = make("a", data, LZ4HC)
    b = write_geometry(tmp_path / "b", data, block_len, file_len, LZ4)
    s = compare(a, b)
    assert s.equal, s.structure
    # B's files may cover more than A's (zeros there): A's blocks over the union are compared.
    assert s.blocks_compared == (8 if file_len * block_len > 32 else 4) * 64
    assert all(f.severity == INFO for f in s.structure)
    changed = data.copy()
    changed[37, 5, 20] ^= 0x10
    c = write_geometry(tmp_path / "c", changed, block_len, file_len, RAW)
    s = compare(a, c)
    assert [(r.file, r.morton_index, r.position, r.voxels_different, r.max_abs_diff)
            for r in s.mismatching_blocks] == [
        ("z0/y0/x1.wkw", int(morton.encode(0, 0, 2)), (32, 0, 16), 1, 0x10)]
    assert compare(a, c, box=((38, 0, 0), (20, 20, 20))).equal
    assert not compare(a, c, box=((37, 5, 20), (1, 1, 1))).equal
    t = write_geometry(tmp_path / "t", np.ascontiguousarray(data.transpose(1, 0, 2)),
                       block_len, file_len, LZ4)
    assert [f.kind for f in compare(a, t).structure if f.severity == DIAGNOSIS] == ["transposed"]


def test_other_geometry_reports_a_damaged_block(make, tmp_path):
    data = volume((32, 32, 32))
    a = make("a", data, RAW)
    b = write_geometry(tmp_path / "b", data, 16, 2, LZ4HC)
    corrupt_block(file_of(b, 0, 0, 0), 7)  # B's block (1, 1, 1): A's blocks (2..3, 2..3, 2..3)
    s = compare(a, b)
    bad = sorted(r.position for r in s.mismatching_blocks)
    assert all(r.error is not None and r.error.startswith("B: ") for r in s.mismatching_blocks)
    assert bad == sorted((x, y, z) for x in (16, 24) for y in (16, 24) for z in (16, 24))


def test_damaged_block_is_reported_as_that_block(make, tmp_path):
    data = volume()
    a = make("a", data, RAW)
    b = make("b", data, LZ4HC)
    start = corrupt_block(file_of(b, 1, 1, 0), 9)
    s = compare(a, b)
    assert not s.equal
    assert len(s.mismatching_blocks) == 1
    r = s.mismatching_blocks[0]
    assert r.file == "z0/y1/x1.wkw" and r.morton_index == 9
    assert r.voxels_different is None and r.error is not None
    assert r.error.startswith("B: ") and "block 9" in r.error and str(start) in r.error
    assert s.blocks_compared == 4 * 64


def test_damaged_jump_table_reports_the_blocks_it_misplaces(make):
    data = volume()
    a = make("a", data, RAW)
    b = make("b", data, LZ4)
    path = file_of(b, 0, 1, 0)
    with open(path, "r+b") as fh:  # end of block 20 points before its start; block 30 far away
        fh.seek(16 + 8 * 20)
        fh.write((16).to_bytes(8, "little"))
        fh.seek(16 + 8 * 30)
        fh.write((2**64 - 5).to_bytes(8, "little"))
    s = compare(a, b)
    bad = {r.morton_index: r for r in s.mismatching_blocks}
    assert {20, 21, 30, 31} <= set(bad) and all(r.file == "z0/y1/x0.wkw" for r in bad.values())
    assert all(r.error is not None and "block" in r.error for r in bad.values())
    assert s.blocks_compared == 4 * 64


@pytest.mark.parametrize("block_type", [RAW, LZ4HC])
def test_truncated_file_reports_the_blocks_past_its_end(make, tmp_path, block_type):
    data = volume()
    a = make("a", data, RAW)
    b = make("b", data, block_type)
    path = file_of(b, 0, 0, 0)
    with wkw.File.open(str(path)) as f:
        starts, _ = f.block_ranges()
    cut = int(starts[40]) + 3  # block 40 loses its tail, 41..63 are gone
    with open(path, "r+b") as fh:
        fh.truncate(cut)
    s = compare(a, b)
    bad = [r for r in s.mismatching_blocks if r.file == "z0/y0/x0.wkw"]
    assert [r.morton_index for r in bad] == list(range(40, 64))
    assert all(r.error is not None and r.error.startswith("B: ") for r in bad)
    assert len(s.mismatching_blocks) == len(bad) and s.blocks_compared == 4 * 64


def test_float_and_multichannel_differences(make):
    rng = np.random.default_rng(7)
    data = rng.standard_normal((2, 32, 32, 32)).astype(np.float32)
    a = make("a", data, RAW, channels=2)
    changed = data.copy()
    changed[1, 3, 4, 5] += 0.5
    changed[0, 3, 4, 5] += 0.25  # same voxel, other channel: still one voxel
    changed[0, 30, 30, 30] = np.nan
    b = make("b", changed, LZ4, channels=2)
    s = compare(a, b)
    by_index = {r.morton_index: r for r in s.mismatching_blocks}
    assert set(by_index) == {0, 63}
    assert by_index[0].voxels_different == 1
    assert by_index[0].max_abs_diff == pytest.approx(0.5, abs=1e-6)
    assert by_index[63].max_abs_diff == float("inf")
    assert by_index[63].to_json()["max_abs_diff"] == "inf"
    import json
    json.loads(json.dumps(s.to_json()), parse_constant=lambda c: pytest.fail(f"JSON has {c}"))
    assert compare(b, b).equal  # NaN against NaN is equal


def test_abs_difference_is_exact_at_the_extremes():
    for dt in (np.int8, np.int64, np.uint64, np.int32):
        info = np.iinfo(dt)
        a = np.array([info.min, info.max, 0], dtype=dt)
        b = np.array([info.max, info.min, 0], dtype=dt)
        d = abs_difference(a, b)
        assert [int(v) for v in d] == [int(info.max) - int(info.min)] * 2 + [0]


def test_job_runs_in_background_with_progress_and_streamed_blocks(make):
    data = volume()
    a = make("a", data, RAW)
    changed = data.copy()
    changed[::9, ::9, ::9] += 1
    b = make("b", changed, LZ4HC)
    progress, blocks, threads = [], [], set()
    job = CompareJob(a, b, on_progress=lambda d, t: progress.append((d, t)),
                     on_block=lambda r: (blocks.append(r),
                                         threads.add(threading.current_thread().name)))
    job.start()
    summary = job.wait(60)
    assert summary is not None and not summary.equal
    assert progress[-1] == (4 * 64, 4 * 64) and job.progress == (4 * 64, 4 * 64)
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)
    assert blocks == summary.mismatching_blocks and len(blocks) > 0
    assert threads == {"wkw-compare"}  # the job's thread, never a pool worker
    for r in blocks:
        assert r.position == tuple(int(v) for v in r.position)


def test_cancel_stops_the_job(make, monkeypatch):
    import viewer.core.compare.job as job_module

    monkeypatch.setattr(job_module, "CHUNK_BYTES", 512 * 8)  # 8 blocks per chunk: many chunks
    a = make("a", volume(), RAW)
    b = make("b", volume(seed=9), RAW)
    job: CompareJob

    def on_progress(done, total):
        if done >= 16:
            job.cancel()

    fds_before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    job = CompareJob(a, b, on_progress=on_progress)
    s = job.run()
    assert s.cancelled and not s.equal
    assert 16 <= s.blocks_compared < s.blocks_total
    if fds_before is not None:  # every descriptor the job opened is closed again
        assert len(os.listdir("/proc/self/fd")) == fds_before


def test_open_errors_raise(tmp_path, make):
    with pytest.raises(FileNotFoundError):
        compare(tmp_path / "nope", tmp_path / "nope2")
    a = make("a", volume((32, 32, 32)), RAW)
    job = CompareJob(a, tmp_path / "nope")
    job.start()
    with pytest.raises(FileNotFoundError):
        job.wait(30)


def test_single_files_compare(make):
    data = volume((32, 32, 32))
    a = make("a", data, RAW)
    b = make("b", data, LZ4HC)
    s = compare(file_of(a, 0, 0, 0), file_of(b, 0, 0, 0))
    assert s.equal and s.blocks_compared == 64


def test_plane_difference_and_mismatch_mask(make):
    data = volume((32, 32, 32))
    a = make("a", data, RAW)
    changed = data.copy()
    changed[3, 4, 10] = data[3, 4, 10] + 2 if data[3, 4, 10] < 200 else data[3, 4, 10] - 2
    b = make("b", changed, LZ4HC)
    request = PlaneRequest(axis=2, index=10, lo=(0, 0), hi=(40, 32))  # runs past the data
    with open_volume(a) as da, open_volume(b) as db:
        pa, pb = read_plane(da, request), read_plane(db, request)
    diff = difference_plane(pa, pb)
    assert diff.shape == (1, 40, 32)
    expected = data[:, :, 10].astype(np.float64) - changed[:, :, 10]
    np.testing.assert_array_equal(diff[0, :32], expected)
    assert np.all(diff[0, 32:] == 0)  # absent on both sides: zeros against zeros
    mask = mismatch_mask(pa, pb)
    assert mask.shape == (40, 32) and np.argwhere(mask).tolist() == [[3, 4]]
    assert not mismatch_mask(pa, pb, tolerance=2).any()


def test_mismatch_rects_place_blocks_on_a_plane(make):
    data = volume()
    a = make("a", data, RAW)
    changed = data.copy()
    changed[37, 5, 20] += 1
    changed[3, 60, 2] += 1
    s = compare(a, make("b", changed, LZ4HC))
    assert s.block_len == 8
    xy = mismatch_rects(s.mismatching_blocks, s.block_len, PlaneRequest(2, 20, (0, 0), (64, 64)))
    assert [rect for rect, _ in xy] == [(32, 0, 8, 8)]
    xz = mismatch_rects(s.mismatching_blocks, s.block_len, PlaneRequest(1, 61, (4, 0), (64, 6)))
    assert [(rect, r.position) for rect, r in xz] == [((0, 0, 4, 6), (0, 56, 0))]
    assert mismatch_rects(s.mismatching_blocks, 8, PlaneRequest(0, 20, (0, 0), (64, 32))) == []
