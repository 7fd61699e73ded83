"""A trial of reads racing another process that rewrites a raw WKW file in place, in two
``write`` calls with a short pause between them (a tool writing block by block): between the
two writes the file itself holds a block half old and half new, which no identity check can
tell from data; only the racy-timestamp rule (``viewer.format.handles.settle``) keeps such a
file from being trusted.

Every block of version ``v`` holds one value, ``value(v, block)``, so a read that returns a
block of two versions is seen.  Each read (``wkw.File.read_whole``, a ``wkw.Dataset`` box, a
``Volume.read`` through ``open_volume``, the loader's ``read_units``) must give whole blocks
of either version or a ``FileChangedError`` (``FileChangingError`` when the file kept
changing); ``run_trial`` counts what came out.  With ``http``, every fifth read is a
``Volume.read`` through a range server on 127.0.0.1 that serves the file being rewritten
(sending ``Last-Modified``, as web servers do: the racy-timestamp rule over HTTP).  Used by
``tests/faults/test_racy_rewrite.py`` and ``python -m benchmarks.fuzz --rewrite-reads N``.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np

BLOCK_LEN, FILE_LEN = 8, 2
SIDE = BLOCK_LEN * FILE_LEN

WRITER = textwrap.dedent("""
    import os, random, sys, time
    path, a, b, split, gap, stop = sys.argv[1:7]
    split, gap = int(split), float(gap)
    versions = [open(a, "rb").read(), open(b, "rb").read()]
    rng = random.Random(7)
    end = time.monotonic() + 120  # a bound in case the trial never says stop
    k = 0
    while not os.path.exists(stop) and time.monotonic() < end:
        k += 1
        new = versions[k % 2]
        fd = os.open(path, os.O_WRONLY)
        os.pwrite(fd, new[:split], 0)
        time.sleep(gap)  # the file now holds a torn block
        os.pwrite(fd, new[split:], split)
        os.close(fd)
        time.sleep(rng.uniform(0.05, 0.3))
""")


def value(version: int, block: int) -> int:
    return (version * 89 + block * 11) % 250 + 1


def _version(folder: Path, version: int) -> Path:
    from viewer.format import wkw

    header = wkw.Header(np.uint8, block_len=BLOCK_LEN, file_len=FILE_LEN,
                        block_type=wkw.BLOCK_TYPE_RAW)
    data = np.empty((SIDE, SIDE, SIDE), dtype=np.uint8)
    for index in range(FILE_LEN ** 3):
        x, y, z = (int(c) * BLOCK_LEN for c in wkw.morton.decode(index))
        data[x:x + BLOCK_LEN, y:y + BLOCK_LEN, z:z + BLOCK_LEN] = value(version, index)
    root = folder / f"v{version}"
    with wkw.Dataset.create(str(root), header) as ds:
        ds.write((0, 0, 0), data)
    return root


def _blocks_of_box(box: Any) -> list[tuple[int, Any]]:
    from viewer.format import wkw

    out = []
    for index in range(FILE_LEN ** 3):
        x, y, z = (int(c) * BLOCK_LEN for c in wkw.morton.decode(index))
        out.append((index, box[:, x:x + BLOCK_LEN, y:y + BLOCK_LEN, z:z + BLOCK_LEN]))
    return out


def _read_once(kind: int, root: Path, path: Path, url: str = "") -> list[tuple[int, Any]]:
    """The blocks of the file as one of four paths reads them, or (``kind`` 4) a
    ``Volume.read`` of ``url`` (errors of blocks included)."""
    from viewer.format import open_volume, wkw

    n = FILE_LEN ** 3
    if kind == 4:
        with open_volume(url) as v:
            return _blocks_of_box(v.read((0, 0, 0), (SIDE, SIDE, SIDE)))
    if kind == 0:
        return list(enumerate(wkw.File.read_whole(str(path), range(n))[1]))
    if kind == 1:
        with wkw.Dataset.open(str(root)) as ds:
            return _blocks_of_box(ds.read((0, 0, 0), (SIDE, SIDE, SIDE)))
    with open_volume(root) as v:
        if kind == 2:
            return _blocks_of_box(v.read((0, 0, 0), (SIDE, SIDE, SIDE)))
        [got] = v.read_units([((0, 0, 0), list(range(n)))])
        if got is None or not isinstance(got, list):
            raise got if got is not None else FileNotFoundError(path)
        return list(enumerate(got))


def run_trial(folder: Path, reads: int, seed: int = 1, gap: float = 0.03,
              http: bool = False) -> dict[str, int]:
    """Race ``reads`` reads against a writer process; the counts of what came out:
    ``reads``, ``blocks_ok`` (whole blocks of either version), ``mixed`` (blocks of two
    versions, or of neither), ``changed`` (reads or blocks that were a ``FileChangedError``,
    ``changing`` those of them a ``FileChangingError``), ``other_errors`` (other
    ``FormatError``s) and ``untyped`` (any other exception)."""
    from viewer.format import errors
    from viewer.format.errors import FileChangedError, FormatError

    # the same trial runs against code from before the racy-timestamp rule
    changing: type[Exception] = getattr(errors, "FileChangingError", FileChangedError)

    old, new = _version(folder, 0), _version(folder, 1)
    path = folder / "target" / "z0" / "y0" / "x0.wkw"
    path.parent.mkdir(parents=True)
    (folder / "target" / "header.wkw").write_bytes((old / "header.wkw").read_bytes())
    a, b = old / "z0" / "y0" / "x0.wkw", new / "z0" / "y0" / "x0.wkw"
    path.write_bytes(a.read_bytes())
    size = path.stat().st_size
    block_bytes = BLOCK_LEN ** 3
    split = size - (FILE_LEN ** 3 // 2) * block_bytes - block_bytes // 2  # inside a block
    stop = folder / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(a), str(b),
                               str(split), str(gap), str(stop)])
    counts = {"reads": 0, "blocks_ok": 0, "mixed": 0, "changed": 0, "changing": 0,
              "other_errors": 0, "untyped": 0}
    rng = random.Random(seed)
    server: Any = None
    if http:
        import importlib.util

        from viewer.format.remote import configure

        spec = importlib.util.spec_from_file_location(
            "range_server", Path(__file__).resolve().parents[1] / "remote" / "range_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        configure(cache_bytes=0, retries=0, timeout_s=5)  # no cache: every read asks
        server = module.RangeServer(str(folder)).start()
        server.last_modified = True

    def count_error(exc: FormatError) -> None:
        if isinstance(exc, FileChangedError):
            counts["changed"] += 1
            counts["changing"] += isinstance(exc, changing)
        else:
            counts["other_errors"] += 1

    try:
        time.sleep(0.05)  # the writer is running
        for k in range(reads):
            time.sleep(rng.uniform(0.0, 0.02))
            counts["reads"] += 1
            try:
                blocks = _read_once(k % 5 if http else k % 4, folder / "target", path,
                                    f"{server.url}/target" if http else "")
            except FormatError as exc:
                count_error(exc)
                continue
            except Exception:  # noqa: BLE001 - what the trial counts
                counts["untyped"] += 1
                continue
            for index, block in blocks:
                if isinstance(block, FormatError):
                    count_error(block)
                    continue
                values = np.unique(np.asarray(block))
                if len(values) == 1 and int(values[0]) in (value(0, index), value(1, index)):
                    counts["blocks_ok"] += 1
                else:
                    counts["mixed"] += 1
    finally:
        stop.write_text("")
        writer.wait(timeout=60)
        if server is not None:
            server.stop()
    return counts


__all__ = ["run_trial", "value"]
