"""The window's modules form no import cycle (issue 19): the layers panel uses the window's
action helpers (``viewer.ui.actions``); nothing the window is built of imports the panels
mounted onto it."""

from __future__ import annotations

import grimp

WINDOW_MODULES = [f"viewer.ui.{name}" for name in (
    "main_window", "window_host", "status_bar", "menus", "actions", "opening", "recent",
    "layer_drawing", "layers_panel", "docks", "loading", "memory", "remote", "settings",
    "demo_dialog", "about", "error_banner", "flow_layout", "theme", "xcb_libs")] + ["viewer.app"]


def test_the_window_modules_are_in_no_import_cycle():
    graph = grimp.build_graph("viewer")
    cycles = []
    for module in WINDOW_MODULES:
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                cycles.append((module, *back))
    assert cycles == []


def test_the_menus_do_not_import_the_layers_panel():
    graph = grimp.build_graph("viewer")
    assert graph.find_shortest_chain(importer="viewer.ui.menus",
                                     imported="viewer.ui.layers_panel") is None
    assert graph.find_shortest_chain(importer="viewer.ui.layers_panel",
                                     imported="viewer.ui.actions") is not None
