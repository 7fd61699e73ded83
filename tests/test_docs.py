"""The documentation runs: every code block of README.md and docs/*.md, and every link resolves.

What a fenced block in the docs may be, and what this test does with it:

* ``sh`` -- commands, one a line (a line ending in ``\\`` goes on), run in order by bash in a
  folder of the document's own.  ``wkw-viewer`` runs this checkout's program and ``python``
  this interpreter.  The folder holds ``sample`` (the demo dataset, as ``wkw-viewer demo
  sample`` writes it), ``copy`` (a byte-identical copy), ``changed`` (a copy whose ``color``
  mag 1 has one voxel changed) and ``broken`` (``sample/color/1`` with a data file cut short);
  README.md's folder starts empty (the README writes its own ``sample``).  A command must exit
  0, unless its comment says otherwise with ``exit N``.
* ``json`` right after an ``sh`` block -- what that block's last command prints.  Its shape
  must be the program's: the same keys in every object, the same JSON types, lists compared by
  their first item (the values may differ: paths, times).
* ``python`` -- run in order in one namespace per document, in the document's folder.
* A block whose first line is ``# not run: REASON`` -- not run (installing, opening a window,
  writing outside the test's folder, taking minutes).  It is still checked: its Python
  compiles, a ``wkw-viewer SUBCOMMAND`` is a subcommand and each ``--flag`` is in that
  command's ``--help``, a ``python -m benchmarks.NAME`` names a benchmark that takes its flags.
  The same flag check applies to every command that runs.
* ``text`` (synopses, output) and any other language -- not run.

Links: every relative link (``[...](path#anchor)``, images too) names a file of the repository,
and an anchor names a heading of that file (GitHub's slugs).  ``docs/cli.md`` names every flag
of every subcommand's ``--help``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from viewer.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = [*DOCS, ROOT / "CHANGELOG.md", ROOT / "packaging" / "README.md"]
NOT_RUN = re.compile(r"^#\s*not run:\s*\S")
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
SUBCOMMANDS = tuple(COMMANDS)  # info, compare, demo, install-desktop, digest
CHANGED_VOXEL = (40, 20, 50)


@dataclass
class Block:
    lang: str
    line: int  # 1-based line of the first line inside the fence
    text: str

    @property
    def not_run(self) -> bool:
        first = self.text.lstrip("\n").split("\n", 1)[0]
        return bool(NOT_RUN.match(first.strip()))


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order."""
    found: list[Block] = []
    fence: str | None = None
    lang = ""
    start = 0
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line.strip())
        if fence is None and match:
            fence, lang, start, body = match.group(1), match.group(2).lower(), number + 1, []
        elif fence is not None and line.strip().startswith(fence) and not line.strip()[
                len(fence):].strip():
            found.append(Block(lang, start, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
    assert fence is None, f"{path}: a fence opened at line {start - 1} is never closed"
    return found


def commands(block: Block) -> list[tuple[int, str]]:
    """(line number, command) of an sh block: comment lines dropped, continuations joined."""
    result: list[tuple[int, str]] = []
    pending = ""
    pending_line = 0
    for offset, raw in enumerate(block.text.split("\n")):
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            pending_line = block.line + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        result.append((pending_line, pending + line))
        pending = ""
    return result


def expected_status(command: str) -> int:
    """``exit N`` in a command's trailing comment, else 0."""
    _, _, comment = command.partition(" #")
    match = re.search(r"\bexit (\d+)\b", comment)
    return int(match.group(1)) if match else 0


@cache
def help_text(subcommand: str) -> str:
    """What ``wkw-viewer [SUBCOMMAND] --help`` prints, taken in this process (the command line
    is ``main(argv)``; no interpreter start per subcommand), 80 columns wide as in a pipe."""
    from viewer import cli

    out, err = io.StringIO(), io.StringIO()
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main([*([subcommand] if subcommand else []), "--help"])
            except SystemExit as exit_:  # argparse ends --help this way
                status = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns
    assert status == 0, err.getvalue()
    return out.getvalue()


def check_flags(command: str, where: str) -> None:
    """A ``wkw-viewer`` line uses a real subcommand and flags its ``--help`` lists; a
    ``python -m benchmarks.NAME`` line names a benchmark that parses its flags."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    for i, word in enumerate(words):
        if word.endswith("wkw-viewer"):
            args = words[i + 1:]
            sub = args[0] if args and args[0] in SUBCOMMANDS else ""
            text = help_text(sub)
            for arg in args:
                if arg.startswith("-") and arg != "--anon":
                    flag = arg.split("=", 1)[0]
                    assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), (
                        f"{where}: {flag} is not a flag of `wkw-viewer {sub}`")
            return
        if word == "-m" and i + 1 < len(words) and words[i + 1].startswith("benchmarks."):
            name = words[i + 1].split(".", 1)[1]
            source = ROOT / "benchmarks" / f"{name}.py"
            assert source.is_file(), f"{where}: no benchmark {name}"
            code = source.read_text(encoding="utf-8")
            for arg in words[i + 2:]:
                if arg.startswith("--"):
                    assert f'"{arg}"' in code, f"{where}: benchmarks.{name} takes no {arg}"
            return


def _env(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(QT_QPA_PLATFORM="offscreen", WKW_VIEWER_CACHE=str(folder / ".cache"),
               WKW_VIEWER_SETTINGS_DIR=str(folder / ".settings"),
               XDG_DATA_HOME=str(folder / ".xdg"), PYTHONPATH=str(ROOT))
    return env


def _bin(folder: Path) -> Path:
    """``wkw-viewer`` and ``python`` for the commands: this checkout, this interpreter."""
    bindir = folder / ".bin"
    bindir.mkdir(exist_ok=True)
    for name, line in (("wkw-viewer", f'exec "{sys.executable}" -m viewer "$@"'),
                       ("python", f'exec "{sys.executable}" "$@"'),
                       ("python3", f'exec "{sys.executable}" "$@"')):
        script = bindir / name
        script.write_text(f"#!/bin/sh\n{line}\n")
        script.chmod(0o755)
    return bindir


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The datasets the docs' commands name, built once."""
    from viewer.core import demo
    from viewer.format import wkw

    base = tmp_path_factory.mktemp("docs-fixtures")
    demo.build_demo(base / "sample")
    shutil.copytree(base / "sample", base / "copy")
    shutil.copytree(base / "sample", base / "changed")
    changed = wkw.Dataset.open(str(base / "changed" / "color" / "1"))
    old = int(changed.read(CHANGED_VOXEL, (1, 1, 1))[0, 0, 0, 0])
    changed.write(CHANGED_VOXEL, np.full((1, 1, 1), (old + 43) % 256, np.uint8))
    changed.close()
    shutil.copytree(base / "sample" / "color" / "1", base / "broken")
    os.truncate(base / "broken" / "z0" / "y0" / "x0.wkw", 1_000_000)
    return base


def _workdir(doc: Path, fixtures: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    if doc.name != "README.md" or doc.parent != ROOT:
        for name in ("sample", "copy", "changed", "broken"):
            shutil.copytree(fixtures / name, folder / name)
    return folder


def run(command: str, folder: Path, env: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """Run one command: a plain ``wkw-viewer SUBCOMMAND ...`` in this process (the subcommands
    are ``main(argv) -> int`` and print to ``sys.stdout``: no interpreter start per command),
    anything else (the window, pipes, other programs) with bash."""
    code = command.split(" #", 1)[0]
    words = shlex.split(code)
    if (len(words) > 1 and words[0] == "wkw-viewer" and words[1] in SUBCOMMANDS
            and not re.search(r"[|&;<>$`]", code)):
        from viewer import cli

        for name in ("WKW_VIEWER_CACHE", "WKW_VIEWER_SETTINGS_DIR", "XDG_DATA_HOME"):
            monkeypatch.setenv(name, env[name])
        monkeypatch.chdir(folder)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(words[1:])
            except SystemExit as exit_:  # argparse's errors
                status = exit_.code if isinstance(exit_.code, int) else 1
        return status, out.getvalue(), err.getvalue()
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def same_shape(doc: Any, real: Any, where: str) -> None:
    """The documented JSON has the program's keys and types (lists: by their first item)."""
    def kind(value: Any) -> str:
        if isinstance(value, bool) or value is None:
            return type(value).__name__
        return "number" if isinstance(value, int | float) else type(value).__name__

    assert kind(doc) == kind(real), f"{where}: documented {kind(doc)}, printed {kind(real)}"
    if isinstance(doc, dict):
        missing, extra = set(real) - set(doc), set(doc) - set(real)
        assert not missing and not extra, (
            f"{where}: keys printed but not documented {sorted(missing)}, "
            f"documented but not printed {sorted(extra)}")
        for key in doc:
            same_shape(doc[key], real[key], f"{where}.{key}")
    elif isinstance(doc, list) and doc and real:
        same_shape(doc[0], real[0], f"{where}[0]")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(doc: Path, fixtures: Path, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _workdir(doc, fixtures, tmp_path)
    env = _env(folder)
    env["PATH"] = f"{_bin(folder)}{os.pathsep}{env['PATH']}"
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    last_output: str | None = None
    for block in blocks(doc):
        where = f"{doc.relative_to(ROOT)}:{block.line}"
        if block.lang in ("sh", "bash", "shell", "console"):
            last_output = None
            for line, command in commands(block):
                check_flags(command, f"{doc.relative_to(ROOT)}:{line}")
                if block.not_run:
                    continue
                status, stdout, stderr = run(command, folder, env, monkeypatch)
                want = expected_status(command)
                assert status == want, (
                    f"{doc.relative_to(ROOT)}:{line}: `{command}` exited {status}, "
                    f"the doc says {want}\nstdout: {stdout[-2000:]}\nstderr: {stderr[-2000:]}")
                last_output = stdout
            continue
        if block.lang == "json":
            documented = json.loads(block.text)
            if last_output is not None:
                same_shape(documented, json.loads(last_output), where)
            last_output = None
            continue
        last_output = None
        if block.lang in ("python", "py"):
            code = compile(block.text, where, "exec")
            if not block.not_run:
                monkeypatch.chdir(folder)
                exec(code, namespace)


def _slug(heading: str) -> str:
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            fence = not fence
            continue
        match = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _links(path: Path) -> list[tuple[int, str]]:
    result: list[tuple[int, str]] = []
    fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.strip()):
            fence = not fence
            continue
        if not fence:
            result += [(number, m.group(1)) for m in re.finditer(r"\]\(([^)\s]+)\)",
                                                                  re.sub(r"`[^`]*`", "", line))]
    return result


def check_links(doc: Path, root: Path = ROOT) -> None:
    """Every relative link of ``doc`` names a file under ``root``, and its anchor a heading."""
    for number, target in _links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        linked = (doc.parent / file_part).resolve() if file_part else doc
        where = f"{doc.relative_to(root)}:{number}: {target}"
        assert linked.exists(), f"{where}: no such file"
        assert root in linked.parents or linked == root, f"{where}: outside the repository"
        if anchor:
            assert linked.suffix == ".md", f"{where}: an anchor into a file that is not Markdown"
            assert anchor in anchors(linked), f"{where}: no heading with this anchor"


@pytest.mark.parametrize("doc", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(doc: Path) -> None:
    assert doc.is_file(), f"{doc.relative_to(ROOT)} is missing"
    check_links(doc)


def test_cli_doc_names_every_flag() -> None:
    """docs/cli.md names every subcommand and every flag of every ``--help``."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for sub in ("", *SUBCOMMANDS):
        if sub:
            assert f"wkw-viewer {sub}" in text, f"docs/cli.md does not name `wkw-viewer {sub}`"
        for flag in set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", help_text(sub))):
            if flag in ("-h", "--help"):
                continue
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), (
                f"docs/cli.md does not name {flag} of `wkw-viewer {sub}`".replace("  ", " "))


def test_performance_doc_names_every_benchmark() -> None:
    """docs/performance.md has a section for every benchmark in benchmarks/."""
    headings = anchors(ROOT / "docs" / "performance.md")
    helpers = {"__init__", "datasets", "latency_proxy"}
    for source in sorted((ROOT / "benchmarks").glob("*.py")):
        if source.stem not in helpers:
            assert source.stem in headings, f"docs/performance.md has no section {source.stem}"


# The checks above fail when they should: each is shown a wrong document once.

def test_json_shape_check_names_a_missing_key() -> None:
    printed = {"equal": True, "pairs": [{"layer": "color", "mag": [1, 1, 1]}]}
    same_shape({"equal": False, "pairs": [{"layer": "x", "mag": [2, 2, 1]}]}, printed, "doc")
    with pytest.raises(AssertionError, match="not documented.*mag"):
        same_shape({"equal": True, "pairs": [{"layer": "color"}]}, printed, "doc")
    with pytest.raises(AssertionError, match="documented str, printed bool"):
        same_shape({"equal": "yes", "pairs": []}, printed, "doc")


def test_flag_check_refuses_an_unknown_flag() -> None:
    check_flags("wkw-viewer info sample --json --quick   # exit 0", "doc")
    with pytest.raises(AssertionError, match="--fast is not a flag"):
        check_flags("wkw-viewer info sample --fast", "doc")
    with pytest.raises(AssertionError, match="no benchmark"):
        check_flags("python -m benchmarks.no_such_benchmark --json", "doc")


def test_blocks_commands_and_anchors_are_parsed(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# Title `x`\n\n## A, b & c\n\n```sh\n# not run: opens a window\n"
                   "wkw-viewer a \\\n  --pos 1,2,3   # exit 2\n```\n\n## A, b & c\n")
    [block] = blocks(doc)
    assert block.lang == "sh" and block.not_run
    assert commands(block) == [(7, "wkw-viewer a    --pos 1,2,3   # exit 2")]
    assert expected_status(commands(block)[0][1]) == 2
    assert anchors(doc) == {"title-x", "a-b--c", "a-b--c-1"}


def test_link_check_names_a_missing_file_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n")
    doc = tmp_path / "doc.md"
    doc.write_text("[ok](other.md#other) [web](https://example.org) `[code](nowhere.md)`\n")
    check_links(doc, tmp_path)
    doc.write_text("[bad](other.md#elsewhere)\n")
    with pytest.raises(AssertionError, match="no heading with this anchor"):
        check_links(doc, tmp_path)
    doc.write_text("see [gone](gone.md)\n")
    with pytest.raises(AssertionError, match="no such file"):
        check_links(doc, tmp_path)
