"""Settings of remote reading, as the remote store uses them: the ``ReadConfig`` of
``viewer.format.config`` (timeouts, retries, requests in flight, anonymous access, the on-disk
cache of fetched bytes), and the few process-wide changes the program makes to its default.

``configure(...)`` changes the default for this process (the command line's ``--anon`` and
``--remote-cache-mb``); stores opened afterwards use the new values.  A child process is handed
the settings explicitly (``ReadConfig`` pickled with a job).

The on-disk cache's size is also a setting of the window (File > Remote Cache...), kept with
its other settings: ``apply_cache_setting(mb)`` applies that stored value unless this run asked
for a size (``ReadConfig.cache_size_given``: the environment or the command line), which wins.
"""

from __future__ import annotations

import os

from viewer.format import config as _read
from viewer.format.config import DEFAULT_CACHE_MB, ReadConfig

#: The settings of remote reading are the ``ReadConfig`` (the name the remote code grew with).
RemoteConfig = ReadConfig


def current() -> ReadConfig:
    """The settings in effect here: those of the opening under way, else the process
    default."""
    return _read.effective()


def configure(**changes: object) -> ReadConfig:
    """Change the process default (fields of ``ReadConfig``); returns the new one."""
    return _read.set_default(_read.default().replace(**changes))


def cache_size_from_run() -> bool:
    """Whether this run's cache size came from the environment or the command line (a stored
    setting of the window does not override it)."""
    return _read.default().cache_size_given


def set_cache_mb(mb: int, *, for_children: bool = False) -> ReadConfig:
    """Size the on-disk cache (MiB, 0: none) for this process; ``for_children``: the size this
    run asked for (the command line's ``--remote-cache-mb``): it wins over the window's
    stored setting, and child processes get it with the rest of the settings."""
    mb = max(0, int(mb))
    if for_children:
        return configure(cache_bytes=mb << 20, cache_size_given=True)
    return configure(cache_bytes=mb << 20)


def apply_cache_setting(mb: int | None) -> bool:
    """Apply the window's stored cache size (MiB; None: none stored) unless this run's size
    came from the environment or the command line; whether it was applied."""
    if mb is None or cache_size_from_run():
        return False
    set_cache_mb(mb)
    return True


def reset(config: ReadConfig | None = None) -> ReadConfig:
    """Make ``config`` (default: ``ReadConfig()``) the process default, forgetting
    ``configure`` changes (tests, which build it from their environment)."""
    return _read.set_default(config if config is not None else ReadConfig())


def cache_dir(config: ReadConfig) -> str:
    if config.cache_dir:
        return config.cache_dir
    import platformdirs

    return os.path.join(platformdirs.user_cache_dir("wkw-viewer", appauthor=False), "remote")


__all__ = ["RemoteConfig", "ReadConfig", "current", "configure", "cache_size_from_run",
           "set_cache_mb", "apply_cache_setting", "reset", "cache_dir", "DEFAULT_CACHE_MB"]
