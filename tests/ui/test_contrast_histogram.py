"""The contrast panel's histogram outline: made once per histogram, range and size, and the
same path, point for point, as drawn step by step."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF
from PySide6.QtGui import QPainterPath

from viewer.ui.contrast import QtHistogram


def _stepwise(h: QtHistogram, plot_h: int) -> QPainterPath:
    """The outline as the panel drew it before: one ``lineTo`` per step corner."""
    logc = np.log1p(h.counts.astype(np.float64))
    top = logc.max() or 1.0
    path = QPainterPath(QPointF(h._x(float(h.edges[0])), plot_h))
    for i, c in enumerate(logc):
        y = plot_h - c / top * (plot_h - 6)
        path.lineTo(h._x(float(h.edges[i])), y)
        path.lineTo(h._x(float(h.edges[i + 1])), y)
    path.lineTo(h._x(float(h.edges[-1])), plot_h)
    path.closeSubpath()
    return path


def _points(path: QPainterPath) -> list[tuple[int, float, float]]:
    return [(int(e.type.value), e.x, e.y) for e in
            (path.elementAt(k) for k in range(path.elementCount()))]


def test_the_histogram_outline_is_the_stepwise_one_and_made_once(qtbot) -> None:  # type: ignore[no-untyped-def]
    h = QtHistogram()
    qtbot.addWidget(h)
    h.resize(317, 130)
    rng = np.random.default_rng(7)
    counts, edges = np.histogram(rng.normal(90, 30, 5000), bins=97, range=(-3.5, 250.25))
    h.set_histogram(counts, edges)
    h.lo, h.hi = -20.0, 260.5  # handles outside the data widen the range
    plot_h = h.height() - 18
    made = h._outline(plot_h)
    assert _points(made) == _points(_stepwise(h, plot_h))
    assert h._outline(plot_h) is made  # a repaint reuses it
    h.resize(401, 130)
    assert _points(h._outline(plot_h)) == _points(_stepwise(h, plot_h))
    h.set_histogram(counts[::-1].copy(), edges)
    again = h._outline(plot_h)
    assert again is not made and _points(again) == _points(_stepwise(h, plot_h))
    h.grab()  # paints
