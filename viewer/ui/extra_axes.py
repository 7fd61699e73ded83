"""The window's controls of the extra axes (time, ...): a slider per axis in the status bar,
and ``[`` / ``]`` for the previous / next element of the first one (a time series' previous
and next time point).  They edit ``state.index`` and follow it; the window reads the layers
anew at the index (``QtMainWindow._show_index``).  GUI thread only."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

from viewer.core.state import DATASET, INDEX, ViewerState
from viewer.ui.actions import add_action


class ExtraAxesHost(Protocol):
    state: ViewerState

    def add_status_widget(self, widget: QWidget, permanent: bool = False) -> None: ...


class QtExtraAxes(QWidget):
    """One labelled slider per extra axis of the shown dataset (hidden when it has none)."""

    def __init__(self, state: ViewerState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.sliders: dict[str, QSlider] = {}
        self.labels: dict[str, QLabel] = {}
        self._axes: dict[str, int] = {}
        state.subscribe(self._on_state_changed)
        self._rebuild()

    def _rebuild(self) -> None:
        while self._layout.count():
            item = self._layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.sliders, self.labels = {}, {}
        self._axes = dict(self.state.extra_axes)
        for axis, n in self._axes.items():
            label = QLabel()
            slider = QSlider(Qt.Orientation.Horizontal)
            slider.setRange(0, n - 1)
            slider.setFixedWidth(140)
            slider.setToolTip(f"the element of axis {axis} shown ([ / ] step the first axis)")
            slider.setValue(self.state.index.get(axis, 0))
            slider.valueChanged.connect(lambda v, a=axis: self.state.set_index(a, v))
            self._layout.addWidget(label)
            self._layout.addWidget(slider)
            self.sliders[axis], self.labels[axis] = slider, label
        self._show()
        self.setVisible(bool(self._axes))

    def _show(self) -> None:
        for axis, slider in self.sliders.items():
            value = self.state.index.get(axis, 0)
            if slider.value() != value:
                slider.blockSignals(True)
                slider.setValue(value)
                slider.blockSignals(False)
            self.labels[axis].setText(f"{axis} {value}/{self._axes[axis] - 1}")

    def _on_state_changed(self, changes: frozenset[str]) -> None:
        if DATASET in changes or (INDEX in changes and self.state.extra_axes != self._axes):
            self._rebuild()
        elif INDEX in changes:
            self._show()


def install_extra_axes(window: ExtraAxesHost) -> QtExtraAxes:
    """The sliders in ``window``'s status bar and the ``[`` / ``]`` keys."""
    widget = QtExtraAxes(window.state)
    window.add_status_widget(widget, permanent=True)
    target = window if isinstance(window, QWidget) else widget
    add_action(target, "Previous Time Point", lambda: window.state.step_index(-1), "[",
               tip="the previous element of the first extra axis (time)")
    add_action(target, "Next Time Point", lambda: window.state.step_index(1), "]",
               tip="the next element of the first extra axis (time)")
    return widget


__all__ = ["QtExtraAxes", "install_extra_axes"]
