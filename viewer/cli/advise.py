"""``wkw-viewer advise PATH [--codecs LIST] [--chunk 32,64] [--sample F | --all] [--json]``:
how big and how fast this data would be under other codecs and chunkings.

Re-encodes a stratified sample of the present chunks (``--sample 0.05``; ``--all``: every
chunk, exact) with candidate encodings, each named as its format writes it
(``viewer.core.advise.catalogue``), and prints per candidate the bytes the whole layer/mag
would take in that format (payloads and the format's own overhead) with a 95 % interval, the
ratio to today's size and to raw, encode and decode speed per core on this machine, and a
lossy candidate's error (max |error|, RMSE, PSNR); the recommendation comes first.
``--json`` prints one document::

    {"path", "format", "current": {"encoding", "stored_bytes"}, "sampled_chunks",
     "total_chunks", "present_chunks", "candidates": [{"format", "encoding", "level",
     "options", "sharded", "chunk_shape", "projected_bytes", "interval": [lo, hi],
     "ratio_to_current", "ratio_to_raw", "encode_mb_s", "decode_mb_s", "lossless",
     "max_abs_error", "rmse", "psnr", ...}], "pareto": [indices], "recommended": {...,
     "reason"}, "skipped": [{"candidate", "why"}], "problems": [...]}

``--plot FILE.png`` writes the projected size against decode speed (the Pareto front marked),
the same plot as the inspector's What if tab.  ``--scheduler`` runs the re-encoding on a Dask
cluster.  Exit status: 0 done, 1 some chunks could not be read (the rest projected), 2 bad
input (a path that does not open, a bad option), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from viewer.cli.index_arg import add_index_argument, index_of
from viewer.core.advise import (
    AdviseProgress,
    AdviseRequest,
    CandidateError,
    Report,
    human_bytes,
    parse_chunk_shapes,
    parse_spec,
    run_advice,
)
from viewer.core.cluster import SchedulerError
from viewer.core.inspect.scan import Reopen
from viewer.format import FormatError, is_url, open_dataset, parse_mag, select_mag

Vec3 = tuple[int, int, int]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sample wants a fraction, not {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError("--sample wants a fraction in (0, 1]")
    return value


def _box(text: str) -> tuple[Vec3, Vec3]:
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--box wants X,Y,Z,W,H,D, not {text!r}") from None
    if len(v) != 6 or min(v[3:]) <= 0:
        raise argparse.ArgumentTypeError("--box wants X,Y,Z,W,H,D with a positive size")
    return ((v[0], v[1], v[2]), (v[3], v[4], v[5]))


def _mag(text: str) -> Vec3:
    try:
        return parse_mag(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--mag wants X-Y-Z or one factor, not {text!r}") \
            from None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a number, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("wants a positive number")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wkw-viewer advise",
        description="Project how big and how fast the data would be under other codecs and "
                    "chunkings (re-encodes a sample of its chunks).",
        epilog="Candidates are FORMAT[+shard]:ENCODING[:LEVEL], e.g. wkw:lz4hc:9, "
               "zarr3+shard:zstd:5, zarr3+shard:blosc-lz4-bitshuffle:5, n5:gzip:6, n5:lz4, "
               "precomputed:compressed_segmentation, precomputed:jpeg:75, zarr3:zfp-rate:8. "
               "Exit status: 0 done, 1 unreadable chunks, 2 bad input, 130 interrupted.")
    p.add_argument("path", help="a dataset, layer, mag folder or file of any format read")
    p.add_argument("--layer", help="layer of a dataset (default: the first color layer)")
    p.add_argument("--mag", type=_mag, help="mag, e.g. 2-2-1 (default: the finest)")
    add_index_argument(p)
    p.add_argument("--box", type=_box, metavar="X,Y,Z,W,H,D",
                   help="only this voxel box (in the mag's voxels)")
    p.add_argument("--codecs", metavar="LIST",
                   help="comma-separated candidates (default: a set for the voxel type)")
    p.add_argument("--chunk", metavar="SIDES",
                   help="also try these chunk shapes: 32,64 (cubes) or 64x64x32")
    p.add_argument("--shard", type=int, default=1024, metavar="VOXELS",
                   help="voxels per WKW file and zarr3 shard side (default 1024)")
    p.add_argument("--sample", type=_fraction, default=0.05, metavar="F",
                   help="fraction of the present chunks to re-encode (default 0.05)")
    p.add_argument("--all", action="store_true", help="re-encode every chunk (exact)")
    p.add_argument("--seed", type=int, default=None, help="seed of the sample")
    p.add_argument("--min-decode-mb-s", type=_positive, default=None, metavar="MB_S",
                   help="decode speed per core the recommendation must keep (default: the "
                        "browse target)")
    p.add_argument("--lossy", action="store_true",
                   help="the recommendation may pick a lossy candidate")
    p.add_argument("--threads", type=int, default=0, help="re-encoding threads (default: "
                                                          "one per core)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="re-encode on a Dask cluster: tcp://HOST:PORT or local:N")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--plot", metavar="FILE.png", help="write the size / speed plot here")
    return p


class _Progress:
    """One line on a terminal's stderr, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.on = stream.isatty()
        self.last = 0.0
        self.shown = False
        self.started = time.monotonic()

    def __call__(self, message: Any) -> None:
        if not self.on or not isinstance(message, AdviseProgress):
            return
        now = time.monotonic()
        if now - self.last < 0.1 and message.done != message.total:
            return
        self.last = now
        self.shown = True
        if message.stage == "survey":
            text = f"reading chunk tables: {message.done} units"
        else:
            text = f"re-encoding: {message.done}/{message.total} chunks"
        self.stream.write(f"\r{text} ({now - self.started:.1f} s)\033[K")
        self.stream.flush()

    def finish(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    out, err = sys.stdout, sys.stderr
    try:
        specs = tuple(s for s in args.codecs.split(",") if s.strip()) if args.codecs else None
        for s in specs or ():
            parse_spec(s, args.shard)
        shapes = tuple(parse_chunk_shapes(args.chunk)) if args.chunk else ()
    except CandidateError as exc:
        return _fail(err, str(exc))
    if args.shard < 1:
        return _fail(err, "--shard wants a positive number of voxels")
    path = args.path if is_url(args.path) else os.path.abspath(args.path)
    try:
        dataset = open_dataset(path)
    except (FormatError, OSError) as exc:
        return _fail(err, f"{args.path}: {exc}")
    progress = _Progress(err)
    try:
        try:
            dataset.set_index(index_of(args))
            mag = select_mag(dataset, args.layer, args.mag)
            volume = mag.volume
        except (FormatError, KeyError, IndexError) as exc:
            return _fail(err, f"{args.path}: {exc.args[0] if exc.args else exc}")
        names = {layer.name: layer for layer in dataset.layers}
        layer = names.get(mag.layer)
        request = AdviseRequest(
            specs=specs, chunk_shapes=shapes, fraction=args.sample, exhaustive=args.all,
            seed=args.seed, box=args.box, shard_vx=args.shard,
            segmentation=bool(layer is not None and layer.category == "segmentation"),
            min_decode_mb_s=args.min_decode_mb_s, allow_lossy=args.lossy,
            threads=args.threads, scheduler=args.scheduler,
            reopen=Reopen(path, mag.layer, mag.mag, Reopen.index_of(volume)))
        try:
            report = run_advice(volume, request, progress)
        except KeyboardInterrupt:
            progress.finish()
            err.write("wkw-viewer advise: interrupted\n")
            return 130
        except (SchedulerError, ValueError) as exc:
            progress.finish()
            return _fail(err, str(exc))
        progress.finish()
    finally:
        dataset.close()
    report.path = args.path
    if args.plot:
        try:
            from viewer.ui.advise_plot import write_plot

            write_plot(report, args.plot)
        except (ImportError, OSError, RuntimeError) as exc:
            return _fail(err, f"cannot write the plot {args.plot}: {exc}")
    if args.json:
        out.write(json.dumps(report.to_json()) + "\n")
    else:
        write_text(report, out)
    for problem in report.problems:
        err.write(f"wkw-viewer advise: {problem}\n")
    return 1 if report.problems else 0


def _fail(err: TextIO, message: str) -> int:
    err.write(f"wkw-viewer advise: {message}\n")
    return 2


def write_text(report: Report, out: TextIO) -> None:
    """The human-readable report: what it is today, the recommendation, a table."""
    lo, hi = report.extent
    size = "x".join(str(hi[a] - lo[a]) for a in range(3))
    c = report.chunk_shape
    out.write(f"{report.path}: {report.format} {report.dtype} x{report.channels}, {size} "
              f"voxels, chunks {'x'.join(map(str, c))}; today {report.encoding}, "
              f"{human_bytes(report.stored_bytes)}\n")
    if report.exhaustive:
        out.write(f"every present chunk re-encoded ({report.present_chunks} of "
                  f"{report.total_chunks}): the sizes are exact\n")
    else:
        out.write(f"sampled {report.sampled_chunks} of {report.present_chunks} present chunks "
                  f"({report.total_chunks} in the grid); sizes are projections with 95 % "
                  f"intervals, all holding together\n")
    rec = report.recommendation
    if rec.index is not None:
        out.write(f"recommended: {report.projections[rec.index].candidate.label}\n"
                  f"  because it is {rec.reason}\n")
    else:
        out.write(f"no recommendation: {rec.reason}\n")
    head = (f"  {'candidate':<44} {'projected':>10} {'95 % interval':>21} {'vs today':>8} "
            f"{'vs raw':>7} {'enc MB/s':>9} {'dec MB/s':>9}  error\n")
    out.write(head)
    order = sorted(range(len(report.projections)),
                   key=lambda i: report.projections[i].projected_bytes)
    for i in order:
        p = report.projections[i]
        mark = "*" if i in report.pareto else " "
        interval = (f"{human_bytes(p.interval[0])}-{human_bytes(p.interval[1])}"
                    if p.interval[1] > p.interval[0] else "exact")
        error = "lossless" if p.lossless else (
            f"max {p.max_abs_error:.4g}, RMSE {p.rmse:.4g}, PSNR {p.psnr:.1f} dB")
        out.write(f"{mark} {p.candidate.label:<44} {human_bytes(p.projected_bytes):>10} "
                  f"{interval:>21} {100 * p.ratio_to_current:>7.0f}% "
                  f"{100 * p.ratio_to_raw:>6.0f}% {p.encode_mb_s:>9.0f} {p.decode_mb_s:>9.0f}  "
                  f"{error}\n")
    out.write("  * best trade-offs (no other candidate is both smaller and faster to decode)\n")
    for s in report.skipped:
        out.write(f"  skipped {s.label}: {s.why}\n")
