"""Writers of N5 test data by other tools: the N5 Java way with the real Java streams
(``java/WriteN5.java``: lz4-java, Apache Commons Compress, XZ for Java), tensorstore and z5py.

Arrays are ``(X, Y, Z)`` with X = N5's ``dimensions[0]``.  Each writer is skipped with its
reason where the tool is missing (CI installs all of them: the test extra and ``.ci/run``)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).parent
JAVA_SOURCE = HERE / "java" / "WriteN5.java"
JARS = [Path("/usr/share/java") / n for n in ("lz4-java.jar", "commons-compress.jar", "xz.jar")]


def source(shape: tuple[int, int, int], dtype: str, seed: int = 0,
           empty_corner: bool = True) -> Any:
    """Test data: noise over a few smooth values (so every compression has something to
    do), with the low-x, low-y, high-z corner zero (absent chunks when a writer skips empty
    ones)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        arr = rng.normal(0, 100, shape).astype(dt)
    else:
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -1000), min(int(info.max), 5000)
        base = rng.integers(lo, hi, size=shape, endpoint=True)
        arr = np.where(rng.random(shape) < 0.6, base // 7 * 7, base).astype(dt)
        if dt.itemsize == 8:  # reach the high bytes too
            arr[0, 0, 0] = info.max
            arr[1, 0, 0] = info.min
    if empty_corner:
        arr[: shape[0] // 2, : shape[1] // 2, shape[2] // 2:] = 0
    return arr


def java_missing() -> str | None:
    """Why the Java writer cannot run here, or None."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        return "no JDK (javac): apt-get install default-jdk-headless"
    missing = [str(j) for j in JARS if not j.exists()]
    if missing:
        return ("missing " + ", ".join(missing) + ": apt-get install liblz4-java "
                "libcommons-compress-java libxz-java")
    return None


def write_java(workdir: Path, jobs: list[dict[str, Any]]) -> None:
    """Compile WriteN5.java into ``workdir`` and run it once for all ``jobs``: dicts with
    ``array`` (X, Y, Z), ``out``, ``block``, ``compression``, ``param`` and ``mode``."""
    classes = workdir / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    cp = ":".join(str(j) for j in JARS)
    subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes), str(JAVA_SOURCE)],
                   check=True, capture_output=True, timeout=120)
    lines = []
    for n, job in enumerate(jobs):
        arr = job["array"]
        raw = workdir / f"input{n}.raw"
        raw.write_bytes(arr.astype(arr.dtype.newbyteorder(">")).tobytes(order="F"))
        lines.append(" ".join([str(raw), str(job["out"]), arr.dtype.name,
                               ",".join(map(str, arr.shape)),
                               ",".join(map(str, job["block"])), job["compression"],
                               str(job["param"]), job.get("mode", "default")]))
    jobs_file = workdir / "jobs.txt"
    jobs_file.write_text("\n".join(lines) + "\n")
    subprocess.run(["java", "-Djava.library.path=/usr/lib/x86_64-linux-gnu/jni", "-cp",
                    f"{classes}:{cp}", "WriteN5", str(jobs_file)], check=True,
                   capture_output=True, timeout=300)


def write_tensorstore(path: Path, arr: Any, block: tuple[int, ...],
                      compression: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
    """An N5 dataset written by tensorstore (edge chunks padded to the full block)."""
    import tensorstore as ts

    meta = {"dimensions": list(arr.shape), "blockSize": list(block),
            "dataType": arr.dtype.name, "compression": compression}
    t = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)},
                 "metadata": meta, "create": True, "delete_existing": True}).result()
    t[...] = arr
    if extra:
        attrs_path = Path(path) / "attributes.json"
        attrs = json.loads(attrs_path.read_text())
        attrs.update(extra)
        attrs_path.write_text(json.dumps(attrs))


def write_z5py(container: Path, name: str, arr: Any, block: tuple[int, int, int],
               compression: str) -> Path:
    """An N5 dataset written by z5py (C order: it is handed the array as (Z, Y, X))."""
    import z5py

    f = z5py.File(str(container), mode="a", use_zarr_format=False)
    ds = f.create_dataset(name, shape=arr.shape[::-1], chunks=block[::-1], dtype=arr.dtype,
                          compression=compression)
    ds[...] = np.ascontiguousarray(arr.T)
    return Path(container) / name


def lz4java_frames(payload: bytes) -> list[tuple[int, int, int]]:
    """``(token, compressed, original)`` of each frame of an lz4-java stream, the end frame
    included: read here with struct, apart from the reader under test."""
    out = []
    pos = 0
    while True:
        assert payload[pos:pos + 8] == b"LZ4Block"
        token = payload[pos + 8]
        comp, orig = struct.unpack("<ii", payload[pos + 9:pos + 17])
        out.append((token, comp, orig))
        pos += 21 + comp
        if comp == 0 and orig == 0:
            return out


def chunk_files(root: Path) -> dict[tuple[int, int, int], int]:
    """``{(i, j, k): file size}`` of the chunk files under a 3-D dataset folder."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f == "attributes.json":
                continue
            rel = Path(dirpath, f).relative_to(root).parts
            out[(int(rel[0]), int(rel[1]), int(rel[2]))] = Path(dirpath, f).stat().st_size
    return out
