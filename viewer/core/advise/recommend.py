"""Which candidate to take: the smallest that still browses fast enough, and the trade-offs.

The browse target is a decode speed: the window's jump to a new place decodes a 1024 x 1024
plane's worth of 32^3 chunks (32 MiB of voxels for uint8) on each core within about 100 ms,
so ``BROWSE_DECODE_MB_S`` per core.  The recommendation is the smallest lossless candidate
whose measured decode speed keeps it (or ``--min-decode-mb-s``); lossy candidates are shown
but recommended only when asked (``allow_lossy``).  The Pareto front is the candidates that
no other candidate beats on both size and decode speed.  Qt-free; pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from viewer.core.advise.projection import Projection

#: Decode speed per core that keeps browsing smooth (see the module docstring).
BROWSE_DECODE_MB_S = 300.0


@dataclass(frozen=True)
class Recommendation:
    """``index`` into the projections (None: nothing to recommend) and ``reason``."""

    index: int | None
    reason: str

    def to_json(self, projections: Sequence[Projection]) -> dict[str, Any] | None:
        if self.index is None:
            return None
        doc = projections[self.index].candidate.to_json()
        doc["reason"] = self.reason
        return doc


def pareto_front(projections: Sequence[Projection]) -> list[int]:
    """Indices of the candidates no other is at least as small and as fast as, and better in
    one of the two."""
    out = []
    for i, p in enumerate(projections):
        dominated = any(
            q.projected_bytes <= p.projected_bytes and q.decode_mb_s >= p.decode_mb_s
            and (q.projected_bytes < p.projected_bytes or q.decode_mb_s > p.decode_mb_s)
            for j, q in enumerate(projections) if j != i)
        if not dominated:
            out.append(i)
    return out


def recommend(projections: Sequence[Projection], min_decode_mb_s: float | None = None,
              allow_lossy: bool = False) -> Recommendation:
    """The smallest candidate whose decode speed keeps the target, and why."""
    target = BROWSE_DECODE_MB_S if min_decode_mb_s is None else float(min_decode_mb_s)
    why_target = (f"the browse target of {target:g} MB/s per core" if min_decode_mb_s is None
                  else f"--min-decode-mb-s {target:g}")
    pool = [i for i, p in enumerate(projections) if allow_lossy or p.lossless]
    if not pool:
        return Recommendation(None, "no lossless candidate was measured")
    fast = [i for i in pool if projections[i].decode_mb_s >= target]
    if fast:
        best = min(fast, key=lambda i: projections[i].projected_bytes)
        p = projections[best]
        kind = "candidate" if allow_lossy else "lossless candidate"
        return Recommendation(best, (
            f"the smallest {kind} that decodes at {target:g} MB/s per core or faster "
            f"({why_target}): {p.decode_mb_s:.0f} MB/s, "
            f"{_percent(p.ratio_to_current)} of today's size"))
    best = max(pool, key=lambda i: projections[i].decode_mb_s)
    p = projections[best]
    return Recommendation(best, (
        f"no candidate keeps {why_target}; this one decodes fastest ({p.decode_mb_s:.0f} MB/s "
        f"per core), {_percent(p.ratio_to_current)} of today's size"))


def _percent(ratio: float) -> str:
    return f"{100 * ratio:.0f} %" if ratio == ratio else "?"


__all__ = ["BROWSE_DECODE_MB_S", "Recommendation", "pareto_front", "recommend"]
