"""The full validation of one array, storage unit by storage unit: every chunk's stored bytes
located and, with ``decode``, decoded.  The same task function serves a local run and a Dask
cluster (``viewer.core.cluster``): ``validate_share`` opens the volume by path on whoever runs
it and returns small summaries, so only summaries travel, never voxels.

``validate(path, layer, mag, decode, scheduler=None)`` runs it all and returns the summaries in
unit-grid order, whatever the number of workers and the order tasks finished in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from viewer.format import FormatError, open_volume

Vec3 = tuple[int, int, int]
#: Storage units per task (a few files or shards: seconds of work, not milliseconds).
UNITS_PER_TASK = 4


@dataclass(frozen=True)
class Problem:
    """One problem found, as it travels back from a worker (a picklable summary)."""

    kind: str
    path: str | None
    message: str
    chunk: int | None = None
    offset: int | None = None

    @classmethod
    def of(cls, exc: FormatError) -> Problem:
        return cls(type(exc).__name__, exc.path, exc.reason, exc.block, exc.offset)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "message": self.message,
                "block": self.chunk, "offset": self.offset}


@dataclass(frozen=True)
class UnitSummary:
    """One storage unit: its grid position, path, size, chunk counts, stored-bytes figures of
    the chunks present, and its problems."""

    unit: Vec3
    path: str
    size: int
    chunks: int
    present: int
    stored_bytes: tuple[int, ...]
    problems: tuple[Problem, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Share:
    """A task's share of the work: the volume (by path, layer, mag) and its units."""

    path: str
    layer: str | None
    mag: Any
    units: tuple[Vec3, ...]
    decode: bool = True


def validate_share(share: Share) -> list[UnitSummary]:
    """Validate ``share.units`` of the volume (opened here: this runs on a cluster worker as
    well as locally).  Never raises for damage: a unit that does not open is a summary with
    that problem."""
    volume = open_volume(share.path, share.layer, share.mag)
    out: list[UnitSummary] = []
    try:
        for unit in share.units:
            path = volume.unit_path(unit)
            try:
                opened = volume.open_unit(unit)
            except FormatError as exc:
                out.append(UnitSummary(unit, path, 0, 0, 0, (), (Problem.of(exc),)))
                continue
            if opened is None:
                continue
            try:
                table = opened.chunk_table()
                sizes = table.nbytes[table.present]
                found = opened.problems(decode=share.decode)
                out.append(UnitSummary(unit, path, opened.size, len(table),
                                       int(table.present.sum()),
                                       tuple(int(v) for v in sizes.tolist()),
                                       tuple(Problem.of(p) for p in found)))
            except FormatError as exc:
                out.append(UnitSummary(unit, path, opened.size, 0, 0, (), (Problem.of(exc),)))
            finally:
                volume.done_with(opened)
    finally:
        volume.close()
    return out


def shares(path: str, layer: str | None, mag: Any, units: Sequence[Vec3], decode: bool,
           per_task: int = UNITS_PER_TASK) -> list[Share]:
    """The work split into tasks of ``per_task`` units, in unit-grid order."""
    ordered = sorted(units, key=lambda u: (u[2], u[1], u[0]))
    return [Share(path, layer, mag, tuple(ordered[k:k + per_task]), decode)
            for k in range(0, len(ordered), max(1, per_task))]


def validate(path: str, layer: str | None = None, mag: Any = None, decode: bool = True,
             scheduler: str | None = None,
             on_progress: Callable[[int, int], None] | None = None,
             per_task: int = UNITS_PER_TASK) -> list[UnitSummary]:
    """Every unit of the array validated, summaries in unit-grid order (z, y, x).  With
    ``scheduler`` (``tcp://...`` or ``local:N``) the tasks run on a Dask cluster; the answer is
    the same as the local run's."""
    volume = open_volume(path, layer, mag)
    try:
        units = list(volume.iter_units())
    finally:
        volume.close()
    work = shares(path, layer, mag, units, decode, per_task)
    results: list[list[UnitSummary]] = [[] for _ in work]
    done = 0
    if scheduler is None:
        for k, share in enumerate(work):
            results[k] = validate_share(share)
            done += 1
            if on_progress is not None:
                on_progress(done, len(work))
    else:
        from viewer.core.cluster import ClusterRunner

        with ClusterRunner(scheduler) as runner:
            runner.check_paths([path])
            for k, summaries in runner.map(validate_share, work, key="validate"):
                results[k] = summaries
                done += 1
                if on_progress is not None:
                    on_progress(done, len(work))
    return [s for part in results for s in part]


def stored_bytes_stats(summaries: Sequence[UnitSummary]) -> dict[str, int]:
    """``{min, median, max, total}`` of the stored bytes of every chunk present."""
    sizes = np.asarray([b for s in summaries for b in s.stored_bytes], dtype=np.int64)
    if not sizes.size:
        return {"min": 0, "median": 0, "max": 0, "total": 0}
    return {"min": int(sizes.min()), "median": int(np.median(sizes)), "max": int(sizes.max()),
            "total": int(sizes.sum())}


__all__ = ["validate", "validate_share", "shares", "Share", "UnitSummary", "Problem",
           "stored_bytes_stats", "UNITS_PER_TASK"]
