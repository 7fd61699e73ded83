"""The batched structure check (``Volume.sound_units``, ``info --quick`` on many small units)
gives exactly the answers of the one-by-one check: on datasets written by the reference
``wkw``, with files damaged in every way the structure check knows (and some it cannot see),
the reports of ``check_batch`` equal those of ``check_unit`` field for field, no damaged file
is ever taken as sound, and ``info``'s whole output is the same with the batch turned off."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import wkw as reference
from small_units import info_output

from viewer.cli.units import SoundRun, UnitReport, check_batch, check_unit
from viewer.core import inspect
from viewer.format import Volume, fileheads, handles, open_volume
from viewer.format.wkw.volume import WkwVolume

U64 = 1 << 64


def _le(value: int) -> bytes:
    return (value % U64).to_bytes(8, "little")


def _patch(path: str, offset: int, payload: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(payload)


def _one_block_damages(path: str, size: int) -> dict[str, Any]:
    """Ways to damage a one-block LZ4 file (header 16 bytes, one table entry, the block)."""
    def replace_by_folder() -> None:
        os.remove(path)
        os.mkdir(path)

    return {
        "magic": lambda: _patch(path, 0, b"WKX"),
        "version": lambda: _patch(path, 3, b"\x02"),
        "block_type": lambda: _patch(path, 5, b"\x03"),
        "voxel_type": lambda: _patch(path, 6, b"\x02"),
        "data_offset": lambda: _patch(path, 8, _le(32)),
        "end_past_eof": lambda: _patch(path, 16, _le(size + 5)),
        "end_before_start": lambda: _patch(path, 16, _le(20)),
        "zero_length": lambda: _patch(path, 16, _le(24)),
        "huge_entry": lambda: _patch(path, 16, _le((1 << 63) + 24)),
        "trailing": lambda: open(path, "ab").write(b"xx"),
        "cut_in_table": lambda: os.truncate(path, 20),
        "only_header": lambda: os.truncate(path, 16),
        "empty": lambda: os.truncate(path, 0),
        "folder": replace_by_folder,
    }


def _settle() -> None:
    """Let the files age past the racy window (a file changed a moment ago is never taken as
    sound by the batch: it is read the ordinary way, which waits)."""
    time.sleep(handles.RACY_WINDOW_NS / 1e9 + 0.05)


def _write(root: Path, file_len: int, block_type: int, shape: tuple[int, int, int]) -> None:
    header = reference.Header(np.uint8, block_len=8, file_len=file_len, block_type=block_type)
    rng = np.random.default_rng(file_len * 10 + block_type)
    with reference.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), rng.integers(0, 6, (1, *shape), dtype=np.uint8))


@pytest.fixture(scope="module")
def one_block(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, set[str]]:
    """4 x 5 x 2 one-block LZ4 files by the reference ``wkw``; one file per damage of
    ``_one_block_damages``, and one whose block is garbled (invisible to a structure check)."""
    root = tmp_path_factory.mktemp("quick") / "one"
    _write(root, 1, reference.Header.BLOCK_TYPE_LZ4, (32, 40, 16))
    files = sorted(str(p) for p in root.glob("z*/y*/x*.wkw"))
    damaged = set()
    names = list(_one_block_damages(files[0], 0))
    for k, name in enumerate(names):
        path = files[2 * k + 1]
        _one_block_damages(path, os.path.getsize(path))[name]()
        damaged.add(path)
    with open(files[-1], "r+b") as fh:  # the block's bytes: only decoding would tell
        fh.seek(30)
        fh.write(b"\xff" * 8)
    _settle()
    return str(root), damaged


@pytest.fixture(scope="module")
def eight_blocks(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, set[str]]:
    """LZ4HC files of 2^3 blocks; table entries damaged in the middle and at the end."""
    root = tmp_path_factory.mktemp("quick") / "eight"
    _write(root, 2, reference.Header.BLOCK_TYPE_LZ4HC, (48, 32, 16))
    files = sorted(str(p) for p in root.glob("z*/y*/x*.wkw"))
    with open(files[1], "rb") as fh:
        raw = fh.read()
    table = np.frombuffer(raw[16:16 + 64], "<u8").astype(np.int64)
    _patch(files[1], 16 + 8 * 3, _le(int(table[1])))  # block 3 ends before it starts
    _patch(files[3], 16 + 8 * 7, _le(int(table[7]) - 1))  # one byte after the last block
    _patch(files[5], 16 + 8 * 4, _le(int(table[4]) + 10**9))  # past the end
    _settle()
    return str(root), {files[1], files[3], files[5]}


@pytest.fixture(scope="module")
def raw_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, set[str]]:
    """Raw files of 2^3 blocks; one cut short, one with bytes after its blocks."""
    root = tmp_path_factory.mktemp("quick") / "raw"
    _write(root, 2, reference.Header.BLOCK_TYPE_RAW, (32, 32, 16))
    files = sorted(str(p) for p in root.glob("z*/y*/x*.wkw"))
    os.truncate(files[0], os.path.getsize(files[0]) - 1)
    with open(files[2], "ab") as fh:
        fh.write(b"\0" * 7)
    _settle()
    return str(root), {files[0]}


def _one_by_one(volume: Volume, positions: list[Any], facts: inspect.VolumeFacts
                ) -> list[UnitReport]:
    found = (check_unit(volume, p, facts, False, True) for p in positions)
    return [r for r in found if r is not None]


def _flat(batch: list[UnitReport | SoundRun]) -> tuple[list[dict[str, Any]], list[Any],
                                                      set[str]]:
    """Fields per unit, chunk records per unit, and the paths taken as sound."""
    fields: list[dict[str, Any]] = []
    chunks: list[Any] = []
    sound: set[str] = set()
    for item in batch:
        if isinstance(item, SoundRun):
            fields.extend(item.fields())
            per = item.sizes.shape[1]
            chunks.extend(item.chunks[k * per:(k + 1) * per].tolist() for k in range(len(item)))
            sound.update(item.paths)
        else:
            fields.append(item.fields)
            chunks.append(item.chunks.tolist())
    return fields, chunks, sound


@pytest.mark.parametrize("name", ["one_block", "eight_blocks", "raw_files"])
def test_batch_reports_equal_the_one_by_one_check(name: str, request: pytest.FixtureRequest
                                                  ) -> None:
    root, damaged = request.getfixturevalue(name)
    volume = open_volume(root)
    try:
        facts = inspect.VolumeFacts.of(volume)
        positions = list(volume.iter_units())
        batch = check_batch(volume, positions, facts, decode=False, list_chunks=True)
        fields, chunks, sound = _flat(batch)
        one = _one_by_one(volume, positions, facts)
    finally:
        volume.close()
    assert fields == [r.fields for r in one]
    assert chunks == [r.chunks.tolist() for r in one]
    assert not sound & damaged  # never a damaged file
    assert sound  # the sound files went the batched way
    flagged = {f["path"] for f in fields if f["problems"]}
    assert flagged == damaged
    assert sound == {f["path"] for f in fields} - damaged


@pytest.mark.parametrize("flags", [("--json", "--chunks"), (), ("--json", "--threads", "2")])
def test_info_quick_prints_what_the_one_by_one_check_prints(
        one_block: tuple[str, set[str]], monkeypatch: pytest.MonkeyPatch,
        flags: tuple[str, ...]) -> None:
    root, _ = one_block
    batched = info_output(root, "--quick", *flags)
    monkeypatch.setattr(WkwVolume, "sound_units", Volume.sound_units)
    assert info_output(root, "--quick", *flags) == batched
    assert batched[0] == 1


@pytest.mark.parametrize("use_native", [
    pytest.param(True, marks=pytest.mark.skipif(not fileheads.native(),
                                                reason="native helper not built")),
    False])
def test_read_heads(tmp_path: Path, use_native: bool) -> None:
    (tmp_path / "a").write_bytes(b"0123456789")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    paths = [str(tmp_path / n) for n in ("a", "empty", "missing", "folder")]
    heads = fileheads.read_heads(paths, 4, use_native=use_native)
    assert heads.data[0].tobytes() == b"0123" and heads.data[1:].tobytes() == bytes(12)
    st = os.stat(paths[0])
    assert heads.info[0].tolist() == [0, 4, st.st_dev, st.st_ino, 10, st.st_mtime_ns,
                                      st.st_ctime_ns, 0]
    assert heads.info[1, fileheads.GOT] == 0 and heads.info[1, fileheads.SIZE] == 0
    assert heads.info[2, fileheads.ERRNO] == 2  # ENOENT
    assert heads.info[3, fileheads.ERRNO] == 21  # EISDIR, from the read
    assert heads.read.tolist() == [True, True, False, False]


def test_read_heads_native_equals_python(one_block: tuple[str, set[str]]) -> None:
    if not fileheads.native():
        pytest.skip("native helper not built")
    root, _ = one_block
    paths = sorted(str(p) for p in Path(root).glob("z*/y*/x*.wkw")) + [root + "/none"]
    a = fileheads.read_heads(paths, 40)
    b = fileheads.read_heads(paths, 40, use_native=False)
    assert np.array_equal(a.data, b.data) and np.array_equal(a.info, b.info)


def test_settled_follows_the_racy_window() -> None:
    now = 10**19 // 10  # ns
    rows = []
    cases = [(now - 5 * 10**9, now - 5 * 10**9), (now - 10**6, now - 5 * 10**9),
             (now - 5 * 10**9, now - 10**6), (now - 10**9, now - 10**9),  # whole seconds
             (now + 10**10, now + 10**10)]  # dated ahead of this clock
    for mtime, ctime in cases:
        rows.append([0, 0, 0, 0, 0, mtime, ctime, 0])
    heads = fileheads.Heads(np.zeros((len(rows), 0), np.uint8), np.asarray(rows, np.int64))
    expected = []
    for mtime, ctime in cases:
        st = SimpleNamespace(st_mtime_ns=mtime, st_ctime_ns=ctime)
        expected.append(handles.racy_wait_ns(st, now) == 0)  # type: ignore[arg-type]
    assert heads.settled(now).tolist() == expected == [True, False, False, False, True]


def _row(stats: inspect.UnitStats) -> tuple[Any, ...]:
    hist = None if stats.histogram is None else stats.histogram.tolist()
    return (stats.path, stats.position, stats.compression, stats.size_on_disk,
            stats.chunk_count, stats.size_min, repr(stats.size_median), stats.size_max,
            repr(stats.ratio), [str(p) for p in stats.problems], hist, stats.total)


@pytest.mark.parametrize("name", ["one_block", "eight_blocks", "raw_files"])
def test_scan_rows_equal_the_one_by_one_rows(name: str, request: pytest.FixtureRequest) -> None:
    """The inspector's scan (``units_stats``) gives each unit the row ``unit_stats`` gives."""
    root, damaged = request.getfixturevalue(name)
    volume = open_volume(root)
    try:
        facts = inspect.VolumeFacts.of(volume)
        positions = list(volume.iter_units())
        batched = inspect.units_stats(volume, positions, facts)
        one = [inspect.unit_stats(volume, p, facts) for p in positions]
        assert len(volume.sound_units(positions)) == len(positions) - len(damaged)
    finally:
        volume.close()
    assert [_row(r) for r in batched] == [_row(r) for r in one]


def test_forked_workers_never_repeat_what_was_printed(one_block: tuple[str, set[str]]) -> None:
    """With stdout buffered (a pipe, a file), a worker forked after the report's first lines
    were written must not write them again when it ends."""
    import subprocess

    root, _ = one_block
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    outs = []
    for threads in ("1", "2"):
        proc = subprocess.run([sys.executable, "-m", "viewer", "info", "--quick", "--threads",
                               threads, root], capture_output=True, text=True, env=env,
                              cwd=Path(__file__).resolve().parents[2], timeout=300)
        assert proc.returncode == 1, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    assert outs[0].count("storage units:") == 1


def test_n5_detection_reads_few_folders_of_a_wkw_dataset(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a WKW dataset of many folders: the N5 probe (asked first) gives up after
    ``DETECT_PROBES`` child folders instead of reading ``attributes.json`` in each z/y
    folder on the GUI thread."""
    from viewer.format.n5 import entry

    for z in range(12):
        for y in range(30):
            (tmp_path / f"z{z}" / f"y{y}").mkdir(parents=True)
    reads: list[str] = []
    real = entry.read_json

    def counted(store: Any, key: str) -> Any:
        reads.append(key)
        return real(store, key)

    monkeypatch.setattr(entry, "read_json", counted)
    assert entry.detect(str(tmp_path)) is False
    assert 0 < len(reads) <= entry.DETECT_PROBES
