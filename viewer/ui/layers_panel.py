"""The layers panel: one compact row per layer of the dataset, top row = top layer.

Each row holds the layer's visibility (a checkbox: Space toggles it when focused), its name, a
badge for its category (color / seg), its opacity (a slider, 0..100 %), for a segmentation layer
the selected segment id (a field, empty = none, and a button that clears it), and the mag the
views read it at ("auto": chosen from the zoom, or one mag locked).  Clicking a row makes its
layer the active one, whose contrast the contrast panel edits; the active row is highlighted.

The panel writes only into the ``ViewerState`` and follows it: a ``LAYERS`` notification
re-syncs the widgets with their signals blocked, so that one person's action makes one
notification and nothing echoes back.  A row updates only the widgets whose field changed, so
a hovered id changing under the mouse never disturbs an id being typed.

The window calls ``set_mags`` when a dataset opens (the mags each layer has on disk) and
``set_shown_mag`` as the views switch mags (shown in the "auto" entry).  ``install_layers_panel``
docks the panel in a "Layers" dock tabified with the contrast dock, and adds two window keys:
V shows/hides the active layer, L makes the next layer down active (listed by F1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import QRegularExpression, QSignalBlocker, Qt, Signal
from PySide6.QtGui import (
    QAction,
    QMouseEvent,
    QRegularExpressionValidator,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from viewer.core.state import DATASET, LAYERS, LayerDisplay, ViewerState
from viewer.ui.actions import add_action, find_menu
from viewer.ui.docks import dock_beside_contrast
from viewer.ui.main_window import QtMainWindow

Vec3 = tuple[int, int, int]

#: The largest id a segmentation layer can hold (uint64).
MAX_SEGMENT_ID = 2 ** 64 - 1

ROW_STYLE = """
QFrame#layerRow { background: #26272c; border: 1px solid #2f3137; border-radius: 4px; }
QFrame#layerRow[active="true"] { background: #2c3648; border: 1px solid #3d5a8a; }
QLabel#layerName { font-weight: bold; background: transparent; }
QLabel#layerBadge { border-radius: 3px; padding: 0 5px; font-size: 10px; color: #e8e8ea; }
QLabel#layerBadge[category="color"] { background: #3d5a8a; }
QLabel#layerBadge[category="segmentation"] { background: #6b4a8a; }
QLabel#opacityValue { color: #9a9ca4; background: transparent; min-width: 34px; }
QLabel#fieldLabel { color: #9a9ca4; background: transparent; }
QLineEdit[invalid="true"] { border: 1px solid #b0202a; }
QCheckBox { background: transparent; }
QSlider { background: transparent; }
QPushButton#clearId { padding: 1px 6px; }
"""

BADGE_TEXT = {"color": "color", "segmentation": "seg"}


def mag_text(mag: Sequence[int]) -> str:
    """A mag as webKnossos names its folder: "1", "2" (isotropic) or "2-2-1"."""
    x, y, z = (int(v) for v in mag)
    return str(x) if x == y == z else f"{x}-{y}-{z}"


def parse_segment_id(text: str) -> int | None:
    """A typed segment id: empty for none, else a whole number 0 .. 2**64 - 1 (``ValueError``
    otherwise).  0 is the background: selecting it selects nothing."""
    text = text.strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"a segment id is a whole number, not {text!r}")
    value = int(text)
    if value > MAX_SEGMENT_ID:
        raise ValueError(f"a segment id is at most {MAX_SEGMENT_ID}, not {value}")
    return value or None


def _field_row(text: str, field: QWidget, *after: QWidget) -> QHBoxLayout:
    """A row of a layer's controls: a grey label, the field (taking the room), then
    ``after``."""
    row = QHBoxLayout()
    row.setSpacing(6)
    label = QLabel(text)
    label.setObjectName("fieldLabel")
    row.addWidget(label)
    row.addWidget(field, 1)
    for widget in after:
        row.addWidget(widget)
    return row


def _repolish(widget: QWidget) -> None:
    """Re-apply the style sheet after a dynamic property changed."""
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)


class QtLayerRow(QFrame):
    """The controls of one layer.  Emits what the person did; the panel writes it into the
    state.  GUI thread only."""

    #: The row was clicked (its layer becomes the active one).
    activated = Signal(str)
    #: The person changed a field: (layer name, {field: value}) for ``ViewerState.set_layer``.
    edited = Signal(str, object)

    def __init__(self, display: LayerDisplay, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name = display.name
        self.category = display.category
        self.setObjectName("layerRow")
        self.setProperty("active", False)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._shown: LayerDisplay | None = None
        self._shown_mag: str | None = None

        self.visible = QCheckBox()
        self.visible.setToolTip("Show this layer in the views (Space when focused)")
        self.name_label = QLabel(display.name)
        self.name_label.setObjectName("layerName")
        self.name_label.setToolTip(f"{display.name} ({display.category} layer): click to make "
                                   "it the active layer (the contrast panel edits it)")
        self.badge = QLabel(BADGE_TEXT.get(display.category, display.category))
        self.badge.setObjectName("layerBadge")
        self.badge.setProperty("category", display.category)
        self.mag = QComboBox()
        self.mag.setToolTip("The mag the views read this layer at: auto (from the zoom) or "
                            "one mag locked")
        self.mag.addItem("auto", None)
        self.opacity = QSlider(Qt.Orientation.Horizontal)
        self.opacity.setRange(0, 100)
        self.opacity.setSingleStep(5)
        self.opacity.setPageStep(10)
        self.opacity.setToolTip("Opacity of this layer over the layers below it")
        self.opacity_value = QLabel()
        self.opacity_value.setObjectName("opacityValue")
        self.opacity_value.setAlignment(Qt.AlignmentFlag.AlignRight
                                        | Qt.AlignmentFlag.AlignVCenter)

        top = QHBoxLayout()
        top.setSpacing(6)
        top.addWidget(self.visible)
        top.addWidget(self.name_label, 1)
        top.addWidget(self.badge)
        self.mag.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mag.setMinimumContentsLength(6)
        column = QVBoxLayout(self)
        column.setContentsMargins(6, 4, 6, 4)
        column.setSpacing(3)
        column.addLayout(top)
        column.addLayout(_field_row("Opacity", self.opacity, self.opacity_value))
        column.addLayout(_field_row("Mag", self.mag))

        self.selected: QLineEdit | None = None
        self.clear: QPushButton | None = None
        if display.is_segmentation:
            self.selected = QLineEdit()
            self.selected.setPlaceholderText("none")
            self.selected.setToolTip("The selected segment id, drawn highlighted (Enter to "
                                     "apply; empty: none)")
            self.selected.setValidator(QRegularExpressionValidator(
                QRegularExpression(r"\d{0,20}"), self.selected))
            self.selected.setProperty("invalid", False)
            self.clear = QPushButton("clear")
            self.clear.setObjectName("clearId")
            self.clear.setToolTip("Select no segment")
            column.addLayout(_field_row("Selected id", self.selected, self.clear))
            self.selected.editingFinished.connect(self._on_selected_edited)
            self.selected.textEdited.connect(self._on_selected_typed)
            self.clear.clicked.connect(self._on_clear_clicked)

        self.visible.toggled.connect(self._on_visible_toggled)
        self.opacity.valueChanged.connect(self._on_opacity_changed)
        self.mag.currentIndexChanged.connect(self._on_mag_chosen)
        self.sync(display)

    # -- from the state ----------------------------------------------------------------------
    def sync(self, display: LayerDisplay) -> None:
        """Show ``display``, touching only the widgets whose field changed, signals blocked."""
        before = self._shown
        self._shown = display
        if before is None or before.visible != display.visible:
            with QSignalBlocker(self.visible):
                self.visible.setChecked(display.visible)
        if before is None or before.opacity != display.opacity:
            percent = int(round(display.opacity * 100))
            with QSignalBlocker(self.opacity):
                self.opacity.setValue(percent)
            self.opacity_value.setText(f"{percent} %")
        if before is None or before.mag_lock != display.mag_lock:
            self._show_mag_lock(display.mag_lock)
        if self.selected is not None and (before is None
                                          or before.selected_id != display.selected_id):
            with QSignalBlocker(self.selected):
                self.selected.setText("" if display.selected_id is None
                                      else str(display.selected_id))
            self._mark_invalid(False)
        if self.selected is not None and (before is None
                                          or before.hovered_id != display.hovered_id):
            hovered = display.hovered_id
            self.selected.setPlaceholderText("none" if not hovered
                                             else f"none (under the mouse: {hovered})")

    def set_active(self, active: bool) -> None:
        if bool(self.property("active")) != active:
            self.setProperty("active", active)
            _repolish(self)

    def set_mags(self, mags: Sequence[Sequence[int]]) -> None:
        """Offer ``mags`` (finest first, as on disk) besides "auto"."""
        with QSignalBlocker(self.mag):
            while self.mag.count() > 1:
                self.mag.removeItem(1)
            for mag in mags:
                m = tuple(int(v) for v in mag)
                self.mag.addItem(mag_text(m), m)
        self._show_mag_lock(self._shown.mag_lock if self._shown is not None else None)

    def set_shown_mag(self, text: str | None) -> None:
        """The mag on screen now, named in the "auto" entry (None: not known)."""
        self._shown_mag = text
        self.mag.setItemText(0, "auto" if not text else f"auto ({text})")
        self.mag.setToolTip("The mag the views read this layer at: auto (from the zoom) or "
                            "one mag locked" + (f"; on screen now: mag {text}" if text else ""))

    def _show_mag_lock(self, lock: Vec3 | None) -> None:
        # (findData compares Python objects by identity: look for an equal tuple ourselves)
        index = 0 if lock is None else next(
            (i for i in range(1, self.mag.count()) if self.mag.itemData(i) == tuple(lock)), -1)
        with QSignalBlocker(self.mag):
            if index < 0:  # locked to a mag not offered (yet): offer it
                self.mag.addItem(mag_text(lock), tuple(lock))  # type: ignore[arg-type]
                index = self.mag.count() - 1
            self.mag.setCurrentIndex(index)

    def _mark_invalid(self, invalid: bool) -> None:
        if self.selected is not None and bool(self.selected.property("invalid")) != invalid:
            self.selected.setProperty("invalid", invalid)
            _repolish(self.selected)

    # -- from the person ---------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self.activated.emit(self.name)
        super().mousePressEvent(event)

    def _on_visible_toggled(self, checked: bool) -> None:
        self.edited.emit(self.name, {"visible": bool(checked)})

    def _on_opacity_changed(self, value: int) -> None:
        self.opacity_value.setText(f"{value} %")
        self.edited.emit(self.name, {"opacity": value / 100.0})

    def _on_mag_chosen(self, index: int) -> None:
        if index >= 0:
            self.edited.emit(self.name, {"mag_lock": self.mag.itemData(index)})

    def _on_selected_typed(self, text: str) -> None:
        try:
            parse_segment_id(text)
        except ValueError:
            self._mark_invalid(True)
        else:
            self._mark_invalid(False)

    def _on_selected_edited(self) -> None:
        assert self.selected is not None
        try:
            value = parse_segment_id(self.selected.text())
        except ValueError as exc:
            self.selected.setToolTip(str(exc))
            self._mark_invalid(True)
            return
        self._mark_invalid(False)
        self.edited.emit(self.name, {"selected_id": value})

    def _on_clear_clicked(self) -> None:
        assert self.selected is not None
        with QSignalBlocker(self.selected):
            self.selected.clear()
        self._mark_invalid(False)
        self.edited.emit(self.name, {"selected_id": None})


class QtLayersPanel(QWidget):
    """One ``QtLayerRow`` per layer of ``state.layers``, top row = top layer (the last drawn).
    Writes only into ``state`` and follows it.  GUI thread only."""

    def __init__(self, state: ViewerState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.rows: dict[str, QtLayerRow] = {}
        self._mags: dict[str, list[Vec3]] = {}
        self._shown_mags: dict[str, str | None] = {}
        self.setStyleSheet(ROW_STYLE)
        self.empty = QLabel("No layers")
        self.empty.setObjectName("fieldLabel")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._rows_layout = QVBoxLayout()
        self._rows_layout.setSpacing(4)
        self._rows_layout.setContentsMargins(0, 0, 0, 0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        layout.addWidget(self.empty)
        layout.addLayout(self._rows_layout)
        layout.addStretch(1)
        observer = self._on_state_changed
        state.subscribe(observer)
        # The state may outlive the panel (a dock closed for good): stop following it then.
        self.destroyed.connect(lambda *_: state.unsubscribe(observer))
        self._sync()

    # -- the window's calls ------------------------------------------------------------------
    def set_mags(self, mags: Mapping[str, Sequence[Sequence[int]]]) -> None:
        """The mags each layer has (by layer name), offered in its mag combo besides "auto"."""
        self._mags = {name: [tuple(int(v) for v in m) for m in ms]  # type: ignore[misc]
                      for name, ms in mags.items()}
        for name, row in self.rows.items():
            row.set_mags(self._mags.get(name, []))

    def set_shown_mag(self, layer_name: str, mag: str | Sequence[int] | None) -> None:
        """Name the mag of ``layer_name`` on screen now ("2-2-1" or (2, 2, 1); None: unknown)."""
        text = mag if mag is None or isinstance(mag, str) else mag_text(mag)
        self._shown_mags[layer_name] = text
        row = self.rows.get(layer_name)
        if row is not None:
            row.set_shown_mag(text)

    def set_shown_mags(self, mags: Mapping[str, str | Sequence[int] | None]) -> None:
        """``set_shown_mag`` of each layer in ``mags``."""
        for name, mag in mags.items():
            self.set_shown_mag(name, mag)

    def row_order(self) -> list[str]:
        """The layer names from the top row down."""
        return [name for name, _ in self._row_keys()]

    # -- following the state -----------------------------------------------------------------
    def _on_state_changed(self, changes: frozenset[str]) -> None:
        if LAYERS in changes or DATASET in changes:
            self._sync()

    def _row_keys(self) -> list[tuple[str, str]]:
        return [(la.name, la.category) for la in reversed(self.state.layers)]

    def _sync(self) -> None:
        keys = self._row_keys()
        if keys != [(row.name, row.category) for row in self.rows.values()]:
            self._rebuild()
        for layer in self.state.layers:
            row = self.rows[layer.name]
            row.sync(layer)
            row.set_active(layer.name == self.state.active_layer)

    def _rebuild(self) -> None:
        for row in self.rows.values():
            self._rows_layout.removeWidget(row)
            row.hide()
            row.deleteLater()
        self.rows = {}
        for layer in reversed(self.state.layers):
            row = QtLayerRow(layer)
            row.set_mags(self._mags.get(layer.name, []))
            row.set_shown_mag(self._shown_mags.get(layer.name))
            row.activated.connect(self._on_row_activated)
            row.edited.connect(self._on_row_edited)
            self._rows_layout.addWidget(row)
            self.rows[layer.name] = row
        self.empty.setVisible(not self.rows)

    # -- writing into the state --------------------------------------------------------------
    def _on_row_activated(self, name: str) -> None:
        if any(layer.name == name for layer in self.state.layers):
            self.state.set_active_layer(name)

    def _on_row_edited(self, name: str, changes: dict[str, Any]) -> None:
        if any(layer.name == name for layer in self.state.layers):
            self.state.set_layer(name, **changes)


def install_layers_panel(window: QtMainWindow) -> QtLayersPanel:
    """Dock a ``QtLayersPanel`` of ``window.state`` in ``window`` as "Layers", tabified with
    ``window.contrast_dock`` and raised; kept as ``window.layers_panel`` and
    ``window.layers_dock``.  The panel follows the window's layer drawing (the mags each layer
    has, the mag on screen) and lists its keys in the window's keys help."""
    panel = QtLayersPanel(window.state)
    dock = dock_beside_contrast(window, "Layers", "layersDock", panel)
    dock.raise_()
    window.layers_panel, window.layers_dock = panel, dock
    drawing = window.drawing
    drawing.mags_listed.connect(panel.set_mags)
    drawing.layer_mags_shown.connect(panel.set_shown_mags)
    # (Qt ends both connections when the panel is deleted: it is their receiver.)
    source = window.source
    if source is not None:  # a dataset is open already
        panel.set_mags({name: layer.mag_list for name, layer in source.layers.items()})
        drawing.show_mag()
    _layer_actions(window, panel, dock)
    return panel


def _layer_actions(window: QWidget, panel: QtLayersPanel, dock: QDockWidget) -> list[QAction]:
    """Window-wide keys: V shows/hides the active layer, L makes the next layer down (from the
    top row, wrapping) the active one.  Listed in the window's View menu when it has one,
    beside the dock's own show/hide entry."""
    state = panel.state

    def toggle_active() -> None:
        name = state.active_layer
        if name is not None and any(la.name == name for la in state.layers):
            state.set_layer(name, visible=not state.layer(name).visible)

    def next_layer() -> None:
        names = panel.row_order()
        if names:
            at = names.index(state.active_layer) if state.active_layer in names else -1
            state.set_active_layer(names[(at + 1) % len(names)])

    view_menu = find_menu(window, "View")
    if view_menu is not None:
        view_menu.addSeparator()
        view_menu.addAction(dock.toggleViewAction())
    return [add_action(window, "Show/Hide Active &Layer", toggle_active, "V", view_menu),
            add_action(window, "&Next Layer", next_layer, "L", view_menu)]


__all__ = ["QtLayersPanel", "QtLayerRow", "install_layers_panel", "mag_text",
           "parse_segment_id"]
