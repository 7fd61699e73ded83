"""Fixtures of N5 data written by other tools (see ``n5_writers``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from n5_writers import java_missing, source, write_java
from once import once_per_run

#: Compressions written by the Java program: (name, parameter as N5 Java takes it).
JAVA_COMPRESSIONS = [("raw", 0), ("gzip", 6), ("zlib", 6), ("bzip2", 9), ("xz", 6),
                     ("lz4", 1024), ("lz4", 65536)]
DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
          "float64"]
JAVA_SHAPE = (37, 29, 21)
JAVA_BLOCK = (16, 8, 8)


@pytest.fixture(scope="session")
def java_n5(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Datasets written by WriteN5.java with the real Java streams: ``{name: (path,
    array)}``.  Names: ``<compression>-<param>`` (uint16), ``dtype-<type>`` (lz4, and raw
    for ``dtype-raw-<type>``), ``varlength`` (xz, varlength headers), ``big-lz4``
    (uint8, 64^3 chunks: several 64 KiB frames per chunk).  Compiled and written once for the
    run (the two modules that read them may be on different workers); read-only."""
    reason = java_missing()
    if reason:
        print(f"SKIP Java-written N5 fixtures: {reason}")
        pytest.skip(reason)
    result: dict[str, Any] = once_per_run(tmp_path_factory, "java-n5", _write_java_n5)
    return result


def _write_java_n5(root: Path) -> dict[str, Any]:
    jobs: list[dict[str, Any]] = []
    out: dict[str, Any] = {}

    def add(name: str, arr: Any, block: tuple[int, ...], comp: str, param: int,
            mode: str = "default") -> None:
        path = root / "container.n5" / name
        jobs.append({"array": arr, "out": path, "block": block, "compression": comp,
                     "param": param, "mode": mode})
        out[name] = (path, arr)

    base = source(JAVA_SHAPE, "uint16", seed=1)
    for comp, param in JAVA_COMPRESSIONS:
        add(f"{comp}-{param}", base, JAVA_BLOCK, comp, param)
    for i, dt in enumerate(DTYPES):
        arr = source((13, 11, 7), dt, seed=10 + i)
        add(f"dtype-{dt}", arr, (8, 4, 4), "lz4", 256)
        add(f"dtype-raw-{dt}", arr, (8, 4, 4), "raw", 0)
    add("varlength", base, JAVA_BLOCK, "xz", 6, mode="varlength")
    add("big-lz4", source((70, 66, 65), "uint8", seed=3), (64, 64, 64), "lz4", 65536)
    write_java(root, jobs)
    (root / "container.n5" / "attributes.json").write_text('{"n5": "4.0.0"}')
    return out


@pytest.fixture(scope="session")
def java_container(java_n5: dict[str, Any]) -> Path:
    first = next(iter(java_n5.values()))[0]
    return Path(first).parent
