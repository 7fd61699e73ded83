"""N5 reads through the native chunk kernel against the Python path: the same voxels (data
written by tensorstore and z5py, big-endian types, padded and truncated edge chunks) and the
same error, word for word, for every damaged chunk (bytes deleted inside the stream, the gzip
trailer's CRC32 and length, zlib's Adler-32; headers that disagree with the dataset; a file
missing, a folder where a chunk file should be, a file just written).  On a local disk the
kernel reads the chunk files too: the racy window is shortened to nothing here (both paths
read it from ``handles``), so that a file just damaged is read by the kernel, not left to the
Python path as a file still being written.  The kernel's cases skip where it was not built
or libdeflate is absent."""

from __future__ import annotations

import gzip
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from n5_writers import source, write_tensorstore, write_z5py

from viewer.format import FormatError, handles, open_volume
from viewer.format.n5 import nativeread
from viewer.format.native import chunks

pytest.importorskip("tensorstore", reason="tensorstore (the test extra) is not installed")
needs_kernel = pytest.mark.skipif(not chunks.usable(chunks.GZIP_MEMBERS),
                                  reason="native kernel or libdeflate absent")

SHAPE = (40, 24, 20)
BLOCK = (16, 8, 8)
BOXES = [((0, 0, 0), SHAPE), ((3, 5, 7), (30, 1, 9)), ((0, 0, 13), (40, 24, 1)),
         ((33, 17, 12), (10, 10, 10)), ((17, 0, 0), (1, 24, 20))]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("n5native")
    arrays = {"uint8": source(SHAPE, "uint8", seed=3), "int16": source(SHAPE, "int16", seed=4),
              "float64": source(SHAPE, "float64", seed=5)}
    for name, arr in arrays.items():
        write_tensorstore(root / f"ts-gzip-{name}", arr, BLOCK, {"type": "gzip"})
    write_tensorstore(root / "ts-zlib-int16", arrays["int16"], BLOCK,
                      {"type": "gzip", "useZlib": True})
    write_tensorstore(root / "ts-raw-int16", arrays["int16"], BLOCK, {"type": "raw"})
    try:
        write_z5py(root / "z5.n5", "gzip-uint16", source(SHAPE, "uint16", seed=6), BLOCK,
                   "gzip")
        arrays["z5"] = np.asarray(open_volume(root / "z5.n5" / "gzip-uint16").read(
            (0, 0, 0), SHAPE)[0])
    except ImportError:
        pass
    return root, arrays


@pytest.fixture(autouse=True)
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> dict[int, int]:
    """No racy window, and the statuses of the chunk files the kernel read (by status)."""
    monkeypatch.setattr(handles, "RACY_WINDOW_NS", 0)
    monkeypatch.setattr(handles, "COARSE_WINDOW_NS", 0)
    seen: dict[int, int] = {}
    read = chunks.read_n5_files

    def spy(*args: Any) -> Any:
        status = read(*args)
        for s in status.tolist():
            seen[s] = seen.get(s, 0) + 1
        return status

    monkeypatch.setattr(chunks, "read_n5_files", spy)
    return seen


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, lo: Any, size: Any
          ) -> tuple[Any, Any]:
    """The read with the kernel and without: each an array or the error raised."""
    got: list[Any] = []
    for enabled in (True, False):
        monkeypatch.setattr(nativeread, "ENABLED", enabled)
        try:
            got.append(open_volume(path).read(lo, size))
        except FormatError as exc:
            got.append(exc)
    return got[0], got[1]


@needs_kernel
@pytest.mark.parametrize("name", ["ts-gzip-uint8", "ts-gzip-int16", "ts-gzip-float64",
                                  "ts-zlib-int16", "ts-raw-int16", "z5"])
def test_kernel_reads_the_voxels_the_python_path_reads(
        written: tuple[Path, dict[str, Any]], name: str, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    root, arrays = written
    if name == "z5":
        if "z5" not in arrays:
            pytest.skip("z5py is not installed")
        path, want = root / "z5.n5" / "gzip-uint16", arrays["z5"]
    else:
        path, want = root / name, arrays[name.split("-")[-1]]
    for lo, size in BOXES:
        native, python = _both(path, monkeypatch, lo, size)
        assert native.dtype == python.dtype == want.dtype.newbyteorder("=")
        np.testing.assert_array_equal(native, python)
        hi = [min(a + b, s) for a, b, s in zip(lo, size, SHAPE, strict=True)]
        np.testing.assert_array_equal(native[0, :hi[0] - lo[0], :hi[1] - lo[1], :hi[2] - lo[2]],
                                      want[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]])


def _delete14(raw: bytes) -> bytes:
    mid = 16 + (len(raw) - 16) // 2
    return raw[:mid] + raw[mid + 14:]


def _flip(back: int) -> Any:
    def damage(raw: bytes) -> bytes:
        i = len(raw) - back
        return raw[:i] + bytes([raw[i] ^ 0x5A]) + raw[i + 1:]
    return damage


@needs_kernel
@pytest.mark.parametrize("comp", ["gzip-int16", "zlib-int16"])
@pytest.mark.parametrize("damage", ["deleted-14", "trailer-crc", "trailer-length", "cut"])
def test_a_damaged_chunk_is_the_same_error_on_both_paths(
        written: tuple[Path, dict[str, Any]], tmp_path: Path, comp: str, damage: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = written
    path = tmp_path / comp
    shutil.copytree(root / f"ts-{comp}", path)
    f = path / "1" / "1" / "0"
    raw = f.read_bytes()
    damaged = {"deleted-14": _delete14, "trailer-crc": _flip(7), "trailer-length": _flip(2),
               "cut": lambda r: r[:-9]}[damage](raw)
    f.write_bytes(damaged)
    # a thin plane at the chunk's start: a decoder that stopped there would not see the damage
    for lo, size in (((16, 8, 0), (16, 8, 1)), ((0, 0, 0), SHAPE)):
        native, python = _both(path, monkeypatch, lo, size)
        assert isinstance(native, FormatError), f"{damage}: the kernel returned voxels"
        assert type(native) is type(python)
        assert (str(native), native.chunk, native.path, native.offset) == \
            (str(python), python.chunk, python.path, python.offset)
        assert native.chunk == (1, 1, 0)


@needs_kernel
def test_a_stream_the_kernel_leaves_to_python_is_read_there(
        written: tuple[Path, dict[str, Any]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip member whose header carries its own CRC (FHCRC) is decoded by zlib on the
    Python path, and its voxels are the ones stored; one whose header CRC is wrong is an
    error on both paths."""
    root, arrays = written
    path = tmp_path / "fhcrc"
    shutil.copytree(root / "ts-gzip-int16", path)
    f = path / "0" / "0" / "0"
    raw = f.read_bytes()
    head, member = raw[:16], gzip.decompress(raw[16:])
    body = gzip.compress(member, mtime=0)
    flagged = bytearray(body[:10])
    flagged[3] |= 0x02
    crc = struct.pack("<H", __import__("zlib").crc32(bytes(flagged)) & 0xFFFF)
    f.write_bytes(head + bytes(flagged) + crc + body[10:])
    native, python = _both(path, monkeypatch, (0, 0, 0), BLOCK)
    np.testing.assert_array_equal(native, python)
    np.testing.assert_array_equal(native[0], arrays["int16"][:16, :8, :8])
    f.write_bytes(head + bytes(flagged) + bytes([crc[0] ^ 1, crc[1]]) + body[10:])
    native, python = _both(path, monkeypatch, (0, 0, 0), BLOCK)
    assert isinstance(native, FormatError) and str(native) == str(python)


@needs_kernel
def test_every_damaged_chunk_of_a_read_is_found_and_the_first_raised(
        written: tuple[Path, dict[str, Any]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = written
    path = tmp_path / "two"
    shutil.copytree(root / "ts-gzip-uint8", path)
    for rel in ("2/0/1", "0/2/1"):
        f = path / rel
        f.write_bytes(_flip(7)(f.read_bytes()))
    native, python = _both(path, monkeypatch, (0, 0, 0), SHAPE)
    assert isinstance(native, FormatError) and str(native) == str(python)


@needs_kernel
@pytest.mark.parametrize("name", ["ts-gzip-int16", "ts-zlib-int16", "ts-raw-int16",
                                  "z5.n5/gzip-uint16"])
def test_small_units_decode_the_same_chunks_and_errors(
        written: tuple[Path, dict[str, Any]], tmp_path: Path, name: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader's path (``read_units``: whole chunks, an edge chunk padded with the fill
    value: z5py stores edge chunks truncated), one damaged chunk among them."""
    root, arrays = written
    if name.startswith("z5") and "z5" not in arrays:
        pytest.skip("z5py is not installed")
    path = tmp_path / "copy"
    shutil.copytree(root / name, path)
    f = path / "1" / "1" / "0"
    f.write_bytes(_flip(7)(f.read_bytes()) if "raw" not in name else f.read_bytes()[:-3])
    jobs = [((i, j, k), [0]) for i in range(3) for j in range(3) for k in range(3)]
    got: list[Any] = []
    for enabled in (True, False):
        monkeypatch.setattr(nativeread, "ENABLED", enabled)
        got.append(open_volume(path).read_units(jobs))
    for native, python in zip(*got, strict=True):
        if native is None or python is None:
            assert native is python
            continue
        (a,), (b,) = native, python
        if isinstance(b, FormatError):
            assert type(a) is type(b) and str(a) == str(b)
        else:
            assert isinstance(a, np.ndarray) and a.flags.f_contiguous
            np.testing.assert_array_equal(a, b)
    assert any(isinstance(r, list) and isinstance(r[0], FormatError) for r in got[0])


needs_files = pytest.mark.skipif(not chunks.reads_n5_files(),
                                 reason="the kernel does not read N5 chunk files")


def _header(raw: bytes, mode: int | None = None, dims: tuple[int, ...] | None = None,
            ndim: int | None = None, count: int | None = None) -> bytes:
    """The chunk file ``raw`` (a default-mode header of three axes) with its header changed."""
    old = struct.unpack_from(">3I", raw, 4)
    dims = dims if dims is not None else old
    head = struct.pack(">HH", 0 if mode is None else mode, len(dims) if ndim is None else ndim)
    head += struct.pack(f">{len(dims)}I", *dims)
    if mode == 1:
        head += struct.pack(">I", count if count is not None else int(np.prod(dims)))
    return head + raw[16:]


@needs_kernel
@needs_files
def test_the_kernel_reads_the_files_itself(written: tuple[Path, dict[str, Any]],
                                            settled_at_once: dict[int, int],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole read of settled files: every chunk file read, checked and decoded by the
    kernel (none left to the Python path; the chunks tensorstore did not write are absent)."""
    root, arrays = written
    native, python = _both(root / "ts-gzip-int16", monkeypatch, (0, 0, 0), SHAPE)
    np.testing.assert_array_equal(native, python)
    assert set(settled_at_once) == {chunks.OK, chunks.ABSENT}


@needs_kernel
@needs_files
@pytest.mark.parametrize("change", ["none", "varlength", "cut-2", "extra-2", "cut-header"])
def test_a_raw_chunk_read_in_part_is_checked_whole(
        written: tuple[Path, dict[str, Any]], tmp_path: Path, change: str,
        settled_at_once: dict[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A raw chunk carries no checksum: the kernel reads its header and only the bytes a
    box needs (one slice for an XY plane), but the file's size must still be the header's
    block, so a file cut or grown past the slice read is the same error on both paths, and
    a varlength header (four bytes longer) moves the slice read with it."""
    root, arrays = written
    path = tmp_path / change
    shutil.copytree(root / "ts-raw-int16", path)
    f = path / "1" / "1" / "0"
    raw = f.read_bytes()
    f.write_bytes({"none": raw, "varlength": _header(raw, mode=1), "cut-2": raw[:-2],
                   "extra-2": raw + b"\0\0", "cut-header": raw[:14]}[change])
    want = arrays["int16"]
    # XY planes at the chunk's first and last slice, an XZ and a YZ plane through it
    for lo, size in (((16, 8, 0), (16, 8, 1)), ((0, 0, 7), (40, 24, 1)),
                     ((10, 12, 0), (30, 1, 20)), ((20, 0, 0), (1, 24, 20))):
        settled_at_once.clear()
        native, python = _both(path, monkeypatch, lo, size)
        if change in ("none", "varlength"):
            assert set(settled_at_once) == {chunks.OK}, "the kernel left a file it reads"
            np.testing.assert_array_equal(native, python)
            hi = [a + b for a, b in zip(lo, size, strict=True)]
            np.testing.assert_array_equal(native[0], want[lo[0]:hi[0], lo[1]:hi[1],
                                                          lo[2]:hi[2]])
        else:
            assert isinstance(native, FormatError), f"{change}: the kernel returned voxels"
            assert type(native) is type(python) and str(native) == str(python)
            assert native.chunk == (1, 1, 0)


@needs_kernel
@needs_files
@pytest.mark.parametrize("damage", [
    "mode-object", "mode-unknown", "ndim", "ndim-zero", "dims", "varlength-count",
    "header-cut", "empty", "folder", "missing", "varlength-ok"])
def test_a_chunk_file_the_kernel_leaves_is_the_same_on_both_paths(
        written: tuple[Path, dict[str, Any]], tmp_path: Path, damage: str,
        settled_at_once: dict[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Headers that disagree with the dataset, a short file, a folder at a chunk file's path,
    a missing file: the same voxels or the same error, word for word, on both paths."""
    root, arrays = written
    path = tmp_path / damage
    shutil.copytree(root / "ts-gzip-int16", path)
    f = path / "1" / "1" / "0"
    raw = f.read_bytes()
    changed: dict[str, Callable[[], bytes]] = {
               "mode-object": lambda: struct.pack(">HI", 2, 5) + raw[16:],
               "mode-unknown": lambda: _header(raw, mode=7),
               "ndim": lambda: _header(raw, dims=(16, 8, 8, 1)),
               "ndim-zero": lambda: _header(raw, ndim=0),
               "dims": lambda: _header(raw, dims=(16, 8, 4)),
               "varlength-count": lambda: _header(raw, mode=1, count=5),
               "varlength-ok": lambda: _header(raw, mode=1),
               "header-cut": lambda: raw[:10],
               "empty": lambda: b""}
    if damage == "folder":
        f.unlink()
        f.mkdir()
    elif damage == "missing":
        f.unlink()
    else:
        f.write_bytes(changed[damage]())
    for lo, size in (((16, 8, 0), (16, 8, 1)), ((0, 0, 0), SHAPE)):
        native, python = _both(path, monkeypatch, lo, size)
        if isinstance(python, FormatError):
            assert type(native) is type(python)
            assert (str(native), native.chunk, native.path, native.offset) == \
                (str(python), python.chunk, python.path, python.offset)
        else:
            np.testing.assert_array_equal(native, python)
    if damage in ("missing", "varlength-ok"):
        assert not isinstance(python, FormatError)
        want = arrays["int16"].copy()
        if damage == "missing":
            want[16:32, 8:16, 0:8] = 0
        np.testing.assert_array_equal(python[0], want)
        assert chunks.UNREAD not in settled_at_once
        assert (chunks.ABSENT in settled_at_once) == (damage == "missing") or \
            damage == "varlength-ok"
    else:
        assert chunks.UNREAD in settled_at_once


@needs_kernel
@needs_files
def test_a_file_just_written_is_left_to_the_python_path(
        written: tuple[Path, dict[str, Any]], tmp_path: Path,
        settled_at_once: dict[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A file modified within the racy window is not read by the kernel: the Python path
    waits for it to settle and reads it, the same voxels."""
    root, arrays = written
    monkeypatch.setattr(handles, "RACY_WINDOW_NS", 50_000_000)
    path = tmp_path / "fresh"
    shutil.copytree(root / "ts-gzip-int16", path)
    f = path / "0" / "0" / "0"
    f.write_bytes(f.read_bytes())
    monkeypatch.setattr(nativeread, "ENABLED", True)
    got = open_volume(path).read((0, 0, 0), BLOCK)
    np.testing.assert_array_equal(got[0], arrays["int16"][:16, :8, :8])
    assert settled_at_once == {chunks.UNREAD: 1}
