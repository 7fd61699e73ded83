"""Render resources/icon.svg to viewer/resources/icon.png (the runtime window icon).

Run after editing the SVG:  python packaging/make_icon.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(ROOT / "resources" / "icon.svg"))
    image = QImage(256, 256, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    out = ROOT / "viewer" / "resources" / "icon.png"
    image.save(str(out))
    print(f"wrote {out}")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
