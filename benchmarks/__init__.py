"""Benchmarks, one script per capability: ``python -m benchmarks.NAME [--json]``."""

from __future__ import annotations

import os
from typing import Any


def load_average() -> float:
    """The machine's 1-minute load average (0.0 where the system gives none): figures taken
    at a high load are marked as such by it."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return 0.0


def with_load(figures: dict[str, Any], before: float) -> dict[str, Any]:
    """``figures`` with ``load_before`` (``before``, taken as the run started) and
    ``load_after`` (now) added."""
    return {**figures, "load_before": before, "load_after": load_average()}
