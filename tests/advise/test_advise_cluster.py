"""``wkw-viewer advise --all --scheduler local:N``: the same sizes as the run here, the
chunks' results streamed as tasks finish."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from advise_data import FILE, Case

from viewer.cli import main as cli_main
from viewer.core.advise import AdviseProgress, AdviseRequest, run_advice
from viewer.core.inspect.scan import Reopen
from viewer.format import open_volume

# Whether it is installed, without importing it: collection on a worker that runs none of these
# tests would pay for the import.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="needs the dask extra")

SPECS = ("wkw:lz4hc:9", "zarr3+shard:zstd:3", "n5:gzip:6")


def test_all_on_the_cluster_equals_the_local_run(advise_cases: dict[str, Case]) -> None:
    case = advise_cases["noisy"]
    box = ((0, 0, 0), (128, 128, 64))
    with open_volume(str(case.root)) as volume:
        local = run_advice(volume, AdviseRequest(specs=SPECS, exhaustive=True, box=box,
                                                 shard_vx=FILE))
        streamed: list[Any] = []
        remote = run_advice(volume, AdviseRequest(
            specs=SPECS, exhaustive=True, box=box, shard_vx=FILE, scheduler="local:2",
            reopen=Reopen(str(case.root))), streamed.append)
    assert [p.projected_bytes for p in remote.projections] == \
        [p.projected_bytes for p in local.projections]
    rows = [r for m in streamed if isinstance(m, AdviseProgress) for r in m.rows]
    assert len(rows) == remote.present_chunks == local.present_chunks  # every chunk, streamed
    assert all(r.sizes is not None and len(r.sizes) == len(SPECS) for r in rows)


def test_cli_scheduler(advise_cases: dict[str, Case], capsys: pytest.CaptureFixture[str]
                       ) -> None:
    case = advise_cases["float"]
    code = cli_main(["advise", str(case.root), "--all", "--json", "--shard", "64",
                     "--codecs", "wkw:lz4hc:9", "--box", "0,0,0,64,64,64",
                     "--scheduler", "local:1"])
    out, _ = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert doc["sampled_chunks"] == doc["present_chunks"] > 0


def test_bad_scheduler_exits_2(advise_cases: dict[str, Case],
                               capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["advise", str(advise_cases["float"].root), "--scheduler", "nowhere"])
    assert code == 2 and "scheduler" in capsys.readouterr().err
