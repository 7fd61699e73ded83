"""``wkw-viewer digest``: digests of decoded voxels per 64^3 region, equal across re-encodings
and chunkings, naming the one region where a voxel changed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from viewer.cli import digest as digest_cli
from viewer.core import digest
from viewer.format import wkw


def _data(shape: tuple[int, int, int], dtype: str = "uint16", seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1000, shape).astype(dtype)


def _write(root: Path, data: np.ndarray, block_type: int, block_len: int, file_len: int,
           offset: tuple[int, int, int] = (0, 0, 0)) -> Path:
    header = wkw.Header(data.dtype, block_len=block_len, file_len=file_len,
                        block_type=block_type)
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write(offset, data)
    return root


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``wkw-viewer digest`` in a process of its own (the program's entry point)."""
    return subprocess.run([sys.executable, "-m", "viewer", "digest", *args],
                          capture_output=True, text=True, timeout=300)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``wkw-viewer digest`` through the command line's ``main`` in this process (the
    command's work and exit status without a child's start-up): status and stdout."""
    from viewer.cli import main

    capsys.readouterr()
    code = main(["digest", *args])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    """The same voxels (150 x 100 x 70, starting at 10, 0, 5) as LZ4HC in 8^3 blocks of
    32^3-voxel files, and raw in 16^3 blocks of 64^3-voxel files: other chunking, other
    extent (each the box of its files)."""
    base = tmp_path_factory.mktemp("digest")
    data = _data((150, 100, 70))
    a = _write(base / "lz4hc", data, wkw.BLOCK_TYPE_LZ4HC, 8, 4, (10, 0, 5))
    b = _write(base / "raw", data, wkw.BLOCK_TYPE_RAW, 16, 4, (10, 0, 5))
    return a, b, data


def test_a_re_encoding_in_other_chunks_has_the_same_digests(
        pair: tuple[Path, Path, np.ndarray], tmp_path: Path) -> None:
    a, b, _ = pair
    listing = tmp_path / "a.txt"
    run = _cli(str(a), "-o", str(listing))
    assert run.returncode == 0, run.stderr
    run = _cli("--check", str(listing), str(b))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all regions match" in run.stdout
    with wkw.Dataset.open(a) as da, wkw.Dataset.open(b) as db:
        assert da.header.block_len != db.header.block_len
    la, lb = (digest.compute(digest_cli.open_for_digest(str(p), None, None)) for p in (a, b))
    assert la.shape != lb.shape  # the extents differ (the box of each one's files) ...
    assert digest.check(la, lb).equal  # ... the voxels do not


def test_one_changed_voxel_is_named_by_its_region(pair: tuple[Path, Path, np.ndarray],
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    a, _, data = pair
    changed = data.copy()
    changed[100, 70, 60] += 1  # dataset voxel (110, 70, 65): region (64, 64, 64)
    c = _write(tmp_path / "changed", changed, wkw.BLOCK_TYPE_LZ4, 8, 4, (10, 0, 5))
    listing = tmp_path / "a.json"
    code, _ = _run(capsys, str(a), "--json", "-o", str(listing))
    assert code == 0
    code, out = _run(capsys, "--check", str(listing), str(c), "--json")
    assert code == 1
    report = json.loads(out)
    assert report["equal"] is False and report["differing"] == [[64, 64, 64]]
    _, out = _run(capsys, "--check", str(listing), str(c))
    assert "region 64,64,64 (64^3 voxels from there) differs" in out


def test_cannot_open_is_exit_2(pair: tuple[Path, Path, np.ndarray], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    a, _, _ = pair
    assert _run(capsys, str(tmp_path / "missing"))[0] == 2
    (tmp_path / "junk.txt").write_text("not a digest list\n")
    assert _run(capsys, "--check", str(tmp_path / "junk.txt"), str(a))[0] == 2
    assert _run(capsys, "--check", str(tmp_path / "none.txt"), str(a))[0] == 2


def test_the_digest_is_of_the_documented_bytes() -> None:
    """A region's digest is BLAKE2b-128 of the version, dtype, channels and grid, then its
    voxels channel by channel, z, y, x fastest, little-endian, zeros outside the extent: any
    program can recompute it."""
    data = _data((2, 70, 64, 3), "uint16").reshape(2, 70, 64, 3)

    class Toy:  # any object with dtype, num_channels, shape, origin and read
        dtype = np.dtype(">u2")  # big-endian data hash like little-endian data
        num_channels = 2
        shape = (70, 64, 3)
        origin = (0, 0, 0)

        def read(self, offset, shape):  # type: ignore[no-untyped-def]
            sl = tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))
            return data[(slice(None), *sl)].astype(">u2")

    found = digest.compute(Toy(), workers=1)
    assert sorted(found.regions) == [(0, 0, 0), (64, 0, 0)]
    region = np.zeros((2, 64, 64, 64), dtype="<u2")
    region[:, :6, :64, :3] = data[:, 64:70]
    h = hashlib.blake2b(digest_size=16)
    h.update(b"wkw-viewer digest v1|<u2|2|64|")
    h.update(np.ascontiguousarray(region.transpose(0, 3, 2, 1)).tobytes())
    assert found.regions[(64, 0, 0)] == h.hexdigest()
    text = __import__("io").StringIO()
    found.write_text(text)
    assert digest.DigestList.parse(text.getvalue()).regions == found.regions
    assert digest.DigestList.parse(json.dumps(found.to_json())).regions == found.regions


def test_a_damaged_block_makes_its_region_unreadable(tmp_path: Path) -> None:
    data = _data((64, 64, 128))
    a = _write(tmp_path / "a", data, wkw.BLOCK_TYPE_LZ4, 8, 8)
    listing = tmp_path / "a.txt"
    assert _cli(str(a), "-o", str(listing)).returncode == 0
    path = a / "z1" / "y0" / "x0.wkw"
    raw = bytearray(path.read_bytes())
    with wkw.File.open(path) as f:
        start = int(f.block_ranges()[0][5])
    raw[start:start + 16] = b"\xff" * 16
    path.write_bytes(bytes(raw))
    run = _cli("--check", str(listing), str(a))
    assert run.returncode == 1
    assert "region 0,0,64 cannot be read" in run.stdout
