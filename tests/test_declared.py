"""Declared, not probed; configured, not read from the environment.

What the loader, inspector, compare or jobs call on a volume, a storage unit or a store is
declared on ``Volume``, ``StorageUnit`` or ``Store`` (with a default where it is optional), so
no ``getattr(obj, "name", None)`` / ``hasattr(obj, "name")`` probe of one of their members is
needed above a format package, nor of another object's private member anywhere.  And the data
layers (``viewer/format``, ``viewer/core``) take their settings as arguments: only the edge
modules named here read the environment."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "viewer"

#: Modules of the data layers that may touch ``os.environ`` (relative to ``viewer/``), and why:
#: none (a job's child inherits the environment untouched; its import path and the settings of
#: reading travel with the work).
ENVIRONMENT_EDGE: set[str] = set()

#: ``(object, attribute)`` pairs of other libraries' private members looked up on purpose.
FOREIGN_PRIVATE = {("sys", "_MEIPASS"), ("blosc", "_cbuffer_sizes")}


def _members(path: Path, classes: set[str]) -> set[str]:
    """Names of the methods and properties the classes ``classes`` of ``path`` declare."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) \
                        and not item.name.startswith("__"):
                    out.add(item.name)
    return out


def declared_members() -> set[str]:
    return (_members(ROOT / "format" / "volume.py", {"Volume", "StorageUnit"})
            | _members(ROOT / "format" / "store.py", {"Store"}))


def _format_packages() -> set[Path]:
    return {p for p in (ROOT / "format").iterdir() if (p / "__init__.py").exists()}


def _modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module at ``path`` (parsed once for all the tests here)."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


@functools.cache
def _probes(path: Path) -> list[tuple[int, str, str]]:
    """``(line, object, attribute)`` of each ``getattr``/``hasattr`` with a literal name."""
    found: list[tuple[int, str, str]] = []
    for node in _nodes(path):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.append((node.lineno, ast.unparse(node.args[0]), name.value))
    return found


def test_no_probe_of_a_declared_member_above_the_formats() -> None:
    members = declared_members()
    assert {"prefetch", "supports_prefetch", "cancel_prefetch", "forget_unit",
            "drop_read_ahead", "known_size", "read_ranges_results"} <= members
    packages = _format_packages()
    bad = [f"{path.relative_to(ROOT)}:{line}: {obj}.{attr}"
           for path in _modules() if not any(p in path.parents for p in packages)
           for line, obj, attr in _probes(path) if attr in members]
    assert bad == [], "declare these on the ABC (with a default) instead of probing them"


def test_no_probe_of_a_declared_member_in_the_formats_either() -> None:
    """A format calls what the store declares: ``store.prefetch``, not a probe for it."""
    members = declared_members()
    bad = [f"{path.relative_to(ROOT)}:{line}: {obj}.{attr}"
           for path in _modules() for line, obj, attr in _probes(path)
           if attr in members and obj not in ("self", "cls")]
    assert bad == []


def test_no_probe_of_another_objects_private_member() -> None:
    bad = [f"{path.relative_to(ROOT)}:{line}: {obj}.{attr}"
           for path in _modules() for line, obj, attr in _probes(path)
           if attr.startswith("_") and not attr.startswith("__")
           and obj not in ("self", "cls") and (obj, attr) not in FOREIGN_PRIVATE]
    assert bad == []


def _environment_uses(path: Path) -> list[int]:
    """Lines that read or write the process environment (``os.environ``, ``os.getenv``,
    ``os.putenv``, ``os.unsetenv``, or those names imported from ``os``)."""
    names = ("environ", "environb", "getenv", "putenv", "unsetenv")
    lines: list[int] = []
    for node in _nodes(path):
        attribute = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "os" and node.attr in names
        imported = isinstance(node, ast.ImportFrom) and node.module == "os" \
            and any(a.name in names for a in node.names)
        if attribute or imported:
            lines.append(getattr(node, "lineno", 0))
    return lines


def test_the_data_layers_never_read_the_environment() -> None:
    bad = [f"{path.relative_to(ROOT).as_posix()}:{line}"
           for layer in ("format", "core") for path in sorted((ROOT / layer).rglob("*.py"))
           if path.relative_to(ROOT).as_posix() not in ENVIRONMENT_EDGE
           for line in _environment_uses(path)]
    assert bad == [], "pass the setting in (ReadConfig) instead of reading the environment"


def test_the_edge_modules_named_exist() -> None:
    for rel in ENVIRONMENT_EDGE:
        assert (ROOT / rel).exists(), rel
