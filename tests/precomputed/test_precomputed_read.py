"""Every encoding and layout tensorstore writes reads voxel for voxel as tensorstore reads it:
raw, jpeg, png, compressed_segmentation (uint32, uint64), unsharded and sharded (identity and
murmurhash3 hashes, raw and gzip indexes and data), two scales, a voxel_offset not at 0, and
chunk files gzip-compressed as CloudVolume writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from precomputed_writers import OFFSET, SIZE

from viewer.format import FormatError, open_dataset, open_volume

NAMES = ["sharded_identity", "sharded_murmur", "cseg32", "jpeg", "png", "raw", "gzip"]


@pytest.mark.parametrize("name", NAMES)
def test_reads_as_tensorstore(pc: dict[str, Any], name: str) -> None:
    path, truths = pc[name]
    ds = open_dataset(path)
    assert ds.format == "precomputed" and not ds.problems
    [layer] = ds.layers
    assert len(layer.mags) == len(truths)
    for mag, truth in zip(layer.mags, truths, strict=True):
        v = mag.volume
        assert v.shape == truth.shape[1:]
        assert v.dtype == truth.dtype and v.num_channels == truth.shape[0]
        got = v.read(v.origin, v.shape)
        np.testing.assert_array_equal(got, truth)
        # a box across chunk edges, starting before the extent
        lo = [o - 3 for o in v.origin]
        part = v.read(lo, (20, 21, 11))
        assert (part[:, :3] == 0).all()
        np.testing.assert_array_equal(part[:, 3:, 3:, 3:], truth[:, :17, :18, :8])
    ds.close()


def test_extent_offset_mags_and_voxel_size(pc: dict[str, Any]) -> None:
    ds = open_dataset(pc["sharded_identity"][0])
    [layer] = ds.layers
    assert [m.mag for m in layer.mags] == [(1, 1, 1), (2, 2, 1)]
    assert layer.bounding_box.top_left == OFFSET and layer.bounding_box.size == SIZE
    assert ds.voxel_size == (4.0, 4.0, 40.0)
    v0, v1 = (m.volume for m in layer.mags)
    assert v0.origin == OFFSET and v0.shape == SIZE
    assert v1.origin == (16, 8, 8) and v1.shape == (25, 20, 20)
    assert layer.category == "color"
    seg = open_dataset(pc["sharded_murmur"][0]).layers[0]
    assert seg.category == "segmentation" and seg.dtype == np.uint64
    assert [m.mag for m in seg.mags] == [(1, 1, 1), (2, 2, 2)]


def test_absent_chunks_are_absent_units(pc: dict[str, Any]) -> None:
    for name in ("sharded_identity", "raw", "gzip", "sharded_murmur"):
        v = open_volume(pc[name][0])
        g0 = [o // c for o, c in zip(v.origin, v.chunk_shape, strict=True)]
        assert v.open_unit((g0[0] + 3, g0[1], g0[2])) is None, name  # x 48..50: not written
        assert v.open_unit((g0[0], g0[1], g0[2])) is not None, name
        listed = set(v.iter_units())
        assert (g0[0], g0[1], g0[2]) in listed and (g0[0] + 3, g0[1], g0[2]) not in listed
        assert len(listed) == 3 * 3 * 3  # 4 x 3 x 3 chunks, the last x column absent


def test_precomputed_prefix_and_info_file(pc: dict[str, Any]) -> None:
    path, truths = pc["sharded_murmur"]
    for spelled in (f"precomputed://{path}", f"precomputed://file://{path}", str(path / "info")):
        v = open_volume(spelled)
        np.testing.assert_array_equal(v.read(v.origin, v.shape), truths[0])


def test_gzip_chunk_files_as_cloudvolume_writes_them(pc: dict[str, Any]) -> None:
    folder = Path(pc["gzip"][0]) / "4_4_40"
    names = sorted(p.name for p in folder.iterdir())
    assert any(n.endswith(".gz") for n in names) and not all(n.endswith(".gz") for n in names)
    assert all(p.read_bytes()[:2] == b"\x1f\x8b" for p in folder.iterdir())


def test_sharded_read_units_batch(pc: dict[str, Any]) -> None:
    """The loader's way in (``read_units``) gives every chunk of a shard as ``open_unit``
    + ``read_chunks`` does."""
    v = open_volume(pc["sharded_murmur"][0])
    units = sorted(v.iter_units())
    got = v.read_units([(u, [0]) for u in units])
    for u, g in zip(units, got, strict=True):
        su = v.open_unit(u)
        assert su is not None and isinstance(g, list)
        np.testing.assert_array_equal(g[0], su.read_chunks([0])[0])


@pytest.mark.parametrize("name", ["sharded_murmur", "cseg32", "sharded_identity"])
def test_planes_read_as_tensorstore(pc: dict[str, Any], name: str) -> None:
    """XY planes (a slab of each chunk: compressed_segmentation decodes only the blocks and
    layers met, raw chunks in shards are read as slabs), every z, and thin boxes off the
    chunk grid."""
    path, truths = pc[name]
    v = open_volume(path)
    truth = truths[0]
    o, s = v.origin, v.shape
    for z in range(s[2]):
        got = v.read((o[0], o[1], o[2] + z), (s[0], s[1], 1))
        np.testing.assert_array_equal(got, truth[:, :, :, z:z + 1])
    got = v.read((o[0] + 5, o[1] + 3, o[2] + 6), (30, 20, 3))
    np.testing.assert_array_equal(got, truth[:, 5:35, 3:23, 6:9])


def test_compresso_chunks(tmp_path: Path) -> None:
    """compresso chunks as CloudVolume writes them (one file per chunk, the ``compresso``
    package's own stream of the chunk's labels), read back voxel for voxel; a stream cut short
    is the chunk's error."""
    import json

    compresso = pytest.importorskip("compresso", reason="compresso (test extra) not installed")
    import precomputed_writers as w
    from precomputed_writers import SIZE

    from viewer.format import ChunkDecodeError

    labels = w.segments(SIZE, "uint64", 9)[0]
    root = tmp_path / "cmp"
    (root / "s0").mkdir(parents=True)
    chunk = (16, 16, 8)
    info = {"@type": "neuroglancer_multiscale_volume", "type": "segmentation",
            "data_type": "uint64", "num_channels": 1,
            "scales": [{"key": "s0", "size": list(SIZE), "voxel_offset": [0, 0, 0],
                        "resolution": [8, 8, 8], "chunk_sizes": [list(chunk)],
                        "encoding": "compresso"}]}
    (root / "info").write_text(json.dumps(info))
    for x in range(0, SIZE[0], chunk[0]):
        for y in range(0, SIZE[1], chunk[1]):
            for z in range(0, SIZE[2], chunk[2]):
                hi = [min(a + c, s) for a, c, s in zip((x, y, z), chunk, SIZE, strict=True)]
                part = np.asfortranarray(labels[x:hi[0], y:hi[1], z:hi[2]])
                (root / "s0" / f"{x}-{hi[0]}_{y}-{hi[1]}_{z}-{hi[2]}").write_bytes(
                    compresso.compress(part))
    v = open_volume(root)
    np.testing.assert_array_equal(v.read((0, 0, 0), SIZE)[0], labels)
    bad = root / "s0" / "16-32_16-32_8-16"
    bad.write_bytes(bad.read_bytes()[:40])
    with pytest.raises(ChunkDecodeError, match="compresso"):
        open_volume(root).read((16, 16, 8), chunk)


def test_zstd_chunk_files_as_cloudvolume_writes_them(pc: dict[str, Any], pc_copy: Any) -> None:
    """CloudVolume's other compression: zstd chunk files, under their own name or with
    ``.zstd`` added (its local file store)."""
    import zstandard

    root = pc_copy("raw")
    folder = root / "4_4_40"
    for k, p in enumerate(sorted(folder.iterdir())):
        data = zstandard.ZstdCompressor(write_content_size=k % 3 != 0).compress(p.read_bytes())
        p.unlink()
        (folder / (p.name + (".zstd" if k % 2 else ""))).write_bytes(data)
    v = open_volume(root)
    np.testing.assert_array_equal(v.read(v.origin, v.shape), pc["raw"][1][0])
    assert len(set(v.iter_units())) == 27


def test_forget_unit_reads_a_rewritten_shard_afresh(pc_copy: Any) -> None:
    """Shard indexes and chunk locations are kept between reads; when another program
    rewrites a shard (the loader then calls ``forget_unit``), the next read takes the new
    indexes, never the old offsets into the new file."""
    import tensorstore as ts
    from precomputed_writers import spec

    path = pc_copy("sharded_murmur")
    v = open_volume(path)
    old = v.read(v.origin, v.shape)
    t = ts.open(spec(path, scale_index=0)).result()
    new = (np.moveaxis(old, 0, 3)[::-1] * np.uint64(7) + np.uint64(1)).copy()
    t.write(new).result()
    v.forget_unit(next(iter(v.iter_units())))
    np.testing.assert_array_equal(v.read(v.origin, v.shape), np.moveaxis(new, 3, 0))
    v.close()


def test_a_shard_rewritten_under_a_reader_is_read_from_its_new_index(pc_copy: Any) -> None:
    """Nobody calls ``forget_unit``: a shard rewritten by another program after its index was
    read is found changed (its version) and read again from its new index, in a box read and
    through the storage units the loader reads; never the old offsets into the new file (a
    chunk that was absent may still read as absent: nothing was read to find the change)."""
    import tensorstore as ts
    from precomputed_writers import spec

    path = pc_copy("sharded_murmur")
    v = open_volume(path)
    old = v.read(v.origin, v.shape)
    unit = next(iter(v.iter_units()))
    t = ts.open(spec(path, scale_index=0)).result()
    new = (np.moveaxis(old, 0, 3)[::-1] * np.uint64(7) + np.uint64(1)).copy()
    t.write(new).result()
    got, want = v.read(v.origin, v.shape), np.moveaxis(new, 3, 0)
    present = old != 0  # chunks absent before may read as absent until forget_unit
    np.testing.assert_array_equal(got[present], want[present])
    assert np.all((got == 0) | (got == want))
    t.write(np.moveaxis(old, 0, 3).copy()).result()
    opened = v.open_unit(unit)
    assert opened is not None
    for got in v.read_units([(unit, [0])])[0] or []:
        assert not isinstance(got, FormatError), got
    np.testing.assert_array_equal(v.read(v.origin, v.shape), old)
    v.close()
