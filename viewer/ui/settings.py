"""Where the window keeps what it remembers (recent datasets, window geometry and docks, each
dataset's view): one ``QSettings``, or none at all.

Nothing is read or written when settings are off: ``WKW_VIEWER_NO_SETTINGS`` is set (the tests
set it), or the program turned them off for this run (``--no-settings``, ``--screenshot``:
``disable()``).  ``WKW_VIEWER_SETTINGS_DIR`` puts the settings file (``wkw-viewer.ini``) in
that folder instead of the user's (``~/.config/wkw-viewer/wkw-viewer.conf`` on Linux).
GUI thread only.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QSettings

ORGANIZATION = APPLICATION = "wkw-viewer"

_disabled = False


def disable() -> None:
    """Neither read nor write settings for the rest of this process."""
    global _disabled
    _disabled = True


def enabled() -> bool:
    return not _disabled and not os.environ.get("WKW_VIEWER_NO_SETTINGS")


def open_settings() -> QSettings | None:
    """The settings, or None when they are off."""
    if not enabled():
        return None
    folder = os.environ.get("WKW_VIEWER_SETTINGS_DIR")
    if folder:
        return QSettings(os.path.join(folder, "wkw-viewer.ini"), QSettings.Format.IniFormat)
    return QSettings(ORGANIZATION, APPLICATION)
