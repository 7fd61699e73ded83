"""A storage unit's index and its chunks come from one version of the file: a Zarr v3 shard
(written by tensorstore) or a zfpc file (written by ``zfpc``) rewritten by another program
between the read of its index and the read of its chunks is looked at again, and the chunks
read through the new index (never cut out of the new file at offsets of the old index);
a file that keeps changing is a ``FileChangingError``, never a mix.  Locally here; over
HTTP in ``tests/remote/test_remote_index_version.py``."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from viewer.format import FileChangedError, handles, open_volume

SHAPE = (32, 16, 16)


def _data(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # a different amount of noise per version: different compressed sizes, other offsets
    base = np.arange(np.prod(SHAPE), dtype=np.uint16).reshape(SHAPE)
    return base + rng.integers(0, 16 << seed, SHAPE, dtype=np.uint16)


def write_zarr3(path: Path, data: np.ndarray) -> None:
    """One shard of 2 x 1 x 1 inner chunks of 16^3 (tensorstore, zstd, crc32c index)."""
    ts = pytest.importorskip("tensorstore")
    ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
             "create": True, "delete_existing": True,
             "metadata": {"shape": list(SHAPE), "data_type": "uint16",
                          "chunk_grid": {"name": "regular",
                                         "configuration": {"chunk_shape": list(SHAPE)}},
                          "codecs": [{"name": "sharding_indexed", "configuration": {
                              "chunk_shape": [16, 16, 16],
                              "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                         {"name": "zstd", "configuration": {"level": 3}}],
                              "index_codecs": [{"name": "bytes",
                                                "configuration": {"endian": "little"}},
                                               {"name": "crc32c"}]}}],
                          "dimension_names": ["x", "y", "z"]}}).result().write(data).result()


def write_zfpc(path: Path, data: np.ndarray) -> None:
    """A zfpc file, lossless, split along z: one stream per z slice."""
    zfpc = pytest.importorskip("zfpc")
    path.write_bytes(bytes(zfpc.compress(np.asfortranarray(data.astype(np.float32)),
                                         correlated_dims=[True, True, False, False])))


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Two versions of each kind of file: ``kind -> (a, b)``."""
    root = tmp_path_factory.mktemp("versions")
    out = {}
    for kind, write in (("zarr3", write_zarr3), ("zfpc", write_zfpc)):
        pair = []
        for v in (1, 2):
            where = root / f"{kind}-{v}" / ("data.zfpc" if kind == "zfpc" else "")
            where.parent.mkdir(parents=True, exist_ok=True)
            write(where, _data(v))
            pair.append(where)
        out[kind] = (pair[0], pair[1])
    return out


def _unit_file(kind: str, root: Path) -> Path:
    return root / "c" / "0" / "0" / "0" if kind == "zarr3" else root


def _copy(kind: str, src: Path, dst: Path) -> Path:
    if kind == "zarr3":
        shutil.copytree(src, dst)
        return dst
    dst.mkdir()
    shutil.copy(src, dst / src.name)
    return dst / src.name


def _want(kind: str, v: int) -> np.ndarray:
    data = _data(v)
    return data.astype(np.float32) if kind == "zfpc" else data


@pytest.mark.parametrize("how", ["replaced", "rewritten in place"])
@pytest.mark.parametrize("kind", ["zarr3", "zfpc"])
def test_file_rewritten_between_index_and_chunks(versions: dict[str, tuple[Path, Path]],
                                                 tmp_path: Path, kind: str, how: str) -> None:
    a, b = versions[kind]
    where = _copy(kind, a, tmp_path / "ds")
    vol = open_volume(where)
    try:
        unit = vol.open_unit((0, 0, 0))  # the index of version 1 is read
        assert unit is not None
        new = _unit_file(kind, b).read_bytes()
        target = _unit_file(kind, where)
        if how == "replaced":
            tmp = target.with_name(target.name + ".new")
            tmp.write_bytes(new)
            os.replace(tmp, target)
        else:
            with open(target, "r+b") as fh:
                fh.write(new)
                fh.truncate()
        got = vol.read((0, 0, 0), SHAPE)[0]
    finally:
        vol.close()
    np.testing.assert_array_equal(got, _want(kind, 2))


@pytest.mark.parametrize("kind", ["zarr3", "zfpc"])
def test_file_that_keeps_changing_is_one_version_or_a_named_error(
        versions: dict[str, tuple[Path, Path]], tmp_path: Path, kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A shorter wait for the file to settle than the program's (longer than the racy window
    # still): the same outcomes, each read waiting less.
    monkeypatch.setattr(handles, "SETTLE_NS", 300_000_000)
    pair = [_unit_file(kind, p).read_bytes() for p in versions[kind]]
    where = _copy(kind, versions[kind][0], tmp_path / "ds")
    target = _unit_file(kind, where)
    stop = threading.Event()

    def rewrite() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            tmp = target.with_name(f"{target.name}.{k}")
            tmp.write_bytes(pair[k % 2])
            os.replace(tmp, target)
            time.sleep(0.01)

    vol = open_volume(where)
    writer = threading.Thread(target=rewrite)
    writer.start()
    outcomes = set()
    try:
        for _ in range(2):
            try:
                got = vol.read((0, 0, 0), SHAPE)[0]
            except FileChangedError as exc:
                outcomes.add(type(exc).__name__)
                continue
            matches = [np.array_equal(got, _want(kind, v)) for v in (1, 2)]
            outcomes.add("one version" if any(matches) else "MIXED")
    finally:
        stop.set()
        writer.join(10)
        vol.close()
    assert "MIXED" not in outcomes, outcomes


def test_vds_file_rewritten_after_it_was_opened_is_named(tmp_path: Path) -> None:
    """An OpenVDS file (its layout, LOD indexes and wavelet state read at open) rewritten
    by another program after it was opened: its chunks are ``FileChangedError`` (open it
    again), never bricks cut out of the new file at the old index's offsets."""
    pytest.importorskip("openvds")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vds"))
    from vdswriter import write_vds

    for v in (1, 2):
        write_vds(str(tmp_path / f"{v}.vds"),
                  np.ascontiguousarray(_data(v).astype(np.float32).transpose(2, 1, 0)),
                  method="Zip", brick=32, value_range=(0.0, 70000.0))
    where = tmp_path / "a.vds"
    shutil.copy(tmp_path / "1.vds", where)
    vol = open_volume(where)
    try:
        np.testing.assert_array_equal(vol.read((0, 0, 0), SHAPE)[0], _want("zfpc", 1))
        tmp = tmp_path / "a.new"
        shutil.copy(tmp_path / "2.vds", tmp)
        os.replace(tmp, where)
        with pytest.raises(FileChangedError):
            vol.read((0, 0, 0), SHAPE)
    finally:
        vol.close()
