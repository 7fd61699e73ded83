"""The fuzzing harness in the suite: a seeded sample of mutants of every format the program
reads, each read in a child process with a timeout; plus the fixed regression cases under
``cases/``.  No mutant may end in an untyped exception, a signal or a timeout.  The sample is
small but made with every kind of mutation the target's mutator has (checked), so that each
kind reaches each format on every run; ``python -m benchmarks.fuzz --count N`` runs any
number (``fuzzlib`` says how)."""

from __future__ import annotations

from pathlib import Path

import fuzzlib
import pytest

COUNT = 60
#: Mutants of a target read over HTTP or through the range cache (a server per read).
REMOTE_COUNT = 20
SEED = 21


def _kinds_wanted(target: fuzzlib.Target) -> set[str]:
    """Every kind of mutation ``target``'s mutator can make."""
    wanted = set(fuzzlib.BYTE_KINDS)  # the JSON mutator falls back to them, too
    if target.mutate is fuzzlib._json_mutate:
        wanted |= set(fuzzlib.JSON_KINDS)
    if target.mutate in (fuzzlib._wkw_mutate, fuzzlib._header_mutate):
        wanted.add(fuzzlib.IN_REGION)
    return wanted


def _explain(tally: fuzzlib.Tally) -> str:
    lines = []
    for r in tally.bad[:5]:
        lines.append(f"{r.target} mutant {r.index}: {r.outcome} {r.detail[-800:]}")
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(n for n in fuzzlib.TARGETS if not n.startswith("_")))
def test_mutants_end_in_named_errors_or_data(name: str, tmp_path: Path) -> None:
    count = REMOTE_COUNT if name in fuzzlib.REMOTE_TARGETS else COUNT
    total, per = fuzzlib.fuzz([name], count, SEED, tmp_path)
    table = total.table()
    assert table["mutants"] == count + len(fuzzlib.cases(fuzzlib.TARGETS[name]))
    missing = _kinds_wanted(fuzzlib.TARGETS[name]) - per[name].kinds
    assert not missing, f"the sample of {count} lacks {sorted(missing)}: raise the count"
    assert (table["untyped"], table["signals"], table["timeouts"]) == (0, 0, 0), \
        _explain(total)
    if name in fuzzlib.CACHE_TARGETS:  # a damaged cached range: the server's data again
        assert table["correct_data"] == table["mutants"], table
    else:
        assert table["named_errors"] > 0  # the mutations do reach the format's checks


def test_fixed_cases_are_kept_and_read() -> None:
    """The regressions found once stay in the suite (and are read by the test above)."""
    kept = {name: len(fuzzlib.cases(t)) for name, t in fuzzlib.TARGETS.items()}
    assert kept["wkw-raw-file"] >= 2 and kept["webknossos-properties"] >= 1


def test_the_harness_sees_each_outcome(tmp_path: Path) -> None:
    """The classifier itself, on a real format (an untouched file reads as correct data, a
    file cut to nothing is a named error, a raw block changed is other data) and on a reader
    that misbehaves on command: a signal, a hang and an untyped exception are classified as
    such, and the batch goes on after each (a new child)."""
    target = fuzzlib.TARGETS["wkw-raw-file"]
    sample = fuzzlib.make_sample(target, tmp_path)
    original = (sample / target.victim).read_bytes()
    changed = bytearray(original)
    changed[-1] ^= 0xFF
    results = fuzzlib.run_mutants(target, sample, [original, b"", bytes(changed)], tmp_path)
    assert [r.outcome for r in results] == ["correct_data", "named_error", "other_data"]
    toy = fuzzlib.TARGETS["_selftest"]
    sample = fuzzlib.make_sample(toy, tmp_path)
    # The hang costs the whole timeout; each other mutant takes milliseconds (the first of a
    # child has its start-up on top of it).
    results = fuzzlib.run_mutants(toy, sample, [b"signal", b"fine", b"hang", b"untyped",
                                                b"named", b"other"], tmp_path, timeout=1.5)
    assert [r.outcome for r in results] == ["signal", "correct_data", "timeout", "untyped",
                                            "named_error", "other_data"]
