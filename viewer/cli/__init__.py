"""The ``wkw-viewer`` command line.

``wkw-viewer [PATH] [--pos X,Y,Z] [--zoom Z] [--screenshot FILE]`` opens the window (no PATH:
the built-in demo dataset).  Subcommands, each a module of this package with ``main(argv)``:
``info``, ``compare``, ``demo``, ``digest``, ``advise``, ``install-desktop``.  Exit codes: 0 ok,
1 a finding, 2 bad input, 130 interrupted (Ctrl+C; 143 SIGTERM: ``viewer.cli.interrupt``).  A
PATH may be a URL (``http(s)://``, ``s3://``, ``gs://``); ``--anon`` (any command) reads public
buckets without credentials; ``--remote-cache-mb N`` (any command) sizes the on-disk cache of
bytes read over the network for this run (0: none; the window's File > Remote Cache... keeps a
size for later runs).  ``--version`` prints the version and whether the native read kernel was
built.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

from viewer.cli import interrupt

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
    """Run the command line (``argv``: the arguments; None: the program's own, and then this
    process's Ctrl+C and SIGTERM are handled by ``interrupt``, so a program embedding the
    command keeps its own handlers)."""
    if argv is None:
        interrupt.install()
    args = list(sys.argv[1:] if argv is None else argv)
    # Named before anything else runs, so that a Ctrl+C at once names the command too.
    command = next((a for a in args if a in COMMANDS), None)
    if command is not None:
        interrupt.set_prog(f"wkw-viewer {command}")
    try:
        return _main(args)
    except KeyboardInterrupt:  # before a command took over (imports, option parsing)
        return interrupt.status()


def _main(args: list[str]) -> int:
    # The program's edge: the settings of reading come from the environment here, once, and
    # are passed down from here on (the format layer never reads the environment).
    from viewer.environment import read_config
    from viewer.format import set_default_read_config

    set_default_read_config(read_config(os.environ))
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
    if args[:1] == ["--version"]:
        print(_version())
        return 0
    unknown = _unknown_command(args)
    if unknown is not None:
        print(unknown, file=sys.stderr)
        return 2
    if args and args[0] in COMMANDS:
        module = importlib.import_module(COMMANDS[args[0]])
        from viewer.format.executor import Executor, using

        # The command's executor: every dataset it opens runs its background threads on it
        # (``viewer.format.executor``); closed when the command ends.
        service = Executor()
        try:
            with using(service):
                return int(module.main(args[1:]))
        except BrokenPipeError:
            # Whoever read our output stopped early (``| head``): not an error of ours.  Point
            # stdout at /dev/null so that the interpreter's final flush does not raise again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 128 + 13  # as a shell reports a process ended by SIGPIPE
        finally:
            # The background threads (requests, cache writer, pools) end here, in order,
            # not in the interpreter's finalization: the same exit status every time.
            from viewer.format import shutdown

            service.close()
            shutdown()
    from viewer import app  # the window: imports Qt, so only when it is wanted

    try:
        return int(app.main(args))
    finally:
        from viewer.format import shutdown  # as above: before the interpreter's exit

        shutdown()


def _version() -> str:
    """The program's version and whether the native read kernel and plane assembly were
    built."""
    from importlib.metadata import PackageNotFoundError, version

    from viewer.format import native

    try:
        number = version("wkw-viewer")
    except PackageNotFoundError:
        number = "(not installed)"
    from viewer.format.native import planes

    kernel = ("built" if native.available()
              else "not built (no C compiler at install): reads take the Python path")
    assembly = ("built" if planes.available()
                else "not built (no C compiler or Python headers at install): numpy copies")
    return (f"wkw-viewer {number}; native read kernel: {kernel}; native plane assembly: "
            f"{assembly}")


def _unknown_command(args: list[str]) -> str | None:
    """What to say when ``args`` start with a word that is neither a subcommand nor something
    to open: a near miss of a subcommand (``infoo``), or a word followed by more words (the
    window takes one PATH); None when ``args`` are fine or the window should say more."""
    import difflib

    if not args or args[0] in COMMANDS or args[0].startswith("-"):
        return None
    word = args[0]
    if "://" in word or os.path.exists(word):
        return None
    near = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    more = [a for a in args[1:] if not a.startswith("-")]
    if not near and (not more or os.sep in word):
        return None
    hint = f" (did you mean {near[0]}?)" if near else ""
    return (f"wkw-viewer: unknown command {word!r}{hint}; the commands are "
            f"{', '.join(COMMANDS)}, or a dataset to open (wkw-viewer --help)")


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
