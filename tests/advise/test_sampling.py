"""Sampling that can be trusted: a 5 % sample's projection against the exhaustive figure,
over ten seeds, for every lossless candidate of the accuracy tests (among them N5 raw of the
noisy volume, whose chunks of zeros are stored as nothing, and blosc of the segmentation,
whose size follows today's loosely)."""

from __future__ import annotations

from dataclasses import replace
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


def test_strata_keep_zeros_and_edges_apart() -> None:
    """Chunks cut by the extent's border never share a stratum with whole ones; a value of
    today's bytes held by many chunks (chunks of zeros) is a stratum of its own, whatever
    chunks of data lie near it; every stratum is drawn from."""
    import numpy as np

    from viewer.core.advise.sampling import MIN_DRAW, SourceMap, TargetGrid

    rng = np.random.default_rng(0)
    dims = (7, 8, 8)  # 100 voxels along x in 16-voxel chunks: the last column is cut
    sizes = rng.integers(2000, 4000, dims).astype(np.float64)
    sizes[:, :, :2] = 26.0  # a slab of chunks of zeros
    sizes[:, 0, 2] = 2400.0  # data next to them
    source = SourceMap((0, 0, 0), (100, 128, 128), (16, 16, 16), (0, 0, 0),
                       np.ones(dims, np.bool_), sizes, int(sizes.sum()), 1, "lz4")
    grid = TargetGrid.of(source, (16, 16, 16))
    edge = grid.grid[:, 0] == 6
    for h in range(grid.strata):
        members = grid.stratum == h
        assert members.sum() > 0
        assert len(set(edge[members].tolist())) == 1
        zeros = grid.x[members] == 26.0
        assert zeros.all() or not zeros.any()
    sample = grid.sample(0.05, 1)
    assert (sample.drawn >= np.minimum(MIN_DRAW, sample.population)).all()
    assert sorted(set(sample.stratum.tolist())) == list(range(grid.strata))


def test_raw_at_another_chunk_shape_counts_the_chunks_of_zeros(
        advise_cases: dict[str, Case]) -> None:
    """In 24^3 chunks over the noisy volume's 16^3, four chunks hold nothing but zeros (the
    slab and the absent file) among data chunks as small today: N5 stores them as nothing.
    They are a group of their own, so N5 raw's projection covers the exact figure."""
    case = advise_cases["noisy"]
    shape = (24, 24, 24)

    def raw_24(report: Any) -> Any:
        return next(p for p in report.projections if p.candidate.chunk_shape == shape)

    with open_volume(str(case.root)) as volume:
        request = AdviseRequest(specs=("n5:raw",), chunk_shapes=(shape,), shard_vx=FILE,
                                threads=2)
        exact = raw_24(run_advice(volume, replace(request, exhaustive=True)))
        covered = 0
        for seed in range(10):
            est = raw_24(run_advice(volume, replace(request, fraction=0.05, seed=seed)))
            assert est.sampled_chunks < est.present_chunks
            covered += est.interval[0] <= exact.projected_bytes <= est.interval[1]
    assert covered >= 9, covered
