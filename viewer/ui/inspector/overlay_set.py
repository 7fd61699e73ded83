"""The inspector's overlays on the window's slice views, kept up to date: which are drawn, the
grids' spacing and extent, the scale to the window's voxels, and the compression planes
through the cursor, computed in the background.  GUI thread only; planes are computed on the
executor it is given and come back through a ``QtResultBridge``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import Executor
from typing import Any

from PySide6.QtCore import QObject, Signal

from viewer.core import advise, inspect
from viewer.ui.inspector.bridge import QtResultBridge
from viewer.ui.inspector.loaded_file import Vec3
from viewer.ui.inspector.overlay import OverlayView, QtSliceOverlay, colormap_lut
from viewer.ui.inspector.state import InspectorState


class QtOverlaySet(QObject):
    """Every ``QtSliceOverlay`` of the inspector, by the normal axis of its view."""

    #: Every overlay shows the planes through the current cursor.
    updated = Signal()

    def __init__(self, state: InspectorState, executor: Executor, cache: inspect.TableCache,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._executor = executor
        self._cache = cache
        self._by_axis: dict[int, list[QtSliceOverlay]] = {}
        self._bridge = QtResultBridge(self)
        self._bridge.result_arrived.connect(self._on_result)
        self._tokens: dict[int, int] = {}
        #: What each axis's plane was last asked for (chunk layer, metric, units known, the
        #: savings drawn).
        self._keys: dict[int, tuple[int, str, int, int]] = {}
        self._pending: set[int] = set()
        self._extent: tuple[Vec3, Vec3] | None = None
        self._shown = (False, False, False)
        self._scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
        colormap_lut()  # read now, not with the first planes of a dataset

    def attach(self, view: OverlayView) -> QtSliceOverlay:
        """Cover ``view`` (a slice view widget) with an overlay, drawn as the others are."""
        widget = QtSliceOverlay(view)
        widget.set_scale(self._scale)
        widget.set_shown(*self._shown)
        self._by_axis.setdefault(widget.axis, []).append(widget)
        self._keys.pop(widget.axis, None)
        self._update_grid_spacing()
        self.refresh()
        return widget

    def overlays(self) -> Iterator[QtSliceOverlay]:
        """Every overlay, in the order attached per axis."""
        for widgets in self._by_axis.values():
            yield from widgets

    @property
    def axes(self) -> list[int]:
        """The normal axes of the views covered."""
        return sorted(self._by_axis)

    def set_shown(self, show_map: bool, block_grid: bool, file_grid: bool) -> None:
        """Draw the map, the chunk grid and the unit grid, or not."""
        self._shown = (show_map, block_grid, file_grid)
        for w in self.overlays():
            w.set_shown(show_map, block_grid, file_grid)

    def set_scale(self, scale: tuple[float, float, float]) -> None:
        """The window's voxels per inspected voxel along x, y, z."""
        self._scale = scale
        for w in self.overlays():
            w.set_scale(scale)

    def stop(self) -> None:
        """Planes still being computed are dropped when they arrive."""
        for axis in list(self._tokens):
            self._tokens[axis] += 1

    def reset(self) -> None:
        """``state.volume`` changed: no planes yet, grids of its chunk and unit size over no
        units yet; what is being computed is dropped."""
        self.stop()
        self._keys.clear()
        self._pending.clear()
        self._extent = None
        volume = self._state.volume
        for w in self.overlays():
            w.set_plane(None)
            if volume is None:
                w.set_grid((0, 0, 0), (0, 0, 0), None)
        self._update_grid_spacing()

    def metric_changed(self) -> None:
        """``state.metric`` changed: every plane is asked for again."""
        self._keys.clear()
        self.refresh()

    def refresh(self) -> None:
        """Ask for the planes through ``state.cursor`` over the units the scan found so far
        (``state.unit_positions``) and the cursor's, where they changed; grow the grids to
        those units."""
        volume, cursor = self._state.volume, self._state.cursor
        if volume is None or cursor is None or not self._by_axis:
            return
        upos, _ = inspect.chunk_at(volume, cursor)
        batches = self._state.positions_snapshot()
        count = len(self._state.unit_positions)
        if upos not in self._state.unit_positions:
            batches, count = (*batches, (upos,)), count + 1
        savings = self._state.savings
        for axis in self.axes:
            index = cursor[axis]
            key = (index // volume.chunk_shape[axis], self._state.metric, count, id(savings))
            if self._keys.get(axis) == key:
                continue
            self._keys[axis] = key
            token = self._tokens[axis] = self._tokens.get(axis, 0) + 1
            self._pending.add(axis)
            if self._state.metric == advise.SAVINGS:
                if savings is None:
                    self._on_result(f"{axis}", token, None)
                    continue
                future = self._executor.submit(advise.savings_plane, savings, axis, index)
            else:
                future = self._executor.submit(  # the positions are walked on the worker
                    inspect.compression_plane, volume, axis, index,
                    itertools.chain.from_iterable(batches), self._state.metric, self._cache)
            self._bridge.deliver_future(f"{axis}", token, future)
        self._update_grid_extent(upos)

    def _on_result(self, kind: str, token: int, payload: Any) -> None:
        axis = int(kind)
        if self._tokens.get(axis) != token:
            return  # superseded
        plane = None if isinstance(payload, BaseException) else payload
        for widget in self._by_axis.get(axis, []):
            widget.set_plane(plane)
        self._pending.discard(axis)
        if not self._pending:
            self.updated.emit()

    def _update_grid_spacing(self) -> None:
        volume = self._state.volume
        if volume is None:
            return
        for w in self.overlays():
            w.set_grid(volume.chunk_shape, volume.unit_len_vx, self._extent)

    def _update_grid_extent(self, upos: Vec3) -> None:
        """Grids over the box of the units found and the cursor's (``state.unit_box``, kept
        as the scan goes: no walk over every unit)."""
        volume = self._state.volume
        if volume is None:
            return
        side = volume.unit_len_vx
        box = self._state.unit_box or (upos, upos)
        lo = [min(box[0][a], upos[a]) * side[a] for a in range(3)]
        hi = [(max(box[1][a], upos[a]) + 1) * side[a] for a in range(3)]
        extent = ((lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2]))
        if extent != self._extent:
            self._extent = extent
            self._update_grid_spacing()
