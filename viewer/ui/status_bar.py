"""The main window's status bar: the cursor, the mouse position, the value and block under the
mouse, the mag shown, and the dataset summary (with physical units where the dataset has a voxel
size).

``QtWindowStatus`` fills the window's ``QStatusBar`` with its sections (one flow that wraps onto
a second line on a narrow window) and keeps them current; it reads what is open through the
window's ``WindowHost``.  With several layers the value under the mouse is given for each visible
layer, and ``mag_label`` names the mag the focused view shows (``color: mag 4-4-2``).  Other
parts add sections of their own with ``add_widget``.  GUI thread only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from viewer.core.multires import format_physical
from viewer.core.slicing import IN_PLANE, Status
from viewer.core.state import format_position
from viewer.ui.flow_layout import QtFlowLayout
from viewer.ui.slice_view import QtSliceView
from viewer.ui.window_host import WindowHost

Vec3 = tuple[int, int, int]
#: (layer, values, status, coarse) of one layer at one voxel: see ``QtWindowStatus.layer_values``.
LayerValue = tuple[str, npt.NDArray[Any], int, bool]


class QtWindowStatus(QObject):
    """The sections of the window's status bar."""

    def __init__(self, bar: QStatusBar, host: WindowHost) -> None:
        super().__init__(bar)
        self.bar = bar
        self.host = host
        self.state = host.state
        #: The voxel under the mouse (None: the mouse is over no view).
        self.hover: Vec3 | None = None
        # Every section sits in one flow that wraps onto a second line on a narrow window
        # (QStatusBar itself cuts the sections' text short when they do not fit).
        self.sections = QWidget()
        self.sections.setObjectName("statusSections")
        # the status bar's own colour shows through the sections (not the panels' colour)
        self.sections.setStyleSheet(
            "#statusSections, #statusSections > QWidget { background: transparent; }")
        self._flow = QtFlowLayout(self.sections)
        bar.addWidget(self.sections, 1)
        bar.messageChanged.connect(self._on_message)
        self.cursor_label = QLabel()
        self.mouse_label = QLabel()
        self.value_label = QLabel()
        self.block_label = QLabel()
        self.mag_label = QLabel()
        self.mag_label.setToolTip("The mag (resolution) the focused view shows of the active "
                                  "layer: the coarsest that still gives a voxel per screen "
                                  "pixel, or the one locked in the Layers panel")
        self.info_label = QLabel()
        for label in (self.cursor_label, self.mouse_label, self.value_label, self.block_label,
                      self.mag_label):
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self._flow.addWidget(label)
        self._flow.addWidget(self.info_label)

    def add_widget(self, widget: QWidget, permanent: bool = False) -> None:
        """Add a section to the status bar: before the dataset summary, or (``permanent``)
        at the end."""
        flow = self._flow
        if permanent:
            flow.addWidget(widget)
            return
        at = flow.indexOf(self.info_label)
        items = [flow.takeAt(flow.count() - 1) for _ in range(flow.count() - at)][::-1]
        flow.addWidget(widget)
        for item in items:
            if item is not None:
                flow.addItem(item)

    def _on_message(self, text: str) -> None:
        """While a message shows, the sections are hidden: the bar keeps their height so that
        the views do not jump."""
        if text:
            self.bar.setMinimumHeight(self.sections.height() + 4)
        else:
            self.bar.setMinimumHeight(0)

    def show_cursor(self, pos: Sequence[int]) -> None:
        self.cursor_label.setText(f"cursor  {self.position_text(pos)}")

    def show_mag(self, text: str) -> None:
        """Name the mag the focused view shows (empty: the dataset has one mag per layer)."""
        self.mag_label.setText(text)

    def show_info(self, scanning: bool = False) -> None:
        """The dataset summary (size: what the files found so far span; ``scanning``: the
        files are still being listed, the extent may grow)."""
        vol = self.host.dataset
        if vol is None:
            return
        info = vol.info()
        lo, hi = self.state.bounds
        size = " \u00d7 ".join(str(b - a) for a, b in zip(lo, hi, strict=True))
        more = " (listing files\u2026)" if scanning else ""
        chans = f" \u00d7 {vol.num_channels}" if vol.num_channels > 1 else ""
        physical = note = ""
        if self.state.voxel_size_nm is not None:
            physical = (" \u00b7 " + " \u00d7 ".join(f"{v:.4g}" for v in self.state.voxel_size_nm)
                        + " nm")
        opened = self.host.opened
        if opened is not None and (len(opened.layers) > 1 or opened.voxel_size_declared):
            names = ", ".join(f"{la.name} ({la.category})" for la in self.state.layers)
            what = "webKnossos" if opened.format == "webknossos" else opened.format
            note = (f"\n{what} dataset, layers {names}; positions in mag-1 voxels"
                    + (f" of{physical[2:]} (x \u00d7 y \u00d7 z)" if physical else ""))
        index = "".join(f" \u00b7 {k} {self.state.index.get(k, 0)} of 0\u2013{n - 1}"
                        for k, n in self.state.extra_axes.items())
        self.info_label.setText(f"{vol.dtype.name}{chans} \u00b7 {info.compression} \u00b7 "
                                f"{size}{more}{physical}{index}")
        chunk = "\u00d7".join(map(str, vol.chunk_shape))
        unit = "\u00d7".join(map(str, vol.unit_shape))
        self.info_label.setToolTip(
            f"{self.host.dataset_path}\n{info.format}: voxel type {vol.dtype.name}, "
            f"{vol.num_channels} channel(s), {info.compression} chunks of {chunk} voxels, "
            f"{unit} chunks per storage unit; the data span {size} voxels"
            + ("\n(still listing the data files: the extent may grow)" if scanning else "")
            + note)

    # -- the cursor and the mouse -----------------------------------------------------------
    def position_text(self, pos: Sequence[int]) -> str:
        """``x, y, z`` in voxels, and where the dataset has a voxel size also in physical
        units (the voxel's corner, as webKnossos counts): ``40, 20, 50 · 0.4, 0.2, 1.25 µm``."""
        text = format_position(pos)
        size = self.state.voxel_size_nm
        if size is not None:
            text += f"  \u00b7  {format_physical(pos, size)}"
        return text

    def on_hovered(self, pos: Vec3 | None) -> None:
        """A view's mouse is over voxel ``pos`` (None: over no voxel)."""
        self.hover = pos
        self.show_hover(pos)

    def rehover(self) -> None:
        """Show the mouse's voxel anew (its value arrived, or what is under it changed)."""
        if self.hover is not None:
            self.show_hover(self.hover)

    def show_hover(self, pos: Vec3 | None) -> None:
        vol = self.host.dataset
        if pos is None or vol is None:
            self.mouse_label.setText("")
            self.value_label.setText("")
            self.block_label.setText("")
            self._hover_segments([])
            return
        self.mouse_label.setText(f"mouse  {self.position_text(pos)}")
        lo, hi = self.state.bounds
        if not all(a <= p < b for p, a, b in zip(pos, lo, hi, strict=True)):
            self.value_label.setText("outside the data")
            self.block_label.setText("")
            return
        found = self.layer_values(pos)
        self.value_label.setText(_values_text(found))
        self._hover_segments(found)
        chunk = np.asarray([p // m for p, m in zip(pos, self.host.dataset_mag, strict=True)],
                           dtype=np.int64) // np.asarray(vol.chunk_shape)
        units, indices = vol.locate(chunk[None, :])
        unit = (int(units[0][0]), int(units[0][1]), int(units[0][2]))
        path = vol.unit_path(unit)
        base = vol.path if os.path.isdir(vol.path) else os.path.dirname(vol.path)
        rel = os.path.relpath(path, base) if path.startswith(base) else path
        self.block_label.setText(f"file  {rel}   block  {int(indices[0])}")

    def layer_values(self, pos: Vec3) -> list[LayerValue]:
        """(layer, values, status, coarse) of each visible layer at ``pos``, from the first
        view whose planes hold it; ``coarse`` when the value comes from a coarser mag than
        mag 1 (it is the value of the mag voxel containing ``pos``)."""
        for view in self.host.views.values():
            found = _values_on(view, pos)
            if found:
                return found
        return []

    def select_hovered_segment(self) -> None:
        """Select (highlight) the segment under the mouse in each segmentation layer; the
        same segment again, or background, selects none."""
        for layer in self.state.layers:
            if layer.is_segmentation and layer.visible:
                hovered = layer.hovered_id
                self.state.set_layer(layer.name, selected_id=None
                                     if hovered == layer.selected_id else hovered)

    def _hover_segments(self, found: list[LayerValue]) -> None:
        """Highlight the segment under the mouse (``found``: ``layer_values``) in each
        segmentation layer."""
        ids = {name: int(values[0]) for name, values, status, _ in found
               if status == Status.DATA}
        for layer in self.state.layers:
            if layer.is_segmentation:
                hovered = ids.get(layer.name) or None
                if hovered != layer.hovered_id:
                    self.state.set_layer(layer.name, hovered_id=hovered)


def _values_on(view: QtSliceView, pos: Vec3) -> list[LayerValue]:
    """``QtWindowStatus.layer_values`` on one view: every layer's plane there must hold ``pos``."""
    planes = view.layer_planes or ({"": view.plane} if view.plane is not None else {})
    u, v = IN_PLANE[view.axis]
    out = []
    for name, plane in planes.items():
        at = plane.pixel_index(pos[u], pos[v]) if pos[view.axis] == plane.request.index \
            else None
        if at is None:
            return []
        # ``sources`` (not ``source``, which would be worked out for the whole plane): None
        # when every pixel that is not loading comes from the chosen mag.
        sources = getattr(plane, "sources", None)
        coarse = plane.factors != (1, 1) or (sources is not None and bool(sources[at]))
        out.append((name, plane.data[:, at[0], at[1]], int(plane.status[at]), coarse))
    return out


def _values_text(found: list[LayerValue]) -> str:
    """The status bar's values: ``value  12`` for one layer, ``color 12   segmentation 7``
    for several."""
    several = len(found) > 1
    parts = []
    for name, values, status, coarse in found:
        if status == Status.PENDING:
            text = "(loading)"
        elif status == Status.FAILED:
            text = "(block failed to read)"
        elif status == Status.CHANGING:
            text = "(file being changed by another program: read again when it settles)"
        else:
            text = ", ".join(_format_value(v) for v in values)
            if coarse:
                text += " (coarse mag)"
            if status == Status.ABSENT:
                text += "  (no file: zeros)"
        if several:
            parts.append(f"{name} {text}")
        else:
            label = "value" if len(values) == 1 else "values"
            parts.append(f"{label}  {text}")
    return "   ".join(parts)


def _format_value(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(int(v)) if isinstance(v, (int, np.integer)) else str(v)
