"""What the command line says to a person who mistypes: every subcommand and global flag in
``--help``, an unknown subcommand or a missing path named as such, a path said once."""

from __future__ import annotations

import pytest

from viewer.cli import COMMANDS, main


def test_help_lists_every_subcommand_and_global_flag(capsys):
    with pytest.raises(SystemExit) as ended:
        main(["--help"])
    assert ended.value.code == 0
    out = capsys.readouterr().out
    for word in (*COMMANDS, "--anon", "--remote-cache-mb", "--version", "--screenshot", "N5",
                 "Zarr"):
        assert word in out, word


@pytest.mark.parametrize("argv", [["dgest", "sample"], ["infoo"], ["compre", "a", "b"]])
def test_mistyped_subcommand_is_unknown(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"unknown command {argv[0]!r}" in err and "unrecognized" not in err


def test_missing_path_without_a_display_is_no_such_file(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    missing = str(tmp_path / "empty")
    assert main([missing]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such file or directory" in err and "display" not in err


def test_digest_of_a_missing_path_names_it_once(capsys, tmp_path):
    missing = str(tmp_path / "nonexistent")
    assert main(["digest", missing]) == 2
    err = capsys.readouterr().err
    assert err.count(missing) == 1 and "no such file or directory" in err
