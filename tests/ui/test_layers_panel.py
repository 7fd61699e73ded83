"""The layers panel: every control writes into the state (one action, one notification),
every state change shows in the controls (and echoes nothing back), rows follow the layers."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from viewer.core.state import (
    COLOR,
    CONTRAST,
    LAYERS,
    SEGMENTATION,
    Contrast,
    LayerDisplay,
    ViewerState,
)
from viewer.ui.layers_panel import (
    QtLayersPanel,
    install_layers_panel,
    mag_text,
    parse_segment_id,
)

MAGS = [(1, 1, 1), (2, 2, 1), (4, 4, 2)]


class Recorder:
    """Counts the state's notifications."""

    def __init__(self, state: ViewerState) -> None:
        self.calls: list[frozenset[str]] = []
        state.subscribe(self.calls.append)


@pytest.fixture
def state() -> ViewerState:
    s = ViewerState(((0, 0, 0), (64, 64, 64)))
    s.set_layers([LayerDisplay("em", COLOR, contrast=Contrast(10, 200)),
                  LayerDisplay("cells", SEGMENTATION, opacity=0.55)])
    return s


@pytest.fixture
def panel(qtbot, state) -> QtLayersPanel:
    p = QtLayersPanel(state)
    p.set_mags({"em": MAGS, "cells": MAGS})
    qtbot.addWidget(p)
    p.resize(320, 300)
    p.show()
    qtbot.waitExposed(p)
    return p


def test_rows_top_layer_first_with_their_controls(panel, state):
    assert panel.row_order() == ["cells", "em"]  # the last drawn is the top row
    em, cells = panel.rows["em"], panel.rows["cells"]
    assert em.selected is None and em.clear is None  # ids only for segmentation
    assert cells.selected is not None and cells.clear is not None
    assert em.badge.text() == "color" and cells.badge.text() == "seg"
    assert em.visible.isChecked() and cells.visible.isChecked()
    assert em.opacity.value() == 100 and cells.opacity.value() == 55
    assert cells.opacity_value.text() == "55 %"
    assert [em.mag.itemText(i) for i in range(em.mag.count())] == ["auto", "1", "2-2-1",
                                                                  "4-4-2"]
    assert em.mag.currentIndex() == 0
    assert em.property("active") is True and cells.property("active") is False


def test_checkbox_click_and_space_toggle_visibility_once(qtbot, panel, state):
    rec = Recorder(state)
    box = panel.rows["em"].visible
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    assert state.layer("em").visible is False
    assert rec.calls == [frozenset({LAYERS})]
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Space)
    assert state.layer("em").visible is True
    assert len(rec.calls) == 2
    assert [la.name for la in state.visible_layers()] == ["em", "cells"]


def test_opacity_slider_sets_the_opacity(qtbot, panel, state):
    rec = Recorder(state)
    slider = panel.rows["cells"].opacity
    slider.setFocus()
    qtbot.keyClick(slider, Qt.Key.Key_PageUp)  # 55 -> 65 %
    assert state.layer("cells").opacity == pytest.approx(0.65)
    assert rec.calls == [frozenset({LAYERS})]
    assert panel.rows["cells"].opacity_value.text() == "65 %"
    qtbot.keyClick(slider, Qt.Key.Key_Home)
    assert state.layer("cells").opacity == 0.0
    assert state.visible_layers() == [state.layer("em")]  # opacity 0: not drawn
    assert len(rec.calls) == 2


def test_mag_combo_locks_and_unlocks_the_mag(qtbot, panel, state):
    rec = Recorder(state)
    combo = panel.rows["em"].mag
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # auto -> 1
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # 1 -> 2-2-1
    assert state.layer("em").mag_lock == (2, 2, 1)
    assert len(rec.calls) == 2 and all(c == frozenset({LAYERS}) for c in rec.calls)
    combo.setCurrentIndex(0)  # back to auto
    assert state.layer("em").mag_lock is None
    assert state.layer("cells").mag_lock is None  # per layer
    assert len(rec.calls) == 3


def test_selected_id_typed_cleared_and_refused(qtbot, panel, state):
    rec = Recorder(state)
    row = panel.rows["cells"]
    edit = row.selected
    edit.setFocus()
    qtbot.keyClicks(edit, "12345")
    assert rec.calls == []  # nothing until Enter
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    assert state.layer("cells").selected_id == 12345
    assert rec.calls == [frozenset({LAYERS})]
    qtbot.mouseClick(row.clear, Qt.MouseButton.LeftButton)
    assert state.layer("cells").selected_id is None
    assert edit.text() == ""
    assert len(rec.calls) == 2
    # the largest uint64 id, beyond float precision, arrives exact
    edit.setFocus()
    qtbot.keyClicks(edit, str(2 ** 64 - 1))
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    assert state.layer("cells").selected_id == 2 ** 64 - 1
    assert len(rec.calls) == 3
    # one past it is refused: marked, the state keeps its id
    edit.clear()
    qtbot.keyClicks(edit, str(2 ** 64))
    assert edit.property("invalid") is True
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    assert state.layer("cells").selected_id == 2 ** 64 - 1
    assert len(rec.calls) == 3
    # letters cannot be typed at all
    edit.clear()
    qtbot.keyClicks(edit, "7x")
    assert edit.text() == "7"


def test_state_changes_show_in_the_widgets_without_echo(qtbot, panel, state):
    rec = Recorder(state)
    state.set_layer("em", visible=False, opacity=0.25, mag_lock=(4, 4, 2))
    state.set_layer("cells", selected_id=77, hovered_id=9)
    assert len(rec.calls) == 2  # the two changes, nothing from the panel
    em, cells = panel.rows["em"], panel.rows["cells"]
    assert not em.visible.isChecked()
    assert em.opacity.value() == 25 and em.opacity_value.text() == "25 %"
    assert em.mag.currentText() == "4-4-2"
    assert cells.selected.text() == "77"
    assert "9" in cells.selected.placeholderText()
    # a mag lock that is not offered is added, not lost
    state.set_layer("cells", mag_lock=(8, 8, 4))
    assert cells.mag.currentText() == "8-8-4"
    assert len(rec.calls) == 3


def test_hover_changes_do_not_disturb_an_id_being_typed(qtbot, panel, state):
    edit = panel.rows["cells"].selected
    edit.setFocus()
    qtbot.keyClicks(edit, "42")
    state.set_layer("cells", hovered_id=5)
    state.set_layer("cells", hovered_id=6)
    assert edit.text() == "42"


def test_clicking_a_row_makes_its_layer_active(qtbot, panel, state):
    rec = Recorder(state)
    cells = panel.rows["cells"]
    qtbot.mouseClick(cells.name_label, Qt.MouseButton.LeftButton)
    assert state.active_layer == "cells"
    assert rec.calls == [frozenset({LAYERS, CONTRAST})]
    assert cells.property("active") is True
    assert panel.rows["em"].property("active") is False
    qtbot.mouseClick(cells, Qt.MouseButton.LeftButton)  # already active: nothing
    assert len(rec.calls) == 1
    state.set_active_layer("em")
    assert panel.rows["em"].property("active") is True and cells.property("active") is False


def test_rows_follow_a_new_list_of_layers(qtbot, panel, state):
    panel.set_shown_mag("em", (2, 2, 1))
    assert panel.rows["em"].mag.itemText(0) == "auto (2-2-1)"
    old = panel.rows["em"]
    state.set_layers([LayerDisplay("em", COLOR), LayerDisplay("nuclei", SEGMENTATION),
                      LayerDisplay("cells", SEGMENTATION)])
    assert panel.row_order() == ["cells", "nuclei", "em"]
    assert panel.rows["em"] is not old
    # mags and the shown mag survive a rebuild; a layer without mags offers auto alone
    assert panel.rows["em"].mag.count() == 4
    assert panel.rows["em"].mag.itemText(0) == "auto (2-2-1)"
    assert panel.rows["nuclei"].mag.count() == 1
    panel.set_shown_mag("em", None)
    assert panel.rows["em"].mag.itemText(0) == "auto"
    state.set_layers([])
    assert panel.rows == {} and not panel.empty.isHidden()


def test_names_and_ids():
    assert mag_text((1, 1, 1)) == "1" and mag_text((2, 2, 1)) == "2-2-1"
    assert mag_text((4, 4, 4)) == "4"
    assert parse_segment_id("") is None and parse_segment_id(" 0 ") is None
    assert parse_segment_id("18446744073709551615") == 2 ** 64 - 1
    for bad in ("18446744073709551616", "-3", "1.5", "abc"):
        with pytest.raises(ValueError):
            parse_segment_id(bad)


def test_install_docks_the_panel_tabified_with_contrast(qtbot, window):
    panel = install_layers_panel(window)
    assert window.layers_panel is panel and panel.state is window.state
    assert window.layers_dock.windowTitle() == "Layers"
    qtbot.waitUntil(  # the dock layout settles in the event loop
        lambda: window.contrast_dock in window.tabifiedDockWidgets(window.layers_dock))
    window.state.set_layers([LayerDisplay("em", COLOR), LayerDisplay("cells", SEGMENTATION)])
    assert panel.row_order() == ["cells", "em"]
    # the View menu offers the dock and the layer keys
    view_menu = next(a.menu() for a in window.menuBar().actions()
                     if a.text().replace("&", "") == "View")
    texts = [a.text() for a in view_menu.actions()]
    assert "Layers" in texts and "Show/Hide Active &Layer" in texts


def test_layer_keys_toggle_and_cycle_the_active_layer(qtbot, window):
    from viewer.core.state import XY

    install_layers_panel(window)
    state = window.state
    state.set_layers([LayerDisplay("em", COLOR), LayerDisplay("cells", SEGMENTATION)])
    view = window.views[XY]
    window.activateWindow()
    view.setFocus()
    assert state.active_layer == "em"
    qtbot.keyClick(view, Qt.Key.Key_V)
    assert state.layer("em").visible is False
    qtbot.keyClick(view, Qt.Key.Key_V)
    assert state.layer("em").visible is True
    qtbot.keyClick(view, Qt.Key.Key_L)  # from the bottom row "em" on to the top row "cells"
    assert state.active_layer == "cells"
    qtbot.keyClick(view, Qt.Key.Key_L)
    assert state.active_layer == "em"
    qtbot.keyClick(view, Qt.Key.Key_V)
    assert state.layer("em").visible is False and state.layer("cells").visible is True


def test_a_deleted_panel_stops_following_the_state(qtbot):
    from PySide6.QtCore import QCoreApplication, QEvent

    state = ViewerState()
    state.set_layers([LayerDisplay("em", COLOR)])
    panel = QtLayersPanel(state)
    panel.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    state.set_layer("em", visible=False)  # no RuntimeError from a deleted row
    state.set_layers([LayerDisplay("em", COLOR), LayerDisplay("cells", SEGMENTATION)])
    assert state.layer("em").visible is True
