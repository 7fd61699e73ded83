"""The data layers stay strictly typed (DESIGN.md: strict mypy for format and core).

mypy keeps its cache for this test in the user's cache folder (``$XDG_CACHE_HOME``, else
``~/.cache``), not in the checkout: a fresh clone on a machine that ran the check before (CI,
a new worktree) starts from it instead of analysing the program and its libraries from
nothing.  mypy takes an entry only when its source's hash matches the file it checks now, so
an entry of another checkout, version or environment is never used for a changed file."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cache_dir() -> Path:
    """The user's cache folder for mypy, or the checkout's own where that cannot be made (a
    home that is not writable)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "wkw-viewer" / "mypy"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ROOT / ".mypy_cache"
    return folder


def test_format_and_core_pass_strict_mypy():
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(_cache_dir())],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
