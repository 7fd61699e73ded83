"""The inspector's layer and mag selector: the combo boxes, and the scale between the window's
voxels and the inspected mag's.

Works on the format-neutral ``viewer.format.Dataset`` (layers of mags of volumes), whatever
the format; shown when the dataset offers more than one layer or mag.  Part of
``QtInspectorPanel`` (``viewer.ui.inspector.panel``), which mixes it in; its methods use the
panel's state.  GUI thread only."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from viewer.core import inspect
from viewer.format import Dataset, FormatError, Layer, Mag, mag_name, parse_mag
from viewer.ui.inspector.loaded_file import Vec3


class MagSelectorMixin:
    """The layer/mag combo boxes of ``QtInspectorPanel``."""

    def _build_mag_selector(self, layout: QVBoxLayout) -> None:
        """The layer and mag combo boxes on top of ``layout`` (hidden until a dataset with
        more than one layer or mag is set)."""
        self.mag_bar = QWidget()
        bar = QHBoxLayout(self.mag_bar)
        bar.setContentsMargins(0, 0, 0, 0)
        self.layer_combo = QComboBox()
        self.layer_combo.setToolTip("layer to inspect")
        self.mag_combo = QComboBox()
        self.mag_combo.setToolTip("mag of the layer to inspect (its own volume)")
        bar.addWidget(QLabel("layer"))
        bar.addWidget(self.layer_combo, 1)
        bar.addWidget(QLabel("mag"))
        bar.addWidget(self.mag_combo)
        self.layer_combo.currentIndexChanged.connect(self._on_layer_changed)
        self.mag_combo.currentIndexChanged.connect(self._on_mag_changed)
        self.mag_bar.hide()
        layout.addWidget(self.mag_bar)

    @property
    def selected_layer(self) -> Layer | None:
        if self.dataset is None or self.layer_combo.currentIndex() < 0:
            return None
        return self.dataset.layer(str(self.layer_combo.currentData()))

    @property
    def selected_mag(self) -> Mag | None:
        layer = self.selected_layer
        if layer is None or self.mag_combo.currentIndex() < 0:
            return None
        return layer.mag(tuple(self.mag_combo.currentData()))

    def _fill_layers(self, dataset: Dataset | None, layer: str | None, mag: Any) -> None:
        """Offer ``dataset``'s layers and pick ``layer`` at ``mag`` (see ``set_dataset``)."""
        self.layer_combo.blockSignals(True)
        self.layer_combo.clear()
        if dataset is None or not dataset.layers:
            self.layer_combo.blockSignals(False)
            self.mag_combo.blockSignals(True)
            self.mag_combo.clear()
            self.mag_combo.blockSignals(False)
            self.mag_bar.hide()
            self._set_volume(None)
            if dataset is not None:
                self.title.setText(f"{dataset.path}: no layer that opened")
                for p in dataset.problems:
                    self.problems_list.addItem(QListWidgetItem(str(p)))
            return
        for item in dataset.layers:
            self.layer_combo.addItem(f"{item.name} ({item.category})", item.name)
        names = [item.name for item in dataset.layers]
        if layer is None or layer not in names:
            layer = (dataset.layers[0] if len(dataset.layers) == 1 else
                     (dataset.color_layers or dataset.layers)[0]).name
        self.layer_combo.setCurrentIndex(names.index(layer))
        self.layer_combo.blockSignals(False)
        several = len(dataset.layers) > 1 or any(len(item.mags) > 1 for item in dataset.layers)
        self.mag_bar.setVisible(several)
        prefer = parse_mag(mag) if mag is not None else self._window_mag
        self._fill_mags(dataset.layer(layer), prefer)
        self._inspect_selected()

    def _fill_mags(self, layer: Layer, prefer: Vec3 | None) -> None:
        self.mag_combo.blockSignals(True)
        self.mag_combo.clear()
        chosen = 0
        for i, m in enumerate(layer.mags):
            self.mag_combo.addItem(mag_name(m.mag, False), m.mag)
            if m.mag == prefer:
                chosen = i
        self.mag_combo.setCurrentIndex(chosen)
        self.mag_combo.blockSignals(False)

    def _on_layer_changed(self, _index: int) -> None:
        layer = self.selected_layer
        if layer is None:
            return
        current = self.mag_combo.currentData()
        self._fill_mags(layer, tuple(current) if current is not None else self._window_mag)
        self._inspect_selected()

    def _on_mag_changed(self, _index: int) -> None:
        self._inspect_selected()

    def _inspect_selected(self) -> None:
        """Inspect the volume of the selected layer and mag (opened now: its metadata only);
        a mag that cannot be opened is shown as a problem."""
        layer, mag = self.selected_layer, self.selected_mag
        if layer is None or mag is None or self.dataset is None:
            return
        cursor = self._window_cursor
        self._scale = (mag.mag[0] / self._window_mag[0], mag.mag[1] / self._window_mag[1],
                       mag.mag[2] / self._window_mag[2])
        self._apply_scale()
        try:
            volume = mag.volume
        except FormatError as exc:
            self._set_volume(None)
            self.title.setText(f"{layer.name}/{mag.name}: cannot be opened")
            self.problems_list.addItem(QListWidgetItem(f"{mag.path}: {exc}"))
            return
        self._window_cursor = cursor
        label = f"{layer.name}/{mag_name(mag.mag, False)}" if not self.mag_bar.isHidden() \
            else ""
        self._set_volume(volume, inspect.Reopen(self.dataset.path, layer.name, mag.mag), label)
        self.mag_selected.emit(layer.name, mag.mag)

    def _apply_scale(self) -> None:
        for widgets in self._view_overlays.values():
            for w in widgets:
                w.set_scale(self._scale)

    def _to_inspected(self, window_pos: Vec3) -> Vec3:
        """A window voxel as a voxel of the inspected mag."""
        s = self._scale
        return (int(window_pos[0] // s[0]), int(window_pos[1] // s[1]),
                int(window_pos[2] // s[2]))

    def _to_window(self, pos: Vec3) -> Vec3:
        """An inspected mag voxel as the window voxel at its start (its centre when it covers
        several window voxels)."""
        s = self._scale
        return (int(pos[0] * s[0] + max(s[0] - 1, 0) // 2),
                int(pos[1] * s[1] + max(s[1] - 1, 0) // 2),
                int(pos[2] * s[2] + max(s[2] - 1, 0) // 2))
