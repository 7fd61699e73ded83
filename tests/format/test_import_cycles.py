"""The format layer's modules import each other without a loop: a lower module (the header, a
file's blocks, the checks of a file) never imports one that uses it (a file, a dataset, the
validation of a dataset).  ``grimp`` (which import-linter is built on) builds the graph from the
sources, imports under ``TYPE_CHECKING`` and inside functions included."""

from __future__ import annotations

from typing import Any

import pytest

grimp = pytest.importorskip("grimp")


def _cycles(graph: Any, prefix: str) -> list[tuple[str, str]]:
    """Every direct import ``a -> b`` inside ``prefix`` such that ``b`` leads back to ``a``."""
    found = []
    for a in sorted(m for m in graph.modules if m.startswith(prefix)):
        for b in graph.find_modules_directly_imported_by(a):
            if b.startswith(prefix) and graph.chain_exists(importer=b, imported=a):
                found.append((a, b))
    return found


def test_the_wkw_package_has_no_import_cycle() -> None:
    graph = grimp.build_graph("viewer")
    assert _cycles(graph, "viewer.format.wkw.") == []


def test_the_format_registry_does_not_import_the_formats() -> None:
    """The formats join the registry by importing it; it loads them by name, like plugins."""
    graph = grimp.build_graph("viewer")
    assert not graph.chain_exists(importer="viewer.format.registry",
                                  imported="viewer.format.formats")
    assert [c for c in _cycles(graph, "viewer.format.") if "registry" in c[0] + c[1]] == []
