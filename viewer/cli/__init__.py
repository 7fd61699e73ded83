"""The ``wkw-viewer`` command line.

``wkw-viewer [PATH] [--pos X,Y,Z] [--zoom Z] [--screenshot FILE]`` opens the window (no PATH:
the built-in demo dataset).  Subcommands, each a module of this package with ``main(argv)``:
``info``, ``compare``, ``demo``, ``digest``, ``install-desktop``.  Exit codes: 0 ok, 1 a finding,
2 bad input.  A PATH may be a URL (``http(s)://``, ``s3://``, ``gs://``); ``--anon`` (any
command) reads public buckets without credentials.
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
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--anon" in args:  # any command: unsigned requests to public buckets (remote datasets)
        from viewer.format import configure_remote as configure

        args = [a for a in args if a != "--anon"]
        configure(anon=True)
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


if __name__ == "__main__":
    sys.exit(main())
