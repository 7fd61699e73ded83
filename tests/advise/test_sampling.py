"""Sampling that can be trusted: a 5 % sample's projection against the exhaustive figure,
over ten seeds, for every lossless candidate of the accuracy tests (among them N5 raw of the
noisy volume, whose chunks of zeros are stored as nothing, and blosc of the segmentation,
whose size follows today's loosely)."""

from __future__ import annotations

from typing import Any

import pytest
from advise_data import EXACT_SPECS, FILE, Case, projected

from viewer.core.advise import AdviseRequest, run_advice
from viewer.format import open_volume


def _ten_seeds(case: Case, exact: Any, specs: tuple[str, ...]) -> dict[str, int]:
    truth = {s: projected(exact, s) for s in specs}
    covered = dict.fromkeys(specs, 0)
    with open_volume(str(case.root)) as volume:
        for seed in range(10):
            est = run_advice(volume, AdviseRequest(specs=specs, fraction=0.05, seed=seed,
                                                   shard_vx=FILE, threads=2))
            assert not est.exhaustive
            assert 0.05 * est.present_chunks <= est.sampled_chunks < 0.2 * est.present_chunks
            for spec, p in zip(specs, est.projections, strict=True):
                assert p.lossless
                assert abs(p.projected_bytes - truth[spec]) <= 0.05 * truth[spec], \
                    (seed, spec, p.projected_bytes, truth[spec])
                lo, hi = p.interval
                assert lo <= p.projected_bytes <= hi
                covered[spec] += lo <= truth[spec] <= hi
    return covered


@pytest.mark.parametrize("name", ["smooth", "noisy", "segmentation"])
def test_five_percent_sample_within_5_percent_and_covered(
        advise_cases: dict[str, Case], exact_reports: dict[str, Any], name: str) -> None:
    covered = _ten_seeds(advise_cases[name], exact_reports[name], EXACT_SPECS[name])
    assert min(covered.values()) >= 9, covered
