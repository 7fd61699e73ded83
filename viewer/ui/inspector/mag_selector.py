"""The inspector's layer and mag selector: two combo boxes over a format-neutral
``viewer.format.Dataset`` (layers of mags of volumes), whatever the format; shown when the
dataset offers more than one layer or mag.  GUI thread only."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from viewer.format import Dataset, Layer, Mag, mag_name
from viewer.ui.inspector.loaded_file import Vec3


class QtMagSelector(QWidget):
    """The layer combo box (``layer_combo``) and the mag combo box (``mag_combo``) of the
    dataset given to ``fill``.  ``changed`` says the user (or ``select``) picked another."""

    #: Another layer or mag is selected.
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._dataset: Dataset | None = None
        self._prefer: Vec3 = (1, 1, 1)
        bar = QHBoxLayout(self)
        bar.setContentsMargins(0, 0, 0, 0)
        self.layer_combo = QComboBox()
        self.layer_combo.setToolTip("layer to inspect")
        self.mag_combo = QComboBox()
        self.mag_combo.setToolTip("mag of the layer to inspect (its own volume)")
        # Long layer names must not widen the quadrant: the boxes shrink to a few characters
        # (their lists show whole names).
        for combo, chars in ((self.layer_combo, 8), (self.mag_combo, 5)):
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(chars)
        bar.addWidget(QLabel("layer"))
        bar.addWidget(self.layer_combo, 1)
        bar.addWidget(QLabel("mag"))
        bar.addWidget(self.mag_combo)
        self.layer_combo.currentIndexChanged.connect(self._on_layer_changed)
        self.mag_combo.currentIndexChanged.connect(lambda _i: self.changed.emit())
        self.hide()

    @property
    def selected_layer(self) -> Layer | None:
        if self._dataset is None or self.layer_combo.currentIndex() < 0:
            return None
        return self._dataset.layer(str(self.layer_combo.currentData()))

    @property
    def selected_mag(self) -> Mag | None:
        layer = self.selected_layer
        if layer is None or self.mag_combo.currentIndex() < 0:
            return None
        return layer.mag(tuple(self.mag_combo.currentData()))

    def fill(self, dataset: Dataset | None, layer: str | None, mag: Vec3 | None,
             window_mag: Vec3) -> bool:
        """Offer ``dataset``'s layers and select ``layer`` (default: the only layer, else the
        first color layer) at ``mag`` (default: the window's mag ``window_mag``; either only
        if the layer has it, else its finest), without ``changed``.  Shown when there is a
        choice.  False when there is no layer to select."""
        self._dataset = dataset
        self._prefer = window_mag
        prefer = mag if mag is not None else window_mag
        self.layer_combo.blockSignals(True)
        self.layer_combo.clear()
        if dataset is None or not dataset.layers:
            self.layer_combo.blockSignals(False)
            self.mag_combo.blockSignals(True)
            self.mag_combo.clear()
            self.mag_combo.blockSignals(False)
            self.hide()
            return False
        for item in dataset.layers:
            self.layer_combo.addItem(f"{item.name} ({item.category})", item.name)
        names = [item.name for item in dataset.layers]
        if layer is None or layer not in names:
            layer = (dataset.layers[0] if len(dataset.layers) == 1 else
                     (dataset.color_layers or dataset.layers)[0]).name
        self.layer_combo.setCurrentIndex(names.index(layer))
        self.layer_combo.blockSignals(False)
        several = len(dataset.layers) > 1 or any(len(item.mags) > 1 for item in dataset.layers)
        self.setVisible(several)
        self._fill_mags(dataset.layer(layer), prefer)
        return True

    def select(self, layer: str | None = None, mag: Any = None) -> None:
        """Pick ``layer`` (by name) and ``mag`` (any spelling) as the combo boxes would."""
        ds = self._dataset
        if ds is None:
            return
        if layer is not None:
            names = [item.name for item in ds.layers]
            self.layer_combo.setCurrentIndex(names.index(layer))
        if mag is not None:
            current = self.selected_layer
            assert current is not None
            target = current.mag(mag).mag
            for i in range(self.mag_combo.count()):
                if tuple(self.mag_combo.itemData(i)) == target:
                    self.mag_combo.setCurrentIndex(i)

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
        self._fill_mags(layer, tuple(current) if current is not None else self._prefer)
        self.changed.emit()
