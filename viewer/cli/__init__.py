"""The ``wkw-viewer`` command line.

``wkw-viewer [PATH] [--pos X,Y,Z] [--zoom Z] [--screenshot FILE]`` opens the window (no PATH:
the built-in demo dataset).  Subcommands, each a module of this package with ``main(argv)``:
``info``, ``compare``, ``demo``, ``digest``, ``advise``, ``install-desktop``; exit 0 ok, 1 finding,
2 bad input.  A PATH may be a URL (``http(s)://``, ``s3://``, ``gs://``); ``--anon`` (any
command) reads public buckets without credentials; ``--remote-cache-mb N`` (any command) sizes
the on-disk cache of bytes read over the network for this run (0: none; the window's File >
Remote Cache... keeps a size for later runs).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

#: Subcommand name -> module holding its ``main(argv) -> int``.
COMMANDS = {
    "info": "viewer.cli.info",
    "compare": "viewer.cli.compare",
    "demo": "viewer.cli.demo",
    "install-desktop": "viewer.cli.desktop",
    "digest": "viewer.cli.digest",
    "advise": "viewer.cli.advise",
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--anon" in args:  # any command: unsigned requests to public buckets (remote datasets)
        from viewer.format import configure_remote as configure

        args = [a for a in args if a != "--anon"]
        configure(anon=True)
    args, cache_mb = _take_option(args, "--remote-cache-mb")
    if cache_mb is not None:
        from viewer.format import set_remote_cache_mb

        try:
            set_remote_cache_mb(int(cache_mb), for_children=True)
        except ValueError:
            print(f"--remote-cache-mb wants a number of MiB, not {cache_mb!r}", file=sys.stderr)
            return 2
    if args and args[0] in COMMANDS:
        module = importlib.import_module(COMMANDS[args[0]])
        try:
            return int(module.main(args[1:]))
        except BrokenPipeError:
            # Whoever read our output stopped early (``| head``): not an error of ours.  Point
            # stdout at /dev/null so that the interpreter's final flush does not raise again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 128 + 13  # as a shell reports a process ended by SIGPIPE
    from viewer import app  # the window: imports Qt, so only when it is wanted

    return int(app.main(args, exit_at_once=True))


def _take_option(args: list[str], name: str) -> tuple[list[str], str | None]:
    """``args`` without ``name VALUE`` / ``name=VALUE`` (any command's option), and the value
    (the last one given; None: not given; "" when the value is missing)."""
    out: list[str] = []
    value: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == name:
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 2
            continue
        if a.startswith(name + "="):
            value = a[len(name) + 1:]
        else:
            out.append(a)
        i += 1
    return out, value


if __name__ == "__main__":
    sys.exit(main())
