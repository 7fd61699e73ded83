"""The fuzzing harness of ``tests/fuzz/`` at any size: mutants of every registered format (WKW
files of each block type, header.wkw, webKnossos properties; each new format's entry as it
lands; N5, Zarr v3 and WKW read over HTTP from a range server on 127.0.0.1, and a damaged range
of the on-disk remote cache), each read in a child process with a timeout, classified.

    python -m benchmarks.fuzz --count 10000          # a table per target and overall
    python -m benchmarks.fuzz --count 10000 --json   # {"mutants", "untyped", "signals", ...}
    python -m benchmarks.fuzz --count 2000 --seed 5 --targets wkw-raw-file
    python -m benchmarks.fuzz --count 10000 --keep-cases   # save bad mutants as fixed cases

``--count`` is the total, shared evenly by the targets (the fixed cases under
``tests/fuzz/cases/`` are read on top).  Exit 1 when any mutant ended untyped, by a signal or
in a timeout (their details go to stderr), else 0.

Then the concurrent-rewrite trial (``tests/fuzz/rewrite.py``): ``--rewrite-reads`` reads (0:
none) of a raw WKW file that another process rewrites in place in two ``write`` calls,
through four local read paths and over HTTP (a range server serving the file as it is
rewritten); it reports the blocks read whole, the blocks of two versions
(``mixed``), the ``FileChangedError`` / ``FileChangingError`` counts and untyped errors, and
any mixed block or untyped error also makes the exit status 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from benchmarks import load_average, with_load


def load_harness() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "tests" / "fuzz" / "fuzzlib.py"
    spec = importlib.util.spec_from_file_location("fuzzlib", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzzlib"] = module
    spec.loader.exec_module(module)
    return module


def load_rewrite_trial() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "tests" / "fuzz" / "rewrite.py"
    spec = importlib.util.spec_from_file_location("rewrite_trial", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    load_before = load_average()
    fuzzlib = load_harness()
    formats = [n for n in fuzzlib.TARGETS if not n.startswith("_")]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="mutants in all (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", default=",".join(formats),
                        help="comma-separated subset of " + ", ".join(formats))
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--keep-cases", action="store_true",
                        help="save untyped / signal / timeout mutants under tests/fuzz/cases/")
    parser.add_argument("--rewrite-reads", type=int, default=200,
                        help="reads of the concurrent-rewrite trial (default 200; 0: skip it)")
    args = parser.parse_args(argv)
    names = [n for n in args.targets.split(",") if n]
    unknown = [n for n in names if n not in fuzzlib.TARGETS]
    if unknown:
        parser.error(f"unknown targets {unknown}; known: {formats}")
    each = max(1, args.count // len(names))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wkw-fuzz-") as folder:
        total, per = fuzzlib.fuzz(names, each, args.seed, Path(folder),
                                  keep_cases=args.keep_cases)
    elapsed = time.perf_counter() - started
    rewrite: dict[str, int] = {}
    if args.rewrite_reads > 0:
        with tempfile.TemporaryDirectory(prefix="wkw-rewrite-") as folder:
            rewrite = load_rewrite_trial().run_trial(Path(folder), args.rewrite_reads,
                                                     seed=args.seed, http=True)
    table = total.table()
    for r in total.bad:
        print(f"{r.target} mutant {r.index}: {r.outcome}\n{r.detail}", file=sys.stderr)
    if args.json:
        doc = dict(table)
        doc["targets"] = {n: t.table() for n, t in per.items()}
        doc["seconds"] = round(elapsed, 1)
        if rewrite:
            doc["concurrent_rewrite"] = rewrite
        print(json.dumps(with_load(doc, load_before)))
    else:
        keys = list(table)
        print(f"{'target':<24}" + "".join(f"{k:>14}" for k in keys))
        for n, t in per.items():
            row = t.table()
            print(f"{n:<24}" + "".join(f"{row[k]:>14}" for k in keys))
        print(f"{'all':<24}" + "".join(f"{table[k]:>14}" for k in keys))
        print(f"{elapsed:.1f} s")
        if rewrite:
            print("concurrent rewrite (two-part in-place writes by another process): "
                  + ", ".join(f"{k} {v}" for k, v in rewrite.items()))
    bad_rewrite = rewrite.get("mixed", 0) or rewrite.get("untyped", 0)
    return 1 if table["untyped"] or table["signals"] or table["timeouts"] or bad_rewrite else 0


if __name__ == "__main__":
    sys.exit(main())
