"""Render resources/icon.svg to viewer/resources/icon.png (the runtime window icon), and draw
the check mark of the dark theme's checkboxes (viewer/resources/check.png, check@2x.png).

Run after editing the SVG:  python packaging/make_icon.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter, QPen
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parents[1]


def draw_check(side: int) -> QImage:
    """A white check mark on transparent, ``side`` pixels square."""
    image = QImage(side, side, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(QColor(255, 255, 255), side * 0.17)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    painter.setPen(pen)
    s = float(side)
    painter.drawPolyline([QPointF(s * 0.18, s * 0.52), QPointF(s * 0.42, s * 0.76),
                          QPointF(s * 0.84, s * 0.26)])
    painter.end()
    return image


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
    for scale, name in ((1, "check.png"), (2, "check@2x.png")):
        out = ROOT / "viewer" / "resources" / name
        draw_check(12 * scale).save(str(out))
        print(f"wrote {out}")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
