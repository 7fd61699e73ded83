"""Data made once per test run, whatever the number of pytest-xdist workers."""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str,
                 make: Callable[[Path], T]) -> T:
    """``make(folder)`` run once for the whole run (by the first worker of ``-n`` that asks;
    the others wait for it and load its pickled result), for session fixtures whose data many
    modules use.  ``folder`` is shared by the workers for this run only."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder = base / f"once-{name}"
    result = base / f"once-{name}.pickle"
    with open(base / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if result.exists():
                with open(result, "rb") as f:
                    loaded: T = pickle.load(f)
                return loaded
            folder.mkdir(exist_ok=True)
            made = make(folder)
            with open(result.with_suffix(".tmp"), "wb") as f:
                pickle.dump(made, f)
            os.replace(result.with_suffix(".tmp"), result)
            return made
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
