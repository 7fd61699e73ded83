"""Small datasets for the advise tests, written by the reference ``wkw`` package (session
fixtures: written once), and the same voxels written by other formats' real writers."""

from __future__ import annotations

from typing import Any

import pytest
import wkw
from advise_data import CASES, EXACT_SPECS, FILE, Case, _write_wkw, as_stored


@pytest.fixture(scope="session")
def advise_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    base = tmp_path_factory.mktemp("advise")
    out = {}
    for name, (make, absent, chunk) in CASES.items():
        data = make()
        root = _write_wkw(base / name, data, wkw.Header.BLOCK_TYPE_LZ4, absent, chunk)
        out[name] = Case(name, as_stored(data, absent), root, absent, chunk)
    return out


@pytest.fixture(scope="session")
def exact_reports(advise_cases: dict[str, Case]) -> dict[str, Any]:
    """Each case's exhaustive (``--all``) report over ``EXACT_SPECS``."""
    from viewer.core.advise import AdviseRequest, run_advice
    from viewer.format import open_volume

    out = {}
    for name, case in advise_cases.items():
        with open_volume(str(case.root)) as volume:
            out[name] = run_advice(volume, AdviseRequest(
                specs=EXACT_SPECS[name], exhaustive=True, shard_vx=FILE, threads=2))
    return out
