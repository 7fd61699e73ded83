"""Compare and digest across formats: a sharded precomputed volume with a voxel_offset equals
its WKW conversion (the reference ``wkw`` writer) and its zarr3 conversion (tensorstore) voxel
for voxel; one voxel changed in a conversion is found and placed in A's chunk; a jpeg scale
against its raw source differs within the lossy range and ``--tolerance`` reports how much;
the digest lists of a precomputed volume and its conversion check equal region by region."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.cli import compare as compare_cli
from viewer.cli import digest as digest_cli
from viewer.core.compare import compare


def write_wkw(path: Path, data: np.ndarray, offset: tuple[int, int, int]) -> Path:
    import wkw as reference

    header = reference.Header(data.dtype.type, block_len=16, file_len=4,
                              block_type=reference.Header.BLOCK_TYPE_LZ4HC)
    side = 64  # compressed files are written whole: the data placed in whole files
    hi = [-(-(o + n) // side) * side for o, n in zip(offset, data.shape[1:], strict=True)]
    full = np.zeros(hi, data.dtype)
    full[offset[0]:offset[0] + data.shape[1], offset[1]:offset[1] + data.shape[2],
         offset[2]:offset[2] + data.shape[3]] = data[0]
    with reference.Dataset.create(str(path), header) as ds:
        ds.write((0, 0, 0), full)
    return path


def write_zarr3(path: Path, data: np.ndarray, offset: tuple[int, int, int]) -> Path:
    import tensorstore as ts

    hi = [o + s for o, s in zip(offset, data.shape[1:], strict=True)]
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
                 "metadata": {"shape": hi, "data_type": data.dtype.name,
                              "chunk_grid": {"name": "regular",
                                             "configuration": {"chunk_shape": [32, 32, 16]}},
                              "dimension_names": ["x", "y", "z"]},
                 "create": True}).result()
    t[offset[0]:hi[0], offset[1]:hi[1], offset[2]:hi[2]].write(data[0]).result()
    return path


@pytest.fixture(scope="module")
def conversions(pc: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
                ) -> tuple[Path, Path, Path]:
    path, truths = pc["sharded_identity"]
    root = tmp_path_factory.mktemp("conv")
    offset = (32, 16, 8)
    return (path, write_wkw(root / "wkw", truths[0], offset),
            write_zarr3(root / "zarr3", truths[0], offset))


def run(main: Any, *args: Any) -> tuple[int, Any]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main([str(a) for a in args])
    text = out.getvalue()
    return code, json.loads(text) if text.strip().startswith("{") else text


def test_equal_to_its_wkw_and_zarr3_conversions(conversions: tuple[Path, Path, Path]) -> None:
    pc_path, wkw_path, z3_path = conversions
    for other in (wkw_path, z3_path):
        for a, b in ((pc_path, other), (other, pc_path)):
            s = compare(a, b)
            assert s.equal, s.structure
            assert s.blocks_compared > 0


def test_a_changed_voxel_is_found_and_placed(conversions: tuple[Path, Path, Path],
                                             tmp_path: Path) -> None:
    import shutil

    import tensorstore as ts

    pc_path, _, z3_path = conversions
    copy = tmp_path / "z3"
    shutil.copytree(z3_path, copy)
    arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(copy)}}).result()
    at = (32 + 21, 16 + 37, 8 + 9)  # chunk (3, 3, 2) of the absolute 16x16x8 grid
    old = int(arr[at].read().result())
    arr[at].write(np.uint16((old + 1) % 65536)).result()
    code, report = run(compare_cli.main, pc_path, copy, "--json")
    assert code == 1 and report["equal"] is False
    [block] = report["mismatching_blocks"]
    assert block["voxels_different"] == 1
    assert tuple(block["position"]) == (48, 48, 16)  # A's chunk holding the voxel
    assert block["file"].endswith(".shard")


def test_jpeg_against_its_source_with_a_tolerance(pc: dict[str, Any], tmp_path: Path) -> None:
    """The jpeg scale against the raw voxels it was written from: lossy, so not equal, with
    the error's size reported; within a tolerance as large as that error it passes."""
    import precomputed_writers as w
    from precomputed_writers import SIZE

    source = w.sample((1, *SIZE), "uint8", 4)
    region = source.copy()
    region[:, 34:] = 0  # the tests' jpeg volume leaves its last chunk column unwritten
    src = write_zarr3(tmp_path / "src", region, (0, 0, 0))
    jpeg = pc["jpeg"][0]
    code, report = run(compare_cli.main, jpeg, src, "--json")
    assert code == 1
    truth = pc["jpeg"][1][0].astype(np.int64)
    err = np.abs(truth - region.astype(np.int64))
    assert report["max_abs_diff"] == int(err.max()) > 0
    assert report["voxels_different"] == int(np.count_nonzero(err))
    code, report = run(compare_cli.main, jpeg, src, "--json", "--tolerance", int(err.max()))
    assert code == 0 and report["equal"] is True


def test_digest_of_precomputed_checks_against_its_conversion(
        conversions: tuple[Path, Path, Path], tmp_path: Path) -> None:
    pc_path, wkw_path, _ = conversions
    listing = tmp_path / "pc.digest.json"
    code, _ = run(digest_cli.main, pc_path, "-o", listing)
    assert code == 0
    code, doc = run(digest_cli.main, wkw_path, "--check", listing, "--json")
    assert code == 0, doc
