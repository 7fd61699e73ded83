"""``wkw-viewer demo DIR``: write the built-in demo dataset (a webKnossos dataset of synthetic
EM: a uint8 color and a uint32 segmentation layer, mags 1, 2-2-1, 4-4-2, LZ4HC) to DIR, with
progress on stderr.  Exit codes: 0 written, 2 bad input (DIR already a dataset,
or not writable)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from viewer.cli import interrupt
from viewer.core import demo


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wkw-viewer demo",
        description="Write the demo dataset to DIR: a webKnossos dataset of {} x {} x {} "
                    "voxels of synthetic EM at 11.24 x 11.24 x 28 nm, a uint8 color and a "
                    "uint32 segmentation layer, mags 1, 2-2-1 and 4-4-2, LZ4HC."
                    .format(*demo.DEMO_SHAPE))
    parser.add_argument("dir", help="folder to create (must not exist or be empty)")
    args = parser.parse_args(argv)
    target = Path(args.dir)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        print(f"wkw-viewer demo: {target} exists and is not an empty folder", file=sys.stderr)
        return 2
    started = time.perf_counter()

    shown = [False]

    def progress(done: int, total: int) -> None:
        shown[0] = True
        print(f"\rgenerating demo dataset: file {done}/{total} "
              f"({time.perf_counter() - started:.1f} s)", end="", file=sys.stderr, flush=True)

    try:
        if target.exists():
            target.rmdir()
        demo.build_demo(target, progress)
    except OSError as exc:
        print(f"\nwkw-viewer demo: cannot write {target}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if shown[0]:
            print(file=sys.stderr)  # end the progress line
        return interrupt.status()
    print(f"\nwrote {target} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0
