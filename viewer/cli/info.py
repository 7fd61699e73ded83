"""``wkw-viewer info PATH [--json] [--quick] [--chunks]``: what a dataset or array of any format
holds, and what is wrong with it.

The path opens through the format registry (``viewer.format.open_dataset``): a WKW dataset or
file, a webKnossos dataset, and every other format the registry knows.  One array is checked:
the path's own, or the dataset's first color layer at its finest mag.  Prints the dataset's
summary (layers, voxel size, what did not open), the array's header (``Volume.info().header``,
in the format's own words) and geometry, then each storage unit (a WKW file, a zarr shard, an
N5 chunk file...) with its stored chunk sizes (min / median / max / total), compression ratio
and problems: the unit's structure checks, and every chunk decoded unless ``--quick``.  Units
are walked lazily, checked in batches of neighbours on ``--threads`` workers (``units``:
with ``--quick`` a format's batched structure check takes the plainly sound units at once)
and reported in listing order as they are checked; on a terminal, progress goes to stderr.
Nothing per unit is kept once reported (running totals only), so memory does not grow with the
number of units or chunks.  ``--json`` prints one JSON document instead, written as it goes
(``chunks`` comes after ``files``; an interrupted run ends it with ``"interrupted": true``)::

    {"path", "format", "kind": "dataset" | "file",
     "layers": [...]                                  (datasets of several arrays),
     "layer", "mag"                                   (the array checked),
     "dtype", "num_channels", "extra_axes": {name: length}, "index": {name: i}  (time, ...),
     "origin": [X, Y, Z], "shape": [X, Y, Z], "chunk_shape": [X, Y, Z],
     "chunks": {count, present, stored_bytes: {min, median, max, total}},
     "header": {...the format's header fields...}, "geometry": {...},
     "files": [{path, unit: [i, j, k], channels: [c0, c1], block_type, compression,
                file_size, block_sizes: {min, median, max, total}, ratio,
                chunks: {count, present}, problems: [...]}],
     "chunk_list": [{grid: [i, j, k], stored_bytes, unit, index, offset, channels}]
                                                      (--chunks),
     "problems": [...], "valid": bool, "checked": "structure" | "decoded"}

Where the channels are stored in groups apart (one channel per chunk, a shard per channel:
``Volume.channel_groups``), every group's unit is a row of its own, naming its file and its
``channels`` ``[c0, c1)`` (so does a chunk of ``chunk_list``), and a chunk of each group
counts.  ``chunks`` counts the chunks of the grid that the extent (``shape`` from the
volume's origin) meets and those of them present (stored); ``stored_bytes``, each unit's
sizes, ratio and chunk counts are over those too (a unit may hold chunks past the extent: a
WKW file, a shard at the edge, a webKnossos array allocated larger than its layer).
``chunk_list`` lists the chunks present in the extent in grid order.  A problem
is ``{type, message, path, block, offset, chunk}`` (``ChecksumError`` where the format keeps
checksums and bytes fail them).  ``ratio`` is decoded bytes / stored bytes.  Exit status: 0
valid, 1 problems found, 2 the path cannot be opened (missing, unreadable, permission denied,
or not a dataset this program reads), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from viewer.cli import chunk_list, interrupt
from viewer.cli.index_arg import add_index_argument, index_of
from viewer.cli.listed import ListedCheck, cluster_listing
from viewer.cli.listed import batches as listed_batches
from viewer.cli.streaming import JsonStream, SizeStats
from viewer.cli.units import (
    SoundRun,
    UnitReport,
    check_batch,
    check_unit,
    problem_fields,
    size_summary,
)
from viewer.core import inspect
from viewer.core.cluster import ClusterRunner, SchedulerError, chunked, units_per_task
from viewer.core.parallel import can_fork, cores, ordered_map
from viewer.format import (
    ChecksumError,
    Dataset,
    FormatError,
    Mag,
    Volume,
    VolumeInfo,
    is_url,
    layers_json,
    open_dataset,
    open_volume,
    select_mag,
    summary_lines,
)

#: Problems printed per unit in the text output (the JSON lists all).
SHOWN_PROBLEMS = 20
#: Seconds between progress updates on a terminal.
PROGRESS_EVERY = 0.25
#: Chunks of the units checked ahead of the report, at most (beyond one batch per thread).
IN_FLIGHT_CHUNKS = 1 << 15
#: Units checked together (``check_batch``), at most; and their chunks, at most.
BATCH_UNITS = 1024
BATCH_CHUNKS = 4096

Vec3 = tuple[int, int, int]


def _scalars(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items()
            if isinstance(v, (str, int, float, bool)) or v is None}


def geometry(volume: Volume) -> dict[str, Any]:
    """The array's chunk geometry (legacy WKW names kept beside the neutral ones)."""
    side = volume.unit_len_vx
    per_unit = volume.unit_shape[0] * volume.unit_shape[1] * volume.unit_shape[2]
    cubic = side[0] == side[1] == side[2]
    return {
        "voxels_per_unit": list(side),
        "chunks_per_unit": per_unit,
        "chunk_bytes": volume.chunk_nbytes,
        "unit_bytes_decoded": per_unit * volume.chunk_nbytes,
        "voxels_per_file_side": side[0] if cubic else list(side),
        "blocks_per_file": per_unit,
        "block_bytes": volume.chunk_nbytes,
        "file_bytes_uncompressed": per_unit * volume.chunk_nbytes,
        "dtype": volume.dtype.str,
    }


class _Progress:
    """A one-line counter on stderr, only when stderr is a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.on = stream.isatty()
        self.last = 0.0
        self.shown = False

    def update(self, units: int, problems: int) -> None:
        now = time.monotonic()
        if self.on and now - self.last >= PROGRESS_EVERY:
            self.last = now
            self.shown = True
            self.stream.write(f"\rchecked {units} units, {problems} problems")
            self.stream.flush()

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def _text_header(volume: Volume, header: dict[str, Any], compression: str, out: TextIO) -> None:
    c, u = volume.chunk_shape, volume.unit_shape
    channels = f" x{volume.num_channels}" if volume.num_channels > 1 else ""
    out.write(f"array: {volume.format} {volume.dtype.name}{channels}, shape "
              f"{'x'.join(map(str, volume.shape))}, chunks {'x'.join(map(str, c))} voxels, "
              f"{'x'.join(map(str, u))} chunks per storage unit, compression {compression}\n")
    if volume.extra_axes:
        out.write("extra axes: " + ", ".join(
            f"{k} {volume.extra_index.get(k, 0)} of 0..{n - 1}"
            for k, n in volume.extra_axes.items()) + " (--index AXIS=N)\n")
    if header:
        out.write("header: " + ", ".join(f"{k} {v}" for k, v in header.items()) + "\n")


def _text_file(fields: dict[str, Any], root: str, out: TextIO) -> None:
    rel = os.path.relpath(fields["path"], root) if root and not is_url(fields["path"]) \
        else fields["path"]
    s = fields["block_sizes"]
    sizes = (f"chunks min {s['min']} / median {s['median']:g} / max {s['max']} / total "
             f"{s['total']} bytes" if s["total"] is not None else "chunks: none stored")
    ratio = f"ratio {fields['ratio']:.2f}" if fields["ratio"] is not None else "ratio ?"
    status = "ok" if not fields["problems"] else f"{len(fields['problems'])} problems"
    out.write(f"  {rel}  {fields['compression'] or '?'}  {_size(fields['file_size'])}  {sizes}  "
              f"{ratio}  {status}\n")
    for p in fields["problems"][:SHOWN_PROBLEMS]:
        out.write(f"    {p['type']}: {p['message']}\n")
    if len(fields["problems"]) > SHOWN_PROBLEMS:
        out.write(f"    ... and {len(fields['problems']) - SHOWN_PROBLEMS} more (--json lists "
                  f"all)\n")


def _fail(err: TextIO, given: str, exc: BaseException) -> int:
    if isinstance(exc, FormatError):
        reason = exc.reason
        where = exc.path or given
    else:
        reason = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        where = given
    err.write(f"wkw-viewer info: {where}: {reason}\n")
    return 2


def _verdict(problems: list[dict[str, Any]], decoded: bool, checksums: Any) -> str:
    """``valid`` only with no problem at all: every chunk of the grid decoded (and verified
    where the format has checksums) or proven absent; ``INVALID`` for damage; ``not checked``
    when all that is wrong is chunks that could not be read (``problem_fields``)."""
    unread = sum(1 for p in problems if p.get("not_checked"))
    if len(problems) > unread:
        failed = sum(1 for p in problems if p["type"] == ChecksumError.__name__)
        extra = f", {failed} checksum failure{'s' if failed != 1 else ''}" if failed else ""
        if unread:
            extra += f", {unread} not checked"
        return f"INVALID ({len(problems)} problem{'s' if len(problems) != 1 else ''}{extra})"
    if unread:
        return (f"not checked ({unread} problem{'s' if unread != 1 else ''}: chunks that "
                "could not be read, neither valid nor damaged)")
    if not decoded:
        return "valid (structure only: --quick decodes no chunk)"
    if checksums is False:
        return "valid (structure only: this format has no checksums)"
    if checksums is True:
        return "valid (every chunk decoded, checksums verified)"
    return "valid (every chunk decoded)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wkw-viewer info",
        description="Show what a dataset or array holds and validate it (any format the "
                    "program reads).",
        epilog="Exit status: 0 valid, 1 problems found, 2 the path cannot be opened.")
    parser.add_argument("path", help="a dataset or array: a folder, a file or a URL")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--quick", action="store_true",
                        help="check headers and chunk indexes only; do not decode every chunk")
    parser.add_argument("--chunks", action="store_true",
                        help="with --json: list every chunk present (chunk_list)")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads checking units here (default: one per core)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the validation on a Dask cluster: tcp://HOST:PORT of its "
                             "scheduler, or local:N for N worker processes on this machine "
                             "(the same report as the local run)")
    add_index_argument(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    out, err = sys.stdout, sys.stderr
    given = args.path
    path = given if is_url(given) else os.path.abspath(given)
    try:
        dataset = open_dataset(path)
    except (FormatError, OSError) as exc:
        return _fail(err, given, exc)
    try:
        try:
            dataset.set_index(index_of(args))
        except (KeyError, IndexError) as exc:
            return _fail(err, given, exc)
        return _report(dataset, path, args, out, err)
    finally:
        dataset.close()


def _report(dataset: Dataset, path: str, args: argparse.Namespace, out: TextIO,
            err: TextIO) -> int:
    try:
        mag = select_mag(dataset)
        volume = mag.volume
    except (FormatError, KeyError, IndexError) as exc:
        return _fail(err, args.path, exc)
    try:
        info = volume.info()
    except FormatError as exc:
        return _fail(err, args.path, exc)
    facts = inspect.VolumeFacts(dict(info.header), info.compression,
                                inspect.histogram_edges(volume.chunk_nbytes))
    root = "" if dataset.kind == "file" or is_url(volume.path) else volume.path
    try:
        listed = _listed_check(volume, facts, args, root)
    except KeyboardInterrupt:
        return interrupt.status()
    try:
        return _write_report(dataset, path, args, out, err, mag, volume, info, facts, root,
                             listed)
    finally:
        if listed is not None:
            listed.close()


def _write_report(dataset: Dataset, path: str, args: argparse.Namespace, out: TextIO,
                  err: TextIO, mag: Mag, volume: Volume, info: VolumeInfo,
                  facts: inspect.VolumeFacts, root: str, listed: ListedCheck | None) -> int:
    """``_report`` once the volume is chosen (and, with ``listed``, its workers started);
    ``root``: what text paths are relative to."""
    header, compression = _scalars(dict(info.header)), info.compression
    names = {each.name for each in dataset.layers}
    layer = dataset.layer(mag.layer) if mag.layer in names else None
    several = (dataset.format != volume.format or len(dataset.layers) > 1
               or any(len(each.mags) > 1 for each in dataset.layers))
    is_file = dataset.kind == "file"
    progress = _Progress(err)
    problems: list[dict[str, Any]] = [problem_fields(p) for p in dataset.problems]
    problems.extend(problem_fields(p) for p in volume.problems())
    if is_file:
        header.update(_unit_header(volume, header))
    if not args.json:
        out.write("\n".join(summary_lines(dataset)) + "\n")
        if several and layer is not None:
            out.write(f"checking layer {layer.name} mag {mag.name}: {volume.path}\n")
        _text_header(volume, header, compression, out)
        for p in volume.problems():
            out.write(f"  {type(p).__name__}: {p}\n")
        out.write("storage units:\n")
    # Only running totals are kept: a unit's record is written (text or JSON) and dropped.
    stream = JsonStream(out) if args.json else None
    sorter = chunk_list.ChunkSorter() if args.json and args.chunks else None
    stats = SizeStats()
    units = present = on_disk = 0

    def begin() -> None:
        assert stream is not None
        if stream.started:
            return
        stream.begin()
        stream.field("path", path)
        stream.field("format", dataset.format)
        stream.field("kind", "file" if is_file else "dataset")
        if several:
            stream.field("layers", layers_json(dataset))
            stream.field("layer", mag.layer)
            stream.field("mag", list(mag.mag))
        stream.field("dtype", volume.dtype.name)
        stream.field("num_channels", volume.num_channels)
        if volume.extra_axes:
            stream.field("extra_axes", volume.extra_axes)
            stream.field("index", volume.extra_index)
        stream.field("origin", list(volume.origin))
        stream.field("shape", list(volume.shape))
        stream.field("chunk_shape", list(volume.chunk_shape))
        stream.field("header", header)
        stream.field("geometry", geometry(volume))
        stream.begin_list("files")

    try:
        with contextlib.closing(listed.reports() if listed is not None else
                                _unit_reports(volume, facts, args, path, mag.layer,
                                              mag.mag, root)) as reports:
            for report in reports:
                if isinstance(report, SoundRun):
                    units += len(report)
                    on_disk += int(report.file_sizes.sum())
                    stats.add(report.sizes.reshape(-1))
                    present += report.sizes.size
                    if report.text is None:
                        report.render(stream is not None, root, _size)
                    assert report.text is not None
                    if stream is not None:
                        begin()
                        stream.items_text([report.text])
                        if sorter is not None:
                            sorter.add(report.chunks)
                    else:
                        progress.done()
                        out.write(report.text)
                        out.flush()
                    progress.update(units, len(problems))
                    continue
                units += 1
                on_disk += report.fields["file_size"] or 0
                stats.add(report.sizes)
                present += report.present
                problems.extend(report.fields["problems"])
                if stream is not None:
                    begin()
                    stream.item(report.fields)
                    if sorter is not None:
                        sorter.add(report.chunks)
                else:
                    progress.done()
                    _text_file(report.fields, root, out)
                    out.flush()
                progress.update(units, len(problems))
        progress.done()
        # Problems the volume found while its units were walked (an extent probed over HTTP).
        seen = {p["message"] for p in problems}
        problems.extend(f for f in (problem_fields(p) for p in volume.problems())
                        if f["message"] not in seen)
        # Channels stored apart: a chunk of each channel group, each stored on its own.
        count = chunks_meeting(volume.bounds, volume.chunk_shape) * len(volume.channel_groups())
        chunks = {"count": count, "present": present, "stored_bytes": stats.summary()}
        verdict = _verdict(problems, not args.quick, info.header.get("checksums"))
        if stream is not None:
            begin()
            stream.end_list()
            if sorter is not None:
                stream.begin_list("chunk_list")
                batch: list[str] = []
                for entry in sorter.sorted():
                    batch.append(chunk_list.entry_text(entry))
                    if len(batch) >= 4096:
                        stream.items_text(batch)
                        batch = []
                stream.items_text(batch)
                stream.end_list()
            stream.field("chunks", chunks)
            stream.field("problems", problems)
            stream.field("valid", not problems)
            stream.field("not_checked", sum(1 for p in problems if p.get("not_checked")))
            stream.field("checked", "structure" if args.quick else "decoded")
            stream.field("verdict", verdict)
            stream.end()
        else:
            out.write(f"{units} storage unit{'s' if units != 1 else ''}, {_size(on_disk)} "
                      f"on disk; {present} of {count} chunks present; {len(problems)} "
                      f"problem{'s' if len(problems) != 1 else ''}: {verdict}\n")
    except KeyboardInterrupt:
        progress.done()
        if stream is not None:
            stream.interrupt()
        return interrupt.status()
    except SchedulerError as exc:
        progress.done()
        if stream is not None:
            stream.interrupt()  # the units listed so far; the document says it is not whole
        err.write(f"wkw-viewer info: {exc}\n")
        return 2
    finally:
        if sorter is not None:
            sorter.close()
    return 1 if problems else 0


def chunks_meeting(bounds: tuple[Vec3, Vec3], chunk_shape: Sequence[int]) -> int:
    """How many chunks of the grid the box ``bounds`` meets (none for an empty box)."""
    (lo, hi), n = bounds, 1
    for a in range(3):
        if hi[a] <= lo[a] or not chunk_shape[a]:
            return 0
        n *= (hi[a] - 1) // chunk_shape[a] - lo[a] // chunk_shape[a] + 1
    return n


@dataclass(frozen=True)
class UnitShare:
    """A task's share of the validation: the array (by path, layer and mag: a cluster worker
    opens it itself) and the positions of its units."""

    path: str
    layer: str
    mag: Vec3
    positions: tuple[Vec3, ...]
    decode: bool
    list_chunks: bool
    index: tuple[tuple[str, int], ...] = ()


def check_share(share: UnitShare) -> list[UnitReport | SoundRun]:
    """The reports of the units of ``share`` in order (the task a cluster worker runs:
    ``check_batch``); units proven absent are left out."""
    volume = open_volume(share.path, share.layer, share.mag, dict(share.index))
    try:
        info = volume.info()
        facts = inspect.VolumeFacts(dict(info.header), info.compression,
                                    inspect.histogram_edges(volume.chunk_nbytes))
        out: list[UnitReport | SoundRun] = []
        per_batch = batch_units(volume)
        for start in range(0, len(share.positions), per_batch):
            out.extend(check_batch(volume, share.positions[start:start + per_batch], facts,
                                   share.decode, share.list_chunks))
        return out
    finally:
        volume.close()


def batch_units(volume: Volume) -> int:
    """Units checked together (``check_batch``): ``BATCH_UNITS``, fewer when units hold
    many chunks (at most ``BATCH_CHUNKS`` chunks a batch, at least one unit)."""
    return max(1, min(BATCH_UNITS, BATCH_CHUNKS // max(1, math.prod(volume.unit_shape))))


def _checker(volume: Volume, facts: inspect.VolumeFacts, args: argparse.Namespace,
             root: str) -> Callable[[list[Vec3]], list[UnitReport | SoundRun]]:
    """The check of a batch of units on a worker: ``check_batch``, sound runs rendered."""

    def check(batch: list[Vec3]) -> list[UnitReport | SoundRun]:
        reports = check_batch(volume, batch, facts, not args.quick, args.chunks)
        for report in reports:
            if isinstance(report, SoundRun):
                report.render(args.json, root, _size)
                # In the text now: not sent back from a worker.
                report.paths, report.positions = [], report.positions[:0]
        return reports

    return check


def _in_flight(volume: Volume, threads: int) -> tuple[int, int]:
    """Units a batch holds, and batches in work or waiting: a few per thread, fewer when they
    hold many chunks (each unit's chunk table and list are in memory until its report is
    written)."""
    per_batch = batch_units(volume)
    per_unit = max(1, math.prod(volume.unit_shape))
    return per_batch, max(threads, min(4 * threads, IN_FLIGHT_CHUNKS // (per_unit * per_batch)))


def _listed_check(volume: Volume, facts: inspect.VolumeFacts, args: argparse.Namespace,
                  root: str) -> ListedCheck | None:
    """The structure check of small local units on more than one worker: forked processes
    that list the units themselves (``viewer.cli.listed``; the structure check is mostly
    Python, which threads would run by turns), started now (they also find the extent of a
    volume that is its units' box, which the report's header shows).  None where it does not
    apply."""
    threads = args.threads or cores()
    if args.scheduler or threads <= 1 or not args.quick or not volume.small_units \
            or not volume.lists_units or is_url(volume.path) or not can_fork() \
            or threading.current_thread() is not threading.main_thread():
        return None
    per_batch, ahead = _in_flight(volume, threads)
    return ListedCheck(volume, _checker(volume, facts, args, root), threads, per_batch, ahead)


def _unit_reports(volume: Volume, facts: inspect.VolumeFacts, args: argparse.Namespace,
                  path: str, layer: str, mag: Vec3, root: str
                  ) -> Generator[UnitReport | SoundRun, None, None]:
    """Each unit's report in listing order (sound units of a batch together, as a
    ``SoundRun``, rendered by the worker; ``root``: what text paths are relative to): checked
    here in batches of neighbours (``check_batch``) on ``--threads`` threads (forked
    processes for the structure check of small local units), or with ``--scheduler`` on a
    Dask cluster in tasks of a few units (reports are taken in order as tasks finish)."""
    if not args.scheduler:
        threads = args.threads or cores()
        per_batch, ahead = _in_flight(volume, threads)

        check = _checker(volume, facts, args, root)
        batches = listed_batches(volume.units_to_check(), per_batch)
        # Decoding, and the system calls of a batched check, release the GIL (the structure
        # check of small local units runs in forked processes instead: ``_listed_check``).
        for reports in ordered_map(check, batches, threads=threads, ahead=ahead):
            yield from reports
        return
    done: dict[int, list[UnitReport | SoundRun]] = {}
    next_share = 0
    with ClusterRunner(args.scheduler) as runner:
        runner.check_paths([path])
        positions = cluster_listing(runner, volume, path, layer, mag)
        per_task = units_per_task(len(positions), runner.workers)
        shares = [UnitShare(path, layer, mag, tuple(part), not args.quick, args.chunks,
                            tuple(volume.extra_index.items()))
                  for part in chunked(positions, per_task)]
        for k, reports in runner.map(check_share, shares, key="info"):
            done[k] = reports
            while next_share in done:
                yield from done.pop(next_share)
                next_share += 1


def _unit_header(volume: Volume, header: dict[str, Any]) -> dict[str, Any]:
    """For a path that is one storage unit: the unit's own values of the header's keys (a WKW
    file's data offset, where header.wkw has 0)."""
    for position in volume.iter_units():
        try:
            unit = volume.open_unit(position)
        except FormatError:
            return {}
        if unit is None:
            return {}
        try:
            desc = unit.describe().fields
        finally:
            volume.done_with(unit)
        return {k: v for k, v in _scalars(desc).items() if k in header}
    return {}


# ``check_unit`` and the helpers moved to ``units`` stay importable from here.
__all__ = ["main", "check_share", "UnitShare", "UnitReport", "SoundRun", "check_unit",
           "check_batch", "problem_fields", "size_summary", "chunks_meeting", "geometry"]
