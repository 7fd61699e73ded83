"""Help ▸ About: what this program is, and the versions a bug report needs (the program,
Python, Qt and PySide6, and the libraries that read the data: numpy, lz4 and its C library,
pyqtgraph)."""

from __future__ import annotations

import platform
import sys

from PySide6.QtWidgets import QMessageBox, QWidget


def versions() -> list[tuple[str, str]]:
    """(name, version) of the program and of what it runs on, in the order shown."""
    import lz4
    import numpy
    import pyqtgraph
    import PySide6
    from PySide6.QtCore import qVersion

    import viewer

    try:
        from importlib.metadata import version

        program = version("wkw-viewer")
    except Exception:  # a frozen bundle may carry no package metadata
        program = viewer.__version__
    try:
        lz4_c = lz4.library_version_string()
    except Exception:
        lz4_c = "?"
    frozen = " (bundle)" if getattr(sys, "frozen", False) else ""
    return [
        ("wkw-viewer", program + frozen),
        ("Python", f"{platform.python_version()} ({platform.python_implementation()})"),
        ("Qt", qVersion()),
        ("PySide6", PySide6.__version__),
        ("pyqtgraph", pyqtgraph.__version__),
        ("numpy", numpy.__version__),
        ("lz4", f"{lz4.__version__} (liblz4 {lz4_c})"),
        ("system", f"{platform.system()} {platform.release()} {platform.machine()}"),
    ]


def about_html() -> str:
    rows = "".join(f"<tr><td>{name}</td><td><b>{value}</b></td></tr>"
                   for name, value in versions())
    return ("<p><b>wkw-viewer</b>: browse, compare and inspect chunked volume datasets: "
            "WKW, webKnossos, N5, Zarr v2 and v3, zfpc and OpenVDS, on disk or at a URL "
            "(HTTP(S), S3, GCS).</p>"
            f"<table cellspacing=3>{rows}</table>"
            "<p>Licence: MIT.</p>")


def show_about(parent: QWidget | None) -> QMessageBox:
    """Open the About box over ``parent`` (not modal); returns it."""
    box = QMessageBox(parent)
    box.setWindowTitle("About wkw-viewer")
    box.setText(about_html())
    box.setIconPixmap(box.windowIcon().pixmap(64, 64))
    box.setStandardButtons(QMessageBox.StandardButton.Ok)
    box.open()
    return box
