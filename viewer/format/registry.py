"""One registry of formats, and the two ways in: ``open_dataset`` and ``open_volume``.

What a path is gets decided here, and only here, by looking at it (files present, magic bytes,
metadata): each format joins with a ``FormatEntry`` whose ``detect`` answers cheaply whether a
path is its own.  Entries are asked in order of ``priority`` (highest first), so a webKnossos
dataset (a properties file) wins over the plain WKW dataset a mag folder of it also is.

The window, the command line, the inspector and compare never test for a format themselves:
they call ``open_dataset(path)`` (layers, mags, voxel size, problems) or
``open_volume(path, layer, mag)`` (one array).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from viewer.format.config import ReadConfig, using
from viewer.format.dataset import Dataset, select_mag
from viewer.format.errors import DatasetLayoutError, FormatError, UnsupportedFormatError
from viewer.format.executor import Executor
from viewer.format.executor import current as current_executor
from viewer.format.executor import using as using_executor
from viewer.format.store import is_url
from viewer.format.volume import Volume


@dataclass(frozen=True)
class FormatEntry:
    """A format's place in the registry.

    ``detect(path)``: whether ``path`` (a local path or URL, normalised) is this format's;
    cheap (a stat, a small read), never raises for a path that is simply something else.
    ``open_dataset(path)``: the dataset at ``path``; raises a ``FormatError`` when it cannot
    be opened at all.  ``names``: the ``format`` values its volumes report."""

    name: str
    detect: Callable[[str], bool]
    open_dataset: Callable[[str], Dataset]
    priority: int = 0
    names: tuple[str, ...] = ()
    #: One line for ``--help`` and error messages: what paths this format opens.
    describes: str = ""


#: The entry point group through which an installed distribution adds formats: each entry
#: point names a module that registers its formats when imported (``register``), or a
#: ``FormatEntry`` (registered as it loads).  E.g. in a plugin's ``pyproject.toml``::
#:
#:     [project.entry-points."wkw_viewer.formats"]
#:     toy = "toyformat"
ENTRY_POINT_GROUP = "wkw_viewer.formats"

_entries: list[FormatEntry] = []
_lock = threading.Lock()
_builtins_loaded = False


def register(entry: FormatEntry) -> None:
    """Add (or replace, by name) a format."""
    with _lock:
        _entries[:] = [e for e in _entries if e.name != entry.name]
        _entries.append(entry)
        _entries.sort(key=lambda e: -e.priority)


def formats() -> list[FormatEntry]:
    """The registered formats (the built-in ones and the plugins'), in the order they are
    asked."""
    _load_builtins()
    with _lock:
        return list(_entries)


def _load_builtins() -> None:
    """Load the formats of the ``wkw_viewer.formats`` entry points (once).  The built-in
    formats register when the package ``viewer.format`` is imported (its ``__init__`` imports
    ``viewer.format.formats``): this module never imports a format, so the formats can import
    it without a loop."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = point.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the program
            import sys

            print(f"wkw-viewer: format plugin {point.name!r} ({point.value}) not loaded: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        if isinstance(loaded, FormatEntry):
            register(loaded)


def normalise(path: str | os.PathLike[str]) -> str:
    p = os.fspath(path)
    if is_url(p):
        return p
    return os.path.normpath(p)


def detect(path: str | os.PathLike[str], config: ReadConfig | None = None) -> FormatEntry:
    """The format of ``path``; ``UnsupportedFormatError`` (or ``DatasetLayoutError`` for a
    path that does not exist or cannot be read) naming what was looked for.  ``config``: how
    to read (default: the process default, ``viewer.format.config``)."""
    with using(config):
        return _detect(normalise(path))


def _detect(p: str) -> FormatEntry:
    if not is_url(p):
        if not os.path.exists(p):
            raise DatasetLayoutError("no such file or directory", p)
        if not os.access(p, os.R_OK) or (os.path.isdir(p) and not os.access(p, os.X_OK)):
            raise DatasetLayoutError("permission denied", p)
    failed: OSError | None = None
    for entry in formats():
        try:
            if entry.detect(p):
                return entry
        except PermissionError:
            raise DatasetLayoutError("permission denied", p) from None
        except OSError as exc:
            failed = exc
            continue
    if failed is not None and is_url(p):  # the network, not the data: say so
        if isinstance(failed, FormatError):  # a remote store's failure (``RemoteError``)
            raise failed
        raise DatasetLayoutError(f"cannot read: {failed.strerror or failed}", p)
    if is_url(p):  # every probe of every format found nothing there
        names = ", ".join(e.name for e in formats())
        raise UnsupportedFormatError(f"nothing at this URL that this program reads (it looked "
                                     f"for: {names})", p)
    known = "; ".join(e.describes for e in formats() if e.describes)
    raise UnsupportedFormatError(f"not a dataset this program reads (it reads: {known})", p)


def open_dataset(path: str | os.PathLike[str], config: ReadConfig | None = None,
                 executor: Executor | None = None) -> Dataset:
    """The dataset at ``path``, whatever its format (see the module docstring), read with
    ``config`` (remote time-outs, cache, credentials mode, ...; default: the process default
    the program's edge set, ``viewer.format.config``): the stores it opens, now or when a mag
    is first used, use it.  Its background work runs on ``executor`` (its owner's, who closes
    it; default: the one in effect, ``viewer.format.executor.current``, else one made for the
    dataset and closed by ``Dataset.close``)."""
    service, owned = _executor_for(executor)
    try:
        with using(config), using_executor(service):
            dataset = _open_dataset(path)
    except BaseException:
        if owned:
            service.close()
        raise
    if owned:
        dataset.own_executor(service)
    return dataset


def _executor_for(given: Executor | None) -> tuple[Executor, bool]:
    """The executor an opening runs on, and whether it was made for it (the opened object
    then owns it): the one given, else the one in effect (an opening inside another's), else
    a new one."""
    found = given if given is not None else current_executor()
    return (found, False) if found is not None else (Executor(), True)


def _open_dataset(path: str | os.PathLike[str]) -> Dataset:
    entry = _detect(normalise(path))
    try:
        return entry.open_dataset(normalise(path))
    except PermissionError as exc:
        raise DatasetLayoutError("permission denied", exc.filename or normalise(path)) from None
    except RecursionError:
        raise DatasetLayoutError("metadata nested too deeply to read",
                                 normalise(path)) from None


def open_volume(path: str | os.PathLike[str], layer: str | None = None,
                mag: Any = None, index: Mapping[str, int] | None = None,
                config: ReadConfig | None = None, executor: Executor | None = None) -> Volume:
    """One chunked array: ``layer`` by name (default: the first color layer), ``mag`` as
    ``(x, y, z)`` or ``"2-2-1"`` (default: the finest), ``index`` the element of each extra
    axis (``{"t": 3}``; default 0 on every one, see ``Volume.extra_axes``), read with
    ``config`` (as ``open_dataset``).  A ``FormatError`` when the path is none of the
    formats, ``KeyError`` naming what exists for an unknown layer, mag or axis,
    ``IndexError`` for an index past its axis.  Its background work runs on ``executor``
    (its owner's; default: the one in effect, else one made for the volume and closed by its
    ``close``)."""
    service, owned = _executor_for(executor)
    dataset = open_dataset(path, config, service)
    try:
        chosen = select_mag(dataset, layer, mag)
        with using_executor(service):
            volume = chosen.volume.at_index(index or {})
    except BaseException:
        dataset.close()
        if owned:
            service.close()
        raise
    if owned:
        volume.own_executor(service)
    return volume


def format_names() -> list[str]:
    """Every ``format`` value a dataset or volume may report."""
    out: list[str] = []
    for entry in formats():
        for name in (entry.name, *entry.names):
            if name not in out:
                out.append(name)
    return out


__all__ = ["FormatEntry", "register", "formats", "detect", "open_dataset", "open_volume",
           "format_names", "FormatError"]
