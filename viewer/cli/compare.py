"""``wkw-viewer compare A B [--box X,Y,Z,W,H,D] [--tolerance T] [--layer NAME] [--mag M] [--json]``.

Compares two volumes voxel for voxel, on both cores: any two inputs the format registry opens
(a plain WKW dataset or file, a webKnossos dataset, and every other format that joins it; a
WKW mag against its zarr3 or N5 conversion).  When A or B holds several arrays (a webKnossos
dataset or layer folder, a multiscale group), every (layer, mag) pair the two share is
compared (``--layer``/``--mag`` restrict it), layers and mags present on one side only and
disagreeing metadata are reported, and ``--json`` adds ``pairs``; positions are then in each
pair's mag voxels and ``--box`` is in mag-1 voxels.
Exit codes: 0 equal, 1 they differ (voxels, unreadable blocks or files, or a structural
difference that makes the voxels incomparable), 2 either cannot be opened at all (no such
path, an empty folder, something no format reads, a damaged header) or the arguments are
wrong.  Progress goes to stderr, and only when stderr is a terminal; ``--json`` prints one
JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from viewer.cli import interrupt
from viewer.cli.index_arg import add_index_argument, index_of
from viewer.core.cluster import SchedulerError
from viewer.core.compare import CompareJob, Summary
from viewer.core.compare.datasets import (
    DatasetCompareJob,
    DatasetSummary,
    is_collection,
    open_input,
)
from viewer.core.compare.model import Box
from viewer.core.compare.sides import VolumeSpec
from viewer.format import Dataset, FormatError, mag_name, parse_mag

#: Mismatching blocks listed in the human-readable report (all of them go to --json).
LIST_LIMIT = 20


def _parse_box(text: str) -> Box:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--box wants six integers X,Y,Z,W,H,D, not {text!r}") from None
    if len(values) != 6:
        raise argparse.ArgumentTypeError(f"--box wants six integers X,Y,Z,W,H,D, not {text!r}")
    if min(values[:3]) < 0 or min(values[3:]) <= 0:
        raise argparse.ArgumentTypeError("--box needs a non-negative offset and a positive size")
    return ((values[0], values[1], values[2]), (values[3], values[4], values[5]))


def _parse_tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tolerance wants a number, not {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("--tolerance must be non-negative")
    return value


def _parse_mag(text: str) -> tuple[int, int, int]:
    try:
        return parse_mag(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--mag wants X-Y-Z or one factor (2), not {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wkw-viewer compare",
        description="Compare two datasets voxel for voxel (any formats this program reads) "
                    "and say where they differ. Exit 0 equal, 1 different, 2 unreadable input.")
    p.add_argument("a", help="dataset A (a WKW folder or .wkw file, a webKnossos dataset, ...)")
    p.add_argument("b", help="dataset B")
    p.add_argument("--box", type=_parse_box, default=None, metavar="X,Y,Z,W,H,D",
                   help="compare only this voxel box (offset and size)")
    p.add_argument("--tolerance", type=_parse_tolerance, default=0.0, metavar="T",
                   help="count a voxel as different only when |A-B| > T (default 0)")
    p.add_argument("--layer", default=None, metavar="NAME",
                   help="datasets of layers (webKnossos, ...): compare only this layer")
    p.add_argument("--mag", type=_parse_mag, default=None, metavar="X-Y-Z",
                   help="datasets of mags: compare only this mag (2-2-1, or 2 for 2-2-2)")
    add_index_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="compare on a Dask cluster: tcp://HOST:PORT of its scheduler, or "
                        "local:N for N worker processes on this machine (the same report as "
                        "the local run)")
    p.add_argument("--workers", type=int, default=2, help=argparse.SUPPRESS)
    return p


class _Progress:
    """A one-line progress display on a terminal's stderr, redrawn at most 10 times a second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and done < total:
            return
        self.last = now
        pct = 100.0 * done / total if total else 100.0
        self.stream.write(f"\rcomparing: {done}/{total} blocks ({pct:.0f}%)")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def report(summary: Summary, out: TextIO) -> None:
    """The human-readable report."""
    if isinstance(summary, DatasetSummary):
        report_datasets(summary, out)
        return
    verdict = "EQUAL" if summary.equal else "DIFFERENT"
    if summary.cancelled:
        verdict = "CANCELLED"
    out.write(f"{verdict}: {summary.a} vs {summary.b}\n")
    out.writelines(f"  [{f.severity}] {f.message}\n" for f in summary.structure)
    if summary.comparable:
        out.write(f"  blocks compared: {summary.blocks_compared} of {summary.blocks_total}\n")
        out.write(f"  mismatching blocks: {len(summary.mismatching_blocks)}"
                  f" (unreadable: {summary.damaged_blocks})\n")
        out.write(f"  voxels different: {summary.voxels_different}\n")
        out.write(f"  max |A-B|: {summary.max_abs_diff}\n")
    for r in summary.mismatching_blocks[:LIST_LIMIT]:
        x, y, z = r.position
        if r.error is not None:
            out.write(f"  {r.file} block {r.morton_index} at ({x}, {y}, {z}): {r.error}\n")
        else:
            out.write(f"  {r.file} block {r.morton_index} at ({x}, {y}, {z}): "
                      f"{r.voxels_different} voxels differ, max |A-B| {r.max_abs_diff}\n")
    more = len(summary.mismatching_blocks) - LIST_LIMIT
    if more > 0:
        out.write(f"  ... and {more} more (see --json)\n")
    out.write(f"  time: {summary.elapsed:.2f} s\n")


def report_datasets(summary: DatasetSummary, out: TextIO) -> None:
    """The human-readable report of a per-(layer, mag) comparison: a line per pair."""
    verdict = "CANCELLED" if summary.cancelled else "EQUAL" if summary.equal else "DIFFERENT"
    out.write(f"{verdict}: {summary.a} vs {summary.b} ({len(summary.pairs)} layer/mag pairs; "
              "positions in each mag's voxels)\n")
    out.writelines(f"  [{f.severity}] {f.message}\n" for f in summary.structure)
    for pair in summary.pairs:
        s = pair.summary
        state = "equal" if s.equal else "DIFFERENT"
        out.write(f"  {pair.layer}/{mag_name(pair.mag, False)}: {state}, "
                  f"{s.blocks_compared} of {s.blocks_total} blocks compared, "
                  f"{len(s.mismatching_blocks)} mismatching, {s.voxels_different} voxels differ"
                  f", max |A-B| {s.max_abs_diff}\n")
    for r in summary.mismatching_blocks[:LIST_LIMIT]:
        x, y, z = r.position
        what = r.error if r.error is not None else \
            f"{r.voxels_different} voxels differ, max |A-B| {r.max_abs_diff}"
        out.write(f"  {r.file} block {r.morton_index} at ({x}, {y}, {z}): {what}\n")
    more = len(summary.mismatching_blocks) - LIST_LIMIT
    if more > 0:
        out.write(f"  ... and {more} more (see --json)\n")
    out.write(f"  time: {summary.elapsed:.2f} s\n")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse has printed the usage error
        return 0 if exc.code == 0 else 2
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    opened: list[Dataset] = []
    try:
        for path, label in ((args.a, "A"), (args.b, "B")):
            try:
                opened.append(open_input(path))
            except (FormatError, OSError) as exc:
                return _fail(f"cannot read {label}: {exc}")
        ds_a, ds_b = opened
        index = index_of(args)
        try:
            for ds in opened:
                ds.set_index(index)
        except (KeyError, IndexError) as exc:
            return _fail(str(exc.args[0] if exc.args else exc))
        job: CompareJob | DatasetCompareJob
        if is_collection(ds_a) or is_collection(ds_b):
            job = DatasetCompareJob(ds_a, ds_b, layer=args.layer, mag=args.mag, box=args.box,
                                    tolerance=args.tolerance, workers=args.workers,
                                    on_progress=progress, scheduler=args.scheduler)
            job.summary.a, job.summary.b = args.a, args.b
        elif args.layer is not None or args.mag is not None:
            return _fail("--layer and --mag need a dataset of several layers or mags "
                         "(a webKnossos dataset or layer folder, a multiscale group)")
        else:
            try:
                vol_a, vol_b = (ds.layers[0].mags[0].volume for ds in opened)
            except (FormatError, OSError) as exc:
                return _fail(f"cannot read: {exc}")
            sides: tuple[Any, Any] = (vol_a, vol_b)
            if args.scheduler is not None:  # the workers open the volumes by path
                sides = (VolumeSpec(args.a, index=tuple(vol_a.extra_index.items())),
                         VolumeSpec(args.b, index=tuple(vol_b.extra_index.items())))
            job = CompareJob(*sides, box=args.box, tolerance=args.tolerance,
                             workers=args.workers, on_progress=progress,
                             scheduler=args.scheduler)
            job.summary.a, job.summary.b = args.a, args.b
        try:
            summary = job.run()
        except KeyError as exc:
            if progress is not None:
                progress.finish()
            return _fail(str(exc.args[0] if exc.args else exc))
        except (FormatError, OSError) as exc:
            if progress is not None:
                progress.finish()
            return _fail(f"cannot read: {exc}")
        except KeyboardInterrupt:
            job.cancel()
            if progress is not None:
                progress.finish()
            return interrupt.status()
        except SchedulerError as exc:
            if progress is not None:
                progress.finish()
            return _fail(str(exc))
    finally:
        for ds in opened:
            ds.close()
    if progress is not None:
        progress.finish()
    if args.json:
        json.dump(summary.to_json(), sys.stdout)
        sys.stdout.write("\n")
    else:
        report(summary, sys.stdout)
    return 0 if summary.equal else 1


def _fail(message: str) -> int:
    """Say why the comparison cannot run (exit code 2)."""
    sys.stderr.write(f"wkw-viewer compare: {message}\n")
    return 2
