"""Extra formats come from the ``wkw_viewer.formats`` entry point group of any installed
distribution: a module that registers itself on import (the tests' toy format) or a
``FormatEntry`` object; a plugin that cannot be loaded is named on stderr, never fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PLUGIN = '''
from viewer.format.registry import FormatEntry


def _never(path: str) -> bool:
    return False


def _open(path: str):
    raise AssertionError("never detected")


ENTRY = FormatEntry("plug", _never, _open, names=("plug-volume",))
'''


def test_entry_points_add_formats_and_a_broken_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "myplug.py").write_text(PLUGIN)
    meta = tmp_path / "myplug-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text(
        "[wkw_viewer.formats]\nplug = myplug:ENTRY\nbroken = no_such_module_for_wkw_viewer\n")
    tests = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(tmp_path), tests)))
    code = ("import json; from viewer.format import registry; "
            "print(json.dumps(registry.format_names()))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, cwd=Path(tests).parent)
    assert proc.returncode == 0, proc.stderr
    names = json.loads(proc.stdout)
    assert "plug" in names and "plug-volume" in names
    assert "toy" in names  # the tests' own plugin, declared in tests/
    assert "wkw" in names  # the built-in formats are still there
    assert "'broken'" in proc.stderr and "no_such_module_for_wkw_viewer" in proc.stderr
