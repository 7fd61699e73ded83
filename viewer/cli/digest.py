"""``wkw-viewer digest PATH [--json] [--layer NAME] [--mag M] [--index t=3] [-o LIST]`` and
``wkw-viewer digest --check LIST PATH``: digests of the decoded voxels per 64^3 region.

The list proves that a copy, a transfer or a conversion lost nothing, without both datasets on
one machine: the digests are of voxels, on a fixed grid from voxel 0, so a WKW dataset, its raw
re-encoding and its zarr3 or N5 conversion give the same list where the voxels are the same
(``viewer.core.digest`` says exactly what is hashed).  ``--check`` names every region that
differs.  Exit codes: 0 written / all regions match, 1 some regions differ (or could not be
read), 2 PATH or LIST cannot be opened.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Sequence

from viewer.cli import interrupt
from viewer.cli.index_arg import add_index_argument, index_of
from viewer.core import digest
from viewer.format import FormatError, open_volume
from viewer.format.volume import Volume

#: Regions listed in the text report of ``--check`` (``--json`` lists all).
LIST_LIMIT = 50


def open_for_digest(path: str, layer: str | None, mag: str | None,
                    index: dict[str, int] | None = None) -> Volume:
    """The volume a digest is made of (any format: ``viewer.format.open_volume``)."""
    return open_volume(path, layer=layer, mag=mag, index=index)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wkw-viewer digest",
        description="Digests of the decoded voxels of a dataset per 64^3 region (independent "
                    "of format and chunking), or --check them against a list.",
        epilog="Exit status: 0 ok / all match, 1 regions differ, 2 cannot open PATH or LIST.")
    parser.add_argument("path", help="a dataset, layer, mag folder or file of any format read")
    parser.add_argument("--check", metavar="LIST", help="compare PATH with this digest list")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("-o", "--output", metavar="LIST", help="write the list here (atomically)")
    parser.add_argument("--layer", help="layer of a webKnossos dataset (default: first color)")
    parser.add_argument("--mag", help="mag, e.g. 2-2-1 (default: the finest)")
    add_index_argument(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    out, err = sys.stdout, sys.stderr
    expected: digest.DigestList | None = None
    if args.check:
        try:
            with open(args.check, encoding="utf-8") as fh:
                expected = digest.DigestList.parse(fh.read())
        except (OSError, ValueError, KeyError, UnicodeDecodeError) as exc:
            err.write(f"wkw-viewer digest: cannot read the list {args.check}: {exc}\n")
            return 2
    try:
        volume = open_for_digest(args.path, args.layer, args.mag, index_of(args))
    except (FormatError, KeyError, IndexError, OSError) as exc:
        said = str(exc)  # a format error names its path already: say it once
        named = isinstance(exc, FormatError) and exc.path is not None
        err.write(f"wkw-viewer digest: {said if named else f'{args.path}: {said}'}\n")
        return 2
    failures: dict[digest.Vec3, str] = {}
    started = time.monotonic()
    shown = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if err.isatty() and (now - shown[0] > 0.25 or done == total):
            shown[0] = now
            err.write(f"\rdigest: region {done}/{total} ({now - started:.1f} s)")
            err.flush()

    def on_error(region: digest.Vec3, exc: Exception) -> None:
        failures[region] = str(exc)

    try:
        found = digest.compute(volume, progress=progress, on_error=on_error)
    except KeyboardInterrupt:
        return interrupt.status()
    finally:
        volume.close()
    if err.isatty():
        err.write("\n")
    if expected is None:
        text = io.StringIO()
        if args.json:
            doc = found.to_json()
            doc["path"] = args.path
            doc["unreadable"] = [{"offset": list(k), "error": v} for k, v in failures.items()]
            text.write(json.dumps(doc) + "\n")
        else:
            found.write_text(text)
        if args.output:
            from viewer.format import atomic

            atomic.write_atomically(args.output, text.getvalue().encode("utf-8"))
        else:
            out.write(text.getvalue())
        for region, why in failures.items():
            err.write(f"wkw-viewer digest: region {_name(region)} cannot be read: {why}\n")
        return 1 if failures else 0
    result = digest.check(expected, found, list(failures))
    if args.json:
        out.write(json.dumps({
            "equal": result.equal, "list": args.check, "path": args.path,
            "regions": result.regions, "grid": found.grid,
            "dtype_mismatch": result.dtype_mismatch,
            "differing": [list(k) for k in result.differing],
            "unreadable": [{"offset": list(k), "error": failures[k]}
                           for k in result.unreadable]}) + "\n")
    else:
        if result.dtype_mismatch is not None:
            out.write(f"DIFFERENT: {result.dtype_mismatch}\n")
        for k in result.differing[:LIST_LIMIT]:
            out.write(f"region {_name(k)} (64^3 voxels from there) differs\n")
        if len(result.differing) > LIST_LIMIT:
            out.write(f"... and {len(result.differing) - LIST_LIMIT} more regions differ "
                      f"(--json lists all)\n")
        for k in result.unreadable:
            out.write(f"region {_name(k)} cannot be read: {failures[k]}\n")
        state = "all regions match" if result.equal else (
            f"{len(result.differing)} of {result.regions} regions differ"
            + (f", {len(result.unreadable)} unreadable" if result.unreadable else ""))
        out.write(f"{args.path}: {state}\n")
    return 0 if result.equal else 1


def _name(region: digest.Vec3) -> str:
    return ",".join(str(v) for v in region)
