"""``wkw-viewer digest`` proves a conversion: a WKW LZ4HC mag and its sharded zarr3 conversion
(webKnossos' layout, written by tensorstore) check equal region by region; one voxel changed in
the copy is named as exactly its 64^3 region."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
import zarr_test_fixtures as fixtures

from viewer.cli import digest as digest_cli
from viewer.format import wkw

pytest.importorskip("tensorstore")


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = digest_cli.main(list(args))
    return code, out.getvalue()


def test_wkw_and_its_zarr3_conversion_digest_equal(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    data = rng.integers(0, 250, (128, 96, 64)).astype(np.uint8)
    mag = tmp_path / "wkw"
    header = wkw.Header(np.uint8, block_len=32, file_len=2, block_type=wkw.BLOCK_TYPE_LZ4HC)
    with wkw.Dataset.create(str(mag), header) as ds:
        ds.write((0, 0, 0), data)
    z3 = Path(fixtures.wkw_to_zarr3(mag, tmp_path / "z3", shard_len=64, chunk_len=32,
                                    bounds=((0, 0, 0), (128, 96, 64))))
    listing = tmp_path / "wkw.digest.json"
    code, _ = run(str(mag), "-o", str(listing))
    assert code == 0
    code, text = run(str(z3), "--check", str(listing), "--json")
    assert code == 0, text
    # one voxel changed in the zarr3 copy: its region, and only it
    import tensorstore as ts

    arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(z3)}}).result()
    index = [0, 70, 33, 5] if arr.rank == 4 else [70, 33, 5]
    old = int(arr[tuple(index)].read().result())
    arr[tuple(index)].write(np.uint8((old + 1) % 256)).result()
    code, text = run(str(z3), "--check", str(listing), "--json")
    assert code == 1
    doc = json.loads(text)
    assert doc["differing"] == [[64, 0, 0]], doc
