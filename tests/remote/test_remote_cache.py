"""The on-disk range cache cannot lie: a byte flipped in a cached range (of a raw WKW layer,
of an LZ4 one) is found by the range's checksum on the next run, which returns the server's
voxels with no error and replaces the bad range; failures are never cached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from range_server import RangeServer

from viewer import environment
from viewer.format import open_volume
from viewer.format.remote.diskcache import SUFFIX, TRAILER, _read_checked

ROOT = Path(__file__).resolve().parents[2]
#: One run of a program: read the whole volume at a URL (with the settings its environment
#: gives: the program is its own edge) and save it.
RUN = ("import os, sys, numpy; from viewer.environment import read_config; "
       "from viewer.format import open_volume; "
       "v = open_volume(sys.argv[1], config=read_config(os.environ)); "
       "numpy.save(sys.argv[2], v.read((0, 0, 0), v.shape))")


def _run(url: str, out: Path, cache: Path) -> np.ndarray:
    env = {**os.environ, environment.CACHE_DIR_ENV: str(cache),
           environment.TIMEOUT_ENV: "10"}
    done = subprocess.run([sys.executable, "-c", RUN, url, str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return np.load(out)


def _ranges(cache: Path) -> list[Path]:
    """Every cached range's file (either layout: the unchecked one had no suffix)."""
    return sorted(p for p in cache.rglob("*") if p.is_file() and p.name[0].isdigit()
                  and not p.name.endswith(".tmp"))


@pytest.mark.parametrize("name", ["raw", "ds/color/1"])
def test_a_flipped_byte_in_a_cached_range_is_fetched_again(
        data_root: Path, tmp_path: Path, name: str) -> None:
    cache = tmp_path / "shared-cache"
    want = open_volume(data_root / name).read((0, 0, 0), (64, 64, 32))
    with RangeServer(str(data_root)) as srv:
        url = f"{srv.url}/{name}"
        first = _run(url, tmp_path / "a.npy", cache)
        np.testing.assert_array_equal(first[:, :64, :64, :32], want)
        files = _ranges(cache)
        assert files
        flipped: dict[Path, bytes] = {}
        for path in files:  # one byte of every range's data, the block ranges included
            raw = bytearray(path.read_bytes())
            flipped[path] = bytes(raw)
            raw[max(0, len(raw) // 2 - TRAILER)] ^= 0x5A
            path.write_bytes(bytes(raw))
        srv.reset_counts()
        second = _run(url, tmp_path / "b.npy", cache)
        np.testing.assert_array_equal(second, first)  # the server's voxels, no error
        assert srv.requests > 0  # the bad ranges were fetched again
    for path in _ranges(cache):  # every bad range replaced by a sound one
        assert path.name.endswith(SUFFIX)
        start, end = (int(v) for v in path.name[:-len(SUFFIX)].split("-"))
        assert _read_checked(str(path), end - start) is not None, path


def test_a_failed_request_is_not_cached(data_root: Path) -> None:
    from viewer.format.remote import RemoteError, configure
    from viewer.format.remote.store import range_cache

    configure(retries=0)
    with RangeServer(str(data_root)) as srv:
        vol = open_volume(f"{srv.url}/raw")
        shape = vol.shape
        srv.fault_match = "x0.wkw"
        srv.fail_next = 10**6
        with pytest.raises(RemoteError):
            vol.read((0, 0, 0), shape)
        cache = range_cache()
        assert cache is not None and cache.flush(30)
        srv.fail_next = 0
        got = vol.read((0, 0, 0), shape)
    np.testing.assert_array_equal(got, open_volume(data_root / "raw").read((0, 0, 0), shape))


def test_half_written_and_damaged_ranges_are_never_served(tmp_path: Path) -> None:
    """What another process sharing the folder may leave: a range being written (its
    temporary name), a range cut short, a range whose bytes changed: none is served."""
    from viewer.format.remote.diskcache import RangeCache

    url = "http://h/o"
    cache = RangeCache(str(tmp_path / "c"), budget_bytes=10_000)
    for k in range(3):
        cache.put(url, 100 * k, bytes([k + 1]) * 100, size=1000)
    folder = Path(cache._folder(url))
    (folder / f"300-400{SUFFIX}.4242.1.tmp").write_bytes(b"\x07" * 50)  # being written
    cut = folder / f"100-200{SUFFIX}"
    cut.write_bytes(cut.read_bytes()[:60])
    bad = folder / f"200-300{SUFFIX}"
    raw = bytearray(bad.read_bytes())
    raw[10] ^= 1
    bad.write_bytes(bytes(raw))
    later = RangeCache(str(tmp_path / "c"), budget_bytes=10_000)
    assert later.get(url, 0, 100) == b"\x01" * 100
    assert later.get(url, 300, 400) is None and later.get(url, 100, 200) is None
    assert later.get(url, 200, 300) is None and not bad.exists()  # dropped at once
    assert cache.get(url, 200, 300) is None  # this process's index too: its file is bad
