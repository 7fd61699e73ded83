"""A's and B's values under the mouse, in the status bar: ``A 12   B 15   A-B -3``.

``QtHoverValues`` owns the status bar label; it listens to A's views (B's views forward their
hovers to them) and reads the value from the planes on screen, A's and B's.  The text is
``hover_text`` of two ``plane_value``s (plain functions, no widget).

GUI thread only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from viewer.core.slicing import IN_PLANE, Plane, Status
from viewer.ui.compare.host import CompareHost
from viewer.ui.compare.side_b import QtSideB

Vec3 = tuple[int, int, int]
#: The values of every channel at a voxel, and its ``Status``.
Value = tuple[Any, int]


def plane_value(plane: Plane | None, pos: Vec3) -> Value | None:
    """``(values of every channel, status)`` of ``pos`` on ``plane``, None when off it."""
    if plane is None or pos[plane.request.axis] != plane.request.index:
        return None
    u, v = IN_PLANE[plane.request.axis]
    iu, iv = pos[u] - plane.request.lo[0], pos[v] - plane.request.lo[1]
    if 0 <= iu < plane.data.shape[1] and 0 <= iv < plane.data.shape[2]:
        return plane.data[:, iu, iv], int(plane.status[iu, iv])
    return None


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(int(v))


def hover_text(a: Value | None, b: Value | None) -> str:
    """``A 12   B 15   A-B -3`` for the status bar (rich text)."""
    def side(v: Value | None) -> str:
        if v is None:
            return "\u2013"
        values, status = v
        if status == Status.PENDING:
            return "(loading)"
        if status == Status.FAILED:
            return "(failed)"
        if status == Status.CHANGING:
            return "(changing)"
        text = ", ".join(_fmt(x) for x in values)
        return text + (" (no file)" if status == Status.ABSENT else "")

    parts = [f"<span style='color:#78afff'>A</span> {side(a)}",
             f"<span style='color:#f5a623'>B</span> {side(b)}"]
    ok = (Status.DATA, Status.ABSENT)
    if a is not None and b is not None and a[1] in ok and b[1] in ok \
            and len(a[0]) == len(b[0]):
        d = a[0].astype(np.float64) - b[0].astype(np.float64)
        same = bool(np.all((d == 0) | (np.isnan(a[0].astype(np.float64))
                                       & np.isnan(b[0].astype(np.float64)))))
        colour = "#9a9ca3" if same else "#ffd21f"
        parts.append(f"<span style='color:{colour}'>A\u2212B {', '.join(_fmt(x) for x in d)}"
                     "</span>")
    return "&nbsp;&nbsp;&nbsp;".join(parts)


class QtHoverValues:
    """The status bar label with A's and B's values at the voxel under the mouse."""

    def __init__(self, host: CompareHost, b: QtSideB) -> None:
        self.host = host
        self.b = b
        self.label = QLabel()
        self.label.setObjectName("compareHover")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        host.add_status_widget(self.label)
        for view in host.views.values():
            view.hovered.connect(self.show)

    def show(self, pos: Vec3 | None) -> None:
        """Say the values at ``pos`` (None, or no B: nothing)."""
        if pos is None or not self.b.active:
            self.label.setText("")
            return
        a = None
        for view in self.host.views.values():
            a = plane_value(view.plane, pos)
            if a is not None:
                break
        b = None
        for plane in (*self.b.planes.values(), *(v.plane for v in self.b.views.values())):
            b = plane_value(plane, pos)
            if b is not None:
                break
        self.label.setText(hover_text(a, b))


__all__ = ["QtHoverValues", "hover_text", "plane_value"]
