"""The whole tree passes ruff with the rules configured in pyproject.toml."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


#: "issue 14", "issues 13-15", "#31": a reference to the project's issue tracker.
ISSUE_REFERENCE = re.compile(r"\bissues? ?#?\d+|(?<![\w&])#\d{1,3}\b", re.IGNORECASE)
#: Where comments and docstrings must not point at issues (they go stale; the history has
#: them): the program, its tests and benchmarks, the build files.
CODE = ["viewer", "tests", "benchmarks", "packaging", "setup.py", "pyproject.toml", ".ci"]


def issue_references(root: Path) -> list[str]:
    found = []
    for top in CODE:
        start = root / top
        paths = [start] if start.is_file() else sorted(start.rglob("*"))
        for path in paths:
            if (not path.is_file() or path.suffix not in {"", ".py", ".toml", ".spec", ".c"}
                    or ".cache" in path.relative_to(root).parts  # benchmark data, not code
                    or path == Path(__file__).resolve()):  # (its examples)
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                if ISSUE_REFERENCE.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_no_issue_numbers_in_code() -> None:
    assert issue_references(ROOT) == []


def test_an_issue_number_is_found(tmp_path: Path) -> None:
    (tmp_path / "viewer").mkdir()
    (tmp_path / "viewer" / "a.py").write_text("x = 1  # since issue 14\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "b.py").write_text('"""Fixed in #31."""\ncolor = "#303030"\n')
    assert [f.split(":")[0] for f in issue_references(tmp_path)] == [
        str(Path("viewer", "a.py")), str(Path("tests", "b.py"))]
