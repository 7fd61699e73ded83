"""One orthogonal slice view (XY, XZ or YZ): the plane image, the crosshair, mouse and wheel.

The view follows the ``ViewerState``: it draws the plane at the cursor, centred at
``state.centers[axis]`` and scaled by ``state.zoom``, and it writes into the state when a person
clicks (cursor), drags (centre), turns the wheel (cursor along the normal) or Ctrl+turns it (zoom
about the mouse).  It never talks to the other views.  Pixels come from the window, which owns
the ``PlaneSource``; the view only says which plane it needs (``wanted_request``) and is handed
the answer (``show_plane``).

Drawing is a single scaled ``drawImage`` of a 32-bit image that was built once per plane change
(``viewer.render``), plus a few lines: a cursor move that leaves the plane unchanged costs
only a repaint.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QImage,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPixmap,
    QRegion,
    QWheelEvent,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

from viewer.core.multires import scale_bar
from viewer.core.slicing import IN_PLANE, VIEW_NAMES, Plane, PlaneRequest
from viewer.core.state import SCREEN_AXES, ViewerState
from viewer.render.plane import Rendered

_tables: dict[int, tuple[np.ndarray, list[int]]] = {}


def _color_table(table: np.ndarray) -> list[int]:
    """``table`` as the list QImage.setColorTable wants, converted once per table."""
    hit = _tables.get(id(table))
    if hit is None or hit[0] is not table:
        if len(_tables) > 16:
            _tables.clear()
        hit = (table, [int(v) for v in table])
        _tables[id(table)] = hit
    return hit[1]

#: Colour of each view (by normal axis); a crosshair line drawn in a view is the trace of another
#: view's plane and wears that view's colour.
VIEW_COLORS = {2: QColor(235, 87, 87), 1: QColor(86, 200, 120), 0: QColor(90, 150, 245)}
AXIS_NAMES = "xyz"
#: Requested planes are snapped outward to this grid so that small pans re-use the plane.
SNAP = 64
#: The largest plane side a view asks for (zoomed far out on a huge dataset).
MAX_PLANE_SIDE = 4096
DRAG_THRESHOLD = 4
#: The longest a scale bar gets, in pixels.
SCALE_BAR_MAX = 160.0
BACKGROUND = QColor(24, 25, 28)


class QtSliceView(QWidget):
    """The view whose normal is ``axis`` (2 XY, 1 XZ, 0 YZ)."""

    #: The mouse is over voxel (x, y, z), or left the data (None).
    hovered = Signal(object)
    #: The plane this view needs changed (resize); the window fetches it.
    plane_wanted = Signal(int)
    #: The view shows another picture (``show_plane``): its axis.
    picture_changed = Signal(int)
    #: The view painted itself (its axis): what ``show_plane`` gave it is on screen now.
    painted = Signal(int)

    def __init__(self, axis: int, state: ViewerState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.axis = axis
        self.state = state
        self.h_axis, self.v_axis = SCREEN_AXES[axis]
        self.name = VIEW_NAMES[axis]
        self.setMinimumSize(120, 120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setMouseTracking(True)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.plane: Plane | None = None
        self.request: PlaneRequest | None = None
        self.rendered: Rendered | None = None
        self._image: QImage | None = None
        self._image_origin = (0, 0)  # dataset (h, v) of the image's top-left pixel
        self._image_factors = (1, 1)  # dataset voxels per image pixel along (h, v)
        #: The largest plane side (dataset voxels) this view asks for; the window raises it
        #: for a dataset with coarse mags, whose planes stay small however far out one zooms.
        self.max_side = MAX_PLANE_SIDE
        #: Every visible layer's plane on screen, by layer name (``plane`` is the active
        #: layer's, or the first visible one's), and what each was rendered to.
        self.layer_planes: dict[str, Plane] = {}
        self.layer_rendered: dict[str, Rendered] = {}
        #: The layers' displays (``state.LayerDisplay``) the picture was drawn with.
        self.drawn_layers: tuple[object, ...] = ()
        self._press: QPointF | None = None
        #: Where the mouse is over this view (widget pixels), None when it is elsewhere.
        self._mouse_at: tuple[float, float] | None = None
        self._dragging = False
        self._last_drag: QPointF | None = None
        self.message = ""  # shown when there is no data at all (no dataset, an error)
        self.paint_count = 0
        self._image_serial = 0
        self._painted_serial = -1
        self._painted_cross: tuple[float, float] | None = None
        self._backdrop_key: tuple[object, ...] | None = None
        self._backdrop_pixmap: QPixmap | None = None
        #: The scale bar last painted: (length in nm, length in pixels, label), or None.
        self.scale_bar_shown: tuple[float, float, str] | None = None
        #: Image pixels per widget pixel of the picture under the lines and labels: 2 while
        #: File > Export View draws the view at twice the screen's resolution.
        self.render_scale = 1.0

    # -- geometry ----------------------------------------------------------------------------
    def scales(self) -> tuple[float, float]:
        """Screen pixels per voxel along the view's horizontal and vertical axes: the zoom,
        times the stretch that keeps anisotropic voxels in their physical shape."""
        sh, sv = self.state.stretch(self.axis)
        z = self.state.zoom
        return (z * sh, z * sv)

    def voxels_per_pixel(self) -> tuple[float, float, float]:
        """Dataset voxels one screen pixel spans along x, y and z (1 along the normal): what
        decides the mag the view reads (``viewer.core.multires``)."""
        zh, zv = self.scales()
        out = [1.0, 1.0, 1.0]
        out[self.h_axis] = 1.0 / zh
        out[self.v_axis] = 1.0 / zv
        return (out[0], out[1], out[2])

    def to_dataset(self, x: float, y: float) -> tuple[float, float]:
        """Widget pixel (x, y) -> dataset (h, v), continuous."""
        ch, cv = self.state.centers[self.axis]
        zh, zv = self.scales()
        return (ch + (x - self.width() / 2) / zh, cv + (y - self.height() / 2) / zv)

    def to_widget(self, h: float, v: float) -> tuple[float, float]:
        ch, cv = self.state.centers[self.axis]
        zh, zv = self.scales()
        return ((h - ch) * zh + self.width() / 2, (v - cv) * zv + self.height() / 2)

    def voxel_at(self, x: float, y: float) -> tuple[int, int, int]:
        """The voxel under widget pixel (x, y) (its third coordinate: the cursor's)."""
        h, v = self.to_dataset(x, y)
        pos = list(self.state.cursor)
        pos[self.h_axis] = math.floor(h)
        pos[self.v_axis] = math.floor(v)
        return (pos[0], pos[1], pos[2])

    def visible_range(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """Dataset (h, v) ranges the widget shows."""
        h0, v0 = self.to_dataset(0, 0)
        h1, v1 = self.to_dataset(self.width(), self.height())
        return (h0, h1), (v0, v1)

    def wanted_request(self) -> PlaneRequest | None:
        """The plane this view shows now: the visible part of the dataset at the cursor, snapped
        outward to a grid so that small pans keep the same request."""
        lo_b, hi_b = self.state.bounds
        ranges = dict(zip((self.h_axis, self.v_axis), self.visible_range(), strict=True))
        lo: list[int] = []
        hi: list[int] = []
        for a in IN_PLANE[self.axis]:
            r0, r1 = ranges[a]
            a0 = max(lo_b[a], math.floor(r0 / SNAP) * SNAP)
            a1 = min(hi_b[a], math.ceil(r1 / SNAP) * SNAP)
            if a1 - a0 > self.max_side:
                mid = int(self.state.centers[self.axis][0 if a == self.h_axis else 1])
                a0 = max(lo_b[a], mid - self.max_side // 2)
                a1 = min(hi_b[a], a0 + self.max_side)
            if a1 <= a0:
                return None
            lo.append(a0)
            hi.append(a1)
        return PlaneRequest(self.axis, self.state.cursor[self.axis], (lo[0], lo[1]), (hi[0], hi[1]))

    # -- data --------------------------------------------------------------------------------
    def show_plane(self, plane: Plane | None, rendered: Rendered | None) -> None:
        """Show ``plane``, already rendered for the screen (``viewer.render.plane``)."""
        self.plane = plane
        self.request = plane.request if plane is not None else None
        self.rendered = rendered
        self._image_serial += 1
        self.picture_changed.emit(self.axis)
        if plane is None or rendered is None:
            self._image = None
        else:
            pixels = rendered.pixels
            rows, cols = pixels.shape
            if rendered.table is not None:
                indexed = QImage(pixels.data, cols, rows, cols, QImage.Format.Format_Indexed8)
                indexed.setColorTable(_color_table(rendered.table))
                # Qt maps the indices in C; scaling an indexed image directly is ~4x slower.
                self._image = indexed.convertToFormat(QImage.Format.Format_RGB32)
            else:
                self._image = QImage(pixels.data, cols, rows, cols * 4,
                                     QImage.Format.Format_RGB32)
            u, v = IN_PLANE[self.axis]
            ou, ov = plane.image_origin
            origin = {u: ou, v: ov}
            self._image_origin = (origin[self.h_axis], origin[self.v_axis])
            factors = {u: plane.factors[0], v: plane.factors[1]}
            self._image_factors = (factors[self.h_axis], factors[self.v_axis])
        self.update()

    def pixels(self) -> np.ndarray | None:
        """The shown plane as ARGB (rows = vertical axis), or None."""
        return self.rendered.argb() if self.rendered is not None else None

    def _plane_index(self, pos: tuple[int, int, int]) -> tuple[int, int] | None:
        """(u, v) index of dataset position ``pos`` in the shown plane, or None off it."""
        p = self.plane
        if p is None or pos[self.axis] != p.request.index:
            return None
        u, v = IN_PLANE[self.axis]
        return p.pixel_index(pos[u], pos[v])

    def value_at(self, pos: tuple[int, int, int]) -> np.ndarray | None:
        """All channels' values at ``pos`` if it lies on the shown plane, else None."""
        at = self._plane_index(pos)
        return None if at is None or self.plane is None else self.plane.data[:, at[0], at[1]]

    def status_at(self, pos: tuple[int, int, int]) -> int | None:
        """The ``Status`` at ``pos`` if it lies on the shown plane, else None."""
        at = self._plane_index(pos)
        return None if at is None or self.plane is None else int(self.plane.status[at])

    # -- painting ----------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        self.paint_count += 1
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._backdrop())
        if self.message and self.plane is None:  # nothing to browse: just say why
            self._painted_cross = None
        else:
            self._paint_crosshair(painter)
            self.paint_scale_bar(painter)
            self.paint_labels(painter)  # on top: in a narrow view the bar reaches the label
        if self.message:
            painter.setPen(QColor(230, 230, 230))
            painter.drawText(self.rect().adjusted(12, 12, -12, -12),
                             Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, self.message)
        focused = self.state.focused == self.axis and self.state.layout is None
        painter.setPen(QPen(VIEW_COLORS[self.axis] if focused else QColor(60, 62, 68), 2))
        painter.drawRect(1, 1, self.width() - 2, self.height() - 2)
        painter.end()
        self._painted_serial = self._image_serial
        self.painted.emit(self.axis)

    @property
    def picture_painted(self) -> bool:
        """The picture ``show_plane`` gave last is on screen (painted since)."""
        return self._painted_serial == self._image_serial

    def _backdrop(self) -> QPixmap:
        """The scaled plane on its background, drawn once per plane, zoom, centre or size
        change; a cursor move that keeps the plane repaints with one unscaled copy of it."""
        scale = self.render_scale
        key = (self._image_serial, self.message, self.state.zoom, self.state.centers.get(self.axis),
               self.width(), self.height(), self.state.bounds, self.state.voxel_size_nm, scale)
        if self._backdrop_key == key and self._backdrop_pixmap is not None:
            return self._backdrop_pixmap
        w, h = self.width(), self.height()
        pixmap = self._backdrop_pixmap
        pw, ph = round(w * scale), round(h * scale)
        if pixmap is None or pixmap.width() != pw or pixmap.height() != ph:
            # Reused while the size stays: besides the allocation, PySide6 6.11 leaks a few
            # references to None for every QPainter opened on a new paint device.
            pixmap = QPixmap(pw, ph)
            pixmap.setDevicePixelRatio(scale)
        painter = QPainter(pixmap)
        z = self.state.zoom
        zh, zv = self.scales()
        if self._image is not None:
            h0, v0 = self._image_origin
            x0, y0 = self.to_widget(h0, v0)
            fh, fv = self._image_factors
            target = QRectF(x0, y0, self._image.width() * zh * fh,
                            self._image.height() * zv * fv)
            # Only the margins around the image need the background.
            painter.fillRect(QRectF(0, 0, w, max(0.0, target.top()) + 1), BACKGROUND)
            painter.fillRect(QRectF(0, target.bottom() - 1, w, h), BACKGROUND)
            painter.fillRect(QRectF(0, 0, max(0.0, target.left()) + 1, h), BACKGROUND)
            painter.fillRect(QRectF(target.right() - 1, 0, w, h), BACKGROUND)
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, z < 1.0)
            painter.drawImage(target, self._image)
        else:
            painter.fillRect(0, 0, w, h, BACKGROUND)
        # Dataset outline, so the edge of the data is visible against the background.
        if self.message and self.plane is None:
            painter.end()
            self._backdrop_key, self._backdrop_pixmap = key, pixmap
            return pixmap
        lo_b, hi_b = self.state.bounds
        bx0, by0 = self.to_widget(lo_b[self.h_axis], lo_b[self.v_axis])
        bx1, by1 = self.to_widget(hi_b[self.h_axis], hi_b[self.v_axis])
        painter.setPen(QPen(QColor(90, 92, 100), 1))
        painter.drawRect(QRectF(bx0, by0, bx1 - bx0, by1 - by0))
        painter.end()
        self._backdrop_key, self._backdrop_pixmap = key, pixmap
        return pixmap

    def _cross_point(self) -> tuple[float, float]:
        cursor = self.state.cursor
        return self.to_widget(cursor[self.h_axis] + 0.5, cursor[self.v_axis] + 0.5)

    def update_cursor(self) -> None:
        """Repaint only what a cursor move changes in a view whose plane stayed: the old and
        the new crosshair (a full repaint of an 800 x 800 view costs ~10x more)."""
        if self._painted_cross is None:
            self.update()
            return
        new = self._cross_point()
        if new == self._painted_cross:
            return
        w, h = self.width(), self.height()
        box = int(max(self.scales())) + 6
        region = QRegion()
        for cx, cy in (self._painted_cross, new):
            region += QRect(int(cx) - 2, 0, 5, h)
            region += QRect(0, int(cy) - 2, w, 5)
            region += QRect(int(cx) - box, int(cy) - box, 2 * box, 2 * box)
        self.update(region)

    def _paint_crosshair(self, painter: QPainter) -> None:
        """Two lines through the cursor voxel's centre, with a gap so the voxel stays visible;
        each line wears the colour of the view whose plane it is."""
        zh, zv = self.scales()
        z = max(zh, zv)
        cx, cy = self._cross_point()
        self._painted_cross = (cx, cy)
        gap = max(8.0, z * 1.5 + 3)
        w, h = self.width(), self.height()
        pen = QPen(VIEW_COLORS[self.h_axis], 1)
        pen.setCosmetic(True)
        painter.setPen(pen)
        painter.drawLine(QPointF(cx, 0), QPointF(cx, cy - gap))
        painter.drawLine(QPointF(cx, cy + gap), QPointF(cx, h))
        pen = QPen(VIEW_COLORS[self.v_axis], 1)
        painter.setPen(pen)
        painter.drawLine(QPointF(0, cy), QPointF(cx - gap, cy))
        painter.drawLine(QPointF(cx + gap, cy), QPointF(w, cy))
        if min(zh, zv) >= 4:  # outline the cursor voxel itself when voxels are big enough
            painter.setPen(QPen(QColor(255, 255, 255, 160), 1))
            painter.drawRect(QRectF(cx - zh / 2, cy - zv / 2, zh, zv))

    def paint_labels(self, painter: QPainter) -> None:
        """Draw the view's name and slice top left and its axes and zoom bottom right (an
        overlay that covers the view draws them again)."""
        font = QFont(painter.font())
        font.setBold(True)
        painter.setFont(font)
        normal = AXIS_NAMES[self.axis]
        text = f"{self.name}   {normal} = {self.state.cursor[self.axis]}"
        painter.fillRect(QRectF(6, 6, painter.fontMetrics().horizontalAdvance(text) + 14, 22),
                         QColor(0, 0, 0, 150))
        painter.setPen(VIEW_COLORS[self.axis])
        painter.drawText(QRectF(13, 6, 400, 22), Qt.AlignmentFlag.AlignVCenter, text)
        font.setBold(False)
        painter.setFont(font)
        painter.setPen(QColor(200, 200, 205))
        z = self.state.zoom
        zoom_text = f"{z:.3g}x" if z >= 1 else f"1/{1 / z:.3g}x"
        axes_text = (f"{AXIS_NAMES[self.h_axis]} \u2192   {AXIS_NAMES[self.v_axis]} \u2193   "
                     f"{zoom_text}")
        width = painter.fontMetrics().horizontalAdvance(axes_text) + 14
        rect = QRectF(self.width() - width - 6, self.height() - 28, width, 22)
        painter.fillRect(rect, QColor(0, 0, 0, 150))
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, axes_text)

    def scale_bar_now(self) -> tuple[float, float, str] | None:
        """The scale bar this view shows: a round length (1, 2 or 5 times a power of ten nm)
        of at most ~30 % of the view's width, as (nm, pixels, label); None without a voxel
        size.  Measured along the horizontal axis (the stretch makes both axes agree)."""
        size = self.state.voxel_size_nm
        if size is None or self.width() < 60:
            return None
        zh, _ = self.scales()
        return scale_bar(size[self.h_axis] / zh, min(SCALE_BAR_MAX, self.width() * 0.3))

    def paint_scale_bar(self, painter: QPainter) -> None:
        """Draw the scale bar bottom left (an overlay that covers the view draws it again)."""
        bar = self.scale_bar_shown = self.scale_bar_now()
        if bar is None:
            return
        _, pixels, label = bar
        metrics = painter.fontMetrics()
        width = max(pixels, metrics.horizontalAdvance(label)) + 14
        box = QRectF(6, self.height() - 44, width, 38)
        painter.fillRect(box, QColor(0, 0, 0, 150))
        painter.setPen(QColor(230, 230, 235))
        painter.drawText(QRectF(box.left() + 7, box.top() + 2, width, 18),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, label)
        x0, y = box.left() + 7, box.bottom() - 10
        painter.fillRect(QRectF(x0, y - 2, pixels, 4), QColor(240, 240, 240))
        painter.fillRect(QRectF(x0, y - 5, 1.5, 10), QColor(240, 240, 240))
        painter.fillRect(QRectF(x0 + pixels - 1.5, y - 5, 1.5, 10), QColor(240, 240, 240))

    # -- mouse -------------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.state.set_focused(self.axis)
        if event.button() in (Qt.MouseButton.LeftButton, Qt.MouseButton.MiddleButton,
                              Qt.MouseButton.RightButton):
            self._press = event.position()
            self._last_drag = event.position()
            self._dragging = event.button() != Qt.MouseButton.LeftButton
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        if self._press is not None and self._last_drag is not None:
            if not self._dragging and (pos - self._press).manhattanLength() > DRAG_THRESHOLD:
                self._dragging = True
            if self._dragging:
                d = pos - self._last_drag
                self._last_drag = pos
                zh, zv = self.scales()
                self.state.pan(self.axis, -d.x() / zh, -d.y() / zv)
        self._mouse_at = (pos.x(), pos.y())
        self.hovered.emit(self.voxel_at(pos.x(), pos.y()))

    def rehover(self) -> None:
        """Say again which voxel is under the mouse (if it is over this view): the slice,
        zoom or centre changed under a still mouse."""
        if self._mouse_at is not None:
            self.hovered.emit(self.voxel_at(*self._mouse_at))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._press is not None and not self._dragging \
                and event.button() == Qt.MouseButton.LeftButton:
            pos = event.position()
            self.state.set_cursor(self.voxel_at(pos.x(), pos.y()))
            self.hovered.emit(self.voxel_at(pos.x(), pos.y()))
        self._press = None
        self._dragging = False
        self._last_drag = None

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        """Double-click: this view alone, large (and back)."""
        self.state.set_focused(self.axis)
        self.state.toggle_maximized()
        event.accept()

    def leaveEvent(self, event: object) -> None:
        self._mouse_at = None
        self.hovered.emit(None)

    def wheelEvent(self, event: QWheelEvent) -> None:
        delta = event.angleDelta()
        # Shift+wheel arrives as a horizontal wheel on some platforms.
        raw = delta.y() if delta.y() != 0 else delta.x()
        if raw == 0:
            return
        notches = raw / 120.0
        mods = event.modifiers()
        self.state.set_focused(self.axis)
        if mods & Qt.KeyboardModifier.ControlModifier:
            pos = event.position()
            h, v = self.to_dataset(pos.x(), pos.y())
            self.state.zoom_by(notches, about=(self.axis, h, v))
        else:
            # Turning the wheel towards oneself (down, negative) steps forward along the
            # normal, as Page Down does: the same direction as scrolling down a page.
            step = 10 if mods & Qt.KeyboardModifier.ShiftModifier else 1
            self.state.move_along(self.axis, -(int(round(notches)) * step or
                                               (step if notches > 0 else -step)))
        event.accept()

    def resizeEvent(self, event: object) -> None:
        self.plane_wanted.emit(self.axis)
