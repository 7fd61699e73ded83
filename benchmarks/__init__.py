"""Benchmarks, one script per capability: ``python -m benchmarks.NAME [--json]``.

Every ``--json`` carries the machine's load as the run began and ended and the cores the run
could use (``with_load``); a benchmark that times sides against each other also says how many
cores each side kept busy while it ran (``CoreMeter``), so that a figure taken on a loaded
machine, or a side that ran on one core where the other used two, shows as such."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def load_average() -> float:
    """The machine's 1-minute load average (0.0 where the system gives none): figures taken
    at a high load are marked as such by it."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def with_load(figures: dict[str, Any], before: float) -> dict[str, Any]:
    """``figures`` with ``load_before`` (``before``, taken as the run started),
    ``load_after`` (now) and ``cores`` (those the run could use) added."""
    return {**figures, "load_before": before, "load_after": load_average(),
            "cores": available_cores()}


class CoreMeter:
    """How many cores each side of a benchmark kept busy: the process's CPU time (all its
    threads) over the wall time, summed over the calls timed with ``time``.  The sides take
    turns and never overlap, so the process's CPU during one side's call is that side's (its
    own threads, or the peer library's)."""

    def __init__(self) -> None:
        self._cpu: dict[str, float] = {}
        self._wall: dict[str, float] = {}

    def time(self, side: str, fn: Callable[[], T]) -> tuple[float, T]:
        """Run ``fn`` as ``side``'s call: its wall time and result."""
        c0 = time.process_time()
        t0 = time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t0
        self._cpu[side] = self._cpu.get(side, 0.0) + time.process_time() - c0
        self._wall[side] = self._wall.get(side, 0.0) + wall
        return wall, out

    def busy(self) -> dict[str, float]:
        """Per side, the cores it kept busy on average (CPU over wall)."""
        return {side: round(self._cpu[side] / wall, 2) if wall > 0 else 0.0
                for side, wall in self._wall.items()}


__all__ = ["CoreMeter", "available_cores", "load_average", "with_load"]
