"""The program's ``main`` (what ``python -m viewer ARGS`` runs) called in the test process, for
tests about what the window shows or what the command line answers rather than about the
process itself: no interpreter and no Qt start per run.  What ``main`` changes for the rest of
a process is put back after it (settings turned off, the application's names)."""

from __future__ import annotations

import contextlib
import io


def run_main(*argv: str) -> tuple[int, str]:
    """``main(argv)`` in this process: its exit status and what it wrote to stderr."""
    from PySide6.QtWidgets import QApplication

    from viewer import app
    from viewer.ui import settings

    qapp = QApplication.instance() or QApplication(["wkw-viewer-tests"])
    assert isinstance(qapp, QApplication)
    names = qapp.applicationName(), qapp.organizationName()
    disabled = settings._disabled
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            code = app.main(list(argv))
    finally:
        settings._disabled = disabled
        qapp.setApplicationName(names[0])
        qapp.setOrganizationName(names[1])
    return code, err.getvalue()
