"""Small datasets for the advise tests, written by the reference ``wkw`` package (session
fixtures: written once), and the same voxels written by other formats' real writers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import wkw
from advise_data import CASES, EXACT_SPECS, FILE, Case, _write_wkw, as_stored
from once import once_per_run


def _write_cases(base: Path) -> dict[str, Case]:
    out = {}
    for name, (make, absent, chunk) in CASES.items():
        data = make()
        root = _write_wkw(base / name, data, wkw.Header.BLOCK_TYPE_LZ4, absent, chunk)
        out[name] = Case(name, as_stored(data, absent), root, absent, chunk)
    return out


@pytest.fixture(scope="session")
def advise_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    """Written once for the run (the four advise modules may be on different workers)."""
    return once_per_run(tmp_path_factory, "advise-cases", _write_cases)


@pytest.fixture(scope="session")
def exact_reports(tmp_path_factory: pytest.TempPathFactory,
                  advise_cases: dict[str, Case]) -> dict[str, Any]:
    """Each case's exhaustive (``--all``) report over ``EXACT_SPECS`` (once for the run)."""
    from viewer.core.advise import AdviseRequest, run_advice
    from viewer.format import open_volume

    def reports(_: Path) -> dict[str, Any]:
        out = {}
        for name, case in advise_cases.items():
            with open_volume(str(case.root)) as volume:
                out[name] = run_advice(volume, AdviseRequest(
                    specs=EXACT_SPECS[name], exhaustive=True, shard_vx=FILE, threads=2))
        return out

    return once_per_run(tmp_path_factory, "advise-exact-reports", reports)
