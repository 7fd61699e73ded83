"""``wkw-viewer info PATH [--json] [--quick]``: what a WKW file or dataset holds, and what is
wrong with it.

Prints the header fields and geometry, then for each data file its block type, file size,
compressed block sizes (min / median / max / total), compression ratio and validation problems
(every block is decoded unless ``--quick``).  Files are walked lazily and reported as they are
checked; on a terminal, progress goes to stderr.  ``--json`` prints one JSON document instead::

    {"path", "kind": "dataset" | "file",
     "header": {version, block_len, file_len, block_type, voxel_type, num_channels, voxel_size,
                block_type_name, voxel_type_code, data_offset} | null,
     "geometry": {...} | null,
     "files": [{path, block_type, file_size, block_sizes: {min, median, max, total}, ratio,
                problems: [...]}],
     "problems": [...], "valid": bool}

``block_len`` is in voxels, ``file_len`` in blocks, ``block_type`` the header's number,
``voxel_type`` the numpy name.  A problem is ``{type, message, path, block, offset}``.  ``ratio``
is uncompressed bytes / on-disk bytes of the blocks.  Exit status: 0 valid, 1 problems found,
2 the path cannot be opened (missing, unreadable, or a directory that is not a dataset).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from viewer.format import FormatError, webknossos, wkw
from viewer.format.wkw.header import Header
from viewer.format.wkw.validation import FileReport

#: Problems printed per file in the text output (the JSON lists all).
SHOWN_PROBLEMS = 20
#: What "valid" can mean for WKW: it keeps no checksums, so damage that still decodes is unseen.
STRUCTURE_ONLY = "structure only: this format has no checksums"
#: Seconds between progress updates on a terminal.
PROGRESS_EVERY = 0.25


def header_fields(h: Header) -> dict[str, Any]:
    return {
        "version": h.version,
        "block_len": h.block_len,
        "file_len": h.file_len,
        "block_type": h.block_type,
        "voxel_type": h.dtype.name,
        "num_channels": h.num_channels,
        "voxel_size": h.voxel_size,
        "block_type_name": h.block_type_name,
        "voxel_type_code": h.voxel_type_code,
        "data_offset": h.data_offset,
    }


def geometry(h: Header) -> dict[str, Any]:
    return {
        "voxels_per_file_side": h.file_len_vx,
        "blocks_per_file": h.num_blocks,
        "block_bytes": h.block_bytes,
        "file_bytes_uncompressed": h.num_blocks * h.block_bytes,
        "dtype": h.dtype.str,
    }


def problem_fields(p: FormatError) -> dict[str, Any]:
    return {"type": type(p).__name__, "message": str(p), "path": p.path, "block": p.block,
            "offset": p.offset}


def file_fields(report: FileReport) -> dict[str, Any]:
    h = report.header
    stats = report.block_stats
    ratio = None
    if h is not None and stats["total"]:
        held = h.num_blocks if h.is_compressed else stats["total"] // h.block_bytes
        ratio = round(held * h.block_bytes / stats["total"], 4)
    return {
        "path": report.path,
        "block_type": h.block_type if h is not None else None,
        "file_size": report.file_size,
        "block_sizes": stats,
        "ratio": ratio,
        "problems": [problem_fields(p) for p in report.problems],
    }


class _Progress:
    """A one-line counter on stderr, only when stderr is a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.on = stream.isatty()
        self.last = 0.0
        self.shown = False

    def update(self, files: int, problems: int) -> None:
        now = time.monotonic()
        if self.on and now - self.last >= PROGRESS_EVERY:
            self.last = now
            self.shown = True
            self.stream.write(f"\rchecked {files} files, {problems} problems")
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


def _text_header(h: Header | None, out: TextIO) -> None:
    if h is None:
        out.write("header: unreadable (see problems)\n")
        return
    out.write(
        f"header: version {h.version}, block_len {h.block_len} voxels, file_len {h.file_len} "
        f"blocks, block type {h.block_type} ({h.block_type_name}), voxel type {h.dtype.name} "
        f"({h.voxel_type_code}), {h.num_channels} channel{'s' if h.num_channels > 1 else ''}, "
        f"voxel size {h.voxel_size} byte{'s' if h.voxel_size > 1 else ''}\n")
    out.write(
        f"geometry: {h.file_len_vx}^3 voxels per file, {h.num_blocks} blocks of "
        f"{h.block_bytes} bytes, {_size(h.num_blocks * h.block_bytes)} per file uncompressed\n")


def _text_file(fields: dict[str, Any], root: str, out: TextIO) -> None:
    rel = os.path.relpath(fields["path"], root) if root else fields["path"]
    s = fields["block_sizes"]
    kind = wkw.header.BLOCK_TYPE_NAMES.get(fields["block_type"], "?")
    sizes = (f"blocks min {s['min']} / median {s['median']:g} / max {s['max']} / total "
             f"{s['total']} bytes" if s["total"] is not None else "blocks: unknown")
    ratio = f"ratio {fields['ratio']:.2f}" if fields["ratio"] is not None else "ratio ?"
    status = "ok" if not fields["problems"] else f"{len(fields['problems'])} problems"
    out.write(f"  {rel}  {kind}  {_size(fields['file_size'])}  {sizes}  {ratio}  {status}\n")
    for p in fields["problems"][:SHOWN_PROBLEMS]:
        out.write(f"    {p['type']}: {p['message']}\n")
    if len(fields["problems"]) > SHOWN_PROBLEMS:
        out.write(f"    ... and {len(fields['problems']) - SHOWN_PROBLEMS} more (--json lists "
                  f"all)\n")


def _webknossos(path: str) -> tuple[str, webknossos.WkDataset | None]:
    """For a webKnossos dataset or layer folder: the WKW dataset to check (its first color
    layer's finest mag) and the opened webKnossos dataset; other paths come back unchanged."""
    if not os.path.isdir(path) or not webknossos.is_webknossos_dataset(path):
        return path, None
    dataset = webknossos.WkDataset(path)
    return webknossos.select_mag(dataset).path, dataset


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wkw-viewer info",
        description="Show what a WKW file or dataset holds and validate it.",
        epilog="Exit status: 0 valid, 1 problems found, 2 the path cannot be opened.")
    parser.add_argument("path", help="a dataset directory (with header.wkw) or a .wkw file")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--quick", action="store_true",
                        help="check headers and jump tables only; do not decode every block")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    out, err = sys.stdout, sys.stderr
    path = os.path.abspath(args.path)
    if os.path.basename(path) == "header.wkw":  # a dataset's header: show the dataset
        path = os.path.dirname(path)
    if not os.path.exists(path):
        err.write(f"wkw-viewer info: {args.path}: no such file or directory\n")
        return 2
    if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
        err.write(f"wkw-viewer info: {args.path}: permission denied\n")
        return 2
    given_path = path
    try:  # a webKnossos dataset: list its layers, check its first color layer's finest mag
        path, wk_dataset = _webknossos(path)
    except (FormatError, KeyError) as exc:
        err.write(f"wkw-viewer info: {args.path}: {exc}\n")
        return 2
    is_dataset = os.path.isdir(path)
    if is_dataset and not os.path.exists(os.path.join(path, "header.wkw")):
        err.write(f"wkw-viewer info: {args.path}: not a WKW dataset (no header.wkw)\n")
        return 2
    if not os.access(path, os.R_OK):
        err.write(f"wkw-viewer info: {args.path}: permission denied\n")
        return 2
    root = path if is_dataset else ""
    progress = _Progress(err)
    files: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    header: Header | None = None
    if wk_dataset is not None:
        problems.extend(problem_fields(p) for p in wk_dataset.problems)
        if not args.json:
            out.write("\n".join(webknossos.summary_lines(wk_dataset)) + "\n")
    reports = wkw.iter_reports(path, decode=not args.quick)
    if is_dataset:
        head = next(reports)
        header = head.header
        problems.extend(problem_fields(p) for p in head.problems)
        if not args.json:
            out.write(f"{path}: WKW dataset\n")
            _text_header(header, out)
            for p in head.problems:
                out.write(f"  {type(p).__name__}: {p}\n")
            out.write("files:\n")
    try:
        for report in reports:
            if not is_dataset:
                header = report.header
                if not args.json:
                    out.write(f"{path}: WKW data file\n")
                    _text_header(header, out)
            fields = file_fields(report)
            files.append(fields)
            problems.extend(fields["problems"])
            if not args.json:
                progress.done()
                _text_file(fields, root, out)
                out.flush()
            progress.update(len(files), len(problems))
    except KeyboardInterrupt:
        progress.done()
        err.write("wkw-viewer info: interrupted\n")
        return 130
    progress.done()
    if args.json:
        doc = {
            "path": path,
            "kind": "dataset" if is_dataset else "file",
            "header": header_fields(header) if header is not None else None,
            "geometry": geometry(header) if header is not None else None,
            "files": files,
            "problems": problems,
            "valid": not problems,
            "validity": STRUCTURE_ONLY,
        }
        if wk_dataset is not None:
            doc["path"] = given_path
            doc["layers"] = webknossos.layers_json(wk_dataset)
        out.write(json.dumps(doc) + "\n")
    else:
        total = sum(f["file_size"] or 0 for f in files)
        out.write(f"{len(files)} data file{'s' if len(files) != 1 else ''}, {_size(total)} on "
                  f"disk; {len(problems)} problem{'s' if len(problems) != 1 else ''}\n")
        if not problems:
            out.write(f"valid ({STRUCTURE_ONLY}; wkw-viewer digest proves voxels)\n")
    return 1 if problems else 0
