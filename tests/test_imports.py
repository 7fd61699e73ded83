"""No module of ``viewer`` imports itself back through others: a lower module never
needs the one that uses it.  The import graph is grimp's (the library import-linter is built
on); it counts imports inside functions as well, so a lazy import does not hide a loop."""

from __future__ import annotations

import grimp


def import_cycles(package: str) -> list[list[str]]:
    """The groups of modules of ``package`` that import each other in a loop (the strongly
    connected components of the import graph with more than one module, or a module that
    imports itself)."""
    graph = grimp.build_graph(package)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    # Tarjan's algorithm, iterative (the graph is a few hundred modules deep at most, but a
    # recursion limit is no place for a test to fail).
    for root in sorted(graph.modules):
        if root in order:
            continue
        work: list[tuple[str, list[str]]] = []
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(graph.find_modules_directly_imported_by(root))))
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in order:
                    order[nxt] = low[nxt] = len(order)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.find_modules_directly_imported_by(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == order[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph.find_modules_directly_imported_by(node):
                    groups.append(sorted(group))
    return sorted(groups)


def test_no_import_cycles_in_viewer() -> None:
    assert import_cycles("viewer") == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "loopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from loopy import b\n")
    (pkg / "b.py").write_text("def f():\n    from loopy import c\n")
    (pkg / "c.py").write_text("import loopy.a\n")
    (pkg / "d.py").write_text("import loopy.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("loopy") == [["loopy.a", "loopy.b", "loopy.c"]]
