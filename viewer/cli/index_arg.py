"""``--index AXIS=N``: the element of an extra axis (time, ...) a command reads, the same
option on every command that reads voxels (``viewer.core.state.parse_index`` reads it)."""

from __future__ import annotations

import argparse

from viewer.core.state import parse_index


def add_index_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--index", action="append", default=[], metavar="AXIS=N", type=_checked,
        help="element of an extra axis to read, e.g. t=3 (repeat for more axes; default 0 on "
             "every extra axis)")


def _checked(text: str) -> str:
    try:
        parse_index(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def index_of(args: argparse.Namespace) -> dict[str, int]:
    """The ``--index`` values given, as one mapping."""
    return parse_index(list(getattr(args, "index", None) or []))


__all__ = ["add_index_argument", "index_of"]
